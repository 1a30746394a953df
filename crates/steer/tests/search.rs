//! Exploration of an unknown house (digest 000 §8.2 test 23, digest 001 T15; seed 000 §6.11):
//! searchers start knowing nothing, unsensed space attracts them, and the target is found.

use crowdfield_field::{Bias, Shape};
use crowdfield_steer::{
    AgentId, AgentParams, AgentState, Crowd, CrowdSettings, GoalId, SearchSettings, SteerError,
};
use glam::DVec2;

const SIZE: f64 = 20.0;

/// Four rooms of 10 m × 10 m behind 0.2 m walls with 2 m doors: west–east doors at y = 4–6
/// and 14–16, south–north doors at x = 4–6 and 14–16.
fn house() -> Vec<Shape> {
    let wall = |x0: f64, y0: f64, x1: f64, y1: f64| Shape::Aabb {
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    };
    vec![
        wall(9.9, 0.0, 10.1, 4.0),
        wall(9.9, 6.0, 10.1, 14.0),
        wall(9.9, 16.0, 10.1, SIZE),
        wall(0.0, 9.9, 4.0, 10.1),
        wall(6.0, 9.9, 9.9, 10.1),
        wall(10.1, 9.9, 14.0, 10.1),
        wall(16.0, 9.9, SIZE, 10.1),
    ]
}

fn world() -> (Crowd, GoalId) {
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(SIZE),
        ..Default::default()
    };
    let mut crowd = Crowd::new(settings, house()).unwrap();
    let target = crowd
        .add_search(
            Shape::Disc {
                centre: DVec2::new(17.0, 17.0),
                radius: 0.3,
            },
            SearchSettings::default(),
        )
        .unwrap();
    (crowd, target)
}

fn searcher(at: DVec2, goal: GoalId, seed: u64) -> AgentParams {
    AgentParams {
        position: at,
        goals: vec![goal],
        max_step: 0.35,
        seed,
        ..Default::default()
    }
}

/// Runs until every searcher arrived at the target (or the budget ends). Returns the step the
/// target was found at and the sensed-cell count after every step.
fn search(
    crowd: &mut Crowd,
    goal: GoalId,
    ids: &[AgentId],
    budget: usize,
) -> (Option<u64>, Vec<usize>) {
    let mut coverage = Vec::new();
    for _ in 0..budget {
        crowd.step();
        coverage.push(crowd.goal(goal).unwrap().sensed_cells().unwrap());
        if ids
            .iter()
            .all(|id| crowd.agent(*id).unwrap().state() == AgentState::Arrived)
        {
            break;
        }
    }
    (crowd.goal(goal).unwrap().found_at(), coverage)
}

/// Test 23 / T15: one searcher in the south-west room finds a target in the north-east room
/// and walks to it. Coverage never shrinks, and no cell is sensed for the first time after the
/// target was found.
#[test]
fn a_searcher_explores_the_house_and_finds_the_target() {
    let (mut crowd, goal) = world();
    assert_eq!(crowd.goal(goal).unwrap().found(), Some(false));
    let id = crowd
        .spawn(searcher(DVec2::new(3.0, 3.0), goal, 1))
        .unwrap();
    let (found, coverage) = search(&mut crowd, goal, &[id], 1_500);
    let found = found.expect("the target is found") as usize;
    let arrived = crowd.agent(id).unwrap().state() == AgentState::Arrived;
    println!(
        "found at step {found}, arrived {arrived} after {} steps; {} cells sensed when found, \
         {} of {} at the end",
        coverage.len(),
        coverage[found],
        coverage.last().unwrap(),
        (SIZE / 0.5) as usize * (SIZE / 0.5) as usize,
    );
    assert!(arrived, "the searcher reaches the target");
    assert!(coverage.windows(2).all(|w| w[1] >= w[0]), "coverage shrank");
    assert!(
        coverage[found..].iter().all(|c| *c == coverage[found]),
        "cells sensed after the target was found"
    );
    assert!(coverage[0] > 0);

    // Once found, the search map is an ordinary goal map: a wall added now is solved into it
    // within a step, like every other goal's.
    let before = crowd.goal(goal).unwrap().revision();
    crowd
        .add_obstacle(Shape::Aabb {
            min: DVec2::new(15.0, 12.0),
            max: DVec2::new(15.5, 15.0),
        })
        .unwrap();
    assert_eq!(crowd.pending_map_solves(), 1);
    let report = crowd.step();
    assert_eq!(report.maps_solved, vec![goal]);
    let map = crowd.goal(goal).unwrap().map();
    assert_ne!(crowd.goal(goal).unwrap().revision(), before);
    assert!(map.residual(&Bias::HARMONIC) < 1e-9);
}

/// T15 (E11): two searchers share one map. Over 20 seeded start layouts, the pair finds the
/// target in no more steps than the first searcher alone in at least 70 % of them.
#[test]
fn two_searchers_find_the_target_sooner_most_of_the_time() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut sooner, mut runs) = (0, 0);
    let mut lines = Vec::new();
    while runs < 20 {
        // Starts anywhere in the three rooms without the target.
        let mut start = || loop {
            let p = DVec2::new(1.0 + 18.0 * next(), 1.0 + 18.0 * next());
            if !(p.x > 10.0 && p.y > 10.0) {
                break p;
            }
        };
        let (a, b) = (start(), start());
        let alone = {
            let (mut crowd, goal) = world();
            let Ok(id) = crowd.spawn(searcher(a, goal, 1)) else {
                continue;
            };
            search(&mut crowd, goal, &[id], 1_500).0
        };
        let pair = {
            let (mut crowd, goal) = world();
            let Ok(id) = crowd.spawn(searcher(a, goal, 1)) else {
                continue;
            };
            match crowd.spawn(searcher(b, goal, 2)) {
                Ok(other) => search(&mut crowd, goal, &[id, other], 1_500).0,
                Err(SteerError::InsideObstacle { .. } | SteerError::OverlapsAgent { .. }) => {
                    continue;
                }
                Err(e) => panic!("{e}"),
            }
        };
        let (alone, pair) = (alone.expect("found alone"), pair.expect("found by two"));
        runs += 1;
        sooner += usize::from(pair <= alone);
        lines.push(format!("{alone}/{pair}"));
    }
    println!("steps to find, alone/pair: {}", lines.join(" "));
    println!("the pair was no slower in {sooner} of {runs}");
    assert!(sooner * 10 >= runs * 7, "{sooner} of {runs}");
}

/// Bad search settings are typed errors, and a target inside a wall is refused.
#[test]
fn bad_searches_are_rejected() {
    let (mut crowd, _) = world();
    for settings in [
        SearchSettings {
            unknown_value: 1.0,
            ..Default::default()
        },
        SearchSettings {
            sensor_range: 0.0,
            ..Default::default()
        },
        SearchSettings {
            sensor_range: f64::NAN,
            ..Default::default()
        },
    ] {
        let target = Shape::Disc {
            centre: DVec2::new(5.0, 5.0),
            radius: 0.3,
        };
        assert!(matches!(
            crowd.add_search(target, settings),
            Err(SteerError::BadSearch(_))
        ));
    }
    let in_wall = Shape::Disc {
        centre: DVec2::new(10.0, 2.0),
        radius: 0.05,
    };
    assert_eq!(
        crowd.add_search(in_wall, SearchSettings::default()),
        Err(SteerError::GoalBlocked)
    );
}
