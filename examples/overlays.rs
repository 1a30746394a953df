//! Debug overlays: every field and decision of the planner, switched with the number keys.
//! Loads a shipped scenario (default `deadend`: a hall with a long dead-end corridor whose far
//! end is flat, so sub-goal stacks show too).
//!
//! ```text
//! cargo run --release --example overlays [SCENARIO]
//! ```
//!
//! `SCENARIO` is a file name in `assets/scenarios/` without `.scenario.ron` (`deadend`, `park`,
//! `corridor`, `plaza`, `plaza10k`). For screenshots and measurements:
//! `CROWDFIELD_OVERLAYS=heat_map,isolines` (or `all`, or `none`) switches overlays on at start
//! and `CROWDFIELD_SELECT=N` selects the N-th agent once it has joined the crowd.

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;

fn main() {
    let scenario = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "deadend".to_string());
    App::new()
        .add_plugins((
            DefaultPlugins.set(support::window("crowdfield: debug overlays")),
            CrowdfieldPlugins,
            CrowdDebugPlugin,
            support::ExampleView {
                help: vec![format!(
                    "Scenario `{scenario}`. Debug overlays: keys 1-7 (panel on the right)."
                )],
            },
        ))
        .insert_resource(StartScenario(scenario))
        .add_systems(Startup, (load, overlays_from_env))
        .add_systems(Update, select_from_env)
        .run();
}

#[derive(Resource)]
struct StartScenario(String);

fn load(mut commands: Commands, server: Res<AssetServer>, name: Res<StartScenario>) {
    commands.spawn(ScenarioRoot(server.load(support::scenario_path(&name.0))));
}

/// `CROWDFIELD_OVERLAYS`: a comma-separated list of built-in overlay names, `all` or `none`.
fn overlays_from_env(mut overlays: ResMut<DebugOverlays>) {
    let Ok(list) = std::env::var("CROWDFIELD_OVERLAYS") else {
        return;
    };
    let ids: Vec<OverlayId> = overlays.iter().map(|e| e.id).collect();
    for id in ids {
        let short = id.0.trim_start_matches("crowdfield.");
        let on = list == "all" || list.split(',').any(|s| s.trim() == short);
        overlays.set(id, on);
    }
}

/// `CROWDFIELD_SELECT=N`: selects the crowd's N-th agent as soon as there is one.
fn select_from_env(
    world: Res<CrowdWorld>,
    mut selected: ResMut<SelectedAgent>,
    mut done: Local<bool>,
) {
    let Some(n) = std::env::var("CROWDFIELD_SELECT")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    else {
        return;
    };
    if *done {
        return;
    }
    if let Some(entity) = world
        .crowd()
        .and_then(|c| c.agents().nth(n))
        .and_then(|(id, _)| world.entity(id))
    {
        selected.0 = Some(entity);
        *done = true;
    }
}
