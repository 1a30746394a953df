//! Bad input at the crowd's boundary: typed errors, nothing half-added, no panic.

use crowdfield_field::{FieldError, Shape};
use crowdfield_steer::{
    AgentId, AgentParams, Behaviour, BehaviourSlots, Crowd, CrowdSettings, Frame, LocalMapSettings,
    SteerError,
};
use glam::DVec2;

fn world() -> (Crowd, crowdfield_steer::GoalId) {
    let wall = Shape::Aabb {
        min: DVec2::new(10.0, 0.0),
        max: DVec2::new(12.0, 30.0),
    };
    let mut crowd = Crowd::new(CrowdSettings::default(), vec![wall]).unwrap();
    let goal = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(40.0, 40.0),
            radius: 1.0,
        })
        .unwrap();
    (crowd, goal)
}

fn params(goal: crowdfield_steer::GoalId) -> AgentParams {
    AgentParams {
        position: DVec2::new(5.0, 5.0),
        goals: vec![goal],
        ..Default::default()
    }
}

#[test]
fn epsilon_out_of_range_is_rejected() {
    let (mut crowd, goal) = world();
    let mut p = params(goal);
    p.behaviour = BehaviourSlots::single(Behaviour::Constant {
        epsilon: 3.0,
        v: DVec2::Y,
        frame: Frame::World,
    });
    assert!(matches!(
        crowd.spawn(p),
        Err(SteerError::Field(FieldError::BiasOutOfRange { .. }))
    ));
    assert_eq!(crowd.agents().count(), 0);
    let id = crowd.spawn(params(goal)).unwrap();
    let bad = BehaviourSlots::single(Behaviour::Sinusoid {
        epsilon: 2.5,
        omega: 0.1,
    });
    assert!(crowd.set_behaviour(id, bad).is_err());
    assert_eq!(
        crowd.agent(id).unwrap().params().behaviour,
        BehaviourSlots::default()
    );
}

#[test]
fn non_finite_positions_and_goals_are_rejected() {
    let (mut crowd, goal) = world();
    let mut p = params(goal);
    p.position = DVec2::new(f64::NAN, 1.0);
    assert!(matches!(
        crowd.spawn(p),
        Err(SteerError::Field(FieldError::NonFinite { .. }))
    ));
    assert!(
        crowd
            .add_goal(Shape::Disc {
                centre: DVec2::new(f64::INFINITY, 0.0),
                radius: 1.0
            })
            .is_err()
    );
    let mut p = params(goal);
    p.position = DVec2::new(-3.0, 5.0);
    assert!(matches!(
        crowd.spawn(p),
        Err(SteerError::OutOfBounds { .. })
    ));
}

#[test]
fn a_goal_inside_an_obstacle_is_rejected() {
    let (mut crowd, _) = world();
    let inside = Shape::Disc {
        centre: DVec2::new(11.0, 15.0),
        radius: 0.5,
    };
    assert_eq!(crowd.add_goal(inside).err(), Some(SteerError::GoalBlocked));
}

#[test]
fn agents_inside_walls_or_each_other_are_rejected() {
    let (mut crowd, goal) = world();
    let mut p = params(goal);
    p.position = DVec2::new(11.0, 5.0);
    assert!(matches!(
        crowd.spawn(p.clone()),
        Err(SteerError::InsideObstacle { .. })
    ));
    p.position = DVec2::new(9.9, 5.0); // disc of radius 0.25 reaches into the wall
    assert!(matches!(
        crowd.spawn(p),
        Err(SteerError::InsideObstacle { .. })
    ));
    crowd.spawn(params(goal)).unwrap();
    let mut q = params(goal);
    q.position = DVec2::new(5.3, 5.0);
    assert!(matches!(
        crowd.spawn(q),
        Err(SteerError::OverlapsAgent {
            other: AgentId(0),
            ..
        })
    ));
}

/// Walkers placed in contact, as scenario files written in `f32` place them, are not overlaps:
/// Menge's globalNavSwap lines walkers of radius 0.2 up 0.4 m apart, which read as 0.39999998 m.
/// Two micrometres deeper is an overlap.
#[test]
fn agents_in_contact_are_accepted() {
    let (mut crowd, goal) = world();
    let in_f32 = |x: f32, y: f32| DVec2::new(f64::from(x), f64::from(y));
    let radius = f64::from(0.2f32);
    let mut spawn_at = |position: DVec2| {
        crowd.spawn(AgentParams {
            position,
            radius,
            ..params(goal)
        })
    };
    for x in [-1.8f32, -1.4, -1.0, -0.6] {
        spawn_at(in_f32(x, -4.0) + DVec2::new(6.0, 9.0)).unwrap();
    }
    assert!(((in_f32(-1.8, -4.0) - in_f32(-1.4, -4.0)).length() - 2.0 * radius) < 0.0);
    // Touching the wall at x = 10 from the left.
    spawn_at(DVec2::new(10.0 - radius + 1e-9, 20.0)).unwrap();
    assert!(matches!(
        spawn_at(in_f32(-0.6, -4.0) + DVec2::new(6.0 + 2.0 * radius - 2e-6, 9.0)),
        Err(SteerError::OverlapsAgent {
            other: AgentId(3),
            ..
        })
    ));
    assert!(matches!(
        spawn_at(DVec2::new(10.0 - radius + 2e-6, 25.0)),
        Err(SteerError::InsideObstacle { .. })
    ));
    assert_eq!(crowd.agents().count(), 5);
}

/// Discs narrower than the contact tolerance are still refused inside a wall or on another
/// agent's centre: touching is allowed, covering is not.
#[test]
fn tiny_discs_are_refused_inside_walls_and_on_each_other() {
    let (mut crowd, goal) = world();
    let tiny = |position: DVec2| AgentParams {
        position,
        radius: 1e-7,
        ..params(goal)
    };
    assert!(matches!(
        crowd.spawn(tiny(DVec2::new(11.0, 5.0))),
        Err(SteerError::InsideObstacle { .. })
    ));
    crowd.spawn(tiny(DVec2::new(5.0, 5.0))).unwrap();
    assert!(matches!(
        crowd.spawn(tiny(DVec2::new(5.0, 5.0))),
        Err(SteerError::OverlapsAgent {
            other: AgentId(0),
            ..
        })
    ));
    // Beside each other, a hair apart, they are only touching.
    crowd.spawn(tiny(DVec2::new(5.0 + 1e-7, 5.0))).unwrap();
    assert_eq!(crowd.agents().count(), 2);
}

#[test]
fn bad_local_maps_and_steps_are_rejected() {
    let (mut crowd, goal) = world();
    for side in [0, 1, 4, 16] {
        let mut p = params(goal);
        p.local_map = LocalMapSettings {
            side,
            ..Default::default()
        };
        assert_eq!(
            crowd.spawn(p).err(),
            Some(SteerError::BadLocalMapSide(side))
        );
    }
    let mut p = params(goal);
    p.local_map = LocalMapSettings {
        cell_size: 0.0,
        ..Default::default()
    };
    assert!(crowd.spawn(p).is_err());
    let mut p = params(goal);
    p.max_step = 0.9; // more than one 0.5 m local cell
    assert!(matches!(
        crowd.spawn(p),
        Err(SteerError::StepTooLong { .. })
    ));
    let mut p = params(goal);
    p.goals = vec![crowdfield_steer::GoalId(7)];
    assert_eq!(
        crowd.spawn(p).err(),
        Some(SteerError::UnknownGoal(crowdfield_steer::GoalId(7)))
    );
    // The error names the offending value.
    let mut p = params(goal);
    p.radius = -0.3;
    assert_eq!(
        crowd.spawn(p).err(),
        Some(SteerError::Field(FieldError::BadExtent(-0.3)))
    );
    let mut p = params(goal);
    p.arrival_radius = -1.0;
    assert_eq!(
        crowd.spawn(p).err(),
        Some(SteerError::Field(FieldError::BadExtent(-1.0)))
    );
}

#[test]
fn an_agent_with_no_route_is_reported_unreachable_not_panicking() {
    // A closed box around the agent.
    let walls = vec![
        Shape::Aabb {
            min: DVec2::new(2.0, 2.0),
            max: DVec2::new(8.0, 2.5),
        },
        Shape::Aabb {
            min: DVec2::new(2.0, 7.5),
            max: DVec2::new(8.0, 8.0),
        },
        Shape::Aabb {
            min: DVec2::new(2.0, 2.0),
            max: DVec2::new(2.5, 8.0),
        },
        Shape::Aabb {
            min: DVec2::new(7.5, 2.0),
            max: DVec2::new(8.0, 8.0),
        },
    ];
    let mut crowd = Crowd::new(CrowdSettings::default(), walls).unwrap();
    let goal = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(40.0, 40.0),
            radius: 1.0,
        })
        .unwrap();
    let id = crowd.spawn(params(goal)).unwrap();
    let report = crowd.step();
    assert_eq!(report.unreachable, vec![id]);
    assert_eq!(
        crowd.agent(id).unwrap().state(),
        crowdfield_steer::AgentState::Unreachable
    );
    for _ in 0..5 {
        crowd.step();
    }
    // Reported and skipped: it holds its position.
    let agent = crowd.agent(id).unwrap();
    assert_eq!(agent.position(), DVec2::new(5.0, 5.0));
    assert_eq!(agent.state(), crowdfield_steer::AgentState::Unreachable);
}
