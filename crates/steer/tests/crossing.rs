//! Many agents crossing (digest 001 T17, digest 000 §8.2 multi-agent tests): the no-overlap
//! invariant is counted at every step, and most agents arrive.

mod common;

use common::{all_arrived, arrived};
use crowdfield_field::Shape;
use crowdfield_steer::{AgentId, AgentParams, Behaviour, BehaviourSlots, Crowd, CrowdSettings};
use glam::DVec2;

#[test]
fn forty_agents_crossing_a_square_never_overlap() {
    let side = 30.0;
    let pillar = Shape::Disc {
        centre: DVec2::splat(side / 2.0),
        radius: 2.0,
    };
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(side),
        ..CrowdSettings::seeds()
    };
    let mut crowd = Crowd::new(settings, vec![pillar]).unwrap();
    let ends = [
        (DVec2::new(2.0, 0.0), DVec2::new(side - 1.5, 0.0)),
        (DVec2::new(side - 2.0, 0.0), DVec2::new(1.5, 0.0)),
        (DVec2::new(0.0, 2.0), DVec2::new(0.0, side - 1.5)),
        (DVec2::new(0.0, side - 2.0), DVec2::new(0.0, 1.5)),
    ];
    let mut ids: Vec<AgentId> = Vec::new();
    for (k, (start, goal)) in ends.iter().enumerate() {
        let horizontal = start.y == 0.0;
        let goal_shape = if horizontal {
            Shape::Aabb {
                min: DVec2::new(goal.x - 0.5, 5.0),
                max: DVec2::new(goal.x + 0.5, side - 5.0),
            }
        } else {
            Shape::Aabb {
                min: DVec2::new(5.0, goal.y - 0.5),
                max: DVec2::new(side - 5.0, goal.y + 0.5),
            }
        };
        let g = crowd.add_goal(goal_shape).unwrap();
        for j in 0..10 {
            let lateral = 6.0 + 2.0 * j as f64;
            let position = if horizontal {
                DVec2::new(start.x, lateral)
            } else {
                DVec2::new(lateral, start.y)
            };
            let behaviour = if j % 2 == 0 {
                Behaviour::Harmonic
            } else {
                Behaviour::RandomHeld {
                    epsilon: 0.5,
                    min_hold: 4,
                    max_hold: 12,
                }
            };
            let p = AgentParams {
                position,
                goals: vec![g],
                behaviour: BehaviourSlots::single(behaviour),
                seed: (k * 10 + j) as u64,
                ..Default::default()
            };
            ids.push(crowd.spawn(p).unwrap());
        }
    }
    let mut overlaps = 0;
    let mut wall_hits = 0;
    for _ in 0..400 {
        crowd.step();
        let agents: Vec<(DVec2, f64)> = crowd
            .agents()
            .map(|(_, a)| (a.position(), a.params().radius))
            .collect();
        for i in 0..agents.len() {
            for j in i + 1..agents.len() {
                if (agents[i].0 - agents[j].0).length() < agents[i].1 + agents[j].1 - 1e-9 {
                    overlaps += 1;
                }
            }
            if crowd
                .statics()
                .iter()
                .any(|s| s.distance(agents[i].0).unwrap() < agents[i].1 - 1e-9)
            {
                wall_hits += 1;
            }
        }
        if all_arrived(&crowd, &ids) {
            break;
        }
    }
    let arrived = arrived(&crowd, &ids);
    println!("arrived {arrived}/40 after {} steps", crowd.step_count());
    assert_eq!(overlaps, 0);
    assert_eq!(wall_hits, 0);
    assert!(arrived >= 36, "only {arrived} of 40 arrived");
}
