//! Groups steered by strokes (seed 004 §4.3 and §5.1: a path and a formation drawn for each
//! group, redrawn while it moves): the group map follows the stroke's field (layer 2), the
//! formation comes from a drawn shape.

mod common;

use common::{deepest_overlap, spawn_at, world};
use crowdfield_group::{GroupEvent, GroupSettings, Groups, Resampling, Template, measure};
use crowdfield_sketch::{
    Joining, Routes, Stroke, StrokeFieldSettings, WaypointSettings, apply_formation_stroke,
    farthest_from,
};
use glam::DVec2;

fn block(centre: DVec2) -> Vec<DVec2> {
    (0..6)
        .map(|i| centre + DVec2::new((i % 3) as f64 * 1.5 - 1.5, (i / 3) as f64 * 1.5 - 0.75))
        .collect()
}

/// Steps until the group arrives or `max` steps; returns the anchor's track, the steps and the
/// deepest overlap.
fn run(
    crowd: &mut crowdfield_steer::Crowd,
    groups: &mut Groups,
    group: crowdfield_group::GroupId,
    max: usize,
) -> (Vec<DVec2>, usize, f64) {
    let mut track = Vec::new();
    let mut overlap: f64 = 0.0;
    for step in 0..max {
        let (_, report) = groups.step(crowd);
        overlap = overlap.max(deepest_overlap(crowd));
        track.push(groups.group(group).unwrap().anchor());
        if report
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Arrived { .. }))
        {
            return (track, step + 1, overlap);
        }
    }
    (track, max, overlap)
}

#[test]
fn a_group_in_a_drawn_wedge_follows_a_drawn_path_and_forms_the_wedge_at_its_end() {
    let mut crowd = world(DVec2::new(60.0, 40.0), vec![]);
    let ids = spawn_at(&mut crowd, &block(DVec2::new(6.0, 8.0)));
    let mut groups = Groups::new();
    let group = groups
        .create(
            &mut crowd,
            &ids,
            GroupSettings::default(),
            Some(crowdfield_group::Formation::template(Template::Box)),
        )
        .unwrap();
    // A V drawn tip last, dragged upwards: forward is +y of the drawing.
    let v = Stroke::from_positions([
        DVec2::new(0.0, 0.0),
        DVec2::new(1.0, 1.0),
        DVec2::new(2.0, 2.0),
        DVec2::new(3.0, 3.0),
        DVec2::new(4.0, 2.0),
        DVec2::new(5.0, 1.0),
        DVec2::new(6.0, 0.0),
    ])
    .unwrap();
    apply_formation_stroke(
        &mut groups,
        &crowd,
        group,
        &v,
        Some(DVec2::Y),
        Resampling::Stride,
    )
    .unwrap();
    let path = Stroke::from_positions([
        DVec2::new(8.0, 8.0),
        DVec2::new(40.0, 8.0),
        DVec2::new(40.0, 32.0),
    ])
    .unwrap();
    let settings = StrokeFieldSettings {
        tube_half_width: 1.5,
        ..StrokeFieldSettings::default()
    };
    let mut routes = Routes::new();
    routes
        .follow_with_group(
            &mut crowd,
            &mut groups,
            group,
            &path,
            Joining::NearestPoint,
            settings,
        )
        .unwrap();
    let (track, steps, overlap) = run(&mut crowd, &mut groups, group, 1500);
    assert!(steps < 1500, "the group did not arrive");
    assert_eq!(overlap, 0.0);
    // The map's centre keeps to the tube once on it.
    let line = path.positions();
    let joined = track
        .iter()
        .position(|p| farthest_from(&[*p], &line) < 1.5)
        .unwrap();
    let strays = farthest_from(&track[joined..], &line);
    assert!(
        strays <= 1.5,
        "the map strayed {strays:.2} m from the stroke"
    );
    // The wedge forms at the end.
    for _ in 0..60 {
        groups.step(&mut crowd);
    }
    let g = groups.group(group).unwrap();
    let (members, slots): (Vec<DVec2>, Vec<DVec2>) = g
        .member_slots()
        .map(|(id, slot)| (crowd.agent(id).unwrap().position(), slot.unwrap()))
        .unzip();
    let error = measure::slot_distance(&members, &slots);
    assert!(error < 0.5, "RMS slot distance {error:.2} m");
}

#[test]
fn a_path_redrawn_while_the_group_walks_retargets_it_without_a_stall() {
    let mut crowd = world(DVec2::new(60.0, 40.0), vec![]);
    let ids = spawn_at(&mut crowd, &block(DVec2::new(6.0, 20.0)));
    let mut groups = Groups::new();
    let group = groups
        .create(
            &mut crowd,
            &ids,
            GroupSettings::default(),
            Some(crowdfield_group::Formation::template(Template::Line)),
        )
        .unwrap();
    let first = Stroke::from_positions([DVec2::new(8.0, 20.0), DVec2::new(54.0, 20.0)]).unwrap();
    let mut routes = Routes::new();
    routes
        .follow_with_group(
            &mut crowd,
            &mut groups,
            group,
            &first,
            Joining::NearestPoint,
            StrokeFieldSettings::default(),
        )
        .unwrap();
    for _ in 0..60 {
        groups.step(&mut crowd);
    }
    let goals_before = crowd.goal_count();
    let first_goals = routes.routes().next().unwrap().1.goals().len();
    // Redrawn towards the north-east corner from where the group is.
    let at = groups.group(group).unwrap().anchor();
    let second =
        Stroke::from_positions([at, DVec2::new(at.x + 6.0, 34.0), DVec2::new(54.0, 34.0)]).unwrap();
    routes
        .follow_with_group(
            &mut crowd,
            &mut groups,
            group,
            &second,
            Joining::NearestPoint,
            StrokeFieldSettings::default(),
        )
        .unwrap();
    // The first route and its goals went with the old order.
    assert_eq!(routes.routes().count(), 1);
    let second_goals = routes.routes().next().unwrap().1.goals().len();
    assert_eq!(
        crowd.goal_count(),
        goals_before - first_goals + second_goals
    );
    let mut last = groups.group(group).unwrap().anchor();
    let end = DVec2::new(54.0, 34.0);
    let (track, steps, overlap) = run(&mut crowd, &mut groups, group, 1500);
    assert!(steps < 1500, "the group did not arrive");
    assert_eq!(overlap, 0.0);
    // No stall: the anchor moves every ten steps.
    for chunk in track.chunks(10).take(steps / 10) {
        let here = *chunk.last().unwrap();
        assert!(
            here.distance(last) > 0.2 || here.distance(end) < 1.0,
            "stalled at {here}"
        );
        last = here;
    }
}

#[test]
fn a_group_walks_waypoints_one_after_another() {
    let mut crowd = world(DVec2::new(40.0, 30.0), vec![]);
    let ids = spawn_at(&mut crowd, &block(DVec2::new(5.0, 5.0)));
    let mut groups = Groups::new();
    let group = groups
        .create(&mut crowd, &ids, GroupSettings::default(), None)
        .unwrap();
    let path = Stroke::from_positions([
        DVec2::new(5.0, 5.0),
        DVec2::new(30.0, 5.0),
        DVec2::new(30.0, 25.0),
    ])
    .unwrap();
    let mut routes = Routes::new();
    routes
        .waypoints_with_group(
            &mut crowd,
            &mut groups,
            group,
            &path,
            WaypointSettings {
                spacing: 4.0,
                radius: 1.0,
            },
        )
        .unwrap();
    let (track, steps, overlap) = run(&mut crowd, &mut groups, group, 1200);
    assert!(steps < 1200, "the group did not arrive");
    assert_eq!(overlap, 0.0);
    // It went by the corner rather than straight across.
    assert!(
        track
            .iter()
            .any(|p| p.distance(DVec2::new(30.0, 5.0)) < 2.0)
    );
}

/// A long stroke's field built a little each step (a budget far too small to build it at
/// once): the group sets off at once on the straight way to the end, takes the segments as
/// they come, and still follows the stroke round its corner to the end.
#[test]
fn a_group_follows_a_field_built_a_slice_at_a_time() {
    let mut crowd = world(DVec2::new(60.0, 40.0), vec![]);
    let ids = spawn_at(&mut crowd, &block(DVec2::new(6.0, 6.0)));
    let mut groups = Groups::new();
    let group = groups
        .create(&mut crowd, &ids, GroupSettings::default(), None)
        .unwrap();
    // East along y = 6, then north along x = 50: 80 m.
    let stroke = Stroke::from_positions([
        DVec2::new(8.0, 6.0),
        DVec2::new(50.0, 6.0),
        DVec2::new(50.0, 34.0),
    ])
    .unwrap();
    let mut routes = Routes::new();
    routes.set_build_budget(Some(std::time::Duration::from_micros(1)));
    let route = routes
        .follow_with_group(
            &mut crowd,
            &mut groups,
            group,
            &stroke,
            Joining::NearestPoint,
            StrokeFieldSettings::default(),
        )
        .unwrap();
    assert!(routes.route(route).unwrap().is_building());
    let mut track = Vec::new();
    let mut arrived = false;
    let mut built_at = None;
    for step in 0..1500 {
        let building = routes
            .advance_with_groups(&mut crowd, &mut groups, std::time::Duration::from_micros(1))
            .unwrap();
        if building == 0 && built_at.is_none() {
            built_at = Some(step);
        }
        let (_, report) = groups.step(&mut crowd);
        track.push(groups.group(group).unwrap().anchor());
        if report
            .events
            .iter()
            .any(|e| matches!(e, GroupEvent::Arrived { .. }))
        {
            arrived = true;
            break;
        }
    }
    assert!(arrived, "the group did not arrive");
    let built_at = built_at.expect("the field was finished");
    assert!(built_at > 1, "built in {built_at} steps: not sliced");
    // The corner was walked, not cut.
    assert!(
        track
            .iter()
            .any(|p| p.distance(DVec2::new(50.0, 6.0)) < 2.5),
        "the group cut the corner"
    );
    assert!(track.last().unwrap().distance(DVec2::new(50.0, 34.0)) < 1.5);
    // The stand-in goal went once the field was whole: the route holds only built goals.
    assert!(!routes.route(route).unwrap().is_building());
}
