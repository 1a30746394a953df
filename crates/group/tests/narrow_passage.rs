//! Digest 004 §12 test 11 (seed 004 Fig 6.7): seven members in a wedge meet a corridor two
//! members wide. The formation deforms to file through and forms again beyond.

mod common;

use common::{block, deepest_overlap, disc, members_and_slots, positions, spawn_at, world};
use crowdfield_field::Shape;
use crowdfield_group::{Formation, GroupSettings, Groups, Template, measure};
use glam::DVec2;

#[test]
fn a_wedge_of_seven_files_through_a_corridor_two_members_wide_and_forms_again() {
    // A wall across the world at x ∈ [18, 24] with a gap of 1.0 m (two diameters) at y = 10.
    let statics = vec![
        Shape::Aabb {
            min: DVec2::new(18.0, 0.0),
            max: DVec2::new(24.0, 9.5),
        },
        Shape::Aabb {
            min: DVec2::new(18.0, 10.5),
            max: DVec2::new(24.0, 20.0),
        },
    ];
    let mut crowd = world(DVec2::new(44.0, 20.0), statics);
    let ids = spawn_at(&mut crowd, &block(DVec2::new(5.0, 10.0), 7, 3, 1.0));
    let mut groups = Groups::new();
    let settings = GroupSettings::default();
    let cell = 0.5;
    let group = groups
        .create(
            &mut crowd,
            &ids,
            settings,
            Some(Formation::template(Template::Wedge)),
        )
        .unwrap();
    groups
        .move_to(&mut crowd, group, disc(DVec2::new(38.0, 10.0), 1.0))
        .unwrap();
    let mut errors = Vec::new();
    let mut exit_step = None;
    let mut worst_overlap: f64 = 0.0;
    let mut outside_map = 0;
    for step in 0..400 {
        groups.step(&mut crowd);
        worst_overlap = worst_overlap.max(deepest_overlap(&crowd));
        let (members, slots) = members_and_slots(&crowd, &groups, group);
        let rms = measure::slot_distance(&members, &slots);
        errors.push(rms);
        let map = groups.group(group).unwrap().map();
        outside_map += members
            .iter()
            .filter(|p| map.interior_cell(**p).is_none())
            .count();
        let xs = positions(&crowd, &ids);
        if exit_step.is_none() && xs.iter().all(|p| p.x > 24.5) {
            exit_step = Some(step);
        }
        if groups.group(group).unwrap().has_arrived() && rms < 0.1 {
            break;
        }
    }
    let exit = exit_step.expect("every member gets through the corridor");
    assert!(worst_overlap == 0.0, "overlap of {worst_overlap} m");
    assert_eq!(outside_map, 0, "members left their group map");
    // The error peaks while the group files through.
    let peak = errors[..=exit].iter().copied().fold(0.0, f64::max);
    let before = errors[5..20].iter().copied().fold(0.0, f64::max);
    assert!(
        peak > 2.0 * cell,
        "the formation deforms in the corridor (peak {peak})"
    );
    assert!(peak > 3.0 * before);
    // Back under half a cell within twice the steps to cross the map's width after the exit.
    let crossing = (settings_width(cell) / (0.8 * 0.35)).ceil() as usize;
    let back = errors[exit..]
        .iter()
        .position(|e| *e < 0.5 * cell)
        .expect("the formation forms again");
    assert!(
        back <= 2 * crossing,
        "formed again {back} steps after the exit (bound {})",
        2 * crossing
    );
}

fn settings_width(cell: f64) -> f64 {
    GroupSettings::default().map_side as f64 * cell
}
