//! Results do not depend on the number of threads: planning reads only the step's snapshot,
//! local maps are relaxed in batches whose lanes are independent, and moves are committed in
//! agent-id order.

use crowdfield_field::Shape;
use crowdfield_steer::{
    AgentParams, Behaviour, BehaviourSlots, Crowd, CrowdSettings, LocalMapSettings,
    NeighbourStamping,
};
use glam::DVec2;
use std::time::Duration;

/// Positions (as bits) of every agent after every step, run on a pool of `threads` threads,
/// its other threads kept awake between steps for `spin`.
fn trajectories(threads: usize, spin: Duration) -> Vec<Vec<(u64, u64)>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let side = 24.0;
        let settings = CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::splat(side),
            ..Default::default()
        };
        let pillars = vec![
            Shape::Disc {
                centre: DVec2::new(12.0, 12.0),
                radius: 1.5,
            },
            Shape::RotatedBox {
                centre: DVec2::new(7.0, 16.0),
                half_extents: DVec2::new(2.0, 0.3),
                angle: 0.4,
            },
        ];
        let mut crowd = Crowd::new(settings, pillars).unwrap();
        crowd.set_worker_spin(spin);
        let east = crowd
            .add_goal(Shape::Aabb {
                min: DVec2::new(side - 1.5, 2.0),
                max: DVec2::new(side - 0.5, side - 2.0),
            })
            .unwrap();
        let west = crowd
            .add_goal(Shape::Aabb {
                min: DVec2::new(0.5, 2.0),
                max: DVec2::new(1.5, side - 2.0),
            })
            .unwrap();
        // Mixed radii, map sizes and sweep counts, so steps relax several batch groups, some
        // of them partly filled.
        for k in 0..70 {
            let row = k / 2;
            let x = if k % 2 == 0 { 2.5 } else { side - 2.5 };
            let y = 1.5 + 0.6 * row as f64;
            // Three in five leave out the neighbours walking their way (what they read of each
            // other is taken as the step starts).
            let neighbours = if k % 5 < 2 {
                NeighbourStamping::All
            } else {
                NeighbourStamping::ExceptSameWay
            };
            let local_map = LocalMapSettings {
                side: [15, 15, 11, 17][k % 4],
                sweeps: [30, 30, 20, 30][k % 4],
                neighbours: Some(neighbours),
                ..Default::default()
            };
            // Some read their nearest neighbour (the sensing query, too, must not depend on
            // how agents fall into jobs).
            let behaviour = match k % 3 {
                0 if k % 4 == 0 => Behaviour::AroundNearest {
                    epsilon: 0.6,
                    right: true,
                },
                0 => Behaviour::Harmonic,
                1 => Behaviour::RandomHeld {
                    epsilon: 0.6,
                    min_hold: 3,
                    max_hold: 9,
                },
                _ => Behaviour::Drunk {
                    epsilon: 0.5,
                    omega: 0.2,
                },
            };
            let params = AgentParams {
                position: DVec2::new(x, y),
                radius: [0.25, 0.22, 0.28][k % 3],
                goals: vec![if k % 2 == 0 { east } else { west }],
                behaviour: BehaviourSlots::single(behaviour),
                local_map,
                seed: 1000 + k as u64,
                ..Default::default()
            };
            crowd.spawn(params).unwrap();
        }
        let ids: Vec<_> = crowd.agents().map(|(id, _)| id).collect();
        (0..60)
            .map(|step| {
                if step == 20 {
                    // Holes in the id range: the planning agents no longer fall into jobs by
                    // id, and the jobs' sizes change with the thread count.
                    for id in ids.iter().step_by(5) {
                        crowd.remove(*id).unwrap();
                    }
                }
                crowd.step();
                crowd
                    .agents()
                    .map(|(_, a)| (a.position().x.to_bits(), a.position().y.to_bits()))
                    .collect()
            })
            .collect()
    })
}

#[test]
fn one_two_and_three_threads_give_identical_trajectories() {
    let one = trajectories(1, Duration::ZERO);
    assert!(
        one.iter().flatten().count() > 60 * 40 && one.last().unwrap().len() == 56,
        "the crowd stayed populated"
    );
    assert_eq!(one, trajectories(2, Duration::ZERO));
    assert_eq!(one, trajectories(3, Duration::ZERO));
    // Threads kept awake take jobs as they come: still the same moves.
    assert_eq!(one, trajectories(2, Duration::from_millis(1)));
    assert_eq!(one, trajectories(3, Duration::from_millis(1)));
}
