//! Static obstacles added and removed while the crowd runs: global maps are edited around the
//! change and re-solved a few per step, local maps see the change at once.

use crowdfield_field::Shape;
use crowdfield_steer::{AgentParams, AgentState, Crowd, CrowdSettings, GoalId};
use glam::DVec2;

fn room(map_solves_per_step: usize) -> Crowd {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::new(20.0, 10.0),
        map_solves_per_step,
        ..Default::default()
    };
    Crowd::new(settings, Vec::new()).unwrap()
}

fn east_goal(crowd: &mut Crowd) -> GoalId {
    crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(18.5, 4.0),
            max: DVec2::new(19.5, 6.0),
        })
        .unwrap()
}

fn walker(goal: GoalId, at: DVec2) -> AgentParams {
    AgentParams {
        position: at,
        goals: vec![goal],
        ..Default::default()
    }
}

#[test]
fn removing_a_wall_opens_the_route() {
    let mut crowd = room(2);
    let wall = crowd
        .add_obstacle(Shape::Aabb {
            min: DVec2::new(9.5, -1.0),
            max: DVec2::new(10.5, 11.0),
        })
        .unwrap();
    let goal = east_goal(&mut crowd);
    let id = crowd.spawn(walker(goal, DVec2::new(3.0, 5.0))).unwrap();
    let report = crowd.step();
    assert_eq!(report.unreachable, vec![id]);
    assert_eq!(crowd.agent(id).unwrap().state(), AgentState::Unreachable);

    crowd.remove_obstacle(wall).unwrap();
    assert_eq!(crowd.pending_map_solves(), 1);
    let report = crowd.step();
    assert_eq!(report.maps_solved, vec![goal]);
    assert_eq!(crowd.pending_map_solves(), 0);
    assert_eq!(crowd.agent(id).unwrap().state(), AgentState::Moving);
    let mut arrived = false;
    for _ in 0..200 {
        if crowd.step().arrived.contains(&id) {
            arrived = true;
            break;
        }
    }
    assert!(arrived, "the agent crossed where the wall was");
    assert_eq!(
        crowd.remove_obstacle(wall),
        Err(crowdfield_steer::SteerError::UnknownObstacle(wall))
    );
}

#[test]
fn an_added_wall_is_walked_around_and_never_crossed() {
    let mut crowd = room(2);
    let goal = east_goal(&mut crowd);
    let id = crowd.spawn(walker(goal, DVec2::new(3.0, 5.0))).unwrap();
    for _ in 0..5 {
        crowd.step();
    }
    // A wall across the straight line with a gap at the top.
    let wall = Shape::Aabb {
        min: DVec2::new(9.8, -1.0),
        max: DVec2::new(10.2, 7.5),
    };
    crowd.add_obstacle(wall.clone()).unwrap();
    let mut highest: f64 = 0.0;
    let mut arrived = false;
    for _ in 0..300 {
        let report = crowd.step();
        let a = crowd.agent(id).unwrap();
        let p = a.position();
        let clearance = wall.distance(p).unwrap();
        assert!(
            clearance >= a.params().radius - 1e-9,
            "agent at {p} inside the wall"
        );
        highest = highest.max(p.y);
        if report.arrived.contains(&id) {
            arrived = true;
            break;
        }
    }
    assert!(arrived);
    assert!(
        highest > 7.5,
        "went round through the gap (highest y {highest:.2})"
    );
}

#[test]
fn edits_are_solved_a_few_maps_per_step() {
    let mut crowd = room(1);
    let goals: Vec<GoalId> = [2.0, 5.0, 8.0]
        .into_iter()
        .map(|y| {
            crowd
                .add_goal(Shape::Disc {
                    centre: DVec2::new(18.0, y),
                    radius: 0.6,
                })
                .unwrap()
        })
        .collect();
    let before: Vec<f64> = goals
        .iter()
        .map(|g| {
            crowd
                .goal(*g)
                .unwrap()
                .map()
                .potential_at(DVec2::new(5.0, 5.0))
                .unwrap()
        })
        .collect();
    crowd
        .add_obstacle(Shape::Disc {
            centre: DVec2::new(12.0, 5.0),
            radius: 2.0,
        })
        .unwrap();
    assert_eq!(crowd.pending_map_solves(), 3);
    let mut order = Vec::new();
    for _ in 0..3 {
        let report = crowd.step();
        assert_eq!(report.maps_solved.len(), 1, "one map per step");
        order.extend(report.maps_solved);
    }
    assert_eq!(order, goals);
    assert_eq!(crowd.pending_map_solves(), 0);
    // The edited maps have exactly the cells of maps built with the disc from the start.
    let settings = *crowd.settings();
    let mut fresh = Crowd::new(
        settings,
        vec![Shape::Disc {
            centre: DVec2::new(12.0, 5.0),
            radius: 2.0,
        }],
    )
    .unwrap();
    for y in [2.0, 5.0, 8.0] {
        let g = fresh
            .add_goal(Shape::Disc {
                centre: DVec2::new(18.0, y),
                radius: 0.6,
            })
            .unwrap();
        assert_eq!(
            fresh.goal(g).unwrap().map().kinds(),
            crowd.goal(g).unwrap().map().kinds()
        );
    }
    for (g, b) in goals.iter().zip(before) {
        let map = crowd.goal(*g).unwrap().map();
        assert!(map.residual(&crowdfield_field::Bias::HARMONIC) <= 1e-10);
        // The disc lengthens every route from the west: potentials there rise.
        assert!(map.potential_at(DVec2::new(5.0, 5.0)).unwrap() > b);
    }
}

#[test]
fn a_bad_obstacle_is_rejected_and_changes_nothing() {
    let mut crowd = room(2);
    let goal = east_goal(&mut crowd);
    let before = crowd.statics().len();
    for shape in [
        Shape::Disc {
            centre: DVec2::new(f64::NAN, 3.0),
            radius: 1.0,
        },
        Shape::Disc {
            centre: DVec2::new(5.0, 3.0),
            radius: -1.0,
        },
    ] {
        assert!(matches!(
            crowd.add_obstacle(shape),
            Err(crowdfield_steer::SteerError::Field(_))
        ));
    }
    assert_eq!(crowd.statics().len(), before);
    assert_eq!(crowd.pending_map_solves(), 0);
    assert!(!crowd.goal(goal).unwrap().is_pending());
}

#[test]
fn a_map_revision_changes_only_when_the_map_is_replaced() {
    let mut crowd = room(1);
    let a = east_goal(&mut crowd);
    let b = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(2.0, 2.0),
            radius: 0.5,
        })
        .unwrap();
    let revision = |crowd: &Crowd, g| crowd.goal(g).unwrap().revision();
    let (ra, rb) = (revision(&crowd, a), revision(&crowd, b));
    assert_ne!(ra, rb, "two maps share a revision");
    crowd.step();
    assert_eq!(
        revision(&crowd, a),
        ra,
        "a step without edits changed the revision"
    );
    crowd
        .add_obstacle(Shape::Disc {
            centre: DVec2::new(10.0, 5.0),
            radius: 1.0,
        })
        .unwrap();
    assert_eq!(
        revision(&crowd, a),
        ra,
        "an edit waiting for its solve is not the map yet"
    );
    // One solve per step: goal a first, then b.
    crowd.step();
    let ra2 = revision(&crowd, a);
    assert!(ra2 != ra && revision(&crowd, b) == rb);
    crowd.step();
    assert!(revision(&crowd, b) != rb && revision(&crowd, a) == ra2);
    // Another crowd's maps never reuse a number.
    let mut other = room(1);
    let c = east_goal(&mut other);
    assert!(![ra, rb, ra2, revision(&crowd, b)].contains(&other.goal(c).unwrap().revision()));
}
