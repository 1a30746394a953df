//! Headless app tests of single agents along drawn paths through the plugin ([`AgentPath`]):
//! both modes, shared routes, newer orders winning, time-sliced builds, bad input.

mod common;

use std::time::Duration;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::sketch::{SketchError, Stroke, farthest_from};
use common::*;

/// Path rejections seen so far.
#[derive(Resource, Default)]
struct PathSeen(Vec<(Entity, SketchError)>);

fn collect_paths(mut seen: ResMut<PathSeen>, mut rejected: MessageReader<PathRejected>) {
    seen.0
        .extend(rejected.read().map(|m| (m.entity, m.error.clone())));
}

fn path_app(w: f32, h: f32) -> App {
    let mut app = app(w, h);
    app.init_resource::<PathSeen>()
        .add_systems(FixedUpdate, collect_paths.after(CrowdfieldSystems::Events));
    app
}

/// An L: east along y = 5, then north along x = 32. Walking straight to its end cuts the
/// corner by metres.
fn l_path() -> Vec<Vec2> {
    vec![
        Vec2::new(6.0, 5.0),
        Vec2::new(32.0, 5.0),
        Vec2::new(32.0, 25.0),
    ]
}

fn walker(app: &mut App, at: Vec2) -> Entity {
    app.world_mut()
        .spawn((CrowdAgent, Transform::from_translation(at.extend(0.0))))
        .id()
}

fn goal_count(app: &App) -> usize {
    let crowd = app.world().resource::<CrowdWorld>();
    crowd.crowd().unwrap().goal_ids().count()
}

#[test]
fn walkers_given_one_path_share_its_field_follow_it_within_the_tube_and_arrive() {
    let mut app = path_app(40.0, 30.0);
    let a = walker(&mut app, Vec2::new(5.0, 6.0));
    let b = walker(&mut app, Vec2::new(8.0, 3.5));
    run_until(&mut app, 2, |_| false);
    let goals_before = goal_count(&app);
    for w in [a, b] {
        app.world_mut().entity_mut(w).insert(AgentPath::Follow {
            points: l_path(),
            joining: Joining::NearestPoint,
        });
    }
    let mut tracks = [Vec::new(), Vec::new()];
    let steps = run_until(&mut app, 900, |app| {
        for (k, w) in [a, b].into_iter().enumerate() {
            tracks[k].push(planned(app, w));
        }
        seen(app).arrived.len() == 2
    });
    assert!(steps < 900, "the walkers did not arrive");
    assert!(app.world().resource::<PathSeen>().0.is_empty());
    let stroke: Vec<_> = Stroke::from_positions(l_path().iter().map(|p| p.as_dvec2()))
        .unwrap()
        .resampled(0.25)
        .unwrap()
        .positions();
    for (k, track) in tracks.iter().enumerate() {
        // After joining (the first point within the tube), the walk stays in the tube, up to
        // 3 m from the end, where the walker arriving second stops beside the first.
        let joined = track
            .iter()
            .position(|p| farthest_from(&[p.as_dvec2()], &stroke) <= 1.0)
            .expect("joined the tube");
        let near_end = track
            .iter()
            .position(|p| p.distance(Vec2::new(32.0, 25.0)) < 3.0)
            .unwrap();
        let after: Vec<_> = track[joined..near_end]
            .iter()
            .map(|p| p.as_dvec2())
            .collect();
        let hausdorff = farthest_from(&after, &stroke);
        let worst = after
            .iter()
            .max_by(|p, q| {
                farthest_from(&[**p], &stroke).total_cmp(&farthest_from(&[**q], &stroke))
            })
            .unwrap();
        assert!(
            hausdorff <= 1.0,
            "walker {k}: {hausdorff:.2} m from the path at {worst}"
        );
        assert!(track.last().unwrap().distance(Vec2::new(32.0, 25.0)) < 1.5);
    }
    // One route for both; dropped with its goals once both arrived.
    run_until(&mut app, 3, |_| false);
    assert_eq!(
        app.world()
            .resource::<PathWorld>()
            .routes()
            .routes()
            .count(),
        0
    );
    assert_eq!(goal_count(&app), goals_before);
    assert_eq!(state(&app, a), AgentState::Arrived);
}

#[test]
fn a_walker_through_waypoints_reaches_each_and_arrives_at_the_end() {
    let mut app = path_app(40.0, 30.0);
    let w = walker(&mut app, Vec2::new(5.0, 6.0));
    app.world_mut()
        .entity_mut(w)
        .insert(AgentPath::Waypoints(l_path()));
    let steps = run_until(&mut app, 900, |app| !seen(app).arrived.is_empty());
    assert!(steps < 900, "the walker did not arrive");
    // 46 m of path, a waypoint every 2 m.
    let waypoints = seen(&app).waypoints.iter().filter(|(e, _)| *e == w).count();
    assert!(waypoints >= 20, "{waypoints} waypoints");
    assert!(planned(&app, w).distance(Vec2::new(32.0, 25.0)) < 1.5);
}

/// A walker despawned while it follows a drawn path: its route is forgotten and the route's
/// goals are removed from the crowd (nothing else held them), with no panic.
#[test]
fn a_walker_despawned_on_its_path_frees_the_routes_goals() {
    let mut app = path_app(40.0, 30.0);
    run_until(&mut app, 2, |_| false);
    let before = goal_count(&app);
    let w = walker(&mut app, Vec2::new(5.0, 6.0));
    app.world_mut()
        .entity_mut(w)
        .insert(AgentPath::Waypoints(l_path()));
    run_until(&mut app, 10, |_| false);
    assert!(goal_count(&app) > before, "the route's waypoints are goals");
    app.world_mut().despawn(w);
    run_until(&mut app, 5, |_| false);
    assert_eq!(goal_count(&app), before);
    assert_eq!(
        app.world()
            .resource::<PathWorld>()
            .routes()
            .routes()
            .count(),
        0
    );
}

#[test]
fn new_goals_take_a_walker_off_its_path_and_a_removed_path_sends_it_back_to_its_goals() {
    let mut app = path_app(40.0, 30.0);
    let home = Vec2::new(4.0, 25.0);
    let w = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(5.0, 6.0, 0.0),
            AgentGoals::point(home),
            AgentPath::Follow {
                points: l_path(),
                joining: Joining::NearestPoint,
            },
        ))
        .id();
    // The path wins over the goals it was spawned with: the walker heads east.
    run_until(&mut app, 12, |_| false);
    let p = planned(&app, w);
    assert!(p.x > 7.0 && p.y < 7.0, "{p}");
    assert_eq!(
        app.world()
            .resource::<PathWorld>()
            .routes()
            .routes()
            .count(),
        1
    );
    // Removing the path sends it back to its goals.
    app.world_mut().entity_mut(w).remove::<AgentPath>();
    let steps = run_until(&mut app, 400, |app| !seen(app).arrived.is_empty());
    assert!(steps < 400);
    assert!(planned(&app, w).distance(home) < 1.0);
    // A new path, then new goals: the goals win, the path component goes.
    app.world_mut().entity_mut(w).insert(AgentPath::Follow {
        points: l_path(),
        joining: Joining::NearestPoint,
    });
    run_until(&mut app, 4, |_| false);
    let there = Vec2::new(20.0, 20.0);
    *app.world_mut().get_mut::<AgentGoals>(w).unwrap() = AgentGoals::point(there);
    app.update();
    assert!(app.world().get::<AgentPath>(w).is_none());
    let steps = run_until(&mut app, 400, |app| seen(app).arrived.len() == 2);
    assert!(steps < 400);
    assert!(planned(&app, w).distance(there) < 1.0);
    run_until(&mut app, 2, |_| false);
    assert_eq!(
        app.world()
            .resource::<PathWorld>()
            .routes()
            .routes()
            .count(),
        0
    );
}

#[test]
fn a_field_built_a_little_each_step_is_followed_all_the_same() {
    let mut app = path_app(40.0, 30.0);
    app.insert_resource(PathSettings {
        build_budget: Some(Duration::from_micros(1)),
    });
    let w = walker(&mut app, Vec2::new(5.0, 6.0));
    app.update();
    app.world_mut().entity_mut(w).insert(AgentPath::Follow {
        points: l_path(),
        joining: Joining::WholeCurve,
    });
    app.update();
    let route = app.world().resource::<PathWorld>().route_of(w).unwrap();
    assert!(
        app.world()
            .resource::<PathWorld>()
            .routes()
            .route(route)
            .unwrap()
            .is_building(),
        "one microsecond cannot build the whole field"
    );
    let mut corner = false;
    let steps = run_until(&mut app, 900, |app| {
        corner |= planned(app, w).distance(Vec2::new(32.0, 5.0)) < 1.5;
        !seen(app).arrived.is_empty()
    });
    assert!(steps < 900, "the walker did not arrive");
    assert!(corner, "the walker cut the corner");
}

#[test]
fn bad_paths_and_group_members_are_refused_with_a_message() {
    let mut app = path_app(40.0, 30.0);
    let home = Vec2::new(20.0, 20.0);
    let w = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(5.0, 6.0, 0.0),
            AgentGoals::point(home),
            AgentPath::Waypoints(Vec::new()),
        ))
        .id();
    let outside = walker(&mut app, Vec2::new(10.0, 10.0));
    app.world_mut()
        .entity_mut(outside)
        .insert(AgentPath::Follow {
            points: vec![Vec2::new(100.0, 100.0), Vec2::new(120.0, 100.0)],
            joining: Joining::NearestPoint,
        });
    let nan = walker(&mut app, Vec2::new(10.0, 20.0));
    app.world_mut()
        .entity_mut(nan)
        .insert(AgentPath::Waypoints(vec![Vec2::new(f32::NAN, 1.0)]));
    let group = app.world_mut().spawn(CrowdGroup::default()).id();
    let member = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(30.0, 20.0, 0.0),
            MemberOf(group),
            AgentPath::Waypoints(l_path()),
        ))
        .id();
    run_until(&mut app, 3, |_| false);
    let refused = &app.world().resource::<PathSeen>().0;
    assert_eq!(refused.len(), 4, "{refused:?}");
    let error_of = |e: Entity| refused.iter().find(|(x, _)| *x == e).unwrap().1.clone();
    assert_eq!(error_of(w), SketchError::EmptyStroke);
    assert_eq!(error_of(outside), SketchError::NothingWalkable);
    assert_eq!(error_of(nan), SketchError::NonFinite);
    assert!(matches!(error_of(member), SketchError::BadSetting(_)));
    // Refused once, not every step; the walker keeps its goals.
    run_until(&mut app, 200, |app| !seen(app).arrived.is_empty());
    assert_eq!(app.world().resource::<PathSeen>().0.len(), 4);
    assert!(planned(&app, w).distance(home) < 1.0);
}
