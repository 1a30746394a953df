//! A plaza crossed by thousands: two streams of 1,000 agents walk across an 80 m × 50 m plaza,
//! round a fountain, pillars and two benches, and leave at the far side. The panel shows the
//! planner's time per step.
//!
//! ```text
//! cargo run --release --example crowd              # every neighbour stamped (the seeds)
//! cargo run --release --example crowd -- same-way  # neighbours walking one's way left out
//! ```
//!
//! N switches every agent between the two (each switched agent registers again where it
//! stands, its goal started over).

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

/// Which neighbours the agents stamp, set from the command line and by N.
#[derive(Resource, Clone, Copy)]
struct Stamping(NeighbourStamping);

fn main() {
    let stamping = match std::env::args().nth(1).as_deref() {
        None => NeighbourStamping::All,
        Some("same-way") => NeighbourStamping::ExceptSameWay,
        Some(other) => {
            eprintln!("unknown argument {other:?}; usage: crowd [same-way]");
            std::process::exit(2);
        }
    };
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: crowd")),
            CrowdfieldPlugins,
            support::ExampleView {
                help: vec![
                    "2,000 agents cross a plaza in two opposite streams (harmonic fields, 15x15 local maps, 30 sweeps).".into(),
                    "N: switch between stamping every neighbour and leaving out those walking one's way.".into(),
                ],
            },
        ))
        .insert_resource(Stamping(stamping))
        .add_systems(Startup, |mut commands: Commands, server: Res<AssetServer>| {
            commands.spawn(ScenarioRoot(server.load(support::scenario_path("plaza"))));
        })
        .add_systems(Update, (switch_on_n, apply_stamping).chain())
        .run();
}

/// N switches the stamping of every agent.
fn switch_on_n(keys: Res<ButtonInput<KeyCode>>, mut stamping: ResMut<Stamping>) {
    if keys.just_pressed(KeyCode::KeyN) {
        stamping.0 = match stamping.0 {
            NeighbourStamping::All => NeighbourStamping::ExceptSameWay,
            NeighbourStamping::ExceptSameWay => NeighbourStamping::All,
        };
        info!("neighbour stamping: {:?}", stamping.0);
    }
}

/// Gives every agent the chosen stamping (new agents from the scenario, and all of them after N).
fn apply_stamping(stamping: Res<Stamping>, mut styles: Query<&mut AgentStyle, With<CrowdAgent>>) {
    for mut style in &mut styles {
        if style.local_map.neighbours != Some(stamping.0) {
            style.local_map.neighbours = Some(stamping.0);
        }
    }
}
