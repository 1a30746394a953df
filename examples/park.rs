//! The seed's park (seed 000 §6.13): five accesses, a lake, a popcorn cart. Five walkers leave
//! the west access, buy popcorn at the cart and leave by the north access, each with its own
//! behaviour vector v at ε = 0.8, so each takes its own path round the lake. Press C to add a
//! crowd of 100 walkers with random v, speeds and exits (seed 000 test 22).
//!
//! ```text
//! cargo run --release --example park
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

fn main() {
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: park")),
            CrowdfieldPlugins,
            support::ExampleView {
                help: vec![
                    "The park: west access -> popcorn cart -> north access, five walkers with their own v (eps 0.8).".into(),
                    "C: add 100 walkers with random v, speed and exit".into(),
                ],
            },
        ))
        .add_systems(Startup, load)
        .add_systems(Update, support::park_crowd_on_c)
        .run();
}

fn load(mut commands: Commands, server: Res<AssetServer>) {
    commands.spawn(ScenarioRoot(server.load(support::scenario_path("park"))));
}
