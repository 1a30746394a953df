//! Determinism: the same scenario and seed walk bit-identically on reruns and on one, two and
//! three threads, for every steering back end the project has (the plugin on the `Seeds` and
//! `Flow` presets, the crowd stepped on its own, ORCA and seek in the bench) and for groups,
//! drawn paths and marker crowds (BioCrowds). Each run's trajectories (every agent's position,
//! as bits, after every planner step) are hashed; the hashes must match.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use crowdfield_cli::bench::{BenchOptions, BenchRow, Steering, bench_scenario};
use crowdfield_cli::load;

fn scenario(name: &str) -> bevy_crowdfield::Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenarios")
        .join(format!("{name}.scenario.ron"));
    load(&path).unwrap()
}

/// Each steering's trajectories hashed, and how many rows went into the hash.
fn hashes(
    s: &bevy_crowdfield::Scenario,
    threads: usize,
    steps: u64,
) -> BTreeMap<String, (u64, usize)> {
    let rows = bench_scenario(
        s,
        BenchOptions {
            max_steps: steps,
            threads,
            repeats: 1,
            keep_trajectories: true,
            ..Default::default()
        },
    )
    .unwrap();
    rows.iter()
        .map(|r: &BenchRow| {
            let samples = &r.recording.as_ref().expect("kept").trajectories;
            let mut h = std::hash::DefaultHasher::new();
            for t in samples {
                (
                    t.step,
                    t.agent,
                    t.position.x.to_bits(),
                    t.position.y.to_bits(),
                )
                    .hash(&mut h);
            }
            (format!("{:?}", r.steering), (h.finish(), samples.len()))
        })
        .collect()
}

/// Runs `s` on one thread twice, then on two and three, and compares every steering's hash.
fn same_everywhere(s: &bevy_crowdfield::Scenario, steps: u64) -> BTreeMap<String, (u64, usize)> {
    let one = hashes(s, 1, steps);
    assert_eq!(one.len(), 4, "four steerings: {one:?}");
    for (steering, (_, rows)) in &one {
        assert!(*rows > 0, "{}: {steering} recorded nothing", s.name);
    }
    assert_eq!(one, hashes(s, 1, steps), "{}: a rerun differs", s.name);
    for threads in [2, 3] {
        assert_eq!(
            one,
            hashes(s, threads, steps),
            "{}: {threads} threads differ from one",
            s.name
        );
    }
    one
}

/// The plugin on the default preset, the crowd on its own, ORCA and seek, in a crowd of 200
/// (large enough that the plugin commits while it plans, the pipelined path).
#[test]
fn the_hallway_walks_the_same_on_any_thread_count_with_every_steering() {
    same_everywhere(&scenario("hallway-two-way"), 60);
}

/// The same crowd on the `Flow` preset (same-way neighbours left out, queueing, impatience).
#[test]
fn the_flow_preset_walks_the_same_on_any_thread_count() {
    let mut s = scenario("hallway-two-way");
    let seeds = same_everywhere(&s, 60);
    s.settings.preset = Some(bevy_crowdfield::steer::Preset::Flow);
    let flow = same_everywhere(&s, 60);
    // The presets walk differently: the hash sees the difference.
    assert_ne!(
        seeds[&format!("{:?}", Steering::Crowdfield)],
        flow[&format!("{:?}", Steering::Crowdfield)]
    );
}

/// Groups in formation: a box along a drawn path's stroke field, a column through waypoints.
#[test]
fn groups_on_drawn_paths_walk_the_same_on_any_thread_count() {
    same_everywhere(&scenario("drawn-paths"), 40);
}

/// Groups ordered to a goal in a wedge, through a corridor.
#[test]
fn groups_in_formation_walk_the_same_on_any_thread_count() {
    same_everywhere(&scenario("wedge-corridor"), 40);
}

/// Marker crowds (BioCrowds) on a terrain, on A* routes and straight.
#[test]
fn marker_crowds_walk_the_same_on_any_thread_count() {
    same_everywhere(&scenario("terrain"), 40);
}
