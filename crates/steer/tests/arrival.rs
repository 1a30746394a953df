//! What walkers do after their last goal ([`ArrivalAction`]): `Settle` walks on into an area
//! goal and leaves its doorway open, where `Stop` stands in it.

use crowdfield_field::Shape;
use crowdfield_steer::{AgentId, AgentParams, AgentState, ArrivalAction, Crowd, CrowdSettings};
use glam::DVec2;

/// The door's centre: a gap 1.6 m wide in a wall at x = 10.
const DOOR: DVec2 = DVec2::new(10.0, 6.0);
/// The room beyond the door, the walkers' goal, its west edge 0.3 m past the wall.
const ROOM: (DVec2, DVec2) = (DVec2::new(10.5, 2.5), DVec2::new(16.5, 9.5));
const WALKERS: usize = 16;
/// Walkers must be through the door well within this.
const STEPS: usize = 900;

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Sixteen walkers west of the wall, all bound for the room; arrival radius 0.25 m, as Menge's
/// `goal_reached` conditions often have.
fn door_and_room(on_arrival: ArrivalAction, time_limit: Option<u32>) -> (Crowd, Vec<AgentId>) {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::new(20.0, 12.0),
        ..Default::default()
    };
    let wall = |lo: f64, hi: f64| Shape::Aabb {
        min: DVec2::new(DOOR.x - 0.2, lo),
        max: DVec2::new(DOOR.x + 0.2, hi),
    };
    let statics = vec![wall(0.0, DOOR.y - 0.8), wall(DOOR.y + 0.8, 12.0)];
    let mut crowd = Crowd::new(settings, statics).unwrap();
    let room = crowd
        .add_goal(Shape::Aabb {
            min: ROOM.0,
            max: ROOM.1,
        })
        .unwrap();
    let ids = (0..WALKERS)
        .map(|k| {
            let at = DVec2::new(2.0 + 1.4 * (k % 4) as f64, 3.0 + 2.0 * (k / 4) as f64);
            crowd
                .spawn(AgentParams {
                    position: at,
                    goals: vec![room],
                    arrival_radius: 0.25,
                    on_arrival,
                    time_limits: vec![time_limit],
                    seed: k as u64,
                    ..Default::default()
                })
                .unwrap()
        })
        .collect();
    (crowd, ids)
}

struct Run {
    /// Step at which each walker was reported arrived (each at most once).
    arrived_at: Vec<Option<usize>>,
    /// Where each stands at the end.
    ends: Vec<DVec2>,
    /// Every position after every step, as bits.
    trace: Vec<Vec<(u64, u64)>>,
    /// Pairs of walkers overlapping, over all steps.
    overlaps: usize,
    /// Walkers still walking in at the end.
    settling: usize,
}

fn run(on_arrival: ArrivalAction, time_limit: Option<u32>, threads: usize) -> Run {
    pool(threads).install(|| {
        let (mut crowd, ids) = door_and_room(on_arrival, time_limit);
        let mut arrived_at = vec![None; ids.len()];
        let mut trace = Vec::new();
        let mut overlaps = 0;
        for step in 0..STEPS {
            let report = crowd.step();
            for (k, id) in ids.iter().enumerate() {
                if report.arrived.contains(id) {
                    assert!(arrived_at[k].is_none(), "walker {k} reported twice");
                    arrived_at[k] = Some(step);
                }
                let agent = crowd.agent(*id).unwrap();
                if arrived_at[k].is_some() {
                    assert_eq!(agent.state(), AgentState::Arrived, "walker {k}");
                }
            }
            let at: Vec<(DVec2, f64)> = ids
                .iter()
                .map(|id| crowd.agent(*id).unwrap())
                .map(|a| (a.position(), a.params().radius))
                .collect();
            for (i, (p, r)) in at.iter().enumerate() {
                for (q, s) in &at[i + 1..] {
                    if (*p - *q).length() < r + s - 1e-9 {
                        overlaps += 1;
                    }
                }
            }
            trace.push(
                at.iter()
                    .map(|(p, _)| (p.x.to_bits(), p.y.to_bits()))
                    .collect(),
            );
        }
        let agents = || ids.iter().map(|id| crowd.agent(*id).unwrap());
        Run {
            arrived_at,
            ends: agents().map(|a| a.position()).collect(),
            trace,
            overlaps,
            settling: agents().filter(|a| a.is_settling()).count(),
        }
    })
}

/// Walkers standing within 1 m of the door's centre at the end.
fn in_doorway(run: &Run) -> usize {
    run.ends
        .iter()
        .filter(|p| (**p - DOOR).length() < 1.0)
        .count()
}

#[test]
fn settling_walkers_clear_the_doorway_that_stopping_ones_block() {
    let stop = run(ArrivalAction::Stop, None, 2);
    let settle = run(ArrivalAction::Settle, None, 2);
    let arrived = |r: &Run| r.arrived_at.iter().flatten().count();
    let last = |r: &Run| r.arrived_at.iter().flatten().max().copied();
    println!(
        "stop: {} of {WALKERS} arrived (last at {:?}), {} in the doorway; settle: {} arrived \
         (last at {:?}), {} in the doorway, {} still walking in",
        arrived(&stop),
        last(&stop),
        in_doorway(&stop),
        arrived(&settle),
        last(&settle),
        in_doorway(&settle),
        settle.settling
    );
    assert_eq!(stop.overlaps + settle.overlaps, 0);
    // Stopping where they touch the room, the first walkers stand in its doorway.
    assert!(in_doorway(&stop) > 0);
    // Settling, every walker gets in and none stays in the doorway.
    assert_eq!(arrived(&settle), WALKERS);
    assert_eq!(in_doorway(&settle), 0);
    assert!(arrived(&settle) > arrived(&stop));
    // They walk on into the room and end inside it, clear of its doorway side, gathered
    // round its centre (as closely as 0.5 m local cells let them stand).
    let centre = (ROOM.0 + ROOM.1) * 0.5;
    for p in &settle.ends {
        assert!(p.cmpge(ROOM.0).all() && p.cmple(ROOM.1).all(), "{p}");
        assert!(p.x > ROOM.0.x + 1.0, "{p}");
    }
    let mean = settle
        .ends
        .iter()
        .map(|p| (*p - centre).length())
        .sum::<f64>()
        / WALKERS as f64;
    println!("settled {mean:.2} m from the room's centre on average");
    assert!(mean < 2.2);
    assert_eq!(settle.settling, 0, "all settled well within the run");
}

#[test]
fn settling_does_not_depend_on_the_thread_count() {
    let one = run(ArrivalAction::Settle, None, 1);
    let two = run(ArrivalAction::Settle, None, 2);
    assert_eq!(one.trace, two.trace);
}

/// A goal given up on its time limit is not walked into: the walker stops where the limit
/// found it, as with `Stop`.
#[test]
fn a_goal_given_up_is_not_settled_into() {
    let r = run(ArrivalAction::Settle, Some(5), 1);
    assert!(r.arrived_at.iter().all(Option::is_none));
    assert_eq!(r.settling, 0);
    let (stopped, _) = door_and_room(ArrivalAction::Settle, Some(5));
    let starts: Vec<DVec2> = stopped.agents().map(|(_, a)| a.position()).collect();
    for (end, start) in r.ends.iter().zip(&starts) {
        assert!(end.x < DOOR.x, "still west of the wall: {end}");
        assert!((*end - *start).length() < 5.0 * 0.35 + 1e-9);
    }
    // They stand still after the limit: the last 100 steps moved nobody.
    let tail = &r.trace[STEPS - 100..];
    assert!(tail.windows(2).all(|w| w[0] == w[1]));
}

/// New goals end the walk in: the walker sets off for them as any walker does.
#[test]
fn new_goals_end_settling() {
    let (mut crowd, ids) = door_and_room(ArrivalAction::Settle, None);
    let id = ids[0];
    let back = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(3.0, 6.0),
            radius: 0.5,
        })
        .unwrap();
    let mut settled_once = false;
    for _ in 0..STEPS {
        let report = crowd.step();
        if report.arrived.contains(&id) {
            assert!(crowd.agent(id).unwrap().is_settling());
            crowd.set_goals(id, vec![back]).unwrap();
            settled_once = true;
            let agent = crowd.agent(id).unwrap();
            assert!(!agent.is_settling());
            assert_eq!(agent.state(), AgentState::Moving);
            break;
        }
    }
    assert!(settled_once);
    for _ in 0..STEPS {
        if crowd.step().arrived.contains(&id) {
            let p = crowd.agent(id).unwrap().position();
            assert!(p.x < DOOR.x, "back west: {p}");
            return;
        }
    }
    panic!("never came back");
}

/// At a line goal (a segment 12 m long and 1 m thick, across the walkers' way) a settling
/// walker heads for the line's middle along it and stops on its cells, as `Settle`'s doc says:
/// walkers that reach it near its ends end nearer its middle, and every one stands on it.
#[test]
fn settling_at_a_line_goal_walks_along_it_towards_its_middle() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::new(20.0, 14.0),
        ..Default::default()
    };
    let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
    let line = Shape::Segment {
        a: DVec2::new(12.0, 1.0),
        b: DVec2::new(12.0, 13.0),
        thickness: 1.0,
    };
    let goal = crowd.add_goal(line.clone()).unwrap();
    let starts = [1.5, 4.0, 7.0, 10.0, 12.5];
    let ids: Vec<AgentId> = starts
        .iter()
        .enumerate()
        .map(|(k, y)| {
            crowd
                .spawn(AgentParams {
                    position: DVec2::new(4.0, *y),
                    goals: vec![goal],
                    arrival_radius: 0.25,
                    on_arrival: ArrivalAction::Settle,
                    seed: k as u64,
                    ..Default::default()
                })
                .unwrap()
        })
        .collect();
    let mut arrived_at = vec![None; ids.len()];
    for _ in 0..400 {
        let report = crowd.step();
        for (k, id) in ids.iter().enumerate() {
            if report.arrived.contains(id) {
                arrived_at[k] = Some(crowd.agent(*id).unwrap().position());
            }
        }
    }
    let ends: Vec<DVec2> = ids
        .iter()
        .map(|id| crowd.agent(*id).unwrap().position())
        .collect();
    println!("arrived at {arrived_at:?}, ends {ends:?}");
    let middle = 7.0;
    for (k, id) in ids.iter().enumerate() {
        let agent = crowd.agent(*id).unwrap();
        let arrived = arrived_at[k].expect("every walker reaches the line");
        assert_eq!(agent.state(), AgentState::Arrived);
        assert!(!agent.is_settling(), "walker {k} still settling");
        // On the line's band (half its thickness), give or take a local cell's rounding.
        assert!(
            line.distance(ends[k]).unwrap() <= 0.25,
            "walker {k}: {}",
            ends[k]
        );
        // No further from the middle than where it arrived, give or take half a local cell.
        assert!(
            (ends[k].y - middle).abs() <= (arrived.y - middle).abs() + 0.25,
            "walker {k}: arrived at {arrived}, ended at {}",
            ends[k]
        );
    }
    // The two that reached it furthest out walked along it towards the middle.
    for k in [0, 4] {
        let arrived = arrived_at[k].unwrap();
        assert!(
            (ends[k].y - middle).abs() < (arrived.y - middle).abs() - 1.0,
            "walker {k}: arrived at {arrived}, ended at {}",
            ends[k]
        );
    }
}
