//! Digest 004 §12 test 8 (seed 004 Section 5.1, Figs 5.4–5.5): a stroke's field, both ways of
//! joining it, followed by walkers; the field strictly monotone along the curve, cut into
//! sub-goals where f64 runs out; the fidelity of followers to the stroke.

mod common;

use common::{all_arrived, spawn_at, walk, world};
use crowdfield_field::Shape;
use crowdfield_sketch::{Joining, Routes, Stroke, StrokeField, StrokeFieldSettings, farthest_from};
use glam::DVec2;

/// A winding stroke across a 60 × 40 m world: an S with rounded bends.
fn winding() -> Stroke {
    Stroke::from_positions([
        DVec2::new(6.0, 8.0),
        DVec2::new(30.0, 8.0),
        DVec2::new(36.0, 14.0),
        DVec2::new(36.0, 22.0),
        DVec2::new(30.0, 28.0),
        DVec2::new(14.0, 28.0),
        DVec2::new(10.0, 32.0),
        DVec2::new(14.0, 36.0),
        DVec2::new(54.0, 36.0),
    ])
    .unwrap()
}

fn size() -> DVec2 {
    DVec2::new(60.0, 40.0)
}

#[test]
fn the_field_is_strictly_monotone_along_the_curve_in_every_segment() {
    let f = StrokeField::build(
        &winding(),
        (DVec2::ZERO, size()),
        &[],
        StrokeFieldSettings::default(),
    )
    .unwrap();
    assert!(f.segments().len() >= 2, "a 120 m stroke needs sub-goals");
    for s in f.segments() {
        let v = s.chain_values(f.chain());
        assert_eq!(
            *v.last().unwrap(),
            0.0,
            "the goal is the segment's last cell"
        );
        for (k, w) in v.windows(2).enumerate() {
            assert!(
                w[0] > w[1],
                "segment {}..{}: not monotone at {k}: {w:?}",
                s.first,
                s.last
            );
        }
        assert!(
            0.5 - v[0] > f.settings().precision,
            "resolved at the upstream end"
        );
    }
    // Consecutive segments overlap: each sub-goal lies inside the next segment's chain.
    for w in f.segments().windows(2) {
        assert!(
            w[1].first <= w[0].last && w[0].last <= w[1].last,
            "{}..{} then {}..{}",
            w[0].first,
            w[0].last,
            w[1].first,
            w[1].last
        );
    }
}

#[test]
fn without_sub_goals_f64_runs_out_along_a_long_stroke() {
    // Asking for no precision margin at all, the values still stop being distinct from γ in
    // f64 some tens of tube widths from the goal: the cut comes at the noise floor.
    let straight = Stroke::from_positions([DVec2::new(4.0, 20.0), DVec2::new(56.0, 20.0)]).unwrap();
    let settings = StrokeFieldSettings {
        precision: 1e-300,
        ..StrokeFieldSettings::default()
    };
    let f = StrokeField::build(&straight, (DVec2::ZERO, size()), &[], settings).unwrap();
    assert!(f.segments().len() >= 2, "{} segment(s)", f.segments().len());
    let first = &f.segments()[0];
    let reach = f.chain()[first.last].along - f.chain()[first.first].along;
    // The tube is 2 m wide: f64 holds about 36 decay lengths of 2/π m, some 23 m.
    assert!(
        (12.0..40.0).contains(&reach),
        "one field reaches {reach:.1} m"
    );
}

#[test]
fn joining_at_the_nearest_point_walkers_reach_the_tube_and_follow_it_to_the_end() {
    let mut crowd = world(size(), vec![]);
    let starts = [
        DVec2::new(4.0, 20.0),
        DVec2::new(24.0, 18.0),
        DVec2::new(50.0, 10.0),
        DVec2::new(22.0, 33.0),
    ];
    let ids = spawn_at(&mut crowd, &starts);
    let stroke = winding();
    let settings = StrokeFieldSettings::default();
    let half = settings.tube_half_width;
    let mut routes = Routes::new();
    routes
        .follow(&mut crowd, &ids, &stroke, Joining::NearestPoint, settings)
        .unwrap();
    let (tracks, steps, overlap) = walk(&mut crowd, &ids, 2000);
    assert!(
        all_arrived(&crowd, &ids),
        "not all arrived in {steps} steps"
    );
    assert_eq!(overlap, 0.0);
    let line = stroke.positions();
    for (k, track) in tracks.iter().enumerate() {
        let joined = track
            .iter()
            .position(|p| farthest_from(&[*p], &line) < half)
            .unwrap_or_else(|| panic!("walker {k} never reached the tube"));
        // Fidelity: after joining, the one-sided Hausdorff distance to the stroke, up to 3 m
        // from its end (where the walkers that arrived first stand, and later ones stop
        // beside them).
        let end = stroke.end().unwrap();
        let near_end = track
            .iter()
            .position(|p| p.distance(end) < 3.0)
            .unwrap_or(track.len());
        let along = &track[joined..near_end.max(joined)];
        let strays = farthest_from(along, &line);
        let worst = along
            .iter()
            .copied()
            .max_by(|a, b| farthest_from(&[*a], &line).total_cmp(&farthest_from(&[*b], &line)))
            .unwrap();
        assert!(
            strays <= half,
            "walker {k} strayed {strays:.2} m from the stroke at {worst:.2}"
        );
        assert!(track.last().unwrap().distance(end) < 2.0);
    }
}

#[test]
fn walking_the_whole_curve_a_walker_goes_to_the_start_first_and_covers_the_curve() {
    let mut crowd = world(size(), vec![]);
    // Near the stroke's end, outside the tube; and one inside the tube near the end.
    let ids = spawn_at(
        &mut crowd,
        &[DVec2::new(50.0, 32.0), DVec2::new(46.0, 36.2)],
    );
    let stroke = winding();
    let settings = StrokeFieldSettings::default();
    let half = settings.tube_half_width;
    let mut routes = Routes::new();
    routes
        .follow(&mut crowd, &ids, &stroke, Joining::WholeCurve, settings)
        .unwrap();
    let (tracks, steps, overlap) = walk(&mut crowd, &ids, 4000);
    assert!(
        all_arrived(&crowd, &ids),
        "not all arrived in {steps} steps"
    );
    assert_eq!(overlap, 0.0);
    let start = stroke.start().unwrap();
    let samples = stroke.resampled(0.25).unwrap().positions();
    for (k, track) in tracks.iter().enumerate() {
        let at_start = track
            .iter()
            .position(|p| p.distance(start) <= half)
            .unwrap_or_else(|| panic!("walker {k} never came to the start"));
        let after = &track[at_start..];
        let covered = samples
            .iter()
            .filter(|s| after.iter().any(|p| p.distance(**s) <= half))
            .count() as f64
            / samples.len() as f64;
        assert!(
            covered >= 0.95,
            "walker {k} covered {:.1} % of the curve",
            covered * 100.0
        );
    }
}

#[test]
fn an_obstacle_across_the_stroke_cuts_it_into_pieces_joined_by_a_bridge() {
    // A building 12 m across lies over the middle of the stroke.
    let building = Shape::Aabb {
        min: DVec2::new(24.0, 14.0),
        max: DVec2::new(32.0, 26.0),
    };
    let mut crowd = world(size(), vec![building.clone()]);
    let ids = spawn_at(&mut crowd, &[DVec2::new(6.0, 20.0)]);
    let stroke = Stroke::from_positions([DVec2::new(8.0, 20.0), DVec2::new(52.0, 20.0)]).unwrap();
    let mut routes = Routes::new();
    let route = routes
        .follow(
            &mut crowd,
            &ids,
            &stroke,
            Joining::NearestPoint,
            StrokeFieldSettings::default(),
        )
        .unwrap();
    let field = routes.route(route).unwrap().field().unwrap();
    assert_eq!(field.pieces().len(), 2);
    assert!(
        field
            .legs()
            .iter()
            .any(|l| matches!(l, crowdfield_sketch::Leg::Bridge(_)))
    );
    let (_, steps, overlap) = walk(&mut crowd, &ids, 2000);
    assert!(all_arrived(&crowd, &ids), "not arrived in {steps} steps");
    assert_eq!(overlap, 0.0);
    assert!(
        crowd
            .agent(ids[0])
            .unwrap()
            .position()
            .distance(DVec2::new(52.0, 20.0))
            < 1.5
    );
}

#[test]
fn a_field_built_a_segment_a_step_is_followed_as_if_built_at_once() {
    // Time-slicing: the order builds the first segments only; one more is built every step
    // while the walkers set off, and their queues take the new segments.
    let mut crowd = world(size(), vec![]);
    let ids = spawn_at(&mut crowd, &[DVec2::new(4.0, 9.0), DVec2::new(12.0, 4.0)]);
    let stroke = winding();
    let half = StrokeFieldSettings::default().tube_half_width;
    let mut routes = Routes::new();
    routes.set_build_budget(Some(std::time::Duration::ZERO));
    let route = routes
        .follow(
            &mut crowd,
            &ids,
            &stroke,
            Joining::NearestPoint,
            StrokeFieldSettings::default(),
        )
        .unwrap();
    assert!(routes.route(route).unwrap().is_building());
    let goals_while_building = crowd.goal_count();
    let mut tracks: Vec<Vec<DVec2>> = vec![Vec::new(); ids.len()];
    let mut steps = 0;
    while steps < 2000 && !all_arrived(&crowd, &ids) {
        routes
            .advance(&mut crowd, std::time::Duration::ZERO)
            .unwrap();
        crowd.step();
        assert_eq!(common::deepest_overlap(&crowd), 0.0);
        for (k, id) in ids.iter().enumerate() {
            tracks[k].push(crowd.agent(*id).unwrap().position());
        }
        steps += 1;
    }
    assert!(
        all_arrived(&crowd, &ids),
        "not all arrived in {steps} steps"
    );
    assert!(!routes.route(route).unwrap().is_building());
    assert!(
        crowd.goal_count() > goals_while_building,
        "segments were added"
    );
    let line = stroke.positions();
    let end = stroke.end().unwrap();
    for (k, track) in tracks.iter().enumerate() {
        let joined = track
            .iter()
            .position(|p| farthest_from(&[*p], &line) < half)
            .unwrap();
        let near_end = track
            .iter()
            .position(|p| p.distance(end) < 3.0)
            .unwrap_or(track.len());
        let strays = farthest_from(&track[joined..near_end.max(joined)], &line);
        assert!(strays <= half, "walker {k} strayed {strays:.2} m");
    }
}
