//! Determinism: the same scenario and seed walk bit-identically on reruns and on one, two and
//! three threads, for every steering back end the project has (the plugin on the `Seeds` and
//! `Flow` presets, the crowd stepped on its own, ORCA and seek in the bench) and for groups,
//! drawn paths, the marker back end (tree paths, pursuit, formation, alignment) and BioCrowds. Each run's trajectories (every agent's position,
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

/// The marker back end (seed 002): walkers on tree paths among others, a pursuer, one filling
/// a sprayed formation and one aligning over a mask, beside BVP walkers.
#[test]
fn the_marker_back_end_walks_the_same_on_any_thread_count() {
    let text = r#"(
        name: "markers",
        bounds: (min: (0.0, 0.0), max: (30.0, 20.0)),
        obstacles: [(shape: Aabb(min: (13.0, 6.0), max: (15.0, 14.0)))],
        markers: Some((density: 60.0, seed: 3, sprays: [
            (shape: Aabb(min: (22.0, 14.0), max: (27.0, 18.0)), density: 60.0, tag: 2),
        ], masks: [Grid(origin: (0.0, 0.0), spacing: 2.5, width: 0.2)], mode: Groups)),
        agents: [
            (position: (2.0, 4.0), goals: (targets: [Point((26.0, 4.0))]), markers: Some(Goals)),
            (position: (2.0, 10.0), markers: Some(Pursue(0))),
            (position: (4.0, 16.0), markers: Some(Formation(shape: 2))),
            (position: (9.1, 11.2), markers: Some(Align(0))),
            (position: (27.0, 10.0), goals: (targets: [Point((2.0, 10.0))])),
        ],
        regions: [(
            min: (1.0, 1.0), max: (6.0, 19.0), count: 12, seed: 5,
            goals: (targets: [Point((27.0, 10.0))]),
            markers: Some(Goals),
        )],
    )"#;
    let s = bevy_crowdfield::Scenario::from_ron(text).unwrap();
    same_everywhere(&s, 60);
    // The marker agents walk (the hash is of a moving crowd): the first walker and the
    // pursuer leave their starts.
    let out = crowdfield_cli::run_scenario(
        &s,
        crowdfield_cli::RunOptions {
            stop: crowdfield_cli::Stop::Steps(60),
            field_plots: 0,
            ..Default::default()
        },
    );
    for agent in [0, 1] {
        let rows: Vec<_> = out
            .trajectories
            .iter()
            .filter(|t| t.agent == agent)
            .collect();
        let walked = rows[0].position.distance(rows[rows.len() - 1].position);
        assert!(walked > 2.0, "marker agent {agent} walked {walked} m");
    }
}
