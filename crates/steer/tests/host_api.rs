//! What a host (the Bevy plugin, a game loop) drives between steps: the step run phase by phase,
//! moving obstacles, and goal queues changed at run time.

use crowdfield_field::{Coverage, Shape};
use crowdfield_steer::{
    AgentId, AgentParams, AgentState, ArrivalAction, Crowd, CrowdSettings, GoalId, StepPhase,
};
use glam::DVec2;

fn room() -> Crowd {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::new(20.0, 10.0),
        ..Default::default()
    };
    Crowd::new(settings, Vec::new()).unwrap()
}

fn goal_at(crowd: &mut Crowd, x: f64, y: f64) -> GoalId {
    crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(x, y),
            radius: 0.5,
        })
        .unwrap()
}

fn walker(goal: GoalId, at: DVec2, seed: u64) -> AgentParams {
    AgentParams {
        position: at,
        goals: vec![goal],
        seed,
        ..Default::default()
    }
}

/// Two walkers crossing and a third heading the other way.
fn crossing() -> Crowd {
    let mut crowd = room();
    let east = goal_at(&mut crowd, 18.0, 5.0);
    let west = goal_at(&mut crowd, 2.0, 5.0);
    crowd.spawn(walker(east, DVec2::new(3.0, 5.2), 1)).unwrap();
    crowd.spawn(walker(east, DVec2::new(3.0, 3.5), 2)).unwrap();
    crowd.spawn(walker(west, DVec2::new(17.0, 4.8), 3)).unwrap();
    crowd
}

#[test]
fn phases_one_at_a_time_equal_whole_steps() {
    let mut whole = crossing();
    let mut phased = crossing();
    for _ in 0..40 {
        let expected = whole.step();
        assert_eq!(phased.phase(), None);
        let mut phase = StepPhase::Guidance;
        let report = loop {
            let report = phased.advance_to(phase);
            match phase.next() {
                Some(next) => {
                    assert!(report.is_none(), "only motion ends the step");
                    assert_eq!(phased.phase(), Some(phase));
                    // Asking again for a phase that already ran does nothing.
                    assert!(phased.advance_to(phase).is_none());
                    phase = next;
                }
                None => break report.expect("motion ends the step"),
            }
        };
        assert_eq!(report, expected);
        for ((_, a), (_, b)) in whole.agents().zip(phased.agents()) {
            assert_eq!(a.position(), b.position());
        }
    }
}

#[test]
fn a_step_can_stop_after_any_phase_and_be_finished_later() {
    let mut whole = crossing();
    let mut phased = crossing();
    whole.step();
    phased.advance_to(StepPhase::Relaxation);
    let report = phased.step();
    assert_eq!(phased.phase(), None);
    assert_eq!(report.arrived.len(), 0);
    for ((_, a), (_, b)) in whole.agents().zip(phased.agents()) {
        assert_eq!(a.position(), b.position());
    }
}

#[test]
fn agents_spawned_or_removed_mid_step_are_handled_next_step() {
    let mut crowd = crossing();
    let east = GoalId(0);
    crowd.advance_to(StepPhase::Decision);
    let late = crowd.spawn(walker(east, DVec2::new(6.0, 8.0), 9)).unwrap();
    crowd
        .remove(crowdfield_steer::AgentId(1))
        .expect("agent 1 exists");
    crowd.step();
    assert_eq!(crowd.agent(late).unwrap().position(), DVec2::new(6.0, 8.0));
    crowd.step();
    assert!(crowd.agent(late).unwrap().position() != DVec2::new(6.0, 8.0));
    assert!(crowd.agent(crowdfield_steer::AgentId(1)).is_none());
}

#[test]
fn a_moving_obstacle_is_avoided_and_never_entered() {
    let mut crowd = room();
    let east = goal_at(&mut crowd, 18.0, 5.0);
    let id = crowd.spawn(walker(east, DVec2::new(2.0, 5.0), 1)).unwrap();
    let radius = crowd.agent(id).unwrap().params().radius;
    // A 1.6 m cart sliding down across the walker's line, slowly.
    let mut closest = f64::INFINITY;
    let mut arrived = false;
    let mut deviated: f64 = 0.0;
    for step in 0..200 {
        let centre = DVec2::new(9.0, 8.0 - 0.04 * step as f64);
        let cart = Shape::Disc {
            centre,
            radius: 0.8,
        };
        crowd.set_moving_obstacles(vec![cart.clone()]).unwrap();
        let report = crowd.step();
        let p = crowd.agent(id).unwrap().position();
        closest = closest.min(cart.distance(p).unwrap());
        deviated = deviated.max((p.y - 5.0).abs());
        if report.arrived.contains(&id) {
            arrived = true;
            break;
        }
    }
    assert!(arrived, "the walker got past the cart");
    assert!(closest >= radius - 1e-9, "closest approach {closest}");
    assert!(
        deviated > 0.3,
        "the walker went around (max |dy| {deviated})"
    );
    // A bad shape is rejected and the previous set kept.
    let bad = Shape::Disc {
        centre: DVec2::new(f64::NAN, 1.0),
        radius: 1.0,
    };
    assert!(crowd.set_moving_obstacles(vec![bad]).is_err());
    assert_eq!(crowd.moving_obstacles().count(), 1);
}

#[test]
fn a_new_goal_queue_takes_effect_at_once() {
    let mut crowd = room();
    let east = goal_at(&mut crowd, 18.0, 5.0);
    let west = goal_at(&mut crowd, 2.0, 5.0);
    let id = crowd.spawn(walker(east, DVec2::new(10.0, 5.0), 1)).unwrap();
    for _ in 0..5 {
        crowd.step();
    }
    let x = crowd.agent(id).unwrap().position().x;
    assert!(x > 10.5);
    crowd.set_goals(id, vec![west]).unwrap();
    let mut arrived = false;
    for _ in 0..150 {
        if crowd.step().arrived.contains(&id) {
            arrived = true;
            break;
        }
    }
    assert!(arrived);
    assert!(crowd.agent(id).unwrap().position().x < 3.0);
    // An empty queue stops the agent; an unknown goal is an error that changes nothing.
    crowd.set_goals(id, Vec::new()).unwrap();
    assert_eq!(crowd.agent(id).unwrap().state(), AgentState::Arrived);
    assert_eq!(
        crowd.set_goals(id, vec![GoalId(7)]),
        Err(crowdfield_steer::SteerError::UnknownGoal(
            crowdfield_steer::GoalId(7)
        ))
    );
}

#[test]
fn goals_emptied_or_changed_mid_step_are_safe() {
    let mut crowd = crossing();
    for _ in 0..3 {
        crowd.step();
    }
    let west = GoalId(1);
    crowd.advance_to(StepPhase::Decision);
    crowd
        .set_goals(crowdfield_steer::AgentId(0), Vec::new())
        .unwrap();
    crowd
        .set_goals(crowdfield_steer::AgentId(1), vec![west])
        .unwrap();
    crowd.step();
    crowd.step();
    let stopped = crowd.agent(crowdfield_steer::AgentId(0)).unwrap();
    assert_eq!(stopped.state(), AgentState::Arrived);
    let turned = crowd.agent(crowdfield_steer::AgentId(1)).unwrap();
    assert_eq!(turned.params().goals, vec![west]);
    let x = turned.position().x;
    for _ in 0..30 {
        crowd.step();
    }
    assert!(
        crowd
            .agent(crowdfield_steer::AgentId(1))
            .unwrap()
            .position()
            .x
            < x
    );
}

/// Timed goals (SteerSuite's `timeDuration`): a goal the walker cannot reach within its limit
/// is given up, reported with its index, and the walker goes on to its next goal; with no limit
/// it reaches it first. A given-up last goal stops the walker without reporting it arrived, and
/// the clock also runs for a walker with no route, so a timed goal is a way out of it.
#[test]
fn a_goal_whose_time_limit_runs_out_is_given_up_for_the_next() {
    struct Run {
        timed_out: Vec<(usize, AgentId, usize)>,
        advanced_at: Option<DVec2>,
        reported_arrived: bool,
        state: AgentState,
        position: DVec2,
        id: AgentId,
    }
    let run = |limits: Vec<Option<u32>>, walled: bool| {
        let mut crowd = room();
        if walled {
            // A wall across the room: the east goal has no route.
            crowd
                .add_obstacle(Shape::Aabb {
                    min: DVec2::new(14.0, 0.0),
                    max: DVec2::new(14.5, 10.0),
                })
                .unwrap();
        }
        let far = goal_at(&mut crowd, 19.0, 5.0);
        let near = goal_at(&mut crowd, 3.0, 5.0);
        let mut p = walker(far, DVec2::new(10.0, 5.0), 1);
        p.goals = vec![far, near];
        p.time_limits = limits;
        let id = crowd.spawn(p).unwrap();
        let (mut timed_out, mut advanced_at, mut reported_arrived) = (Vec::new(), None, false);
        for step in 0..200 {
            let report = crowd.step();
            timed_out.extend(report.timed_out.iter().map(|(a, g)| (step, *a, *g)));
            if report.advanced.contains(&id) {
                advanced_at = Some(crowd.agent(id).unwrap().position());
            }
            reported_arrived |= report.arrived.contains(&id);
            if crowd.agent(id).unwrap().state() == AgentState::Arrived {
                break;
            }
        }
        let agent = crowd.agent(id).unwrap();
        Run {
            timed_out,
            advanced_at,
            reported_arrived,
            state: agent.state(),
            position: agent.position(),
            id,
        }
    };
    let west = DVec2::new(3.0, 5.0);
    // Five steps at 0.35 m cannot cover the 9 m to the east goal.
    let r = run(vec![Some(5), None], false);
    assert_eq!(r.timed_out, vec![(4, r.id, 0)]);
    assert!(r.advanced_at.unwrap().x < 12.0, "gave up on the way");
    assert!(r.reported_arrived && r.state == AgentState::Arrived);
    assert!((r.position - west).length() < 1.0, "{}", r.position);
    // Without limits it reaches the far goal first.
    let r = run(Vec::new(), false);
    assert!(r.timed_out.is_empty());
    assert!(r.advanced_at.unwrap().x > 17.5, "reached the east goal");
    assert!(r.reported_arrived && (r.position - west).length() < 1.0);
    // A limit on the last goal stops the walk where it stands, not reported as arrived.
    let r = run(vec![None, Some(3)], false);
    assert_eq!(r.timed_out.last().map(|t| (t.1, t.2)), Some((r.id, 1)));
    assert_eq!(r.state, AgentState::Arrived);
    assert!(!r.reported_arrived);
    assert!((r.position - west).length() > 2.0, "{}", r.position);
    // Behind a wall the east goal has no route; its clock runs all the same.
    let r = run(vec![Some(8), None], true);
    assert_eq!(r.timed_out, vec![(7, r.id, 0)]);
    assert!(r.reported_arrived && (r.position - west).length() < 1.0);
    let r = run(Vec::new(), true);
    assert!(
        r.timed_out.is_empty() && !r.reported_arrived,
        "stays unreachable"
    );
}

/// A walker that leaves the crowd on arrival is reported with the position it committed in its
/// last step: one step on from where it stood before, inside its goal's arrival reach. The
/// crowd no longer holds it, so the report is the only record of that step.
#[test]
fn a_walker_that_leaves_is_reported_where_it_left() {
    let mut crowd = room();
    let east = goal_at(&mut crowd, 18.0, 5.0);
    let mut p = walker(east, DVec2::new(3.0, 5.0), 1);
    p.on_arrival = ArrivalAction::Despawn;
    let (max_step, reach) = (p.max_step, p.arrival_radius);
    let id = crowd.spawn(p).unwrap();
    let mut last = crowd.agent(id).unwrap().position();
    for _ in 0..200 {
        let report = crowd.step();
        if let Some(agent) = crowd.agent(id) {
            assert!(report.removed.is_empty());
            last = agent.position();
            continue;
        }
        assert_eq!(report.arrived, vec![id]);
        let [(removed, left_at)] = report.removed[..] else {
            panic!("one removal expected: {:?}", report.removed);
        };
        assert_eq!(removed, id);
        let step = (left_at - last).length();
        assert!(step > 0.1 && step <= max_step + 1e-9, "last step {step} m");
        let to_goal = (left_at - DVec2::new(18.0, 5.0)).length();
        assert!(
            to_goal <= 0.5 + reach + 1e-9,
            "left {to_goal} m from the goal's centre"
        );
        return;
    }
    panic!("never arrived");
}

/// A walker overlapped by an obstacle (a moving one that ran onto it, or a static one added over
/// it) walks out of it by the shortest way, towards its goal where two ways are as short, and
/// then on to the goal. Before, its own cells were obstacle in both maps and it stood inside for
/// good: stuck under a moving obstacle, unreachable under a static one. A static one with
/// either obstacle coverage of its local maps: a raster of `Touch` coverage finds the overlap
/// alone, one of `Centre` coverage is read with the goal's map (here the raster marks the
/// walker's cell too; `a_centre_raster_asks_the_goals_map_whether_the_agent_overlaps`, a unit
/// test of the crowd, places a walker where only the goal's map sees the overlap).
#[test]
fn a_walker_overlapped_by_an_obstacle_walks_out() {
    struct Run {
        /// Steps until the walker's disc was clear of the obstacle, and where.
        out: Option<(usize, DVec2)>,
        arrived: bool,
        stuck_or_unreachable: usize,
    }
    // `crowded`: 29 more moving shapes far off, so that the crowd looks moving shapes up on
    // its grid of them.
    let run = |offset: f64, moving: bool, coverage: Coverage, crowded: bool| {
        let mut crowd = room();
        let east = goal_at(&mut crowd, 18.0, 5.0);
        let mut params = walker(east, DVec2::new(2.0, 5.0), 1);
        params.local_map.obstacle_coverage = Some(coverage);
        let id = crowd.spawn(params).unwrap();
        for _ in 0..5 {
            crowd.step();
        }
        let at = crowd.agent(id).unwrap().position();
        // A disc of 1.5 m dropped on the walker, its centre `offset` east of the walker.
        let block = Shape::Disc {
            centre: at + DVec2::new(offset, 0.0),
            radius: 1.5,
        };
        if moving {
            let far = (0..if crowded { 29 } else { 0 }).map(|k| Shape::Disc {
                centre: DVec2::new(0.5 + 0.65 * k as f64, 9.5),
                radius: 0.2,
            });
            let shapes = std::iter::once(block.clone()).chain(far).collect();
            crowd.set_moving_obstacles(shapes).unwrap();
        } else {
            crowd.add_obstacle(block.clone()).unwrap();
        }
        let mut r = Run {
            out: None,
            arrived: false,
            stuck_or_unreachable: 0,
        };
        for step in 1..=300 {
            let report = crowd.step();
            r.stuck_or_unreachable += report.stuck.len() + report.unreachable.len();
            if report.arrived.contains(&id) {
                r.arrived = true;
                break;
            }
            let agent = crowd.agent(id).unwrap();
            let p = agent.position();
            if r.out.is_none() && block.distance(p).unwrap() >= agent.params().radius {
                r.out = Some((step, p - block_centre(&block)));
            }
        }
        r
    };
    fn block_centre(shape: &Shape) -> DVec2 {
        match shape {
            Shape::Disc { centre, .. } => *centre,
            _ => unreachable!(),
        }
    }
    for (moving, coverage, crowded) in [
        (true, Coverage::Touch, false),
        (true, Coverage::Touch, true),
        (false, Coverage::Touch, false),
        (false, Coverage::Centre, false),
    ] {
        // Centre 0.6 m east of the walker: west is the short way out, 0.9 + 0.25 m, four steps
        // of 0.35 m at most.
        let r = run(0.6, moving, coverage, crowded);
        let (steps, at) = r.out.expect("walked out");
        assert!(steps <= 4, "moving {moving}: out after {steps} steps");
        assert!(at.x < 0.0, "moving {moving}: out on the west side, {at}");
        assert!(r.arrived, "moving {moving}: arrived");
        assert_eq!(r.stuck_or_unreachable, 0, "moving {moving}");
        // Centred: every way out is as long, and it takes the one towards the goal.
        let r = run(0.0, moving, coverage, crowded);
        let (steps, at) = r.out.expect("walked out");
        assert!(steps <= 6, "moving {moving}: out after {steps} steps");
        assert!(at.x > 1.5, "moving {moving}: out on the goal's side, {at}");
        assert!(r.arrived, "moving {moving}: arrived");
        assert_eq!(r.stuck_or_unreachable, 0, "moving {moving}");
    }
}

/// The way out of an obstacle never runs into a wall: a walker pressed against a wall under a
/// moving disc whose short way out is through the wall leaves sideways, towards its goal, and
/// keeps clear of the wall on every step.
#[test]
fn a_walker_walks_out_of_an_obstacle_around_a_wall() {
    let mut crowd = room();
    let wall = Shape::Aabb {
        min: DVec2::new(0.0, 0.0),
        max: DVec2::new(20.0, 1.0),
    };
    crowd.add_obstacle(wall.clone()).unwrap();
    let east = goal_at(&mut crowd, 18.0, 1.8);
    let id = crowd.spawn(walker(east, DVec2::new(4.0, 1.3), 1)).unwrap();
    let radius = crowd.agent(id).unwrap().params().radius;
    // 0.6 m above the walker: 0.55 m down would clear the disc, but the wall is there; 1.64 m
    // along the wall does, five steps.
    let at = crowd.agent(id).unwrap().position();
    let centre = at + DVec2::new(0.0, 0.6);
    let block = Shape::Disc {
        centre,
        radius: 1.5,
    };
    crowd.set_moving_obstacles(vec![block.clone()]).unwrap();
    let mut out = None;
    for step in 1..=10 {
        crowd.step();
        let p = crowd.agent(id).unwrap().position();
        assert!(
            wall.distance(p).unwrap() >= radius - 1e-9,
            "step {step}: into the wall at {p}"
        );
        if block.distance(p).unwrap() >= radius {
            out = Some((step, p));
            break;
        }
    }
    let (steps, p) = out.expect("walked out");
    assert!(steps <= 6, "out after {steps} steps");
    assert!(
        p.x > centre.x + 1.0,
        "out along the wall towards the goal: {p}"
    );
}

/// A walker under a newly added static obstacle starts out at the next step even while its
/// goal's global map waits its turn to be solved (one map a step, its goal the third): the static
/// rasters, patched at once, say it stands on an obstacle.
#[test]
fn a_walker_under_a_new_wall_leaves_before_its_goals_map_is_solved() {
    let mut crowd = Crowd::new(
        CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::new(20.0, 10.0),
            map_solves_per_step: 1,
            ..Default::default()
        },
        Vec::new(),
    )
    .unwrap();
    goal_at(&mut crowd, 18.0, 8.0);
    goal_at(&mut crowd, 18.0, 2.0);
    let east = goal_at(&mut crowd, 18.0, 5.0);
    let id = crowd.spawn(walker(east, DVec2::new(3.0, 5.0), 1)).unwrap();
    crowd.step();
    let at = crowd.agent(id).unwrap().position();
    crowd
        .add_obstacle(Shape::Disc {
            centre: at + DVec2::new(0.6, 0.0),
            radius: 1.5,
        })
        .unwrap();
    assert_eq!(crowd.pending_map_solves(), 3);
    crowd.step();
    assert_eq!(
        crowd.pending_map_solves(),
        2,
        "one map solved, not the walker's"
    );
    let moved = (crowd.agent(id).unwrap().position() - at).length();
    assert!(moved > 0.3, "moved {moved} m in the first step");
}
