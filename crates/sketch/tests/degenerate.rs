//! Degenerate strokes (issue: "a single point, zero length, self-crossing, leaving the world,
//! crossing an obstacle larger than a group map, thousands of points"): each has a documented
//! behaviour, none panics, and a refused order changes nothing.

mod common;

use common::{all_arrived, spawn_at, walk, world};
use crowdfield_field::Shape;
use crowdfield_group::{GroupEvent, GroupSettings, Groups};
use crowdfield_sketch::{
    Joining, Routes, SketchError, Stroke, StrokeField, StrokeFieldSettings, WaypointSettings,
};
use glam::DVec2;

/// Sends walkers from `starts` along `stroke`; whether all arrived, where the first stands,
/// and where the stroke's walkable part ends.
fn follow(stroke: &Stroke, starts: &[DVec2], statics: Vec<Shape>) -> (bool, DVec2, DVec2) {
    let mut crowd = world(DVec2::new(40.0, 30.0), statics);
    let ids = spawn_at(&mut crowd, starts);
    let mut routes = Routes::new();
    let route = routes
        .follow(
            &mut crowd,
            &ids,
            stroke,
            Joining::NearestPoint,
            StrokeFieldSettings::default(),
        )
        .unwrap();
    let end = routes.route(route).unwrap().field().unwrap().end();
    let (_, _, overlap) = walk(&mut crowd, &ids, 2000);
    assert_eq!(overlap, 0.0);
    (
        all_arrived(&crowd, &ids),
        crowd.agent(ids[0]).unwrap().position(),
        end,
    )
}

#[test]
fn a_single_point_or_a_stroke_of_zero_length_is_a_goal_at_that_point() {
    let point = DVec2::new(30.0, 15.0);
    for stroke in [
        Stroke::from_positions([point]).unwrap(),
        Stroke::from_positions([point, point, point]).unwrap(),
    ] {
        let (arrived, at, _) = follow(&stroke, &[DVec2::new(5.0, 15.0)], vec![]);
        assert!(arrived);
        assert!(at.distance(point) < 1.5, "{at}");
    }
}

#[test]
fn a_self_crossing_stroke_is_followed_to_its_end() {
    // A figure of eight: it crosses itself in the middle.
    let stroke = Stroke::from_positions([
        DVec2::new(6.0, 8.0),
        DVec2::new(20.0, 22.0),
        DVec2::new(26.0, 22.0),
        DVec2::new(26.0, 8.0),
        DVec2::new(20.0, 8.0),
        DVec2::new(6.0, 22.0),
    ])
    .unwrap();
    let (arrived, at, _) = follow(&stroke, &[DVec2::new(4.0, 6.0)], vec![]);
    assert!(arrived);
    assert!(at.distance(DVec2::new(6.0, 22.0)) < 1.5, "{at}");
}

#[test]
fn a_stroke_leaving_the_world_is_followed_on_its_parts_inside() {
    // Out of the world at the top and back in: two pieces joined by a bridge; it ends outside,
    // so the way ends where it last left the world.
    let stroke = Stroke::from_positions([
        DVec2::new(5.0, 15.0),
        DVec2::new(15.0, 40.0),
        DVec2::new(25.0, 15.0),
        DVec2::new(50.0, 15.0),
    ])
    .unwrap();
    let f = StrokeField::build(
        &stroke,
        (DVec2::ZERO, DVec2::new(40.0, 30.0)),
        &[],
        StrokeFieldSettings::default(),
    )
    .unwrap();
    assert_eq!(f.pieces().len(), 2);
    assert!(f.end().x > 39.0 && f.end().x <= 40.0, "{}", f.end());
    let (arrived, at, end) = follow(&stroke, &[DVec2::new(4.0, 15.0)], vec![]);
    assert!(arrived);
    // (The crowd's world has walls just outside its bounds: its field ends a little further
    // in than one built without them.)
    assert!(end.x > 38.0 && at.distance(end) < 1.5, "{at} {end}");
    // Wholly outside: refused.
    let outside = Stroke::from_positions([DVec2::new(-5.0, -5.0), DVec2::new(-1.0, -9.0)]).unwrap();
    assert_eq!(
        StrokeField::build(
            &outside,
            (DVec2::ZERO, DVec2::new(40.0, 30.0)),
            &[],
            StrokeFieldSettings::default()
        )
        .err(),
        Some(SketchError::NothingWalkable)
    );
}

#[test]
fn a_group_crosses_a_building_larger_than_its_map_drawn_over() {
    // The seed's limitation (digest 004 §9): a stroke across an obstacle much larger than the
    // group map blocked the group. Here the stroke is cut at the building and a bridge leads
    // round it.
    let building = Shape::Aabb {
        min: DVec2::new(14.0, 6.0),
        max: DVec2::new(26.0, 24.0),
    };
    let mut crowd = world(DVec2::new(40.0, 30.0), vec![building]);
    let ids = spawn_at(
        &mut crowd,
        &[
            DVec2::new(4.0, 14.0),
            DVec2::new(4.0, 16.0),
            DVec2::new(5.5, 15.0),
        ],
    );
    let mut groups = Groups::new();
    let group = groups
        .create(&mut crowd, &ids, GroupSettings::default(), None)
        .unwrap();
    let stroke = Stroke::from_positions([DVec2::new(6.0, 15.0), DVec2::new(36.0, 15.0)]).unwrap();
    let mut routes = Routes::new();
    routes
        .follow_with_group(
            &mut crowd,
            &mut groups,
            group,
            &stroke,
            Joining::NearestPoint,
            StrokeFieldSettings::default(),
        )
        .unwrap();
    let mut arrived = false;
    for _ in 0..2000 {
        let (_, report) = groups.step(&mut crowd);
        assert_eq!(common::deepest_overlap(&crowd), 0.0);
        if report
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Arrived { .. }))
        {
            arrived = true;
            break;
        }
    }
    assert!(arrived);
    assert!(
        groups
            .group(group)
            .unwrap()
            .anchor()
            .distance(DVec2::new(36.0, 15.0))
            < 1.5
    );
}

#[test]
fn thousands_of_drawn_points_are_simplified_and_followed() {
    // 5,000 pointer samples of a wobbly line.
    let stroke = Stroke::from_positions((0..5000).map(|k| {
        let t = k as f64 / 4999.0;
        DVec2::new(5.0 + 30.0 * t, 15.0 + 0.02 * (k as f64 * 0.7).sin())
    }))
    .unwrap();
    let (arrived, at, _) = follow(&stroke, &[DVec2::new(4.0, 15.0)], vec![]);
    assert!(arrived);
    assert!(at.distance(DVec2::new(35.0, 15.0)) < 1.5, "{at}");
}

#[test]
fn bad_strokes_and_settings_are_typed_errors_that_change_nothing() {
    let mut crowd = world(DVec2::new(40.0, 30.0), vec![]);
    let ids = spawn_at(&mut crowd, &[DVec2::new(4.0, 15.0)]);
    let goals = crowd.goal_count();
    let mut routes = Routes::new();
    let line = Stroke::from_positions([DVec2::new(5.0, 5.0), DVec2::new(20.0, 5.0)]).unwrap();
    let bad = StrokeFieldSettings {
        alpha: 0.6,
        ..StrokeFieldSettings::default()
    };
    assert!(matches!(
        routes.follow(&mut crowd, &ids, &line, Joining::NearestPoint, bad),
        Err(SketchError::BadSetting(_))
    ));
    assert_eq!(
        routes
            .follow(
                &mut crowd,
                &ids,
                &Stroke::new(),
                Joining::WholeCurve,
                StrokeFieldSettings::default()
            )
            .err(),
        Some(SketchError::EmptyStroke)
    );
    let unknown = crowdfield_steer::AgentId(99);
    assert!(
        routes
            .follow(
                &mut crowd,
                &[unknown],
                &line,
                Joining::NearestPoint,
                StrokeFieldSettings::default()
            )
            .is_err()
    );
    assert!(
        routes
            .waypoints(
                &mut crowd,
                &ids,
                &line,
                WaypointSettings {
                    spacing: f64::NAN,
                    radius: 1.0
                }
            )
            .is_err()
    );
    assert_eq!(
        Stroke::from_positions([DVec2::new(f64::NAN, 0.0)]).err(),
        Some(SketchError::NonFinite)
    );
    assert_eq!(crowd.goal_count(), goals);
    assert_eq!(routes.routes().count(), 0);
    assert!(crowd.agent(ids[0]).unwrap().params().goals.is_empty());
}
