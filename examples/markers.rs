//! Marker crowds (seed 002): walkable space as markers, tree paths grown by space
//! colonisation, and the group behaviours built on them, beside ordinary (BVP) walkers.
//!
//! - West: eight walkers grow tree paths round a wall to the far side (overlay T shows the
//!   trees: faint live branches, the ways ahead bright, key positions yellow, dead branches red).
//! - East: three pursuers surround a walker pacing between two points, each from its own
//!   side; an escaper leaves the circle of three standing followers.
//! - South-east: sixteen agents fill the letters V and H, sprayed as tagged markers (w_max = 10).
//!
//! Overlay M shows the markers (the letters brighter), T the trees.
//!
//! ```text
//! cargo run --release --example markers
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;

/// World size, metres.
const WORLD: Vec2 = Vec2::new(64.0, 36.0);

fn main() {
    let help = vec![
        "Marker crowds (seed 002): agents with MarkerSteering walk tree paths grown over the ground's markers.".into(),
        "West: walkers round a wall (overlay T: trees, ways ahead, key positions, dead branches).".into(),
        "East: three pursuers surround a pacing walker; an escaper leaves three followers.".into(),
        "South-east: sixteen agents fill the letters V and H, sprayed as tagged markers.".into(),
        "Overlays: M markers, T marker trees (panel on the right).".into(),
    ];
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: marker crowds")),
            CrowdfieldPlugins,
            CrowdDebugPlugin,
            support::ExampleView { help },
        ))
        .insert_resource(CrowdfieldSettings {
            world_min: Vec2::ZERO,
            world_max: WORLD,
            planner_hz: 24.0,
            ..default()
        })
        .insert_resource(MarkerGround::default())
        .add_systems(Startup, (spawn_scene, overlays_on))
        .run();
}

fn overlays_on(mut overlays: ResMut<DebugOverlays>) {
    overlays.set(OverlayId::MARKERS, true);
    overlays.set(OverlayId::MARKER_TREES, true);
    overlays.set(OverlayId::STATS, false);
}

fn spawn_scene(mut commands: Commands, mut brushes: MessageWriter<MarkerBrush>) {
    // The west: a wall with a gap above it, as in the seed's test room.
    commands.spawn((
        CrowdObstacle::fixed(Shape::Aabb {
            min: DVec2::new(14.0, 0.0),
            max: DVec2::new(16.0, 12.0),
        }),
        Transform::IDENTITY,
    ));
    // A divider between the west and the east.
    commands.spawn((
        CrowdObstacle::fixed(Shape::Aabb {
            min: DVec2::new(31.0, 0.0),
            max: DVec2::new(32.0, 36.0),
        }),
        Transform::IDENTITY,
    ));
    for i in 0..8 {
        let y = 2.0 + i as f32 * 1.2;
        commands.spawn((
            CrowdAgent,
            AgentGoals::point(Vec2::new(28.0, y)),
            MarkerSteering::Goals,
            Transform::from_xyz(2.0, y, 0.0),
        ));
    }
    // Ordinary walkers crossing the west the other way (north to south), beside them.
    for i in 0..4 {
        let x = 5.0 + i as f32 * 2.0;
        commands.spawn((
            CrowdAgent,
            AgentGoals::point(Vec2::new(x + 16.0, 20.0)),
            Transform::from_xyz(x, 33.0, 0.0),
        ));
    }
    // The north-east: a walker pacing between two points, three surrounders.
    let pacer = commands
        .spawn((
            CrowdAgent,
            AgentGoals::points([
                Vec2::new(50.0, 20.0),
                Vec2::new(42.0, 20.0),
                Vec2::new(50.0, 20.0),
                Vec2::new(42.0, 20.0),
                Vec2::new(50.0, 20.0),
            ]),
            Transform::from_xyz(42.0, 20.0, 0.0),
        ))
        .id();
    for i in 0..3 {
        commands.spawn((
            CrowdAgent,
            MarkerSteering::Surround(pacer),
            Transform::from_xyz(35.0, 27.0 + i as f32 * 1.0, 0.0),
        ));
    }
    // An escaper among three standing followers.
    let followers: Vec<Entity> = (0..3)
        .map(|k| {
            let a = k as f32 * std::f32::consts::TAU / 3.0 + 0.3;
            commands
                .spawn((
                    CrowdAgent,
                    Transform::from_xyz(59.0 + 2.5 * a.cos(), 18.0 + 2.5 * a.sin(), 0.0),
                ))
                .id()
        })
        .collect();
    commands.spawn((
        CrowdAgent,
        MarkerSteering::Escape(followers),
        Transform::from_xyz(59.3, 17.8, 0.0),
    ));
    // The south-east: the letters V and H sprayed with tag 1, sixteen agents to fill them.
    let letters = [
        vec![
            Vec2::new(38.0, 14.0),
            Vec2::new(41.0, 6.0),
            Vec2::new(44.0, 14.0),
        ],
        vec![Vec2::new(48.0, 6.0), Vec2::new(48.0, 14.0)],
        vec![Vec2::new(54.0, 6.0), Vec2::new(54.0, 14.0)],
        vec![Vec2::new(48.0, 10.0), Vec2::new(54.0, 10.0)],
    ];
    for points in letters {
        brushes.write(MarkerBrush::Stroke {
            brush: Brush {
                kind: BrushKind::Spray {
                    density: 60.0,
                    tag: Some(1),
                },
                radius: 0.7,
            },
            points,
        });
    }
    for i in 0..16 {
        let x = 36.0 + (i % 8) as f32 * 2.5;
        let y = 1.0 + (i / 8) as f32 * 1.2;
        commands.spawn((
            CrowdAgent,
            MarkerSteering::Formation {
                shape: 1,
                mask: None,
            },
            Transform::from_xyz(x, y, 0.0),
        ));
    }
}
