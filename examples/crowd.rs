//! A plaza crossed by thousands: two streams of 1,000 agents walk across an 80 m × 50 m plaza,
//! round a fountain, pillars and two benches, and leave at the far side. The panel shows the
//! planner's time per step.
//!
//! ```text
//! cargo run --release --example crowd
//! ```

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

fn main() {
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: crowd")),
            CrowdfieldPlugins,
            support::ExampleView {
                help: vec![
                    "2,000 agents cross a plaza in two opposite streams (harmonic fields, 15x15 local maps, 30 sweeps).".into(),
                ],
            },
        ))
        .add_systems(Startup, |mut commands: Commands, server: Res<AssetServer>| {
            commands.spawn(ScenarioRoot(server.load(support::scenario_path("plaza"))));
        })
        .run();
}
