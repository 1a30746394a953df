//! Digest 004 §12 test 9 (seed 004 §4.1, Fig 5.2): stroke samples as successive intermediate
//! goals shared by a subset of walkers; a branching stroke sends two subsets down different
//! branches; no overlaps.

mod common;

use common::{all_arrived, spawn_at, walk, world};
use crowdfield_sketch::{Routes, Sketch, Stroke, StrokeKind, WaypointSettings};
use glam::DVec2;

#[test]
fn a_branching_stroke_sends_each_subset_down_its_branch_through_its_waypoints_in_order() {
    let mut crowd = world(DVec2::new(50.0, 40.0), vec![]);
    // Two subsets of three, side by side at the trunk's start.
    let a = spawn_at(
        &mut crowd,
        &[
            DVec2::new(3.0, 19.0),
            DVec2::new(3.0, 20.0),
            DVec2::new(3.0, 21.0),
        ],
    );
    let b = spawn_at(
        &mut crowd,
        &[
            DVec2::new(2.0, 19.0),
            DVec2::new(2.0, 20.0),
            DVec2::new(2.0, 21.0),
        ],
    );
    let mut sketch = Sketch::new();
    // The trunk runs east; at x = 20 one branch goes north-east, the trunk goes on south-east.
    let trunk = sketch
        .add(
            Stroke::from_positions([
                DVec2::new(4.0, 20.0),
                DVec2::new(20.0, 20.0),
                DVec2::new(40.0, 8.0),
            ])
            .unwrap(),
            StrokeKind::Path,
        )
        .unwrap();
    let branch = sketch
        .add(
            Stroke::from_positions([DVec2::new(20.2, 20.3), DVec2::new(40.0, 32.0)]).unwrap(),
            StrokeKind::Path,
        )
        .unwrap();
    assert_eq!(
        sketch.stroke(branch).unwrap().branch_of.map(|b| b.0),
        Some(trunk)
    );
    let paths = sketch.paths();
    let path = |id| paths.iter().find(|(p, _)| *p == id).unwrap().1.clone();
    let mut routes = Routes::new();
    let settings = WaypointSettings::default();
    let ra = routes
        .waypoints(&mut crowd, &a, &path(trunk), settings)
        .unwrap();
    let rb = routes
        .waypoints(&mut crowd, &b, &path(branch), settings)
        .unwrap();
    // Each walker's goal index only grows: waypoints are visited in order.
    let mut index: Vec<usize> = vec![0; 6];
    let mut seen_south = [false; 6];
    let mut seen_north = [false; 6];
    let ids: Vec<_> = a.iter().chain(&b).copied().collect();
    let mut overlap: f64 = 0.0;
    for _ in 0..1500 {
        crowd.step();
        overlap = overlap.max(common::deepest_overlap(&crowd));
        for (k, id) in ids.iter().enumerate() {
            let agent = crowd.agent(*id).unwrap();
            assert!(
                agent.goal_index() >= index[k],
                "walker {k} went back a waypoint"
            );
            index[k] = agent.goal_index();
            let p = agent.position();
            if p.x > 26.0 {
                seen_south[k] |= p.y < 17.0;
                seen_north[k] |= p.y > 23.0;
            }
        }
        if all_arrived(&crowd, &ids) {
            break;
        }
    }
    assert!(all_arrived(&crowd, &ids));
    assert_eq!(overlap, 0.0);
    for k in 0..3 {
        assert!(
            seen_south[k] && !seen_north[k],
            "subset A walker {k} left the trunk"
        );
        assert!(
            seen_north[3 + k] && !seen_south[3 + k],
            "subset B walker {k} left the branch"
        );
    }
    // Every waypoint was taken: the queue's end.
    let last_a = routes.route(ra).unwrap().goals().len() - 1;
    let last_b = routes.route(rb).unwrap().goals().len() - 1;
    assert!(index[..3].iter().all(|i| *i == last_a));
    assert!(index[3..].iter().all(|i| *i == last_b));
    // Routes whose followers all arrived give their goals back.
    let goals_before = crowd.goal_count();
    assert_eq!(routes.release(&mut crowd), 2);
    assert_eq!(
        crowd.goal_count(),
        goals_before - (last_a + 1) - (last_b + 1)
    );
}

#[test]
fn waypoints_lie_every_spacing_along_the_stroke_and_end_at_its_end() {
    let mut crowd = world(DVec2::new(30.0, 10.0), vec![]);
    let ids = spawn_at(&mut crowd, &[DVec2::new(2.0, 5.0)]);
    let stroke = Stroke::from_positions([DVec2::new(2.0, 5.0), DVec2::new(27.0, 5.0)]).unwrap();
    let mut routes = Routes::new();
    let r = routes
        .waypoints(&mut crowd, &ids, &stroke, WaypointSettings::default())
        .unwrap();
    let crowdfield_sketch::RouteKind::Waypoints(points) = routes.route(r).unwrap().kind() else {
        panic!("Mode A")
    };
    assert_eq!(points.len(), 13);
    assert_eq!(*points.last().unwrap(), DVec2::new(27.0, 5.0));
    let (_, steps, _) = walk(&mut crowd, &ids, 600);
    assert!(all_arrived(&crowd, &ids), "{steps}");
}
