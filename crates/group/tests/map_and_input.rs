//! The group map's incremental stamping (digest 004 §12 test 17), invariants of formations
//! and slot assignment (property tests), and bad input: typed errors, no panic, nothing else
//! disturbed.

mod common;

use common::{block, box_group, disc, spawn_at, world};
use crowdfield_field::{Bias, CellKind, Shape};
use crowdfield_group::{
    Formation, GroupError, GroupId, GroupMap, GroupSettings, Groups, Resampling, Template, assign,
    map::band_weight,
};
use crowdfield_steer::{AgentId, AgentParams, SteerError};
use glam::DVec2;
use proptest::prelude::*;

/// A 20-cell map with a wall and three members, relaxed to convergence.
fn relaxed_map() -> (GroupMap, Vec<(usize, usize)>) {
    let mut map = GroupMap::new(20, 0.5, DVec2::new(5.0, 5.0), 0.9).unwrap();
    map.stamp_obstacle(
        &Shape::Aabb {
            min: DVec2::new(6.5, 1.0),
            max: DVec2::new(7.0, 6.0),
        },
        0.0,
        crowdfield_field::Coverage::Centre,
    );
    map.project_goal(DVec2::new(1.0, 0.3), 3, &[]);
    map.measure_clearance();
    let members = vec![(6, 8), (9, 12), (12, 6)];
    for m in &members {
        assert!(map.stamp_member(*m));
    }
    relax_fully(&mut map);
    (map, members)
}

fn relax_fully(map: &mut GroupMap) {
    map.relax(&Bias::HARMONIC, 3000);
}

#[test]
fn restamping_a_member_one_cell_on_stays_within_five_hundredths_of_a_full_relaxation() {
    let (mut map, members) = relaxed_map();
    let bias = Bias::HARMONIC;
    let from = members[1];
    let to = (from.0 + 1, from.1);
    map.free_member(from, &bias);
    assert!(map.move_member(from, to, &bias, 2));
    // The old cell is free again; the new one is stamped.
    assert_eq!(map.field().kind(from.0, from.1), Some(CellKind::Free));
    assert_eq!(map.field().kind(to.0, to.1), Some(CellKind::Obstacle));
    // Its eight neighbours are in B_1 (μ = 1): one ring from the member.
    for dy in -1i32..=1 {
        for dx in -1i32..=1 {
            if (dx, dy) == (0, 0) {
                continue;
            }
            let c = ((to.0 as i32 + dx) as usize, (to.1 as i32 + dy) as usize);
            let weights = map.band_weights(&[to], &[1.0, 0.5, 0.25]);
            assert_eq!(weights[c.1 * map.side() + c.0], 1.0, "{c:?}");
        }
    }
    assert_eq!(band_weight(1, &[1.0, 0.5]), 1.0);
    // Against the same map relaxed from scratch to convergence.
    let mut full = map.clone();
    relax_fully(&mut full);
    let worst = map
        .field()
        .potentials()
        .iter()
        .zip(full.field().potentials())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(worst <= 0.05, "largest difference {worst}");
}

#[test]
fn bad_groups_and_orders_are_typed_errors_that_change_nothing() {
    let mut crowd = world(DVec2::new(30.0, 20.0), Vec::new());
    let ids = spawn_at(&mut crowd, &block(DVec2::new(5.0, 10.0), 4, 2, 1.5));
    let walker = crowd
        .spawn(AgentParams {
            position: DVec2::new(20.0, 10.0),
            ..AgentParams::default()
        })
        .unwrap();
    let mut groups = Groups::new();
    let settings = GroupSettings::default();
    let wedge = Some(Formation::template(Template::Wedge));
    // Empty groups, duplicate membership, unknown agents.
    assert_eq!(
        groups.create(&mut crowd, &[], settings.clone(), None),
        Err(GroupError::EmptyGroup)
    );
    assert!(matches!(
        groups.create(&mut crowd, &[ids[0], ids[0]], settings.clone(), None),
        Err(GroupError::AlreadyInGroup { agent, .. }) if agent == ids[0]
    ));
    assert_eq!(
        groups.create(&mut crowd, &[AgentId(999)], settings.clone(), None),
        Err(GroupError::Steer(SteerError::UnknownAgent(AgentId(999))))
    );
    // Formations of zero or one point.
    assert!(matches!(
        groups.create(
            &mut crowd,
            &ids,
            settings.clone(),
            Some(Formation::points(vec![]))
        ),
        Err(GroupError::FormationTooShort { points: 0, .. })
    ));
    assert!(matches!(
        groups.create(
            &mut crowd,
            &ids,
            settings.clone(),
            Some(Formation::points(vec![DVec2::ONE]))
        ),
        Err(GroupError::FormationTooShort { points: 1, .. })
    ));
    // A map that cannot hold the formation.
    assert!(matches!(
        groups.create(
            &mut crowd,
            &ids,
            GroupSettings {
                map_side: 6,
                ..settings.clone()
            },
            wedge.clone()
        ),
        Err(GroupError::MapTooSmall { side: 6, .. })
    ));
    // Bad settings.
    assert!(
        groups
            .create(
                &mut crowd,
                &ids,
                GroupSettings {
                    bands: vec![0.5, 1.0],
                    ..settings.clone()
                },
                None
            )
            .is_err()
    );
    assert!(
        groups
            .create(
                &mut crowd,
                &ids,
                GroupSettings {
                    epsilon: 3.0,
                    ..settings.clone()
                },
                None
            )
            .is_err()
    );
    // Nothing above made a group or took an agent over.
    assert_eq!(groups.groups().count(), 0);
    for id in &ids {
        assert_eq!(
            crowd.agent(*id).unwrap().params().steering,
            crowdfield_steer::Steering::LocalMap
        );
    }
    let group = groups
        .create(&mut crowd, &ids, settings.clone(), wedge)
        .unwrap();
    // Joining twice, or joining a second group.
    assert!(matches!(
        groups.add_member(&mut crowd, group, ids[1]),
        Err(GroupError::AlreadyInGroup { .. })
    ));
    assert!(matches!(
        groups.create(&mut crowd, &[walker, ids[2]], settings.clone(), None),
        Err(GroupError::AlreadyInGroup { agent, group: g }) if agent == ids[2] && g == group
    ));
    // NaN orders and unknown groups.
    assert!(matches!(
        groups.move_to(
            &mut crowd,
            group,
            Shape::Disc {
                centre: DVec2::new(f64::NAN, 1.0),
                radius: 1.0
            }
        ),
        Err(GroupError::Steer(_))
    ));
    assert!(groups.follow(&mut crowd, group, walker, f64::NAN).is_err());
    assert!(matches!(
        groups.follow(&mut crowd, group, ids[0], 2.0),
        Err(GroupError::BadOrder(_))
    ));
    assert_eq!(
        groups.hold(&mut crowd, GroupId(7)),
        Err(GroupError::UnknownGroup(GroupId(7)))
    );
    assert!(matches!(
        groups.set_formation(group, Some(Formation::points(vec![DVec2::ZERO]))),
        Err(GroupError::FormationTooShort { .. })
    ));
    assert_eq!(
        groups.group(group).unwrap().formation(),
        Some(&Formation::template(Template::Wedge)),
        "the old formation stays"
    );
    // A goal region wholly inside an obstacle cannot be walked to.
    let pillar = crowd
        .add_obstacle(disc(DVec2::new(25.0, 15.0), 2.0))
        .unwrap();
    assert_eq!(
        groups.move_to(
            &mut crowd,
            group,
            Shape::Disc {
                centre: DVec2::new(25.0, 15.0),
                radius: 0.3
            }
        ),
        Err(GroupError::Steer(SteerError::GoalBlocked))
    );
    crowd.remove_obstacle(pillar).unwrap();
    // The group still works.
    groups
        .move_to(&mut crowd, group, disc(DVec2::new(15.0, 10.0), 1.0))
        .unwrap();
    for _ in 0..10 {
        groups.step(&mut crowd);
    }
    assert!(groups.group(group).unwrap().anchor().x > 6.0);
}

#[test]
fn a_member_despawned_mid_order_is_reported_and_the_others_carry_on() {
    let mut crowd = world(DVec2::new(40.0, 20.0), Vec::new());
    let ids = spawn_at(&mut crowd, &block(DVec2::new(5.0, 10.0), 6, 3, 1.5));
    let bystander = crowd
        .spawn(AgentParams {
            position: DVec2::new(30.0, 3.0),
            ..AgentParams::default()
        })
        .unwrap();
    let (mut groups, group) = box_group(&mut crowd, &ids);
    groups
        .move_to(&mut crowd, group, disc(DVec2::new(32.0, 10.0), 1.0))
        .unwrap();
    let mut lost = Vec::new();
    let mut arrived = false;
    for step in 0..400 {
        if step == 30 {
            crowd.remove(ids[2]).unwrap();
        }
        let (_, report) = groups.step(&mut crowd);
        for e in report.events {
            match e {
                crowdfield_group::GroupEvent::MemberLost { agent, reason, .. } => {
                    lost.push((agent, reason))
                }
                crowdfield_group::GroupEvent::Arrived { .. } => arrived = true,
                _ => {}
            }
        }
        if arrived {
            break;
        }
    }
    assert_eq!(lost, vec![(ids[2], crowdfield_group::LostReason::Removed)]);
    assert!(arrived, "the five left arrive");
    assert_eq!(groups.group(group).unwrap().members().len(), 5);
    assert_eq!(groups.group_of(ids[2]), None);
    assert_eq!(
        crowd.agent(bystander).unwrap().position(),
        DVec2::new(30.0, 3.0),
        "nothing else in the crowd moved"
    );
}

#[test]
fn a_disbanded_group_hands_its_members_back() {
    let mut crowd = world(DVec2::new(30.0, 20.0), Vec::new());
    let ids = spawn_at(&mut crowd, &block(DVec2::new(5.0, 10.0), 3, 3, 1.5));
    let mut groups = Groups::new();
    let group = groups
        .create(&mut crowd, &ids, GroupSettings::default(), None)
        .unwrap();
    groups
        .move_to(&mut crowd, group, disc(DVec2::new(20.0, 10.0), 1.0))
        .unwrap();
    let goals_with_order = crowd.goal_count();
    groups.remove(&mut crowd, group).unwrap();
    assert_eq!(
        crowd.goal_count(),
        goals_with_order - 1,
        "its order's goal is freed"
    );
    for id in &ids {
        assert_eq!(
            crowd.agent(*id).unwrap().params().steering,
            crowdfield_steer::Steering::LocalMap
        );
        assert_eq!(groups.group_of(*id), None);
    }
    assert_eq!(
        groups.remove(&mut crowd, group),
        Err(GroupError::UnknownGroup(group))
    );
}

proptest! {
    #[test]
    fn resampling_gives_one_slot_per_member(
        points in prop::collection::vec((-20.0..20.0f64, -20.0..20.0f64), 2..40),
        n in 1usize..60,
        catmull in any::<bool>(),
    ) {
        let points: Vec<DVec2> = points.into_iter().map(|(x, y)| DVec2::new(x, y)).collect();
        let resampling = if catmull { Resampling::CatmullRom } else { Resampling::Stride };
        let formation = Formation::Points { points, resampling };
        match formation.slots(n, 0.25) {
            Ok(slots) => {
                prop_assert_eq!(slots.len(), n);
                let c = slots.iter().copied().sum::<DVec2>() / n as f64;
                prop_assert!(c.length() < 1e-6);
                prop_assert!(slots.iter().all(|s| s.is_finite()));
            }
            // Coincident points are refused, never a panic.
            Err(e) => prop_assert!(matches!(e, GroupError::BadFormation(_))),
        }
    }

    #[test]
    fn the_least_total_distance_never_crosses_paths(
        from in prop::collection::vec((-10.0..10.0f64, -10.0..10.0f64), 1..12),
        shift in (-5.0..5.0f64, -5.0..5.0f64),
        turn in 0.0..std::f64::consts::TAU,
    ) {
        let from: Vec<DVec2> = from.into_iter().map(|(x, y)| DVec2::new(x, y)).collect();
        // The same points turned and moved: the slots of a formation after an order.
        let r = DVec2::from_angle(turn);
        let to: Vec<DVec2> = from
            .iter()
            .map(|p| r.rotate(*p) + DVec2::new(shift.0, shift.1))
            .collect();
        let assigned = assign::least_total_distance(&from, &to);
        let ends: Vec<DVec2> = assigned.iter().map(|&k| to[k]).collect();
        prop_assert_eq!(assign::crossings(&from, &ends), 0);
    }
}

#[test]
fn a_route_walks_its_goals_in_order_and_bad_routes_are_refused() {
    let mut crowd = world(DVec2::new(40.0, 30.0), vec![]);
    let ids = spawn_at(&mut crowd, &block(DVec2::new(5.0, 5.0), 4, 2, 1.5));
    let (mut groups, group) = box_group(&mut crowd, &ids);
    assert!(matches!(
        groups.follow_route(&mut crowd, group, Vec::new(), false),
        Err(GroupError::BadOrder(_))
    ));
    let first = crowd.add_goal(disc(DVec2::new(30.0, 5.0), 1.0)).unwrap();
    let unknown = crowdfield_steer::GoalId(999);
    assert!(
        groups
            .follow_route(&mut crowd, group, vec![first, unknown], false)
            .is_err()
    );
    assert_eq!(
        groups.group(group).unwrap().guide(),
        &crowdfield_group::Guide::Hold
    );
    // Round a corner: east, then north; owned, so the goals go with the next order.
    let second = crowd.add_goal(disc(DVec2::new(30.0, 25.0), 1.0)).unwrap();
    groups
        .follow_route(&mut crowd, group, vec![first, second], true)
        .unwrap();
    let mut corner = false;
    let mut arrived = false;
    for _ in 0..800 {
        let (_, report) = groups.step(&mut crowd);
        let anchor = groups.group(group).unwrap().anchor();
        corner |= anchor.distance(DVec2::new(30.0, 5.0)) < 1.5;
        if report
            .events
            .iter()
            .any(|e| matches!(e, crowdfield_group::GroupEvent::Arrived { .. }))
        {
            arrived = true;
            break;
        }
    }
    assert!(corner && arrived);
    assert!(
        groups
            .group(group)
            .unwrap()
            .anchor()
            .distance(DVec2::new(30.0, 25.0))
            < 1.5
    );
    let goals = crowd.goal_count();
    groups.hold(&mut crowd, group).unwrap();
    assert_eq!(
        crowd.goal_count(),
        goals - 2,
        "the owned goals went with the order"
    );
}
