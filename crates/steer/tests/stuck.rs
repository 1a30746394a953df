//! When walkers are reported stuck ([`CrowdSettings::stuck_after`]): progress is measured down
//! the field a walker follows, not by how far it walks. One that circles round a goal it
//! cannot get into is stuck; one that walks away from its goal along a detour the field takes
//! is not.

use crowdfield_field::Shape;
use crowdfield_steer::{AgentParams, AgentState, ArrivalAction, Crowd, CrowdSettings};
use glam::DVec2;

/// A point goal as the plugin adds one: a disc of its default `point_goal_radius`, 0.5 m.
fn point(x: f64, y: f64) -> Shape {
    Shape::Disc {
        centre: DVec2::new(x, y),
        radius: 0.5,
    }
}

/// Sixteen walkers in a row 3 m up an open 20 m square, all bound for one point 12 m north of
/// them with an arrival radius of 1 m, as Menge's globalNavSwap sends its walkers to a point:
/// about eleven fit within the radius, and the rest walk round those standing there.
#[test]
fn walkers_circling_a_full_goal_are_stuck() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(20.0),
        ..Default::default()
    };
    let stuck_after = settings.stuck_after as usize;
    let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
    let goal = crowd.add_goal(point(10.0, 15.0)).unwrap();
    let ids: Vec<_> = (0..16)
        .map(|k| {
            crowd
                .spawn(AgentParams {
                    position: DVec2::new(4.0 + 0.8 * k as f64, 3.0),
                    radius: 0.2,
                    goals: vec![goal],
                    arrival_radius: 1.0,
                    on_arrival: ArrivalAction::Settle,
                    seed: k,
                    ..Default::default()
                })
                .unwrap()
        })
        .collect();
    let steps = 1500;
    let mut trace = vec![Vec::with_capacity(steps); ids.len()];
    let mut reported_stuck = vec![0usize; ids.len()];
    let mut arrived = vec![false; ids.len()];
    for _ in 0..steps {
        let report = crowd.step();
        for id in &report.stuck {
            reported_stuck[id.0 as usize] += 1;
        }
        for id in &report.arrived {
            arrived[id.0 as usize] = true;
        }
        for (k, id) in ids.iter().enumerate() {
            trace[k].push(crowd.agent(*id).unwrap().position());
        }
    }
    let left: Vec<usize> = (0..ids.len()).filter(|k| !arrived[*k]).collect();
    let walked = |k: usize, from: usize| -> f64 {
        trace[k][from..]
            .windows(2)
            .map(|w| (w[1] - w[0]).length())
            .sum()
    };
    let net = |k: usize, from: usize| (trace[k][steps - 1] - trace[k][from]).length();
    let figures: Vec<String> = left
        .iter()
        .map(|&k| {
            format!(
                "{k}: {:.1} m walked, {:.1} m net in the last {stuck_after} steps",
                walked(k, steps - stuck_after),
                net(k, steps - stuck_after)
            )
        })
        .collect();
    println!("{} arrived; {}", ids.len() - left.len(), figures.join("; "));
    assert!(
        (3..=8).contains(&left.len()),
        "{} did not arrive",
        left.len()
    );
    for &k in &left {
        let agent = crowd.agent(ids[k]).unwrap();
        assert_eq!(agent.state(), AgentState::Stuck, "walker {k}");
        assert!(reported_stuck[k] >= 1, "walker {k} never reported stuck");
    }
    // They are stuck on the move: each walks metres in the last `stuck_after` steps and ends
    // them more than a local cell (0.5 m) from where they began, so a count of net
    // displacement would call every one of them progressing.
    for &k in &left {
        let from = steps - stuck_after;
        assert!(walked(k, from) > 2.0 && net(k, from) > 0.5, "{figures:?}");
    }
}

/// A walker deep in a cul-de-sac 8 m long and 3 m wide whose goal lies beyond its closed end:
/// the way out leads away from the goal for over 8 m (more than `stuck_after` = 20 steps of
/// 0.35 m), and it is never reported stuck, because that way is down its field.
#[test]
fn a_detour_away_from_the_goal_is_progress() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::new(20.0, 24.0),
        stuck_after: 20,
        ..Default::default()
    };
    let wall = |min: (f64, f64), max: (f64, f64)| Shape::Aabb {
        min: DVec2::from(min),
        max: DVec2::from(max),
    };
    // The cul-de-sac opens south: walls at x = 8.5–9 and 12–12.5, its end at y = 14–14.5.
    let statics = vec![
        wall((8.5, 6.0), (9.0, 14.5)),
        wall((12.0, 6.0), (12.5, 14.5)),
        wall((8.5, 14.0), (12.5, 14.5)),
    ];
    let mut crowd = Crowd::new(settings, statics).unwrap();
    let goal = crowd.add_goal(point(10.5, 20.0)).unwrap();
    let start = DVec2::new(10.5, 13.0);
    let id = crowd
        .spawn(AgentParams {
            position: start,
            goals: vec![goal],
            ..Default::default()
        })
        .unwrap();
    let mut farthest: f64 = 0.0;
    let mut stuck = 0;
    let mut arrived_at = None;
    for step in 0..400 {
        let report = crowd.step();
        stuck += report.stuck.len();
        let agent = crowd.agent(id).unwrap();
        farthest = farthest.max((agent.position() - DVec2::new(10.5, 20.0)).length());
        if !report.arrived.is_empty() {
            arrived_at = Some(step);
            break;
        }
    }
    println!("arrived at step {arrived_at:?}, farthest from the goal {farthest:.1} m");
    assert!(arrived_at.is_some());
    assert!(farthest > 7.0 + 8.0 * 0.5, "{farthest}");
    assert_eq!(stuck, 0);
}

/// With `stuck_after` at 0 every step without progress is stuck, and no step with progress
/// is: a walker crossing open ground is moving most of its way.
#[test]
fn stuck_after_zero_flags_only_steps_without_progress() {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(20.0),
        stuck_after: 0,
        ..Default::default()
    };
    let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
    let goal = crowd.add_goal(point(16.0, 10.0)).unwrap();
    let id = crowd
        .spawn(AgentParams {
            position: DVec2::new(3.0, 10.0),
            goals: vec![goal],
            ..Default::default()
        })
        .unwrap();
    let (mut moving, mut stuck) = (0, 0);
    for _ in 0..200 {
        crowd.step();
        match crowd.agent(id).unwrap().state() {
            AgentState::Moving => moving += 1,
            AgentState::Stuck => stuck += 1,
            AgentState::Arrived => break,
            _ => {}
        }
    }
    println!("{moving} steps moving, {stuck} stuck");
    assert_eq!(crowd.agent(id).unwrap().state(), AgentState::Arrived);
    assert!(moving > 2 * stuck, "{moving} moving, {stuck} stuck");
}
