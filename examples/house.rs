//! A house (seed 003's indoor mode): six dwellers live an everyday routine on the BioCrowds
//! back end. Each draws an action at random from the seed's table (read, play, watch TV,
//! relax, sleep, shower, wash hands, use the toilet, eat, drink, wash dishes, wash clothes),
//! plans the doors to its room over the rooms-and-doors graph from where it stands, walks
//! there, picks a place among the room's markers, stays the action's time, and draws again.
//!
//! Rooms are tinted in their colour; each dweller wears a ring in the colour of the room of its
//! action, filled while it acts, with a line to the place it is heading for. The walls are
//! obstacles with the doors left open; the markers (overlay M; on at start with `-- markers`)
//! are the house's floor at 60 per m², each labelled by the room holding it. Overlay R (on at
//! start with `-- spaces`) shows each dweller's personal space (the markers it takes this step)
//! and the place it walks to.
//!
//! ```text
//! cargo run --release --example house
//! cargo run --release --example house -- markers
//! cargo run --release --example house -- spaces
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::markers::{Door, House, Room, RoomKind, RoutinePhase, Way};
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;

/// World size, metres.
const WORLD: Vec2 = Vec2::new(16.0, 12.0);

fn main() {
    let help = vec![
        "A house (seed 003's indoor mode): six dwellers live a routine on the BioCrowds back end.".into(),
        "Each draws an action (read, sleep, shower, eat, wash clothes...), takes the doors to its room,".into(),
        "stands on a marker of the room for the action's time, and draws again.".into(),
        "Rings: the colour of the action's room, filled while acting; lines: where each is heading.".into(),
        "M: the floor's markers, a pixel each; R: each dweller's personal space and place; F1: the overlays' panel.".into(),
    ];
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: a house")),
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
        .insert_resource(TerrainGround {
            house: Some(house()),
            ..default()
        })
        .add_systems(Startup, (spawn_dwellers, spawn_rooms, overlays_on))
        .add_systems(Update, draw_house)
        .run();
}

/// Overlay M and the overlays' panel from the start with the argument `markers`, overlay R
/// (personal spaces, places) with `spaces`; the stats off (the help shows them).
fn overlays_on(mut overlays: ResMut<DebugOverlays>, mut settings: ResMut<CrowdDebugSettings>) {
    let markers = std::env::args().any(|a| a == "markers");
    let spaces = std::env::args().any(|a| a == "spaces");
    overlays.set(OverlayId::MARKERS, markers);
    overlays.set(OverlayId::BIO_CROWDS, spaces);
    overlays.set(OverlayId::STATS, false);
    settings.show_help = markers;
}

/// A living room and a kitchen below a hall; a bedroom, a bathroom and a laundry above it.
fn house() -> House {
    let room = |kind: RoomKind, name: &str, x0: f64, y0: f64, x1: f64, y1: f64| Room {
        name: name.into(),
        kind,
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    };
    let door = |x: f64, y: f64, a: usize, b: usize| Door {
        position: DVec2::new(x, y),
        rooms: [a, b],
        width: 1.0,
    };
    House::new(
        vec![
            room(RoomKind::LivingRoom, "living room", 1.0, 1.0, 8.0, 5.0),
            room(RoomKind::Kitchen, "kitchen", 8.0, 1.0, 15.0, 5.0),
            room(RoomKind::Hall, "hall", 1.0, 5.0, 15.0, 7.0),
            room(RoomKind::Bedroom, "bedroom", 1.0, 7.0, 6.0, 11.0),
            room(RoomKind::Bathroom, "bathroom", 6.0, 7.0, 10.0, 11.0),
            room(RoomKind::Laundry, "laundry", 10.0, 7.0, 15.0, 11.0),
        ],
        vec![
            door(4.0, 5.0, 0, 2),
            door(12.0, 5.0, 1, 2),
            door(8.0, 3.0, 0, 1),
            door(3.0, 7.0, 2, 3),
            door(8.0, 7.0, 2, 4),
            door(12.5, 7.0, 2, 5),
        ],
    )
    .expect("a valid house")
}

fn room_colour(kind: RoomKind) -> Color {
    match kind {
        RoomKind::LivingRoom => Color::srgb(0.95, 0.6, 0.25),
        RoomKind::Kitchen => Color::srgb(0.9, 0.3, 0.35),
        RoomKind::Hall => Color::srgb(0.6, 0.6, 0.6),
        RoomKind::Bedroom => Color::srgb(0.55, 0.45, 0.95),
        RoomKind::Bathroom => Color::srgb(0.3, 0.75, 0.95),
        RoomKind::Laundry => Color::srgb(0.45, 0.85, 0.45),
    }
}

fn spawn_dwellers(mut commands: Commands) {
    let starts = [
        (3.0, 3.0),
        (6.0, 2.0),
        (11.0, 3.0),
        (3.0, 9.0),
        (12.0, 9.0),
        (8.0, 9.5),
    ];
    for (k, (x, y)) in starts.into_iter().enumerate() {
        commands.spawn((
            CrowdAgent,
            BioSteering {
                way: Way::Routine { seed: k as u64 + 1 },
                ..default()
            },
            Transform::from_xyz(x, y, 1.0),
        ));
    }
}

/// Each room's floor tinted in its colour, with its name.
fn spawn_rooms(
    mut commands: Commands,
    ground: Res<TerrainGround>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<ColorMaterial>>,
) {
    let Some(house) = &ground.house else {
        return;
    };
    for room in house.rooms() {
        let (min, max) = (room.min.as_vec2(), room.max.as_vec2());
        let centre = (min + max) * 0.5;
        commands.spawn((
            Mesh2d(meshes.add(Rectangle::new(max.x - min.x, max.y - min.y))),
            MeshMaterial2d(materials.add(room_colour(room.kind).with_alpha(0.16))),
            Transform::from_xyz(centre.x, centre.y, -1.0),
        ));
        commands.spawn((
            Text2d::new(room.name.clone()),
            TextFont {
                font_size: FontSize::Px(28.0),
                ..default()
            },
            TextColor(room_colour(room.kind)),
            Transform::from_xyz(centre.x, max.y - 0.35, 0.5).with_scale(Vec3::splat(1.0 / 70.0)),
        ));
    }
}

/// Each dweller's ring and heading.
fn draw_house(
    mut gizmos: Gizmos,
    ground: Res<TerrainGround>,
    agents: Res<BioAgents>,
    dwellers: Query<(Entity, &Transform), With<BioSteering>>,
) {
    let Some(house) = &ground.house else {
        return;
    };
    for (entity, transform) in &dwellers {
        let p = transform.translation.truncate();
        let Some(phase) = agents.state(entity).and_then(|s| s.routine()) else {
            continue;
        };
        match phase {
            RoutinePhase::Walking { room, place, .. } => {
                let colour = room_colour(house.rooms()[*room].kind);
                gizmos.circle_2d(p, 0.45, colour);
                gizmos.line_2d(p, place.as_vec2(), colour.with_alpha(0.5));
                gizmos.circle_2d(place.as_vec2(), 0.12, colour);
            }
            RoutinePhase::Acting { room, .. } => {
                let colour = room_colour(house.rooms()[*room].kind);
                for r in [0.45, 0.38, 0.31] {
                    gizmos.circle_2d(p, r, colour);
                }
            }
        }
    }
}
