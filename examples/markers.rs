//! Marker crowds (seed 002): walkable space as markers, tree paths grown by space
//! colonisation, and the group behaviours built on them, beside ordinary (BVP) walkers.
//!
//! - West: eight walkers grow tree paths round a wall to the far side (overlay T shows the
//!   trees: faint live branches, the ways ahead bright, key positions yellow, dead branches red).
//! - East: three pursuers surround a walker pacing between two points, each from its own
//!   side; an escaper leaves the circle of three standing followers.
//! - South-east: sixteen agents fill the letters V and H, sprayed as tagged markers (w_max = 10).
//!
//! Overlay M shows the markers (the letters brighter), T the trees and each agent's markers in
//! its colour (its personal space).
//!
//! With the argument `crowd`, the seed's crowd mode instead: four streams cross a 30 × 30 m
//! square, an agent entering each every 10 s, each agent holding the markers of the nodes it
//! stands on and walks to (overlay T: the held markers in the agent's colour) and waiting
//! while another holds them, so that crossing agents never meet.
//!
//! ```text
//! cargo run --release --example markers
//! cargo run --release --example markers -- crowd
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;

/// World size, metres.
const WORLD: Vec2 = Vec2::new(64.0, 36.0);

fn main() {
    if std::env::args().any(|a| a == "crowd") {
        crowd_main();
        return;
    }
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

/// The crowd-mode scene: four streams crossing under marker reservation.
fn crowd_main() {
    let help = vec![
        "Marker crowds in the seed's crowd mode: four streams cross a 30 x 30 m square.".into(),
        "Each agent holds the markers of the tree nodes it stands on and walks to (overlay T, in its colour)".into(),
        "and waits while another holds them: crossing agents never meet (no d_enf).".into(),
        "Overlays: M markers, T marker trees and held markers (panel on the right).".into(),
    ];
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: marker reservation")),
            CrowdfieldPlugins,
            CrowdDebugPlugin,
            support::ExampleView { help },
        ))
        .insert_resource(CrowdfieldSettings {
            world_min: Vec2::new(17.0, 3.0),
            world_max: Vec2::new(47.0, 33.0),
            planner_hz: 24.0,
            ..default()
        })
        .insert_resource(MarkerGround::default())
        .insert_resource(MarkerSteeringSettings {
            settings: bevy_crowdfield::markers::MarkerCrowdSettings {
                mode: bevy_crowdfield::markers::Mode::Crowd,
                ..default()
            },
            masks: Vec::new(),
        })
        .add_systems(Startup, overlays_on)
        .add_systems(Update, feed_streams)
        .run();
}

/// The streams: where each enters and the way it walks.
const STREAMS: [(Vec2, Vec2); 4] = [
    (Vec2::new(18.0, 15.0), Vec2::X),
    (Vec2::new(46.0, 21.0), Vec2::NEG_X),
    (Vec2::new(29.0, 4.0), Vec2::Y),
    (Vec2::new(35.0, 32.0), Vec2::NEG_Y),
];

/// Lets an agent into each stream every 10 s (the streams 2.5 s apart) while its entry is
/// clear (2.5 m); agents leave at the far side.
fn feed_streams(
    mut commands: Commands,
    time: Res<Time>,
    mut last: Local<[f32; 4]>,
    agents: Query<&Transform, With<CrowdAgent>>,
) {
    let now = time.elapsed_secs();
    for (k, (entry, way)) in STREAMS.iter().enumerate() {
        // Streams a quarter period apart.
        let due = if last[k] > 0.0 {
            last[k] + 10.0
        } else {
            k as f32 * 2.5
        };
        if now < due {
            continue;
        }
        let clear = agents
            .iter()
            .all(|t| t.translation.truncate().distance(*entry) >= 2.5);
        if !clear {
            continue;
        }
        last[k] = now.max(1e-3);
        commands.spawn((
            CrowdAgent,
            AgentGoals::point(*entry + *way * 28.0).then_despawn(),
            MarkerSteering::Goals,
            Transform::from_xyz(entry.x, entry.y, 0.0),
        ));
    }
}
