//! The seed's park (seed 000 §6.13, digest 000 §8.2 test 21): five walkers leave the west
//! access, go to the popcorn cart and leave by the north access, each with its own v at
//! ε = 0.8 and a step of half a local cell (s = 0.5). The layout is the one of
//! `assets/scenarios/park.scenario.ron`: a 40 m park (80 × 80 global cells of 0.5 m), a lake in
//! the centre, the cart in the south, hedges leaving five accesses.

use crowdfield_field::Shape;
use crowdfield_steer::{
    AgentId, AgentParams, ArrivalAction, Behaviour, BehaviourSlots, Crowd, CrowdSettings, Frame,
    GoalId,
};
use glam::DVec2;

fn aabb(x0: f64, y0: f64, x1: f64, y1: f64) -> Shape {
    Shape::Aabb {
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    }
}

fn disc(x: f64, y: f64, r: f64) -> Shape {
    Shape::Disc {
        centre: DVec2::new(x, y),
        radius: r,
    }
}

const LAKE: (f64, f64) = (20.0, 21.0);

fn park() -> (Crowd, GoalId, GoalId) {
    let statics = vec![
        disc(LAKE.0, LAKE.1, 6.5),
        aabb(18.5, 5.0, 21.5, 6.5),
        aabb(0.0, 0.0, 1.0, 17.0),
        aabb(0.0, 23.0, 1.0, 40.0),
        aabb(0.0, 39.0, 17.0, 40.0),
        aabb(23.0, 39.0, 40.0, 40.0),
        aabb(39.0, 6.0, 40.0, 34.0),
        aabb(6.0, 0.0, 34.0, 1.0),
        disc(9.0, 31.0, 1.2),
        disc(31.0, 31.0, 1.2),
        disc(31.0, 11.0, 1.0),
        disc(9.0, 10.0, 1.0),
        Shape::RotatedBox {
            centre: DVec2::new(12.0, 20.0),
            half_extents: DVec2::new(0.3, 1.5),
            angle: 0.0,
        },
        Shape::RotatedBox {
            centre: DVec2::new(28.5, 20.0),
            half_extents: DVec2::new(0.3, 1.5),
            angle: 0.0,
        },
    ];
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(40.0),
        ..CrowdSettings::seeds()
    };
    let mut crowd = Crowd::new(settings, statics).unwrap();
    let cart = crowd.add_goal(aabb(19.0, 6.6, 21.0, 7.6)).unwrap();
    let north = crowd.add_goal(aabb(18.0, 38.5, 22.0, 39.5)).unwrap();
    (crowd, cart, north)
}

/// The five walkers of seed 000 §6.13 run 1: start, and v.
const WALKERS: [((f64, f64), (f64, f64)); 5] = [
    ((2.0, 18.0), (1.0, 0.0)),
    ((2.0, 19.5), (0.707, 0.707)),
    ((2.0, 21.0), (0.0, 1.0)),
    ((3.5, 18.8), (-1.0, 0.0)),
    ((3.5, 20.3), (-0.707, -0.707)),
];

fn walker(i: usize, cart: GoalId, north: GoalId) -> AgentParams {
    let ((x, y), (vx, vy)) = WALKERS[i];
    AgentParams {
        position: DVec2::new(x, y),
        goals: vec![cart, north],
        // s = 0.5: half a 0.5 m local cell per planner step.
        max_step: 0.25,
        behaviour: BehaviourSlots::single(Behaviour::Constant {
            epsilon: 0.8,
            v: DVec2::new(vx, vy),
            frame: Frame::World,
        }),
        seed: i as u64 + 1,
        // The north access is an exit: walkers leave the park there.
        on_arrival: ArrivalAction::Despawn,
        ..Default::default()
    }
}

/// Runs the given walkers together; returns each one's path and whether it finished both goals.
fn run(which: &[usize]) -> Vec<(Vec<DVec2>, bool)> {
    let (mut crowd, cart, north) = park();
    let ids: Vec<AgentId> = which
        .iter()
        .map(|&i| crowd.spawn(walker(i, cart, north)).unwrap())
        .collect();
    let mut paths: Vec<Vec<DVec2>> = ids
        .iter()
        .map(|id| vec![crowd.agent(*id).unwrap().position()])
        .collect();
    let mut done = vec![false; ids.len()];
    let mut min_gap = f64::INFINITY;
    for _ in 0..1200 {
        let report = crowd.step();
        for (k, id) in ids.iter().enumerate() {
            if let Some(agent) = crowd.agent(*id) {
                paths[k].push(agent.position());
            }
            done[k] |= report.arrived.contains(id);
        }
        let here: Vec<usize> = (0..ids.len())
            .filter(|k| crowd.agent(ids[*k]).is_some())
            .collect();
        for (n, &a) in here.iter().enumerate() {
            for &b in &here[n + 1..] {
                let (p, q) = (*paths[a].last().unwrap(), *paths[b].last().unwrap());
                min_gap = min_gap.min((p - q).length() - 0.5);
            }
        }
        if done.iter().all(|d| *d) {
            break;
        }
    }
    assert!(min_gap >= -1e-9, "walkers overlapped: gap {min_gap}");
    paths.into_iter().zip(done).collect()
}

/// Symmetric Hausdorff distance between two paths.
fn hausdorff(a: &[DVec2], b: &[DVec2]) -> f64 {
    let one_way = |a: &[DVec2], b: &[DVec2]| {
        a.iter()
            .map(|p| {
                b.iter()
                    .map(|q| (*p - *q).length())
                    .fold(f64::INFINITY, f64::min)
            })
            .fold(0.0, f64::max)
    };
    one_way(a, b).max(one_way(b, a))
}

/// Which side of the lake the path passes on its way north: −1 west, +1 east (the x of the
/// first point at the lake's latitude after the cart).
fn lake_side(path: &[DVec2]) -> i32 {
    let after_cart = path.iter().position(|p| p.y < 8.5).unwrap_or(0);
    path[after_cart..]
        .iter()
        .find(|p| (p.y - LAKE.1).abs() < 0.3)
        .map_or(0, |p| if p.x < LAKE.0 { -1 } else { 1 })
}

#[test]
fn park_scripted_five_walkers_alone_and_together() {
    let solo: Vec<Vec<DVec2>> = (0..5)
        .map(|i| {
            let mut r = run(&[i]);
            let (path, done) = r.remove(0);
            assert!(done, "walker {i} alone completed both goals");
            path
        })
        .collect();
    let together = run(&[0, 1, 2, 3, 4]);
    for (i, (path, done)) in together.iter().enumerate() {
        assert!(
            done,
            "walker {i} completed both goals with the others (ended at {}, after {} steps)",
            path.last().unwrap(),
            path.len()
        );
    }
    // Solo paths differ pairwise by more than two local cells.
    let mut closest = f64::INFINITY;
    for a in 0..5 {
        for b in a + 1..5 {
            let h = hausdorff(&solo[a], &solo[b]);
            closest = closest.min(h);
        }
    }
    // Concurrent paths differ from the solo ones.
    let moved: Vec<f64> = (0..5)
        .map(|i| hausdorff(&solo[i], &together[i].0))
        .collect();
    let sides_solo: Vec<i32> = solo.iter().map(|p| lake_side(p)).collect();
    let sides_together: Vec<i32> = together.iter().map(|(p, _)| lake_side(p)).collect();
    println!(
        "closest pair of solo paths (Hausdorff) {closest:.2} m; solo vs together {moved:.2?}; \
         lake side solo {sides_solo:?}, together {sides_together:?}"
    );
    assert!(
        closest > 1.0,
        "solo paths differ pairwise: closest {closest}"
    );
    assert!(
        moved.iter().any(|m| *m > 1.0),
        "interaction changed some path"
    );
    // As a2 did in the seed, some walker goes round the other side of the lake with company.
    assert!(sides_solo.iter().chain(&sides_together).all(|s| *s != 0));
    assert_ne!(
        sides_solo, sides_together,
        "some walker changed its side of the lake"
    );
}

/// Digest 000 test 22: 100 walkers with random v in [−1, 1]², ε = 0.8, random steps of 0.3–1
/// local cells, random free starts, each heading for one of the six goals and leaving there.
#[test]
fn park_crowd_of_a_hundred() {
    let (mut crowd, cart, north) = park();
    let more = [
        aabb(0.2, 17.5, 1.0, 22.5),
        aabb(39.2, 34.5, 39.8, 38.5),
        aabb(1.5, 0.3, 5.5, 1.0),
        aabb(35.0, 0.3, 39.5, 1.0),
    ];
    let mut goals = vec![cart, north];
    goals.extend(more.into_iter().map(|g| crowd.add_goal(g).unwrap()));
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut ids = Vec::new();
    let mut tries = 0;
    while ids.len() < 100 {
        tries += 1;
        assert!(tries < 100_000);
        let p = DVec2::new(2.0 + 36.0 * next(), 2.0 + 36.0 * next());
        let v = DVec2::new(2.0 * next() - 1.0, 2.0 * next() - 1.0);
        let step = (0.3 + 0.7 * next()) * 0.5;
        let goal = goals[(next() * 6.0) as usize % 6];
        let params = AgentParams {
            position: p,
            goals: vec![goal],
            max_step: step,
            behaviour: BehaviourSlots::single(Behaviour::Constant {
                epsilon: 0.8,
                v,
                frame: Frame::World,
            }),
            on_arrival: ArrivalAction::Despawn,
            seed: ids.len() as u64,
            ..Default::default()
        };
        // Starts inside obstacles or on other walkers are rejected; draw again.
        if let Ok(id) = crowd.spawn(params) {
            ids.push(id);
        }
    }
    let statics: Vec<Shape> = crowd.statics().to_vec();
    let mut arrived = 0;
    let mut worst_wall = f64::INFINITY;
    let mut worst_gap = f64::INFINITY;
    let mut steps = 0;
    for _ in 0..2000 {
        let report = crowd.step();
        steps += 1;
        arrived += report.arrived.len();
        let live: Vec<DVec2> = crowd.agents().map(|(_, a)| a.position()).collect();
        for (i, p) in live.iter().enumerate() {
            assert!(p.is_finite());
            for s in &statics {
                worst_wall = worst_wall.min(s.distance(*p).unwrap() - 0.25);
            }
            for q in &live[i + 1..] {
                worst_gap = worst_gap.min((*p - *q).length() - 0.5);
            }
        }
        if live.is_empty() {
            break;
        }
    }
    println!(
        "park crowd: {arrived} of 100 arrived in {steps} steps; closest wall clearance {worst_wall:.3}, \
         smallest gap {worst_gap:.3}"
    );
    assert!(worst_wall >= -1e-9, "a walker entered an obstacle");
    assert!(worst_gap >= -1e-9, "walkers overlapped");
    assert!(arrived >= 95, "{arrived} of 100 arrived");
}
