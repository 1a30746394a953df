//! Headless app tests of the plugin (MinimalPlugins, one planner step per update).

mod common;

use bevy::prelude::*;
use bevy_crowdfield::field::FieldError;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::steer::{GoalId, SteerError};
use bevy_rapier2d::prelude::{Collider, RigidBody};
use common::*;

fn agent(app: &mut App, at: Vec2, goals: AgentGoals) -> Entity {
    app.world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_translation(at.extend(0.0)),
            goals,
        ))
        .id()
}

#[test]
fn an_agent_with_a_goal_arrives_and_says_so() {
    let mut app = app(30.0, 10.0);
    app.world_mut().spawn(CrowdObstacle::fixed(Shape::Aabb {
        min: DVec2::new(14.0, 0.0),
        max: DVec2::new(16.0, 7.0),
    }));
    let goal = Vec2::new(28.0, 5.0);
    let walker = agent(&mut app, Vec2::new(2.0, 5.0), AgentGoals::point(goal));
    let steps = run_until(&mut app, 400, |app| !seen(app).arrived.is_empty());
    assert!(steps < 400, "arrived within 400 steps");
    assert_eq!(seen(&app).arrived, vec![walker]);
    assert_eq!(state(&app, walker), AgentState::Arrived);
    let at = planned(&app, walker);
    assert!((at - goal).length() <= 1.0, "stopped at the goal: {at}");
    // The Transform follows the planner (interpolated), and rests on the goal afterwards.
    app.update();
    let shown = app.world().get::<Transform>(walker).unwrap().translation;
    assert!((shown.truncate() - at).length() < 1e-4, "{shown} vs {at}");
    assert_eq!(
        app.world().get::<DesiredVelocity>(walker).unwrap().0,
        Vec2::ZERO
    );
}

#[test]
fn transforms_are_interpolated_between_planner_steps() {
    let mut app = app(30.0, 10.0);
    // Four frames per planner step.
    app.insert_resource(Time::<Fixed>::from_hz(4.0 * HZ));
    app.insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(
        std::time::Duration::from_secs_f64(0.25 / HZ),
    ));
    let walker = agent(
        &mut app,
        Vec2::new(2.0, 5.0),
        AgentGoals::point(Vec2::new(28.0, 5.0)),
    );
    for _ in 0..40 {
        app.update();
    }
    let mut fractions = Vec::new();
    for _ in 0..8 {
        app.update();
        let plan = *app.world().get::<AgentPlan>(walker).unwrap();
        let x = app.world().get::<Transform>(walker).unwrap().translation.x;
        let span = plan.to.x - plan.from.x;
        assert!(span > 0.05, "walking east");
        fractions.push(((x - plan.from.x) / span * 4.0).round() as i32);
    }
    // The shown position walks 0, ¼, ½, ¾ of each step's segment, frame by frame.
    let start = fractions.iter().position(|f| *f == 0).unwrap();
    assert_eq!(&fractions[start..start + 4], &[0, 1, 2, 3], "{fractions:?}");
}

/// Distance from `p` to the nearest collider of the scene, measured by rapier's own geometry
/// (independent of the plugin's conversion of colliders into shapes).
fn clearance(colliders: &[(Collider, Vec2, f32)], p: Vec2) -> f64 {
    colliders
        .iter()
        .map(|(c, at, angle)| c.distance_to_point(*at, *angle, p, true) as f64)
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn rapier_walls_of_several_shapes_are_never_crossed() {
    let mut app = app(30.0, 12.0);
    let colliders = [
        (Collider::cuboid(0.5, 2.5), Vec2::new(8.0, 3.0), 0.3),
        (Collider::ball(1.4), Vec2::new(8.0, 9.0), 0.0),
        (Collider::capsule_y(1.5, 0.5), Vec2::new(14.0, 6.0), 0.0),
        (
            Collider::convex_hull(&[
                Vec2::new(-1.0, -1.5),
                Vec2::new(1.5, -1.0),
                Vec2::new(0.5, 2.0),
            ])
            .unwrap(),
            Vec2::new(20.0, 2.5),
            0.0,
        ),
        (
            Collider::compound(vec![
                (Vec2::ZERO, 0.0, Collider::cuboid(0.4, 1.5)),
                (Vec2::new(0.0, 1.5), 0.0, Collider::ball(0.8)),
            ]),
            Vec2::new(20.0, 8.5),
            0.0,
        ),
        (
            Collider::round_cuboid(0.3, 1.0, 0.3),
            Vec2::new(24.0, 6.0),
            0.7,
        ),
        (
            Collider::polyline(
                vec![
                    Vec2::new(0.0, 0.0),
                    Vec2::new(0.0, 2.0),
                    Vec2::new(1.0, 3.0),
                ],
                None,
            ),
            Vec2::new(4.5, 5.0),
            0.0,
        ),
    ];
    let mut scene = Vec::new();
    for (collider, at, angle) in colliders {
        scene.push((collider.clone(), at, angle));
        app.world_mut().spawn((
            collider,
            Transform::from_translation(at.extend(0.0)).with_rotation(Quat::from_rotation_z(angle)),
        ));
    }
    // A fixed body is static too.
    app.world_mut().spawn((
        RigidBody::Fixed,
        Collider::cuboid(0.3, 0.3),
        Transform::from_xyz(12.0, 1.0, 0.0),
    ));
    scene.push((Collider::cuboid(0.3, 0.3), Vec2::new(12.0, 1.0), 0.0));
    let goal = GoalTarget::Region(Shape::Aabb {
        min: DVec2::new(28.0, 1.0),
        max: DVec2::new(29.5, 11.0),
    });
    let walkers: Vec<Entity> = (0..8)
        .map(|i| {
            agent(
                &mut app,
                Vec2::new(1.5, 1.2 + 1.3 * i as f32),
                AgentGoals {
                    targets: vec![goal.clone()],
                    // Leaving on arrival: walkers that stopped at the goal's edge would stand in
                    // the way of the last ones, and this test is about the walls.
                    on_arrival: ArrivalAction::Despawn,
                    ..default()
                },
            )
        })
        .collect();
    let radius = AgentStyle::default().radius;
    let mut violations = 0;
    let mut closest = f64::INFINITY;
    let mut min_gap = f64::INFINITY;
    run_until(&mut app, 500, |app| {
        // Walkers that left are gone.
        let here: Vec<Entity> = walkers
            .iter()
            .copied()
            .filter(|e| app.world().get::<AgentPlan>(*e).is_some())
            .collect();
        if here.iter().any(|e| state(app, *e) == AgentState::Pending) {
            return false;
        }
        let at: Vec<Vec2> = here.iter().map(|e| planned(app, *e)).collect();
        for (i, p) in at.iter().enumerate() {
            let c = clearance(&scene, *p);
            closest = closest.min(c);
            // rapier's geometry is f32: allow a tenth of a millimetre.
            if c < radius - 1e-4 {
                violations += 1;
            }
            for q in &at[i + 1..] {
                let gap = (*p - *q).length() as f64 - 2.0 * radius;
                min_gap = min_gap.min(gap);
                if gap < -1e-5 {
                    violations += 1;
                }
            }
        }
        seen(app).arrived.len() == walkers.len()
    });
    assert_eq!(
        violations, 0,
        "closest wall {closest}, smallest gap {min_gap}"
    );
    assert_eq!(
        seen(&app).arrived.len(),
        walkers.len(),
        "all crossed the field"
    );
    assert!(seen(&app).obstacles_rejected.is_empty());
}

#[test]
fn colliders_of_moving_bodies_are_moving_obstacles_even_as_children() {
    let mut app = app(20.0, 10.0);
    app.world_mut()
        .spawn((RigidBody::Dynamic, Transform::from_xyz(10.0, 5.0, 0.0)))
        .with_child((Collider::ball(0.5), Transform::IDENTITY));
    app.world_mut().spawn((
        RigidBody::KinematicPositionBased,
        Collider::cuboid(0.5, 0.5),
        Transform::from_xyz(5.0, 5.0, 0.0),
    ));
    app.world_mut()
        .spawn((RigidBody::Fixed, Transform::from_xyz(15.0, 5.0, 0.0)))
        .with_child((Collider::ball(0.5), Transform::IDENTITY));
    app.update();
    app.update();
    let crowd = app.world().resource::<CrowdWorld>().crowd().unwrap();
    assert_eq!(crowd.moving_obstacles().count(), 2);
    // The fixed body's child collider, then the four world walls.
    assert_eq!(crowd.statics().len(), 1 + 4);
}

#[test]
fn removing_a_wall_collider_opens_the_route() {
    let mut app = app(20.0, 10.0);
    let wall = app
        .world_mut()
        .spawn((
            Collider::cuboid(0.5, 6.0),
            Transform::from_xyz(10.0, 5.0, 0.0),
        ))
        .id();
    let walker = agent(
        &mut app,
        Vec2::new(3.0, 5.0),
        AgentGoals::point(Vec2::new(17.0, 5.0)),
    );
    run_until(&mut app, 3, |_| false);
    assert_eq!(seen(&app).unreachable, vec![walker]);
    assert_eq!(state(&app, walker), AgentState::Unreachable);
    let held = planned(&app, walker);
    assert_eq!(held, Vec2::new(3.0, 5.0), "an unreachable agent holds");

    app.world_mut().despawn(wall);
    let steps = run_until(&mut app, 200, |app| !seen(app).arrived.is_empty());
    assert!(steps < 200, "arrived once the wall was gone");
    assert_eq!(seen(&app).arrived, vec![walker]);
}

#[test]
fn moving_a_wall_collider_moves_it_in_the_maps() {
    let mut app = app(20.0, 10.0);
    let wall = app
        .world_mut()
        .spawn((
            Collider::cuboid(0.5, 6.0),
            Transform::from_xyz(10.0, 5.0, 0.0),
        ))
        .id();
    let walker = agent(
        &mut app,
        Vec2::new(3.0, 5.0),
        AgentGoals::point(Vec2::new(17.0, 5.0)),
    );
    run_until(&mut app, 2, |_| false);
    assert_eq!(state(&app, walker), AgentState::Unreachable);
    // Slide the wall up so a gap opens at the bottom.
    app.world_mut()
        .get_mut::<Transform>(wall)
        .unwrap()
        .translation
        .y = 8.0;
    let steps = run_until(&mut app, 200, |app| !seen(app).arrived.is_empty());
    assert!(steps < 200);
}

#[test]
fn a_game_that_owns_motion_gets_desired_velocities_and_keeps_its_transform() {
    let mut app = app(20.0, 10.0);
    app.world_mut().resource_mut::<CrowdfieldSettings>().motion = MotionMode::External;
    let frozen = agent(
        &mut app,
        Vec2::new(3.0, 3.0),
        AgentGoals::point(Vec2::new(17.0, 3.0)),
    );
    let driven = agent(
        &mut app,
        Vec2::new(3.0, 7.0),
        AgentGoals::point(Vec2::new(17.0, 7.0)),
    );
    #[derive(Resource)]
    struct Driven(Entity);
    app.insert_resource(Driven(driven));
    // The game's own integrator for one agent, after the planner wrote the velocities.
    app.add_systems(
        FixedUpdate,
        (|driven: Res<Driven>,
          time: Res<Time>,
          mut q: Query<(&DesiredVelocity, &mut Transform)>| {
            if let Ok((v, mut t)) = q.get_mut(driven.0) {
                t.translation += (v.0 * time.delta_secs()).extend(0.0);
            }
        })
        .after(CrowdfieldSystems::Motion),
    );
    let mut saw_velocity = false;
    let steps = run_until(&mut app, 200, |app| {
        let v = app.world().get::<DesiredVelocity>(frozen).unwrap().0;
        saw_velocity |= v.x > 0.5;
        // The plugin never writes the Transform of an externally moved agent.
        let t = app.world().get::<Transform>(frozen).unwrap().translation;
        assert_eq!(t, Vec3::new(3.0, 3.0, 0.0));
        seen(app).arrived.contains(&driven)
    });
    assert!(saw_velocity, "the frozen agent is asked to walk east");
    assert!(
        steps < 200,
        "the game's integrator brought the other agent home"
    );
    // The frozen agent's planner position is read back from its Transform every step.
    let p = planned(&app, frozen);
    assert!((p - Vec2::new(3.0, 3.0)).length() < 0.5, "{p}");
}

/// A walker the game despawns mid-walk leaves the crowd at the next planner step, the others
/// walk on and arrive, and nothing panics.
#[test]
fn a_walker_despawned_mid_walk_leaves_the_crowd_and_the_others_arrive() {
    let mut app = app(30.0, 10.0);
    let walkers: Vec<Entity> = (0..3)
        .map(|k| {
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_xyz(2.0, 2.5 + 2.5 * k as f32, 0.0),
                    AgentGoals::point(Vec2::new(27.0, 2.5 + 2.5 * k as f32)),
                ))
                .id()
        })
        .collect();
    run_until(&mut app, 10, |_| false);
    let count = |app: &App| {
        app.world()
            .resource::<CrowdWorld>()
            .crowd()
            .unwrap()
            .agents()
            .count()
    };
    assert_eq!(count(&app), 3);
    app.world_mut().despawn(walkers[1]);
    run_until(&mut app, 2, |_| false);
    assert_eq!(count(&app), 2);
    let steps = run_until(&mut app, 300, |app| seen(app).arrived.len() == 2);
    assert!(steps < 300, "the others arrived");
    assert!(!seen(&app).arrived.contains(&walkers[1]));
}

#[test]
fn bad_agents_are_reported_and_never_panic() {
    let mut app = app(20.0, 10.0);
    app.world_mut().spawn(CrowdObstacle::fixed(Shape::Aabb {
        min: DVec2::new(8.0, 0.0),
        max: DVec2::new(10.0, 4.0),
    }));
    let goal = AgentGoals::point(Vec2::new(17.0, 5.0));
    let steep = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(2.0, 5.0, 0.0),
            goal.clone(),
            AgentStyle::default().with_behaviour(Behaviour::TowardsGoal { epsilon: 5.0 }),
        ))
        .id();
    let nan_goal = agent(&mut app, Vec2::new(2.0, 8.0), AgentGoals::point(Vec2::NAN));
    let in_wall = agent(&mut app, Vec2::new(9.0, 2.0), goal.clone());
    let too_fast = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(2.0, 2.0, 0.0),
            goal.clone(),
            AgentStyle::default().with_max_speed(50.0),
        ))
        .id();
    let fine = agent(&mut app, Vec2::new(4.0, 8.0), goal.clone());
    // On the same spot as `fine`: one of the two is rejected (the plugin's registration order
    // decides which, checked below), and its message names the other's entity.
    let twin = agent(&mut app, Vec2::new(4.0, 8.0), goal.clone());
    let bad_obstacle = app
        .world_mut()
        .spawn(CrowdObstacle::fixed(Shape::Disc {
            centre: DVec2::new(5.0, 5.0),
            radius: -1.0,
        }))
        .id();
    app.update();
    app.update();
    let rejected: Vec<Entity> = seen(&app).rejected.iter().map(|(e, _)| *e).collect();
    for e in [steep, nan_goal, in_wall, too_fast] {
        assert_eq!(state(&app, e), AgentState::Rejected, "{e:?}");
        assert_eq!(
            rejected.iter().filter(|r| **r == e).count(),
            1,
            "one message each"
        );
    }
    let error_of = |e: Entity| {
        seen(&app)
            .rejected
            .iter()
            .find(|(r, _)| *r == e)
            .unwrap()
            .1
            .clone()
    };
    assert!(matches!(
        error_of(steep),
        SteerError::Field(bevy_crowdfield::field::FieldError::BiasOutOfRange { .. })
    ));
    assert!(matches!(error_of(nan_goal), SteerError::Field(_)));
    assert!(matches!(
        error_of(in_wall),
        SteerError::InsideObstacle { .. }
    ));
    assert!(matches!(error_of(too_fast), SteerError::StepTooLong { .. }));
    assert_eq!(seen(&app).obstacles_rejected.len(), 1);
    assert_eq!(seen(&app).obstacles_rejected[0].0, bad_obstacle);
    let overlapping: Vec<(Entity, Option<Entity>)> = seen(&app)
        .rejected
        .iter()
        .zip(&seen(&app).rejected_others)
        .filter(|((_, error), _)| matches!(error, SteerError::OverlapsAgent { .. }))
        .map(|((e, _), other)| (*e, *other))
        .collect();
    // Registration follows `Entity` order, which in Bevy 0.19 puts the later-spawned twin first
    // (docs/plugin.md, *Choices*): the earlier `fine` is the one refused.
    assert_eq!(overlapping, [(fine, Some(twin))]);
    // Every other rejection names nobody.
    let named = seen(&app).rejected_others.iter().flatten().count();
    assert_eq!(named, 1);
    let (refused, _) = overlapping[0];
    let walker = if refused == twin { fine } else { twin };
    assert_ne!(state(&app, walker), AgentState::Rejected);

    // Fixing the style lets the agent take part.
    app.world_mut()
        .get_mut::<AgentStyle>(steep)
        .unwrap()
        .behaviour = BehaviourSlots::single(Behaviour::TowardsGoal { epsilon: 0.5 });
    app.update();
    assert_eq!(state(&app, steep), AgentState::Moving);
    // Despawning agents and obstacles at any time is fine.
    app.world_mut().despawn(fine);
    app.world_mut().despawn(bad_obstacle);
    run_until(&mut app, 5, |_| false);
}

#[test]
fn settings_no_crowd_can_be_built_from_are_reported_once_and_never_panic() {
    // 10 km × 10 km over the default 0.5 m global cells: 4·10⁸ cells, past the grid limit.
    let mut app = app(10_000.0, 10_000.0);
    let walker = agent(
        &mut app,
        Vec2::new(2.0, 2.0),
        AgentGoals::point(Vec2::new(8.0, 2.0)),
    );
    app.world_mut().spawn(CrowdObstacle::fixed(Shape::Aabb {
        min: DVec2::new(4.0, 5.0),
        max: DVec2::new(6.0, 6.0),
    }));
    run_until(&mut app, 3, |_| false);
    assert_eq!(
        seen(&app).settings_rejected.len(),
        1,
        "once, not every step"
    );
    assert!(
        matches!(
            seen(&app).settings_rejected[0],
            SteerError::Field(FieldError::GridTooLarge { .. })
        ),
        "{:?}",
        seen(&app).settings_rejected
    );
    assert!(app.world().resource::<CrowdWorld>().crowd().is_none());
    // Settings a crowd can be built from: it is, and the walker walks.
    app.world_mut()
        .resource_mut::<CrowdfieldSettings>()
        .world_max = Vec2::new(10.0, 10.0);
    run_until(&mut app, 3, |_| false);
    assert!(app.world().resource::<CrowdWorld>().crowd().is_some());
    assert!(planned(&app, walker).x > 2.0);
    assert_eq!(seen(&app).settings_rejected.len(), 1);
    // Rejected once more: a second message, and the crowd built from the last settings it
    // accepted walks on.
    let before = planned(&app, walker).x;
    app.world_mut()
        .resource_mut::<CrowdfieldSettings>()
        .global_cell_size = 1e-4;
    run_until(&mut app, 3, |_| false);
    assert_eq!(seen(&app).settings_rejected.len(), 2);
    assert!(planned(&app, walker).x > before);
}

#[test]
fn goals_and_behaviours_change_at_run_time() {
    let mut app = app(20.0, 10.0);
    let walker = agent(
        &mut app,
        Vec2::new(10.0, 5.0),
        AgentGoals::point(Vec2::new(18.0, 5.0)),
    );
    run_until(&mut app, 5, |_| false);
    assert!(planned(&app, walker).x > 10.5);
    *app.world_mut().get_mut::<AgentGoals>(walker).unwrap() =
        AgentGoals::points([Vec2::new(2.0, 5.0), Vec2::new(2.0, 8.0)]);
    app.world_mut()
        .get_mut::<AgentStyle>(walker)
        .unwrap()
        .behaviour = BehaviourSlots::single(Behaviour::Sinusoid {
        epsilon: 0.6,
        omega: bevy_crowdfield::steer::SEED_OMEGA,
    });
    let id = app.world().resource::<CrowdWorld>().agent_id(walker);
    app.update();
    // New goals and a new behaviour apply to the same crowd agent: no re-registration.
    let world = app.world().resource::<CrowdWorld>();
    assert_eq!(world.agent_id(walker), id);
    let params = world.crowd().unwrap().agent(id.unwrap()).unwrap().params();
    assert!(matches!(params.behaviour.clear, Behaviour::Sinusoid { .. }));
    assert_eq!(params.goals.len(), 2);
    let steps = run_until(&mut app, 300, |app| !seen(app).arrived.is_empty());
    assert!(steps < 300);
    assert_eq!(seen(&app).waypoints, vec![(walker, 1)]);
    assert!((planned(&app, walker) - Vec2::new(2.0, 8.0)).length() < 1.0);
    // A larger radius is more than a behaviour: the agent registers again where it stands.
    let at = planned(&app, walker);
    app.world_mut()
        .get_mut::<AgentStyle>(walker)
        .unwrap()
        .radius = 0.3;
    app.update();
    let world = app.world().resource::<CrowdWorld>();
    let new_id = world.agent_id(walker).unwrap();
    assert_ne!(Some(new_id), id);
    let agent = world.crowd().unwrap().agent(new_id).unwrap();
    assert_eq!(agent.params().radius, 0.3);
    assert!((agent.params().position.as_vec2() - at).length() < 1e-5);
}

/// A walker that leaves on arrival is despawned, and its `AgentArrived` says where it left: one
/// step on from its last planned position, at the goal.
#[test]
fn arrived_agents_that_asked_to_leave_are_despawned() {
    let mut app = app(20.0, 10.0);
    let walker = agent(
        &mut app,
        Vec2::new(3.0, 5.0),
        AgentGoals::point(Vec2::new(8.0, 5.0)).then_despawn(),
    );
    let mut last = Vec2::new(3.0, 5.0);
    run_until(&mut app, 100, |app| {
        if let Some(plan) = app.world().get::<AgentPlan>(walker) {
            last = plan.to;
        }
        !seen(app).arrived.is_empty()
    });
    assert_eq!(seen(&app).arrived, vec![walker]);
    let left_at = seen(&app).arrived_at[0];
    let step = left_at.distance(last);
    assert!(
        step > 0.1 && step < 0.5,
        "last step {step} m from {last} to {left_at}"
    );
    // Within the arrival radius, or on the goal's cell of the global map.
    assert!(
        left_at.distance(Vec2::new(8.0, 5.0)) < 1.0,
        "left at {left_at}"
    );
    app.update();
    assert!(app.world().get_entity(walker).is_err(), "despawned");
    run_until(&mut app, 3, |_| false);
}

/// A walker that settles on arrival says so once, where it first reaches the room, stays
/// `Arrived`, and goes on walking to the room's middle; its Transform follows.
#[test]
fn arrived_agents_that_settle_walk_on_to_the_middle() {
    let mut app = app(20.0, 10.0);
    let room = GoalTarget::Region(Shape::Aabb {
        min: DVec2::new(8.0, 2.0),
        max: DVec2::new(14.0, 8.0),
    });
    let goals = AgentGoals {
        targets: vec![room],
        arrival_radius: 0.25,
        ..Default::default()
    }
    .then_settle();
    let walker = agent(&mut app, Vec2::new(2.0, 5.0), goals);
    let steps = run_until(&mut app, 200, |app| !seen(app).arrived.is_empty());
    assert!(steps < 200);
    let at_edge = planned(&app, walker);
    assert!(at_edge.x < 8.0, "reported at the edge: {at_edge}");
    run_until(&mut app, 60, |_| false);
    assert_eq!(seen(&app).arrived, vec![walker], "said once");
    assert_eq!(state(&app, walker), AgentState::Arrived);
    let middle = Vec2::new(11.0, 5.0);
    let settled = planned(&app, walker);
    assert!(settled.distance(middle) < 0.5, "settled at {settled}");
    let shown = app.world().get::<Transform>(walker).unwrap().translation;
    assert!(shown.truncate().distance(settled) < 1e-4, "{shown}");
    let world = app.world().resource::<CrowdWorld>();
    let id = world.agent_id(walker).unwrap();
    assert!(!world.crowd().unwrap().agent(id).unwrap().is_settling());
}

/// `line_of_sight`: a walker that heads towards its nearest neighbour ignores one behind a
/// rapier wall when sight is on, and picks it when sight is off.
#[test]
fn with_line_of_sight_a_rapier_wall_hides_a_neighbour() {
    let v_after_two_steps = |line_of_sight: bool| {
        let mut app = app(20.0, 10.0);
        app.world_mut()
            .resource_mut::<CrowdfieldSettings>()
            .line_of_sight = line_of_sight;
        app.world_mut().spawn((
            Collider::cuboid(2.0, 0.1),
            Transform::from_xyz(5.0, 5.8, 0.0),
        ));
        let goal = AgentGoals::point(Vec2::new(18.0, 3.0));
        let seer = app
            .world_mut()
            .spawn((
                CrowdAgent,
                Transform::from_xyz(5.0, 5.0, 0.0),
                goal.clone(),
                AgentStyle::default().with_behaviour(Behaviour::TowardsNearest { epsilon: 0.8 }),
            ))
            .id();
        agent(&mut app, Vec2::new(5.0, 6.5), goal.clone());
        agent(&mut app, Vec2::new(7.2, 5.0), goal);
        run_until(&mut app, 2, |_| false);
        let world = app.world().resource::<CrowdWorld>();
        let id = world.agent_id(seer).expect("registered");
        world.crowd().unwrap().agent(id).unwrap().bias().direction()
    };
    let blind = v_after_two_steps(false);
    let sighted = v_after_two_steps(true);
    assert!(blind.y > 0.9, "without sight: v = {blind:?}");
    assert!(sighted.x > 0.9, "with sight: v = {sighted:?}");
}

/// Timed targets: one second on a target 20 m away is not enough, so the walker gives it up
/// (`AgentTimedOut` with its index) and arrives at the next one instead.
#[test]
fn a_target_whose_time_runs_out_is_given_up() {
    let mut app = app(30.0, 10.0);
    let goals = AgentGoals {
        time_limits: vec![Some(1.0)],
        ..AgentGoals::points([Vec2::new(28.0, 5.0), Vec2::new(3.0, 5.0)])
    };
    let walker = agent(&mut app, Vec2::new(8.0, 5.0), goals);
    let steps = run_until(&mut app, 300, |app| !seen(app).arrived.is_empty());
    assert!(steps < 300);
    assert_eq!(seen(&app).timed_out, vec![(walker, 0)]);
    assert_eq!(seen(&app).arrived, vec![walker]);
    let at = planned(&app, walker);
    assert!((at - Vec2::new(3.0, 5.0)).length() <= 1.0, "{at}");
}

/// A walker that runs out of time on its last target stops there without `AgentArrived`; a NaN
/// or negative limit rejects the agent with a typed error instead of becoming "no time".
#[test]
fn a_last_target_out_of_time_stops_without_arriving_and_bad_limits_are_rejected() {
    let mut app = app(30.0, 10.0);
    let timed = AgentGoals {
        time_limits: vec![Some(2.0)],
        ..AgentGoals::point(Vec2::new(28.0, 5.0))
    };
    let walker = agent(&mut app, Vec2::new(3.0, 5.0), timed);
    let nan = agent(
        &mut app,
        Vec2::new(3.0, 2.0),
        AgentGoals {
            time_limits: vec![Some(f64::NAN)],
            ..AgentGoals::point(Vec2::new(28.0, 2.0))
        },
    );
    let negative = agent(
        &mut app,
        Vec2::new(3.0, 8.0),
        AgentGoals {
            time_limits: vec![None, Some(-1.0)],
            ..AgentGoals::points([Vec2::new(28.0, 8.0), Vec2::new(3.0, 8.0)])
        },
    );
    run_until(&mut app, 40, |app| !seen(app).timed_out.is_empty());
    for _ in 0..5 {
        app.update();
    }
    assert_eq!(seen(&app).timed_out, vec![(walker, 0)]);
    assert!(seen(&app).arrived.is_empty());
    assert_eq!(state(&app, walker), AgentState::Arrived);
    let at = planned(&app, walker);
    assert!(at.x < 10.0, "stopped on the way: {at}");
    // The message says where: it has stood there since.
    assert_eq!(seen(&app).timed_out_at, vec![at]);
    let rejected: Vec<(Entity, SteerError)> = seen(&app).rejected.clone();
    assert!(matches!(
        rejected.iter().find(|(e, _)| *e == nan),
        Some((_, SteerError::Field(FieldError::NonFinite { .. })))
    ));
    assert!(matches!(
        rejected.iter().find(|(e, _)| *e == negative),
        Some((_, SteerError::Field(FieldError::BadExtent(_))))
    ));
    assert_eq!(state(&app, nan), AgentState::Rejected);
}

/// Agents registering in one update have their new goals solved together: each gets the goal
/// it asked for, goal ids follow registration order (sorted entities), a goal two agents share
/// is added once, and an agent rejected for its time limits adds no goal.
#[test]
fn agents_registering_together_get_their_own_goals_in_order() {
    let mut app = app(30.0, 10.0);
    let targets = [
        Vec2::new(27.0, 2.0),
        Vec2::new(27.0, 8.0),
        Vec2::new(20.0, 5.0),
        Vec2::new(27.0, 2.0),
    ];
    let walkers: Vec<Entity> = targets
        .iter()
        .enumerate()
        .map(|(k, t)| {
            agent(
                &mut app,
                Vec2::new(3.0, 2.0 + 2.0 * k as f32),
                AgentGoals::point(*t),
            )
        })
        .collect();
    let late = agent(
        &mut app,
        Vec2::new(6.0, 5.0),
        AgentGoals {
            time_limits: vec![Some(-1.0)],
            ..AgentGoals::point(Vec2::new(15.0, 9.0))
        },
    );
    app.update();
    app.update();
    assert_eq!(state(&app, late), AgentState::Rejected);
    let world = app.world().resource::<CrowdWorld>();
    let crowd = world.crowd().expect("built");
    let centre = |goal: GoalId| match crowd.goal(goal).expect("a goal").shape() {
        Shape::Disc { centre, .. } => centre.as_vec2(),
        other => panic!("a point goal is a disc, not {other:?}"),
    };
    let goals: Vec<Vec2> = (0..)
        .map_while(|g| crowd.goal(GoalId(g)).map(|_| centre(GoalId(g))))
        .collect();
    let mut in_order: Vec<(Entity, Vec2)> = walkers.iter().copied().zip(targets).collect();
    in_order.sort_by_key(|(e, _)| *e);
    let mut want: Vec<Vec2> = Vec::new();
    for (_, t) in in_order {
        if !want.contains(&t) {
            want.push(t);
        }
    }
    assert_eq!(goals, want, "added once each, in registration order");
    for (walker, target) in walkers.iter().zip(targets) {
        let id = world.agent_id(*walker).expect("registered");
        let agent = crowd.agent(id).expect("in the crowd");
        assert_eq!(centre(agent.params().goals[0]), target);
        assert!(agent.goal_index() == 0 && crowd.goal(agent.params().goals[0]).is_some());
    }
}

/// `count` walkers in a 20 × 10 world, even ones from x = 2 to 18 and odd ones back, the k-th
/// at y = `y0 + dy·k`.
fn crossing_files(app: &mut App, count: usize, y0: f32, dy: f32) -> Vec<Entity> {
    (0..count)
        .map(|k| {
            let (x, goal) = if k % 2 == 0 { (2.0, 18.0) } else { (18.0, 2.0) };
            agent(
                app,
                Vec2::new(x, y0 + dy * k as f32),
                AgentGoals::point(Vec2::new(goal, 5.0)),
            )
        })
        .collect()
}

/// Sensing, relaxation and decision run together by default and apart with `split_phases`
/// (a game system ordered between the sets runs either way): the same plans.
#[test]
fn split_and_fused_phases_plan_the_same_steps() {
    #[derive(Resource, Default)]
    struct Between(usize);
    let mut runs = Vec::new();
    for split in [false, true] {
        let mut app = app(20.0, 10.0);
        app.world_mut()
            .resource_mut::<CrowdfieldSettings>()
            .split_phases = split;
        app.init_resource::<Between>().add_systems(
            FixedUpdate,
            (|mut n: ResMut<Between>| n.0 += 1)
                .after(CrowdfieldSystems::Sensing)
                .before(CrowdfieldSystems::Relaxation),
        );
        let walkers = crossing_files(&mut app, 6, 2.0, 1.2);
        let mut track = Vec::new();
        for _ in 0..30 {
            app.update();
            track.push(
                walkers
                    .iter()
                    .map(|w| planned(&app, *w))
                    .collect::<Vec<_>>(),
            );
        }
        assert!(app.world().resource::<Between>().0 > 0);
        runs.push(track);
    }
    assert_eq!(runs[0], runs[1]);
}

/// `worker_spin` reaches the crowd at the next step without rebuilding it, and plans do not
/// depend on it.
#[test]
fn worker_spin_applies_at_once_and_changes_no_plan() {
    let mut runs = Vec::new();
    for spin in [
        std::time::Duration::ZERO,
        std::time::Duration::from_millis(2),
    ] {
        let mut app = app(20.0, 10.0);
        let walkers = crossing_files(&mut app, 20, 0.8, 0.45);
        let mut track = Vec::new();
        let mut last_step = 0;
        for update in 0..30 {
            if update == 10 {
                app.world_mut()
                    .resource_mut::<CrowdfieldSettings>()
                    .worker_spin = spin;
            }
            app.update();
            if let Some(crowd) = app.world().resource::<CrowdWorld>().crowd() {
                assert!(crowd.step_count() >= last_step, "the crowd was rebuilt");
                last_step = crowd.step_count();
                if update >= 10 {
                    assert_eq!(crowd.worker_spin(), spin);
                }
            }
            track.push(
                walkers
                    .iter()
                    .map(|w| planned(&app, *w))
                    .collect::<Vec<_>>(),
            );
        }
        assert!(last_step > 5, "{last_step} steps");
        runs.push(track);
    }
    assert_eq!(runs[0], runs[1]);
}

/// With `fuse_motion` the `Sensing` set runs each step on through its commit, and with more than
/// 64 walkers stepped from a rayon pool of two threads (the executor single-threaded, as in
/// `crowdfield run`) the crowd commits while it plans: one whole step an update either way, and
/// the same plans, states and messages as committing in the `Motion` set.
#[test]
fn fused_motion_plans_and_reports_the_same_steps() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut runs = Vec::new();
    for fuse in [false, true] {
        // The app lives on the pool's thread, as `crowdfield run` keeps it.
        let run = pool.install(|| {
            let mut app = app(20.0, 30.0);
            app.edit_schedule(FixedUpdate, |s| {
                s.set_executor(bevy::ecs::schedule::SingleThreadedExecutor::new());
            });
            app.world_mut()
                .resource_mut::<CrowdfieldSettings>()
                .fuse_motion = fuse;
            let walkers = crossing_files(&mut app, 80, 1.0, 0.35);
            let mut track = Vec::new();
            let mut steps = 0;
            for _ in 0..40 {
                app.update();
                // One whole step an update once the crowd is built, none left under way.
                if let Some(crowd) = app.world().resource::<CrowdWorld>().crowd() {
                    assert_eq!(crowd.phase(), None);
                    assert!(steps == 0 || crowd.step_count() == steps + 1);
                    steps = crowd.step_count();
                }
                track.push(
                    walkers
                        .iter()
                        .map(|w| (planned(&app, *w), state(&app, *w)))
                        .collect::<Vec<_>>(),
                );
            }
            assert!(steps >= 38, "{steps} steps");
            (
                track,
                seen(&app).arrived.clone(),
                seen(&app).waypoints.clone(),
            )
        });
        let moved = run.0[0]
            .iter()
            .zip(&run.0[39])
            .filter(|(a, b)| a.0 != b.0)
            .count();
        assert!(moved > 60, "{moved} of 80 walkers moved");
        runs.push(run);
    }
    assert!(runs[0] == runs[1]);
}

/// A moving `CrowdObstacle` set down on a walker does not trap it: it walks out and arrives,
/// never flagged stuck (it stood inside for good before).
#[test]
fn a_walker_under_a_moving_obstacle_walks_out() {
    let mut app = app(20.0, 10.0);
    let walker = agent(
        &mut app,
        Vec2::new(2.0, 5.0),
        AgentGoals::point(Vec2::new(18.0, 5.0)),
    );
    run_until(&mut app, 4, |_| false);
    let at = planned(&app, walker);
    let radius = 1.5;
    app.world_mut().spawn((
        CrowdObstacle::moving(Shape::Disc {
            centre: DVec2::ZERO,
            radius,
        }),
        Transform::from_xyz(at.x + 0.6, at.y, 0.0),
    ));
    let mut out = None;
    let steps = run_until(&mut app, 300, |app| {
        let p = planned(app, walker);
        if out.is_none() && p.distance(at + Vec2::new(0.6, 0.0)) >= radius as f32 + 0.25 - 1e-4 {
            out = Some(p);
        }
        state(app, walker) == AgentState::Stuck || !seen(app).arrived.is_empty()
    });
    assert!(
        out.is_some_and(|p| p.x < at.x),
        "out on the west side: {out:?}"
    );
    assert_eq!(seen(&app).arrived, vec![walker], "after {steps} updates");
}

/// The plugin on the ground plane of a 3D game ([`GroundPlane::XZ`]): walkers placed with
/// Transforms on x–z (y up) over a hill read from [`GroundHeight`] arrive, and every frame
/// their Transform stands on the surface (y = the height under them) at the crowd's position
/// (x, −z); an obstacle's Transform is read on the same plane; they turn about +y.
#[test]
fn the_xz_plane_stands_agents_on_the_surface() {
    let mut app = app(30.0, 10.0);
    let hill = |p: Vec2| 2.0 * (-(p - Vec2::new(15.0, 5.0)).length_squared() / 20.0).exp();
    app.insert_resource(CrowdfieldSettings {
        planner_hz: HZ,
        world_min: Vec2::ZERO,
        world_max: Vec2::new(30.0, 10.0),
        plane: GroundPlane::XZ,
        ..default()
    })
    .insert_resource(GroundHeight::new(hill));
    // A pillar at the crowd's (15, 2): Transform (15, 0, −2).
    app.world_mut().spawn((
        CrowdObstacle::fixed(Shape::Disc {
            centre: DVec2::ZERO,
            radius: 1.0,
        }),
        Transform::from_xyz(15.0, 0.0, -2.0),
    ));
    let goals = [Vec2::new(28.0, 2.0), Vec2::new(28.0, 8.0)];
    let walkers: Vec<Entity> = [Vec2::new(2.0, 2.0), Vec2::new(2.0, 8.0)]
        .iter()
        .zip(goals)
        .map(|(at, goal)| {
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_xyz(at.x, hill(*at), -at.y),
                    AgentGoals::point(goal),
                ))
                .id()
        })
        .collect();
    let mut worst: f32 = 0.0;
    let mut least_to_pillar = f32::INFINITY;
    let steps = run_until(&mut app, 400, |app| {
        for w in &walkers {
            let t = app.world().get::<Transform>(*w).unwrap();
            let ground = Vec2::new(t.translation.x, -t.translation.z);
            worst = worst.max((t.translation.y - hill(ground)).abs());
            least_to_pillar = least_to_pillar.min(ground.distance(Vec2::new(15.0, 2.0)));
        }
        seen(app).arrived.len() == 2
    });
    assert!(steps < 400, "both arrived");
    assert!(worst < 1e-5, "off the surface by {worst}");
    assert!(
        least_to_pillar > 1.0,
        "walked round the pillar: {least_to_pillar}"
    );
    app.update();
    for (w, goal) in walkers.iter().zip(goals) {
        let t = app.world().get::<Transform>(*w).unwrap();
        let ground = Vec2::new(t.translation.x, -t.translation.z);
        assert!(planned(&app, *w).distance(ground) < 1e-4);
        assert!(ground.distance(goal) <= 1.2, "{ground} at {goal}");
        assert!((t.translation.y - hill(ground)).abs() < 1e-5);
        // Turned about +y towards the east: +x stays level.
        let forward = t.rotation * Vec3::X;
        assert!(forward.y.abs() < 1e-5 && forward.x > 0.5, "{forward}");
    }
}
