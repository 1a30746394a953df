//! Behaviour and inertia scenarios of digest 000 §8.2 (tests 11, 12 and 14) in open areas.

use crowdfield_field::Shape;
use crowdfield_steer::{
    AgentParams, AgentState, Behaviour, BehaviourSlots, Crowd, CrowdSettings, Frame, HeadingRule,
    LocalMapSettings, SEED_OMEGA, SpeedLaw,
};
use glam::DVec2;

struct Run {
    path: Vec<DVec2>,
    arrived: bool,
}

fn open_run(size: DVec2, start: DVec2, goal: Shape, mut params: AgentParams, budget: usize) -> Run {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: size,
        ..CrowdSettings::seeds()
    };
    let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
    let g = crowd.add_goal(goal).unwrap();
    params.position = start;
    params.goals = vec![g];
    let id = crowd.spawn(params).unwrap();
    let mut path = vec![start];
    for _ in 0..budget {
        crowd.step();
        path.push(crowd.agent(id).unwrap().position());
        if crowd.agent(id).unwrap().state() == AgentState::Arrived {
            break;
        }
    }
    let arrived = crowd.agent(id).unwrap().state() == AgentState::Arrived;
    Run { path, arrived }
}

fn params(behaviour: Behaviour, heading: HeadingRule, speed: SpeedLaw) -> AgentParams {
    AgentParams {
        radius: 0.25,
        max_step: 0.3,
        behaviour: BehaviourSlots::single(behaviour),
        heading,
        speed,
        local_map: LocalMapSettings {
            side: 15,
            cell_size: 0.4,
            sweeps: 30,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Dominant period (in steps) of a series, by the first autocorrelation peak after zero.
fn dominant_period(series: &[f64]) -> usize {
    let mean = series.iter().sum::<f64>() / series.len() as f64;
    let x: Vec<f64> = series.iter().map(|v| v - mean).collect();
    let ac = |lag: usize| -> f64 {
        (0..x.len() - lag).map(|i| x[i] * x[i + lag]).sum::<f64>() / (x.len() - lag) as f64
    };
    let lags: Vec<f64> = (0..x.len() / 2).map(ac).collect();
    let first_negative = lags.iter().position(|v| *v < 0.0).unwrap_or(1);
    (first_negative..lags.len())
        .max_by(|a, b| lags[*a].total_cmp(&lags[*b]))
        .unwrap()
}

#[test]
fn sinusoid_weaves_with_a_36_step_period() {
    let size = DVec2::new(80.0, 20.0);
    let goal = Shape::Aabb {
        min: DVec2::new(77.0, 1.0),
        max: DVec2::new(79.0, 19.0),
    };
    let b = Behaviour::Sinusoid {
        epsilon: 1.0,
        omega: SEED_OMEGA,
    };
    let run = open_run(
        size,
        DVec2::new(2.0, 10.0),
        goal,
        params(b, HeadingRule::default(), SpeedLaw::FaTable),
        600,
    );
    assert!(run.arrived);
    let lateral: Vec<f64> = run.path.iter().map(|p| p.y - 10.0).collect();
    let amplitude = lateral.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let period = dominant_period(&lateral);
    println!(
        "sinusoid: period {period} steps, amplitude {amplitude:.2} m, {} steps",
        run.path.len()
    );
    assert!((33..=39).contains(&period), "period {period}");
    assert!(amplitude > 0.3, "no visible weave: {amplitude}");
}

fn heading_changes(path: &[DVec2]) -> Vec<f64> {
    let dirs: Vec<DVec2> = path
        .windows(2)
        .filter_map(|w| (w[1] - w[0]).try_normalize())
        .collect();
    dirs.windows(2).map(|w| w[0].angle_to(w[1]).abs()).collect()
}

#[test]
fn more_mass_smooths_the_heading_and_a_huge_mass_orbits() {
    let size = DVec2::new(40.0, 20.0);
    let goal = || Shape::Disc {
        centre: DVec2::new(36.0, 10.0),
        radius: 0.5,
    };
    let b = Behaviour::Constant {
        epsilon: 0.7,
        v: DVec2::new(0.7, 0.7),
        frame: Frame::World,
    };
    let mut variances = Vec::new();
    for ma in [0.0, 4.0, 12.0, 24.0] {
        let run = open_run(
            size,
            DVec2::new(3.0, 10.0),
            goal(),
            params(b.clone(), HeadingRule::Mass(ma), SpeedLaw::FaTable),
            1_000,
        );
        assert!(run.arrived, "m_a = {ma} did not arrive");
        let h = heading_changes(&run.path);
        let var = h.iter().map(|v| v * v).sum::<f64>() / h.len() as f64;
        variances.push(var);
    }
    println!("heading-change mean squares {variances:.5?}");
    for w in variances.windows(2) {
        assert!(
            w[1] <= w[0] * 1.05,
            "not smoother with more mass: {variances:?}"
        );
    }
    // At m_a = 100 the heading turns ~0.01 rad per step: a turning circle of ~30 m at 0.3 m per
    // step, so the orbit needs room.
    // The agent starts facing +y with the goal 20 m to its east.
    let centre = DVec2::splat(60.0);
    let orbiting = |ma: f64| {
        let mut p = params(b.clone(), HeadingRule::Mass(ma), SpeedLaw::Constant);
        p.initial_heading = DVec2::Y;
        open_run(
            DVec2::splat(120.0),
            DVec2::new(40.0, 60.0),
            Shape::Disc {
                centre,
                radius: 0.5,
            },
            p,
            3_000,
        )
    };
    assert!(orbiting(4.0).arrived, "m_a = 4 from the same start arrives");
    let orbit = orbiting(100.0);
    let closest = orbit
        .path
        .iter()
        .map(|p| (*p - centre).length())
        .fold(f64::INFINITY, f64::min);
    // Orbiting: it keeps coming back past the goal (separate entries within 10 m) without
    // ever arriving.
    let mut passes = 0;
    let mut inside = false;
    for p in &orbit.path {
        let near = (*p - centre).length() < 10.0;
        if near && !inside {
            passes += 1;
        }
        inside = near;
    }
    println!(
        "m_a = 100: arrived {}, closest {closest:.2} m, {passes} passes",
        orbit.arrived
    );
    assert!(!orbit.arrived, "m_a = 100 should orbit, not arrive");
    assert!(passes >= 2, "it should keep circling back, {passes} passes");
}

/// Digest 000 §8.2 test 11 (diagonal v), under our sign convention.
///
/// The seed ran the printed kernel, whose valley line grows from the local goal towards −v: for
/// its v5 = (0.7, −0.7), whose x part points at the goal, that line crosses the window, so the
/// walker swings sharply onto it; v6 = (−0.7, −0.7) sends the line out of the window behind the
/// goal and the walker swerves gently. Our world convention feeds −v to that kernel (paths bend
/// towards +v, digest 000 §2.8), which is the seed's geometry with v negated: the sharp early
/// swing belongs to the v whose along-flow part points *away* from the goal. In a corridor along
/// +x that is (−0.7, −0.7) — the seed's a5 under a point reflection — and it reaches its
/// wall-ward extreme before (0.7, −0.7) does. Both bend to −y (the +v side) and both arrive.
#[test]
fn diagonal_v_against_the_flow_swings_to_the_wall_first() {
    let size = DVec2::new(30.0, 5.0);
    let goal = || Shape::Aabb {
        min: DVec2::new(28.0, 0.5),
        max: DVec2::new(29.5, 4.5),
    };
    let extreme = |v: DVec2| {
        let b = Behaviour::Constant {
            epsilon: 0.7,
            v,
            frame: Frame::World,
        };
        let run = open_run(
            size,
            DVec2::new(1.5, 2.5),
            goal(),
            params(b, HeadingRule::default(), SpeedLaw::FaTable),
            600,
        );
        assert!(run.arrived, "{v} did not arrive");
        let (k, low) = run
            .path
            .iter()
            .enumerate()
            .map(|(k, p)| (k, p.y))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        // Heading change over the first five steps: how sharply it swings at the start.
        let turn: f64 = heading_changes(&run.path[..run.path.len().min(7)])
            .iter()
            .sum();
        (run.path[k].x, low, turn)
    };
    let (x_along, y_along, turn_along) = extreme(DVec2::new(0.7, -0.7));
    let (x_against, y_against, turn_against) = extreme(DVec2::new(-0.7, -0.7));
    println!(
        "v = (0.7, −0.7): lowest {y_along:.2} m at x = {x_along:.1}, first turns {turn_along:.3} rad; \
         v = (−0.7, −0.7): lowest {y_against:.2} m at x = {x_against:.1}, first turns {turn_against:.3} rad"
    );
    assert!(y_along < 2.5 && y_against < 2.5, "both bend to −y");
    assert!(
        x_against < x_along,
        "against the flow should reach its wall-ward extreme first"
    );
    assert!(
        turn_against > 2.0 * turn_along,
        "against the flow should turn more sharply at the start"
    );
}

/// Digest 001 T11 (seed 001 Fig. 5, where η = 0.95 overshoots): in a corridor with ε = 0.7,
/// v = (0.7, −0.7) and constant speed, the mean heading change per step on the approach (until
/// the agent first draws level with the target) falls as η grows; η ≤ 0.75 reaches the target;
/// η = 0.95 turns too late, misses it and runs into the end wall. At η = 0.99 the heading hardly
/// leaves the first descent, which here points straight at the target, so the agent walks into
/// it: recorded, not asserted as an overshoot (the digest's figure has the overshoot at its
/// strongest panel; in this corridor it is η = 0.95).
#[test]
fn inertia_eta_sweep_smooths_and_overshoots_at_095() {
    let size = DVec2::new(30.0, 5.0);
    let target = DVec2::new(26.0, 2.5);
    let b = Behaviour::Constant {
        epsilon: 0.7,
        v: DVec2::new(0.7, -0.7),
        frame: Frame::World,
    };
    let mut means = Vec::new();
    for eta in [0.0, 0.25, 0.5, 0.75, 0.95, 0.99] {
        let mut p = params(b.clone(), HeadingRule::Inertia(eta), SpeedLaw::Constant);
        p.arrival_radius = 0.3;
        let run = open_run(
            size,
            DVec2::new(2.0, 2.5),
            Shape::Disc {
                centre: target,
                radius: 0.3,
            },
            p.clone(),
            400,
        );
        let level = run
            .path
            .iter()
            .position(|q| q.x >= target.x - 0.3)
            .unwrap_or(run.path.len() - 1);
        let h = heading_changes(&run.path[..=level]);
        let mean = h.iter().sum::<f64>() / h.len().max(1) as f64;
        means.push(mean);
        let closest = run
            .path
            .iter()
            .map(|q| (*q - target).length())
            .fold(f64::INFINITY, f64::min);
        let end_wall = run.path.iter().any(|q| size.x - q.x <= p.radius + 0.05);
        println!(
            "η = {eta}: arrived {}, steps {}, approach mean |Δheading| {mean:.4} rad, closest {closest:.2} m, end wall {end_wall}",
            run.arrived,
            run.path.len() - 1
        );
        if eta <= 0.75 {
            assert!(run.arrived, "η = {eta} did not reach the target");
        }
        if eta == 0.95 {
            assert!(
                !run.arrived && end_wall,
                "η = 0.95 should miss the target and hit the end wall"
            );
        }
    }
    let inversions = means.windows(2).filter(|w| w[1] > w[0]).count();
    let large = means.windows(2).filter(|w| w[1] > w[0] * 1.05).count();
    assert!(
        inversions <= 1 && large == 0,
        "not smoother with more inertia: {means:?}"
    );
}

/// Sight (`CrowdSettings::line_of_sight`): a neighbour behind a wall is not "the nearest" for
/// `TowardsNearest`; one further away in the open is. Alike with 30 pillars along the far
/// side of the world, enough static shapes for sight to look them up on the crowd's shape grid.
#[test]
fn with_line_of_sight_a_neighbour_behind_a_wall_is_not_seen() {
    for pillars in [false, true] {
        sight_hides_a_neighbour_behind_a_wall(pillars);
    }
}

fn sight_hides_a_neighbour_behind_a_wall(pillars: bool) {
    let bias_after_one_step = |line_of_sight: bool| {
        let settings = CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::new(20.0, 10.0),
            line_of_sight,
            ..CrowdSettings::seeds()
        };
        let wall = Shape::Aabb {
            min: DVec2::new(3.0, 5.7),
            max: DVec2::new(7.0, 5.9),
        };
        let mut statics = vec![wall];
        if pillars {
            statics.extend((0..30).map(|k| Shape::Disc {
                centre: DVec2::new(0.4 + 0.65 * k as f64, 9.6),
                radius: 0.2,
            }));
        }
        let mut crowd = Crowd::new(settings, statics).unwrap();
        let goal = crowd
            .add_goal(Shape::Disc {
                centre: DVec2::new(18.0, 3.0),
                radius: 0.5,
            })
            .unwrap();
        let walker = |at: DVec2, behaviour: Behaviour| AgentParams {
            position: at,
            goals: vec![goal],
            ..params(behaviour, HeadingRule::default(), SpeedLaw::default())
        };
        let seer = crowd
            .spawn(walker(
                DVec2::new(5.0, 5.0),
                Behaviour::TowardsNearest { epsilon: 0.8 },
            ))
            .unwrap();
        // 1.5 m away behind the wall, and 2.2 m away in the open.
        crowd
            .spawn(walker(DVec2::new(5.0, 6.5), Behaviour::Harmonic))
            .unwrap();
        crowd
            .spawn(walker(DVec2::new(7.2, 5.0), Behaviour::Harmonic))
            .unwrap();
        crowd.step();
        crowd.agent(seer).unwrap().bias()
    };
    let blind = bias_after_one_step(false);
    let sighted = bias_after_one_step(true);
    assert!(
        blind.direction().y > 0.99,
        "pillars {pillars}: without sight the nearest is the one behind the wall: v = {:?}",
        blind.direction()
    );
    assert!(
        sighted.direction().x > 0.99,
        "pillars {pillars}: with sight the nearest is the one in the open: v = {:?}",
        sighted.direction()
    );
    assert_eq!((blind.epsilon(), sighted.epsilon()), (0.8, 0.8));
}

/// Digest 000 §8.2 test 13 (seed 000 §6.3, Table 6.2): windows of about 8.8 m with coarse,
/// medium and fine cells — (0.8 m, n = 11), (0.59 m, n = 15), (0.42 m, n = 21) — all with ε = 1,
/// v = (0.7, 0.7), 60 sweeps, rule A (the raw descent, so oscillations show) and the same step
/// of 0.4 m, in the open and in a corridor.
///
/// Roughness is counted as zig-zags per metre: reversals of the turning direction where either
/// turn exceeds 0.01 rad. The digest's summed |Δheading| per metre also counts the smooth bend
/// towards +v and back, whose size depends on ε per cell (so on the cell size) rather than on
/// oscillation: measured 0.083, 0.093, 0.082 rad/m in the open, not monotonic, while the
/// zig-zags fall clearly.
#[test]
fn finer_local_cells_give_smoother_paths() {
    let b = Behaviour::Constant {
        epsilon: 1.0,
        v: DVec2::new(0.7, 0.7),
        frame: Frame::World,
    };
    let scenes = [
        (
            "open",
            DVec2::new(40.0, 20.0),
            DVec2::new(3.0, 10.0),
            Shape::Disc {
                centre: DVec2::new(36.0, 10.0),
                radius: 0.5,
            },
        ),
        (
            "corridor",
            DVec2::new(30.0, 5.0),
            DVec2::new(1.5, 2.5),
            Shape::Aabb {
                min: DVec2::new(28.0, 0.5),
                max: DVec2::new(29.5, 4.5),
            },
        ),
    ];
    for (scene, size, start, goal) in scenes {
        let mut zigzags = Vec::new();
        for (cell_size, side) in [(0.8, 11), (0.59, 15), (0.42, 21)] {
            let mut p = params(b.clone(), HeadingRule::Raw, SpeedLaw::FaTable);
            p.local_map = LocalMapSettings {
                side,
                cell_size,
                sweeps: 60,
                ..Default::default()
            };
            p.max_step = 0.4;
            let run = open_run(size, start, goal.clone(), p, 1_000);
            assert!(
                run.arrived,
                "{scene}: cells of {cell_size} m did not arrive"
            );
            let turns = signed_turns(&run.path);
            let reversals = turns
                .windows(2)
                .filter(|w| w[0] * w[1] < 0.0 && w[0].abs().max(w[1].abs()) > 0.01)
                .count();
            let walked: f64 = run.path.windows(2).map(|w| (w[1] - w[0]).length()).sum();
            println!(
                "{scene}, cell {cell_size} m, n = {side}: {} steps, {walked:.1} m, {reversals} zig-zags",
                run.path.len() - 1,
            );
            zigzags.push(reversals as f64 / walked);
        }
        assert!(
            zigzags[0] > zigzags[1] && zigzags[1] > zigzags[2],
            "{scene}: zig-zags per metre should fall with the cell size: {zigzags:?}"
        );
    }
}

/// Signed heading change between consecutive steps.
fn signed_turns(path: &[DVec2]) -> Vec<f64> {
    let dirs: Vec<DVec2> = path
        .windows(2)
        .filter_map(|w| (w[1] - w[0]).try_normalize())
        .collect();
    dirs.windows(2).map(|w| w[0].angle_to(w[1])).collect()
}
