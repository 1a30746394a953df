//! Corridor encounters (seed 000 §5.4, §6.9): two streams of eight walkers meet head-on in a
//! 30 m corridor narrowed by two pillars. Each walks on the harmonic field while the way is clear
//! and swerves right (v orthogonal to the line to the other walker, ε = 0.6) while someone is
//! within 2 m ahead; walkers leave at the far end.
//!
//! ```text
//! cargo run --release --example corridor
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

fn main() {
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: corridor")),
            CrowdfieldPlugins,
            support::ExampleView {
                help: vec![
                    "Corridor encounters: two streams meet head-on.".into(),
                    "Walkers follow the harmonic field and swerve right (eps 0.6) when someone is within 2 m ahead.".into(),
                    "R: send both streams again".into(),
                ],
            },
        ))
        .add_systems(Startup, load)
        .add_systems(Update, restart)
        .run();
}

fn load(mut commands: Commands, server: Res<AssetServer>) {
    commands.spawn(ScenarioRoot(
        server.load(support::scenario_path("corridor")),
    ));
}

/// R: spawns the scenario again.
fn restart(
    mut commands: Commands,
    input: Res<ButtonInput<KeyCode>>,
    roots: Query<Entity, With<ScenarioRoot>>,
    server: Res<AssetServer>,
) {
    if input.just_pressed(KeyCode::KeyR) {
        for root in &roots {
            commands.entity(root).despawn();
        }
        load(commands, server);
    }
}
