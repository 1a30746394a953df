//! Tree paths (digest 002 §8): the unit tests U2–U6 and U8 and the tree scenarios S1–S4.
//! Stochastic tests run over 20 seeds and assert a pass rate; `--nocapture` prints it.

mod common;

use std::f64::consts::PI;

use common::{Run, still, wall_room};
use crowdfield_markers::personal::goal_direction;
use crowdfield_markers::tree::{SEGMENT, growth_probability};
use crowdfield_markers::{
    Aim, MarkerCrowd, MarkerCrowdSettings, NodeKind, Order, Phase, TreePath, TreeSettings,
};
use glam::DVec2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const START: DVec2 = DVec2::new(2.0, 4.0);
const GOAL: DVec2 = DVec2::new(28.0, 4.0);

/// U2: the weights of Eq. 6 sum to one (one marker: d(n) is its offset), and a set whose
/// weights all vanish gives no direction rather than NaN.
#[test]
fn u2_weights_sum_to_one_and_a_zero_sum_gives_no_child() {
    let d = goal_direction(DVec2::ZERO, DVec2::new(5.0, 0.0), &[DVec2::new(0.6, 0.3)]).unwrap();
    assert!((d - DVec2::new(0.6, 0.3)).length() < 1e-12);
    // Two markers: a convex combination of their offsets.
    let (a, b) = (DVec2::new(0.5, 0.5), DVec2::new(0.5, -0.2));
    let d = goal_direction(DVec2::ZERO, DVec2::new(5.0, 0.0), &[a, b]).unwrap();
    let t = (d - b).dot(a - b) / (a - b).length_squared();
    assert!((0.0..=1.0).contains(&t) && (b + (a - b) * t - d).length() < 1e-12);
    // Every marker opposite the goal: Σf = 0.
    assert!(goal_direction(DVec2::ZERO, DVec2::X, &[-DVec2::X, -DVec2::X * 0.5]).is_none());
}

/// U3: P(n_g) = 1, P in (0, 1], falling with the distance to the goal; P_e(n_e) = 1, rising
/// with the distance from the threat.
#[test]
fn u3_growth_probabilities() {
    let aim = Aim::Towards(DVec2::new(10.0, 0.0));
    let best = DVec2::new(8.0, 0.0);
    assert_eq!(growth_probability(aim, best, best), 1.0);
    let mut last = 1.0;
    for k in 1..40 {
        let p = best - DVec2::new(0.5 * k as f64, 0.3 * k as f64);
        let chance = growth_probability(aim, p, best);
        assert!(chance > 0.0 && chance <= 1.0 && chance < last);
        last = chance;
    }
    assert_eq!(
        growth_probability(aim, DVec2::new(10.0, 0.0), DVec2::new(10.0, 0.0)),
        1.0
    );
    let away = Aim::AwayFrom {
        centre: DVec2::ZERO,
        radius: 3.0,
    };
    let far = DVec2::new(9.0, 0.0);
    assert_eq!(growth_probability(away, far, far), 1.0);
    let mut last = 0.0;
    for k in 1..18 {
        let chance = growth_probability(away, DVec2::new(0.0, 0.5 * k as f64), far);
        assert!(chance > last && chance <= 1.0);
        last = chance;
    }
}

/// U4 and U6 over the room of S1: every grown node lies α from its parent, and every node's
/// marker set S(n) holds only markers within A_r, nearer it than any other live node of the
/// tree, and owned by no other node of it; two agents' trees may share markers.
#[test]
fn u4_u6_segments_are_alpha_long_and_marker_sets_are_the_nodes_voronoi_cells() {
    let set = wall_room(1);
    let settings = TreeSettings::default();
    let mut a = TreePath::new(settings, &set, START, Aim::Towards(GOAL), 11, 0).unwrap();
    let mut b = TreePath::new(settings, &set, START + DVec2::Y, Aim::Towards(GOAL), 12, 1).unwrap();
    let mut shared = 0;
    for iteration in 0..12 {
        a.grow(&set, None);
        b.grow(&set, None);
        for (id, node) in a.nodes() {
            if let (Some(parent), NodeKind::Grown) = (node.parent, node.kind) {
                let len = node.position.distance(a.node(parent).unwrap().position);
                assert!(
                    (len - SEGMENT).abs() < 1e-9,
                    "segment {len} at iteration {iteration}"
                );
            }
            if !node.alive || iteration % 3 != 0 {
                continue;
            }
            for (m, q) in a.marker_set(&set, id, None) {
                assert!(q.distance(node.position) <= settings.action_radius + 1e-12);
                let d = q.distance(node.position);
                for (other, n) in a.nodes() {
                    if other != id && n.alive {
                        assert!(
                            q.distance(n.position) >= d,
                            "marker {m} nearer node {}",
                            other.0
                        );
                    }
                }
                assert!(a.owner_of(m).is_none_or(|o| o == id));
                if b.owner_of(m).is_some() {
                    shared += 1;
                }
            }
        }
    }
    assert!(shared > 0, "the two trees never used a common marker");
}

/// U5: with a full disc of markers round a node, d(n) points at the goal within 7° on
/// average at 60 per m² and within 2° at 1,000 per m² (300 trials each).
#[test]
fn u5_the_growth_direction_converges_on_the_goal_as_markers_thicken() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for (density, limit) in [(60.0, 7.0), (1000.0, 2.0)] {
        let count = (density * PI * 1.2 * 1.2) as usize;
        let mut total = 0.0;
        for _ in 0..300 {
            let a: f64 = rng.random::<f64>() * 2.0 * PI;
            let goal = DVec2::new(a.cos(), a.sin()) * 10.0;
            let markers: Vec<DVec2> = (0..count)
                .map(|_| {
                    let r = 1.2 * rng.random::<f64>().sqrt();
                    let t = rng.random::<f64>() * 2.0 * PI;
                    DVec2::new(t.cos(), t.sin()) * r
                })
                .collect();
            let d = goal_direction(DVec2::ZERO, goal, &markers).unwrap();
            total += d.angle_to(goal).abs().to_degrees();
        }
        let mean = total / 300.0;
        println!("U5: {density}/m²: mean deviation {mean:.2}°");
        assert!(mean <= limit, "{density}/m²: {mean:.2}°");
    }
}

/// A seek crowd of one agent walking the room of S1.
fn one_walker(seed: u64) -> (Run, crowdfield_markers::MarkerSet) {
    let set = wall_room(seed);
    let settings = MarkerCrowdSettings {
        seed,
        ..Default::default()
    };
    let mut run = Run::new(MarkerCrowd::new(settings).unwrap());
    let id = run.add(START);
    run.crowd.insert(&set, id, Order::Seek(GOAL)).unwrap();
    (run, set)
}

/// S1: in the room with a wall and a 4 m gap, a branch reaches within α of the goal in at
/// most 49 iterations on at least 90 % of 20 seeds; the agent arrives and never enters the
/// wall. U8 on the way: a step along a segment is β = 0.05 m.
#[test]
fn s1_trees_reach_the_goal_round_a_wall_and_agents_follow_them() {
    let mut passed = 0;
    let mut iterations = Vec::new();
    for seed in 0..20 {
        let (mut run, set) = one_walker(seed);
        let id = crowdfield_steer::AgentId(0);
        let mut reached_at = None;
        let mut exact_steps = 0;
        for frame in 0..2000 {
            let before = run.position(id);
            run.step(&set, &still);
            let p = run.position(id);
            assert!(
                !(p.x > 14.0 && p.x < 16.0 && p.y < 8.0),
                "seed {seed}: inside the wall at {p} (frame {frame})"
            );
            let moved = p.distance(before);
            if (moved - 0.05).abs() < 1e-9 {
                exact_steps += 1;
            } else {
                assert!(moved < 0.05 + 1e-9, "a step of {moved}");
            }
            if reached_at.is_none()
                && let Some(tree) = run.crowd.state(id).unwrap().tree()
                && tree.goal().is_some()
            {
                reached_at = Some(tree.iterations());
            }
            if run.crowd.state(id).unwrap().phase() == Phase::Arrived {
                break;
            }
        }
        assert!(exact_steps > 100, "U8: {exact_steps} full steps");
        let arrived = run.crowd.state(id).unwrap().phase() == Phase::Arrived;
        assert!(arrived, "seed {seed}: not arrived at {}", run.position(id));
        assert!(run.position(id).distance(GOAL) <= 0.05 + 1e-9);
        if let Some(it) = reached_at {
            iterations.push(it);
            if it <= 49 {
                passed += 1;
            }
        }
    }
    println!("S1: {passed}/20 seeds reached within 49 iterations; iterations {iterations:?}");
    assert!(passed >= 18, "S1: {passed}/20");
}

/// S3: nodes near the goal grow children faster than nodes far from it (over 20 seeds).
#[test]
fn s3_bifurcations_gather_near_the_goal() {
    let (mut near, mut near_n, mut far, mut far_n) = (0.0, 0usize, 0.0, 0usize);
    for seed in 0..20 {
        let set = wall_room(seed);
        let mut tree = TreePath::new(
            TreeSettings::default(),
            &set,
            START,
            Aim::Towards(GOAL),
            seed,
            0,
        )
        .unwrap();
        while tree.goal().is_none() && tree.iterations() < 60 {
            tree.grow(&set, None);
        }
        for (_, n) in tree.nodes() {
            if n.kind != NodeKind::Grown || !n.alive {
                continue;
            }
            // Children per growth iteration the node has lived: P is a chance per iteration,
            // and nodes near the goal are young when the tree reaches it.
            let children = n.children.len() as f64 / f64::from(tree.iterations() - n.born + 1);
            let d = n.position.distance(GOAL);
            if d <= 5.0 {
                near += children;
                near_n += 1;
            } else if d >= 15.0 {
                far += children;
                far_n += 1;
            }
        }
    }
    let (near, far) = (near / near_n as f64, far / far_n as f64);
    println!(
        "S3: children per node and iteration {near:.3} within 5 m of the goal, {far:.3} beyond 15 m"
    );
    assert!(near > far, "near {near:.2} far {far:.2}");
}

/// S4: once the agent passes a key position, the siblings it did not take are dead with their
/// subtrees, and their markers are free for the tree again.
#[test]
fn s4_unchosen_branches_die_and_give_their_markers_back() {
    let mut checked = 0;
    for seed in 0..20 {
        let (mut run, set) = one_walker(seed);
        let id = crowdfield_steer::AgentId(0);
        for _ in 0..1500 {
            let before = run.crowd.state(id).unwrap().at();
            run.step(&set, &still);
            let state = run.crowd.state(id).unwrap();
            let tree = state.tree().unwrap();
            if state.at() != before
                && let Some(parent) = tree.node(state.at()).unwrap().parent
            {
                // The agent left `parent` for `at`: every other child of it is dead, down to
                // the leaves, and owns nothing.
                let node = tree.node(parent).unwrap();
                for &c in &node.children {
                    if c == state.at() {
                        continue;
                    }
                    let mut stack = vec![c];
                    while let Some(n) = stack.pop() {
                        let dead = tree.node(n).unwrap();
                        assert!(!dead.alive, "seed {seed}: node {} alive", n.0);
                        stack.extend(dead.children.iter().copied());
                        assert!(tree.owned().all(|(_, o)| o != n));
                    }
                    checked += 1;
                }
            }
            if state.phase() == Phase::Arrived {
                break;
            }
        }
    }
    println!("S4: {checked} unchosen branches checked");
    assert!(checked > 20);
}

/// Mean speed (m/s), mean absolute angular velocity (rad/s) and mean turning per metre
/// (rad/m) of one agent's walk across the S1 room, over 20 seeds, on markers made by
/// `generation`.
fn walk_measures(generation: crowdfield_markers::Generation) -> (f64, f64, f64) {
    use crowdfield_markers::{MarkerSet, MarkerSettings};
    let (mut speed, mut angular, mut turning) = (0.0, 0.0, 0.0);
    for seed in 0..20 {
        let settings = MarkerSettings {
            min: DVec2::ZERO,
            max: DVec2::new(30.0, 12.0),
            ..Default::default()
        };
        let wall = crowdfield_field::Shape::Aabb {
            min: DVec2::new(14.0, 0.0),
            max: DVec2::new(16.0, 8.0),
        };
        let mut set = MarkerSet::new(settings, vec![wall]).unwrap();
        set.generate(generation, 60.0, seed).unwrap();
        let mut run = Run::new(
            MarkerCrowd::new(MarkerCrowdSettings {
                seed,
                ..Default::default()
            })
            .unwrap(),
        );
        let id = run.add(START);
        run.crowd.insert(&set, id, Order::Seek(GOAL)).unwrap();
        let mut walk = vec![START];
        for _ in 0..3000 {
            run.step(&set, &still);
            walk.push(run.position(id));
            if run.crowd.state(id).unwrap().phase() == Phase::Arrived {
                break;
            }
        }
        let steps: Vec<DVec2> = walk
            .windows(2)
            .map(|w| w[1] - w[0])
            .filter(|d| d.length() > 1e-9)
            .collect();
        let length: f64 = steps.iter().map(|d| d.length()).sum();
        let turn: f64 = steps.windows(2).map(|w| w[0].angle_to(w[1]).abs()).sum();
        let seconds = (walk.len() - 1) as f64 / 24.0;
        speed += length / seconds;
        angular += turn / seconds;
        turning += turn / length;
    }
    (speed / 20.0, angular / 20.0, turning / 20.0)
}

/// M3: walks on dart-thrown and on jittered-grid markers differ by at most 10 % in mean speed,
/// mean absolute angular velocity and turning per metre (digest 002 M3, seed 002 §6.1: at 60 per m² the
/// two were indistinguishable).
#[test]
fn m3_dart_and_grid_markers_give_the_same_walks() {
    use crowdfield_markers::Generation;
    let dart = walk_measures(Generation::default());
    let grid = walk_measures(Generation::JitteredGrid);
    println!(
        "M3: dart {:.3} m/s, {:.3} rad/s, {:.3} rad/m; grid {:.3} m/s, {:.3} rad/s, {:.3} rad/m",
        dart.0, dart.1, dart.2, grid.0, grid.1, grid.2
    );
    for (a, b) in [(dart.0, grid.0), (dart.1, grid.1), (dart.2, grid.2)] {
        assert!((a - b).abs() <= 0.1 * a.max(b), "{a} vs {b}");
    }
}
