//! The showcase: the seed's park with a hundred walkers, and the mouse to change the world
//! while they walk. Left click drops a wall (a rapier collider) that every global map is
//! re-solved around within a few planner steps; right click sends everyone to the cursor;
//! Backspace removes the last wall; C adds 100 walkers.
//!
//! ```text
//! cargo run --release --example showcase
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use bevy_rapier2d::prelude::Collider;

fn main() {
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: showcase")),
            CrowdfieldPlugins,
            support::ExampleView {
                help: vec![
                    "crowdfield showcase: the park with its five scripted walkers and a crowd.".into(),
                    "Left click: drop a wall   Right click: send everyone here   Backspace: remove the last wall   C: 100 more walkers".into(),
                ],
            },
        ))
        .init_resource::<Walls>()
        .add_systems(Startup, setup)
        .add_systems(Update, (first_crowd, mouse, support::park_crowd_on_c))
        .run();
}

#[derive(Resource, Default)]
struct Walls(Vec<Entity>);

/// The park, and a construction fence of two rapier walls south-west of the lake.
fn setup(
    mut commands: Commands,
    server: Res<AssetServer>,
    mut walls: ResMut<Walls>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<ColorMaterial>>,
) {
    commands.spawn(ScenarioRoot(server.load(support::scenario_path("park"))));
    for (at, angle) in [(Vec2::new(10.0, 14.0), 0.6), (Vec2::new(27.0, 9.5), -0.4)] {
        let wall = spawn_wall(&mut commands, &mut meshes, &mut materials, at, angle);
        walls.0.push(wall);
    }
}

/// A 6 m × 0.6 m wall: a rapier collider the crowd reads as a static obstacle.
fn spawn_wall(
    commands: &mut Commands,
    meshes: &mut Assets<Mesh>,
    materials: &mut Assets<ColorMaterial>,
    at: Vec2,
    angle: f32,
) -> Entity {
    let (hx, hy) = (3.0, 0.3);
    commands
        .spawn((
            Collider::cuboid(hx, hy),
            Transform::from_translation(at.extend(0.5)).with_rotation(Quat::from_rotation_z(angle)),
            Mesh2d(meshes.add(Rectangle::new(2.0 * hx, 2.0 * hy))),
            MeshMaterial2d(materials.add(Color::srgb(0.8, 0.5, 0.3))),
        ))
        .id()
}

/// 100 walkers once the park is built.
fn first_crowd(mut commands: Commands, world: Res<CrowdWorld>, mut done: Local<bool>) {
    if !*done
        && let Some(crowd) = world.crowd()
        && crowd.agents().count() >= 5
    {
        support::park_crowd(&mut commands, crowd, 100, 1);
        *done = true;
    }
}

fn mouse(
    mut commands: Commands,
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    window: Single<&Window>,
    camera: Single<(&Camera, &GlobalTransform)>,
    mut walls: ResMut<Walls>,
    mut goals: Query<&mut AgentGoals, With<CrowdAgent>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<ColorMaterial>>,
) {
    if keys.just_pressed(KeyCode::Backspace)
        && let Some(wall) = walls.0.pop()
    {
        commands.entity(wall).despawn();
    }
    let Some(cursor) = window.cursor_position() else {
        return;
    };
    let (camera, at) = *camera;
    let Ok(p) = camera.viewport_to_world_2d(at, cursor) else {
        return;
    };
    if buttons.just_pressed(MouseButton::Left) {
        let wall = spawn_wall(&mut commands, &mut meshes, &mut materials, p, 0.0);
        walls.0.push(wall);
    }
    if buttons.just_pressed(MouseButton::Right) {
        for mut g in &mut goals {
            *g = AgentGoals {
                on_arrival: g.on_arrival,
                ..AgentGoals::point(p)
            };
        }
    }
}
