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
//! and `CROWDFIELD_SELECT=N` selects the N-th agent once it has joined the crowd. With
//! `CROWDFIELD_FRAME_STATS=N` (see `support`) the example also times the debug plugin's drawing
//! systems, and `CROWDFIELD_PAUSE_AT=SECONDS` stops the crowd then, so frames measure rendering
//! and overlays without planner steps.

#[path = "support/mod.rs"]
mod support;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;

fn main() {
    let scenario = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "deadend".to_string());
    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins.set(support::window("crowdfield: debug overlays")),
        CrowdfieldPlugins,
        support::ExampleView {
            help: vec![format!(
                "Scenario `{scenario}`. Debug overlays: keys 1-7 (panel on the right)."
            )],
        },
    ));
    // CROWDFIELD_NO_DEBUG=1 leaves the debug plugin out, to compare frame times.
    if std::env::var("CROWDFIELD_NO_DEBUG").as_deref() == Ok("1") {
        app.init_resource::<SelectedAgent>()
            .init_resource::<DebugOverlays>();
    } else {
        app.add_plugins(CrowdDebugPlugin);
    }
    app.insert_resource(StartScenario(scenario))
        .init_resource::<DrawTimer>()
        .add_systems(Startup, (load, overlays_from_env))
        .add_systems(
            Update,
            (
                select_from_env,
                pause_from_env,
                start_draw_timer.before(CrowdDebugSystems::Draw),
                stop_draw_timer.after(CrowdDebugSystems::Draw),
            ),
        )
        .add_systems(Last, report_draw_time.after(support::frame_stats))
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

/// `CROWDFIELD_PAUSE_AT=SECONDS`: pauses simulated time once, at that time.
fn pause_from_env(mut time: ResMut<Time<Virtual>>, mut done: Local<bool>) {
    if *done {
        return;
    }
    if let Some(at) = std::env::var("CROWDFIELD_PAUSE_AT")
        .ok()
        .and_then(|s| s.parse::<f32>().ok())
        && time.elapsed_secs() >= at
    {
        time.pause();
        *done = true;
    }
}

/// Wall time of the debug plugin's drawing systems, frame by frame.
#[derive(Resource, Default)]
struct DrawTimer {
    started: Option<std::time::Instant>,
    frames: Vec<f64>,
}

fn start_draw_timer(mut timer: ResMut<DrawTimer>) {
    timer.started = Some(std::time::Instant::now());
}

fn stop_draw_timer(mut timer: ResMut<DrawTimer>) {
    if let Some(start) = timer.started.take() {
        timer.frames.push(start.elapsed().as_secs_f64() * 1e3);
    }
}

/// Prints the mean drawing time over the frames the frame-time mode measures.
fn report_draw_time(timer: Res<DrawTimer>, mut exit: MessageReader<AppExit>) {
    if exit.read().next().is_none() {
        return;
    }
    let Some(measured) = std::env::var("CROWDFIELD_FRAME_STATS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    else {
        return;
    };
    let tail = &timer.frames[timer.frames.len().saturating_sub(measured)..];
    if !tail.is_empty() {
        println!(
            "debug overlay systems over {} frames: mean {:.3} ms",
            tail.len(),
            tail.iter().sum::<f64>() / tail.len() as f64
        );
    }
}
