//! Digest 004 §12 test 13 (seed 004 §5.10, Fig 6.11): the group map's size decides whether a
//! group keeps together round an obstacle or splits round it. An obstacle that fits inside the
//! map with room on both sides is avoided inside it, members on each side going their own way;
//! one the map cannot hold is seen only through the map's border and intermediate goal, and the
//! whole group goes round one side.
//!
//! The scene: ten members in a box formation (radius 0.25 m, so cells of 0.5 m: a map of 20
//! cells spans 10 m, one of 30 cells 15 m) walk towards a goal 44 m away along guidance drawn
//! straight through an 8 m fence; only the group map sees the fence. A fence tagged "keep
//! together" shrinks a 30-cell map to 20 cells near it, and the group stays whole.

mod common;

use common::{block, deepest_overlap, disc, positions, spawn_at, world};
use crowdfield_field::Shape;
use crowdfield_group::{Formation, GroupSettings, Groups, Template, measure};
use crowdfield_steer::Guidance;
use glam::DVec2;

/// What happened as a group of ten passed an 8 m fence across its way.
#[derive(Debug)]
struct Passage {
    /// Members that reached the fence's near face (x = 21) above its middle and below it.
    above: usize,
    below: usize,
    /// Connected parts at the end.
    parts_at_end: usize,
    arrived: bool,
    overlap: f64,
}

/// Half the fence's length.
const FENCE_HALF: f64 = 4.0;

/// Runs the scene with a map of `map_side` cells; with `keep_together_side`, the fence is
/// tagged "keep together" and maps near it shrink to that side.
fn pass_the_wall(map_side: usize, keep_together_side: Option<usize>) -> Passage {
    // A fence 8 m across the group's way, half a metre thick.
    let fence = Shape::Aabb {
        min: DVec2::new(21.0, 15.0 - FENCE_HALF),
        max: DVec2::new(21.5, 15.0 + FENCE_HALF),
    };
    let mut crowd = world(DVec2::new(60.0, 30.0), vec![fence.clone()]);
    let ids = spawn_at(&mut crowd, &block(DVec2::new(6.0, 15.0), 10, 2, 1.0));
    let mut groups = Groups::new();
    if keep_together_side.is_some() {
        groups.add_keep_together(fence).unwrap();
    }
    let settings = GroupSettings {
        map_side,
        keep_together_side: keep_together_side.unwrap_or(0),
        ..GroupSettings::default()
    };
    let group = groups
        .create(
            &mut crowd,
            &ids,
            settings,
            Some(Formation::template(Template::Box)),
        )
        .unwrap();
    // Guidance drawn straight through the fence (a stroke, not a global map that knows it):
    // only the group map sees the fence.
    let target = DVec2::new(50.0, 15.0);
    let goal = crowd
        .add_guided_goal(disc(target, 1.0), Guidance::Towards(target))
        .unwrap();
    groups.follow_goal(&mut crowd, group, goal).unwrap();
    let mut side: Vec<Option<bool>> = vec![None; ids.len()];
    let mut overlap: f64 = 0.0;
    let mut arrived = false;
    for _ in 0..600 {
        let (_, report) = groups.step(&mut crowd);
        overlap = overlap.max(deepest_overlap(&crowd));
        for (k, p) in positions(&crowd, &ids).iter().enumerate() {
            if side[k].is_none() && p.x >= 21.0 {
                side[k] = Some(p.y > 15.0);
            }
        }
        if report
            .events
            .iter()
            .any(|e| matches!(e, crowdfield_group::GroupEvent::Arrived { .. }))
        {
            arrived = true;
            break;
        }
    }
    let end = positions(&crowd, &ids);
    Passage {
        above: side.iter().filter(|s| **s == Some(true)).count(),
        below: side.iter().filter(|s| **s == Some(false)).count(),
        parts_at_end: measure::splits(&end, 2.0),
        arrived,
        overlap,
    }
}

#[test]
fn a_map_of_twenty_cells_takes_the_whole_group_round_one_side() {
    let p = pass_the_wall(20, None);
    assert!(p.arrived, "{p:?}");
    assert_eq!(p.above + p.below, 10, "{p:?}");
    assert!(p.above == 10 || p.below == 10, "the group split: {p:?}");
    assert_eq!(p.parts_at_end, 1, "{p:?}");
    assert_eq!(p.overlap, 0.0);
}

#[test]
fn a_map_of_thirty_cells_splits_the_group_round_both_sides_and_it_regroups() {
    let p = pass_the_wall(30, None);
    assert!(p.arrived, "{p:?}");
    assert_eq!(p.above + p.below, 10, "{p:?}");
    assert!(
        p.above >= 2 && p.below >= 2,
        "the group did not split: {p:?}"
    );
    assert_eq!(p.parts_at_end, 1, "it regroups at the goal: {p:?}");
    assert_eq!(p.overlap, 0.0);
}

#[test]
fn a_fence_tagged_keep_together_shrinks_a_thirty_cell_map_and_the_group_stays_whole() {
    let p = pass_the_wall(30, Some(20));
    assert!(p.arrived, "{p:?}");
    assert_eq!(p.above + p.below, 10, "{p:?}");
    assert!(p.above == 10 || p.below == 10, "the group split: {p:?}");
    assert_eq!(p.parts_at_end, 1, "{p:?}");
    assert_eq!(p.overlap, 0.0);
}

#[test]
fn keep_together_regions_are_replaced_whole_or_not_at_all() {
    let mut groups = Groups::new();
    let rock = disc(DVec2::new(5.0, 5.0), 2.0);
    groups.set_keep_together([rock.clone()]).unwrap();
    let bad = disc(DVec2::new(f64::NAN, 5.0), 2.0);
    assert!(groups.set_keep_together([rock.clone(), bad]).is_err());
    assert_eq!(groups.keep_together().collect::<Vec<_>>(), vec![&rock]);
    groups.set_keep_together([]).unwrap();
    assert_eq!(groups.keep_together().count(), 0);
}
