//! The seams later crates steer through: agents whose steps are handed over from outside
//! ([`Steering::External`]), goals whose guidance comes from outside ([`Guidance`]), and goals
//! removed once no agent walks to them.

use crowdfield_field::{Field, FieldError, GridGeometry, Shape};
use crowdfield_steer::{
    AgentId, AgentParams, AgentState, Crowd, CrowdSettings, GoalId, Guidance, HandedStep,
    SteerError, Steering, StepPhase,
};
use glam::DVec2;

fn open_world() -> Crowd {
    Crowd::new(
        CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::new(30.0, 20.0),
            ..CrowdSettings::default()
        },
        Vec::new(),
    )
    .unwrap()
}

fn steered(crowd: &mut Crowd, at: DVec2) -> AgentId {
    crowd
        .spawn(AgentParams {
            position: at,
            steering: Steering::External,
            ..AgentParams::default()
        })
        .unwrap()
}

fn east(length: f64) -> HandedStep {
    HandedStep {
        displacement: DVec2::new(length, 0.0),
        heading: DVec2::X,
        speed_factor: 1.0,
    }
}

#[test]
fn a_handed_step_is_taken_once_and_the_agent_stands_without_one() {
    let mut crowd = open_world();
    let id = steered(&mut crowd, DVec2::new(5.0, 10.0));
    crowd.hand_over_step(id, east(0.3)).unwrap();
    crowd.step();
    let agent = crowd.agent(id).unwrap();
    assert!((agent.position() - DVec2::new(5.3, 10.0)).length() < 1e-12);
    assert_eq!(agent.state(), AgentState::Moving);
    assert_eq!(agent.heading(), DVec2::X);
    crowd.step();
    let agent = crowd.agent(id).unwrap();
    assert!((agent.position() - DVec2::new(5.3, 10.0)).length() < 1e-12);
    assert_eq!(agent.state(), AgentState::Waiting);
    // Standing for a hundred steps is no reason to report it stuck: its host judges that.
    for _ in 0..100 {
        let report = crowd.step();
        assert!(report.stuck.is_empty());
    }
}

#[test]
fn handed_steps_go_through_the_collision_guard() {
    let mut crowd = open_world();
    let pusher = steered(&mut crowd, DVec2::new(5.0, 10.0));
    // A walker that steers itself, standing in the way (no goals: it stays).
    let wall = crowd
        .spawn(AgentParams {
            position: DVec2::new(5.6, 10.0),
            ..AgentParams::default()
        })
        .unwrap();
    for _ in 0..5 {
        crowd.hand_over_step(pusher, east(0.35)).unwrap();
        crowd.step();
        let a = crowd.agent(pusher).unwrap().position();
        let b = crowd.agent(wall).unwrap().position();
        assert!((a - b).length() >= 0.5 - 1e-6, "{a} overlaps {b}");
    }
}

#[test]
fn walkers_steer_round_agents_steered_from_outside() {
    let mut crowd = open_world();
    let goal = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(25.0, 10.0),
            radius: 0.5,
        })
        .unwrap();
    let walker = crowd
        .spawn(AgentParams {
            position: DVec2::new(5.0, 10.0),
            goals: vec![goal],
            ..AgentParams::default()
        })
        .unwrap();
    // A line of standing agents steered from outside across the walker's way.
    let blockers: Vec<AgentId> = (0..5)
        .map(|k| steered(&mut crowd, DVec2::new(12.0, 9.0 + 0.5 * k as f64)))
        .collect();
    let mut min_y_gap = f64::INFINITY;
    for _ in 0..200 {
        crowd.step();
        let p = crowd.agent(walker).unwrap().position();
        for b in &blockers {
            let q = crowd.agent(*b).unwrap().position();
            min_y_gap = min_y_gap.min((p - q).length());
        }
        if crowd.agent(walker).unwrap().state() == AgentState::Arrived {
            break;
        }
    }
    assert_eq!(crowd.agent(walker).unwrap().state(), AgentState::Arrived);
    assert!(min_y_gap >= 0.5 - 1e-6);
}

#[test]
fn bad_hand_overs_are_typed_errors_and_change_nothing() {
    let mut crowd = open_world();
    let id = steered(&mut crowd, DVec2::new(5.0, 10.0));
    let own = crowd
        .spawn(AgentParams {
            position: DVec2::new(8.0, 10.0),
            ..AgentParams::default()
        })
        .unwrap();
    assert_eq!(
        crowd.hand_over_step(own, east(0.1)),
        Err(SteerError::NotSteeredFromOutside(own))
    );
    assert!(matches!(
        crowd.hand_over_step(id, east(f64::NAN)),
        Err(SteerError::BadHandedStep { agent, .. }) if agent == id
    ));
    assert!(matches!(
        crowd.hand_over_step(id, east(0.36)),
        Err(SteerError::BadHandedStep { .. })
    ));
    assert_eq!(
        crowd.hand_over_step(AgentId(99), east(0.1)),
        Err(SteerError::UnknownAgent(AgentId(99)))
    );
    crowd.step();
    assert_eq!(
        crowd.agent(id).unwrap().position(),
        DVec2::new(5.0, 10.0),
        "rejected steps are not taken"
    );
}

#[test]
fn a_walker_handed_back_to_its_local_map_walks_to_its_goals() {
    let mut crowd = open_world();
    let goal = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(10.0, 10.0),
            radius: 0.5,
        })
        .unwrap();
    let id = crowd
        .spawn(AgentParams {
            position: DVec2::new(5.0, 10.0),
            goals: vec![goal],
            steering: Steering::External,
            ..AgentParams::default()
        })
        .unwrap();
    for _ in 0..10 {
        crowd.step();
    }
    assert_eq!(crowd.agent(id).unwrap().position(), DVec2::new(5.0, 10.0));
    crowd.set_steering(id, Steering::LocalMap).unwrap();
    for _ in 0..60 {
        crowd.step();
    }
    assert_eq!(crowd.agent(id).unwrap().state(), AgentState::Arrived);
}

#[test]
fn a_goal_guided_along_a_direction_leads_walkers_that_way() {
    let mut crowd = open_world();
    let region = Shape::Aabb {
        min: DVec2::new(28.0, 0.0),
        max: DVec2::new(30.0, 20.0),
    };
    let goal = crowd
        .add_guided_goal(region, Guidance::Along(DVec2::X))
        .unwrap();
    let id = crowd
        .spawn(AgentParams {
            position: DVec2::new(3.0, 10.0),
            goals: vec![goal],
            ..AgentParams::default()
        })
        .unwrap();
    for _ in 0..150 {
        crowd.step();
    }
    let agent = crowd.agent(id).unwrap();
    assert_eq!(agent.state(), AgentState::Arrived);
    assert!((agent.position().y - 10.0).abs() < 1.0);
}

#[test]
fn guidance_handed_over_is_taken_at_the_next_guidance_phase() {
    let mut crowd = open_world();
    let region = Shape::Disc {
        centre: DVec2::new(29.0, 19.0),
        radius: 0.5,
    };
    let goal = crowd
        .add_guided_goal(region, Guidance::Towards(DVec2::new(25.0, 10.0)))
        .unwrap();
    let start = DVec2::new(5.0, 10.0);
    let mut subgoals = crowdfield_field::SubgoalStack::new();
    let g = crowd.goal(goal).unwrap();
    assert_eq!(g.guidance_at(start, &mut subgoals), DVec2::new(20.0, 0.0));
    crowd.set_guidance(goal, Guidance::Along(DVec2::Y)).unwrap();
    // Not yet: the old guidance holds until the next step's guidance phase.
    let g = crowd.goal(goal).unwrap();
    assert_eq!(g.guidance_at(start, &mut subgoals), DVec2::new(20.0, 0.0));
    crowd.advance_to(StepPhase::Guidance);
    let g = crowd.goal(goal).unwrap();
    assert_eq!(g.guidance_at(start, &mut subgoals), DVec2::Y);
    crowd.advance_to(StepPhase::Motion);
}

#[test]
fn a_map_from_outside_guides_walkers_down_its_descent() {
    let mut crowd = open_world();
    // A map that leads to the top-left corner: its own goal cell there, solved by the host.
    let geometry = GridGeometry::covering(DVec2::ZERO, DVec2::new(30.0, 20.0), 0.5).unwrap();
    let mut map = Field::<f64>::new(geometry, 1.0);
    map.set_goal(2, geometry.height() - 3).unwrap();
    crowdfield_field::MultigridSolver::new()
        .solve(&mut map, &crowdfield_field::Bias::HARMONIC, 1e-10)
        .unwrap();
    let region = Shape::Disc {
        centre: geometry.cell_centre(2, geometry.height() - 3),
        radius: 0.6,
    };
    let goal = crowd.add_guided_goal(region, Guidance::Map(map)).unwrap();
    let id = crowd
        .spawn(AgentParams {
            position: DVec2::new(20.0, 5.0),
            goals: vec![goal],
            ..AgentParams::default()
        })
        .unwrap();
    for _ in 0..200 {
        crowd.step();
    }
    assert_eq!(crowd.agent(id).unwrap().state(), AgentState::Arrived);
}

/// A goal the crowd solved is taken over by a host's own map: the walker keeps the goal in
/// its queue, follows the new map from the next guidance phase, and an obstacle added later
/// leaves the host's map alone (it is the host's to remake).
#[test]
fn a_solved_goal_taken_over_follows_the_hosts_map() {
    let mut crowd = open_world();
    let region = Shape::Disc {
        centre: DVec2::new(25.0, 10.0),
        radius: 0.6,
    };
    let goal = crowd.add_goal(region.clone()).unwrap();
    let id = crowd
        .spawn(AgentParams {
            position: DVec2::new(5.0, 10.0),
            goals: vec![goal],
            ..AgentParams::default()
        })
        .unwrap();
    // The host's map: the same goal, reached round the south (a wall it knows of at x = 15).
    let geometry = GridGeometry::covering(DVec2::ZERO, DVec2::new(30.0, 20.0), 0.5).unwrap();
    let mut map = Field::<f64>::new(geometry, 1.0);
    for (x, y) in region
        .cells(&geometry, 0.0, crowdfield_field::Coverage::Touch)
        .unwrap()
    {
        map.set_goal(x, y).unwrap();
    }
    for y in 8..geometry.height() - 1 {
        map.set_obstacle(30, y).unwrap();
    }
    crowdfield_field::MultigridSolver::new()
        .solve(&mut map, &crowdfield_field::Bias::HARMONIC, 1e-10)
        .unwrap();
    let before = crowd.goal(goal).unwrap().revision();
    crowd
        .guide_from_outside(goal, Guidance::Map(map.clone()))
        .unwrap();
    crowd.advance_to(StepPhase::Guidance);
    let g = crowd.goal(goal).unwrap();
    assert!(g.is_guided_from_outside());
    assert_ne!(g.revision(), before);
    assert_eq!(g.map().potentials(), map.potentials());
    crowd.advance_to(StepPhase::Motion);
    crowd
        .add_obstacle(Shape::Disc {
            centre: DVec2::new(20.0, 15.0),
            radius: 1.0,
        })
        .unwrap();
    assert_eq!(crowd.pending_map_solves(), 0);
    let mut lowest: f64 = 20.0;
    for _ in 0..400 {
        crowd.step();
        lowest = lowest.min(crowd.agent(id).map_or(lowest, |a| a.position().y));
        if crowd.agent(id).unwrap().state() == AgentState::Arrived {
            break;
        }
    }
    assert_eq!(crowd.agent(id).unwrap().state(), AgentState::Arrived);
    // Round the host's wall's south end (it leaves a gap below y = 4).
    assert!(lowest < 4.5, "lowest {lowest}");
}

#[test]
fn bad_guidance_is_refused() {
    let mut crowd = open_world();
    let region = Shape::Disc {
        centre: DVec2::new(10.0, 10.0),
        radius: 0.5,
    };
    assert!(matches!(
        crowd.add_guided_goal(region.clone(), Guidance::Towards(DVec2::new(f64::NAN, 0.0))),
        Err(SteerError::Field(FieldError::NonFinite { .. }))
    ));
    assert!(
        crowd
            .add_guided_goal(region.clone(), Guidance::Along(DVec2::ZERO))
            .is_err()
    );
    let geometry = GridGeometry::new(DVec2::ZERO, 1.0, 8, 8).unwrap();
    assert_eq!(
        crowd.add_guided_goal(region.clone(), Guidance::Map(Field::new(geometry, 1.0))),
        Err(SteerError::Field(FieldError::NoGoal)),
        "a map without a goal leads nowhere"
    );
    let solved = crowd.add_goal(region).unwrap();
    assert_eq!(
        crowd.set_guidance(solved, Guidance::Along(DVec2::X)),
        Err(SteerError::NotGuidedFromOutside(solved))
    );
    assert!(matches!(
        crowd.guide_from_outside(solved, Guidance::Towards(DVec2::new(f64::NAN, 0.0))),
        Err(SteerError::Field(FieldError::NonFinite { .. }))
    ));
    assert!(!crowd.goal(solved).unwrap().is_guided_from_outside());
    assert_eq!(
        crowd.set_guidance(GoalId(42), Guidance::Along(DVec2::X)),
        Err(SteerError::UnknownGoal(GoalId(42)))
    );
}

#[test]
fn goals_are_removed_once_no_agent_walks_to_them() {
    let mut crowd = open_world();
    let a = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(25.0, 10.0),
            radius: 0.5,
        })
        .unwrap();
    let b = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(25.0, 5.0),
            radius: 0.5,
        })
        .unwrap();
    let id = crowd
        .spawn(AgentParams {
            position: DVec2::new(5.0, 10.0),
            goals: vec![a],
            ..AgentParams::default()
        })
        .unwrap();
    assert_eq!(
        crowd.remove_goal(a),
        Err(SteerError::GoalInUse { goal: a, agent: id })
    );
    crowd.step();
    crowd.set_goals(id, vec![b]).unwrap();
    crowd.remove_goal(a).unwrap();
    assert!(crowd.goal(a).is_none());
    assert_eq!(crowd.goal_count(), 1);
    assert_eq!(crowd.remove_goal(a), Err(SteerError::UnknownGoal(a)));
    assert_eq!(
        crowd.set_goals(id, vec![a]),
        Err(SteerError::UnknownGoal(a))
    );
    // The crowd steps on towards the goal left, and new goals take new ids.
    for _ in 0..100 {
        crowd.step();
    }
    assert_eq!(crowd.agent(id).unwrap().state(), AgentState::Arrived);
    let c = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(5.0, 5.0),
            radius: 0.5,
        })
        .unwrap();
    assert!(c != a && c != b);
}

#[test]
fn thousands_of_orders_keep_only_live_maps() {
    let mut crowd = open_world();
    let id = crowd
        .spawn(AgentParams {
            position: DVec2::new(5.0, 10.0),
            ..AgentParams::default()
        })
        .unwrap();
    let mut last = None;
    for k in 0..200 {
        let goal = crowd
            .add_goal(Shape::Disc {
                centre: DVec2::new(10.0 + (k % 10) as f64, 10.0),
                radius: 0.5,
            })
            .unwrap();
        crowd.set_goals(id, vec![goal]).unwrap();
        if let Some(old) = last.replace(goal) {
            crowd.remove_goal(old).unwrap();
        }
        crowd.step();
    }
    assert_eq!(crowd.goal_count(), 1);
}
