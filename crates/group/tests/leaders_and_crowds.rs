//! Leader following (digest 004 §12 test 14), groups and individual walkers sharing one crowd,
//! several groups at once, and results that do not depend on the number of threads.

mod common;

use common::{
    block, box_group, deepest_overlap, disc, members_and_slots, positions, spawn_at, world,
};
use crowdfield_field::Shape;
use crowdfield_group::{Formation, GroupSettings, Groups, Template, measure};
use crowdfield_steer::{AgentParams, AgentState, ArrivalAction, Crowd};
use glam::DVec2;

#[test]
fn a_group_follows_its_leader_at_a_bounded_distance_in_formation() {
    let mut crowd = world(DVec2::new(60.0, 30.0), Vec::new());
    let goal = crowd.add_goal(disc(DVec2::new(50.0, 22.0), 0.5)).unwrap();
    // The leader walks on its own local map, a little slower than the group can.
    let leader = crowd
        .spawn(AgentParams {
            position: DVec2::new(12.0, 8.0),
            goals: vec![goal],
            max_step: 0.25,
            ..AgentParams::default()
        })
        .unwrap();
    let ids = spawn_at(&mut crowd, &block(DVec2::new(6.0, 8.0), 6, 3, 1.5));
    let (mut groups, group) = box_group(&mut crowd, &ids);
    groups.follow(&mut crowd, group, leader, 3.0).unwrap();
    let half = groups.group(group).unwrap().map().half_size();
    let mut farthest: f64 = 0.0;
    let mut errors = Vec::new();
    for step in 0..260 {
        groups.step(&mut crowd);
        assert_eq!(deepest_overlap(&crowd), 0.0);
        let members = positions(&crowd, &ids);
        let c = members.iter().copied().sum::<DVec2>() / members.len() as f64;
        let l = crowd.agent(leader).unwrap().position();
        if step >= 20 {
            farthest = farthest.max((c - l).length());
            let (m, s) = members_and_slots(&crowd, &groups, group);
            errors.push(measure::slot_distance(&m, &s));
        }
    }
    assert_eq!(
        crowd.agent(leader).unwrap().state(),
        AgentState::Arrived,
        "the leader got where it was going"
    );
    assert!(
        farthest < half + 3.0,
        "the centroid kept within the map's half size of the point it follows ({farthest} m)"
    );
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    assert!(
        mean < 0.5,
        "the formation is kept in the open (mean RMS {mean} m)"
    );
    // Once the leader stops, the group stands behind it in formation.
    assert!(*errors.last().unwrap() < 0.25);
}

/// Two groups and a stream of walkers cross a square in four directions.
fn crossing_square() -> (
    Crowd,
    Groups,
    Vec<crowdfield_steer::AgentId>,
    Vec<crowdfield_group::GroupId>,
) {
    let mut crowd = world(DVec2::new(40.0, 40.0), Vec::new());
    let mut groups = Groups::new();
    let mut walkers = Vec::new();
    // Walkers north to south and south to north.
    let south = crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(14.0, 1.0),
            max: DVec2::new(26.0, 3.0),
        })
        .unwrap();
    let north = crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(14.0, 37.0),
            max: DVec2::new(26.0, 39.0),
        })
        .unwrap();
    for i in 0..8 {
        let x = 15.0 + 1.3 * i as f64;
        walkers.push(
            crowd
                .spawn(AgentParams {
                    position: DVec2::new(x, 35.0),
                    goals: vec![south],
                    // Into the goal, to leave its edge clear for those behind.
                    on_arrival: ArrivalAction::Settle,
                    ..AgentParams::default()
                })
                .unwrap(),
        );
        walkers.push(
            crowd
                .spawn(AgentParams {
                    position: DVec2::new(x + 0.6, 5.0),
                    goals: vec![north],
                    on_arrival: ArrivalAction::Settle,
                    ..AgentParams::default()
                })
                .unwrap(),
        );
    }
    // A group west to east and one east to west, through the walkers.
    let mut ids = Vec::new();
    for (start, end) in [
        (DVec2::new(5.0, 20.0), DVec2::new(35.0, 20.0)),
        (DVec2::new(35.0, 21.0), DVec2::new(5.0, 21.0)),
    ] {
        let members = spawn_at(&mut crowd, &block(start, 6, 2, 1.5));
        let g = groups
            .create(
                &mut crowd,
                &members,
                GroupSettings::default(),
                Some(Formation::template(Template::Column)),
            )
            .unwrap();
        groups.move_to(&mut crowd, g, disc(end, 1.0)).unwrap();
        ids.push(g);
    }
    (crowd, groups, walkers, ids)
}

#[test]
fn groups_and_walkers_cross_each_other_without_an_overlap_and_everyone_arrives() {
    let (mut crowd, mut groups, walkers, ids) = crossing_square();
    let mut arrived = vec![false; ids.len()];
    for _ in 0..700 {
        let (_, report) = groups.step(&mut crowd);
        assert_eq!(deepest_overlap(&crowd), 0.0);
        for e in &report.events {
            if let crowdfield_group::GroupEvent::Arrived { group, .. } = e {
                arrived[ids.iter().position(|g| g == group).unwrap()] = true;
            }
        }
        let walkers_done = walkers
            .iter()
            .all(|w| crowd.agent(*w).unwrap().state() == AgentState::Arrived);
        if walkers_done && arrived.iter().all(|a| *a) {
            break;
        }
    }
    assert!(
        arrived.iter().all(|a| *a),
        "both groups arrive: {arrived:?}"
    );
    for w in &walkers {
        assert_eq!(crowd.agent(*w).unwrap().state(), AgentState::Arrived, "{w}");
    }
}

#[test]
fn groups_step_the_same_on_one_thread_and_on_four() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let (mut crowd, mut groups, _, _) = crossing_square();
            for _ in 0..120 {
                groups.step(&mut crowd);
            }
            crowd
                .agents()
                .map(|(_, a)| (a.position().x.to_bits(), a.position().y.to_bits()))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(run(1), run(4));
}
