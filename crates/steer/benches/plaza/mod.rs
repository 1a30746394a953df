//! The benchmark plaza, shared by the `crowd_step` bench and the `plaza_steps` example.

use crowdfield_field::Shape;
use crowdfield_steer::{
    AgentParams, Behaviour, BehaviourSlots, Crowd, CrowdSettings, LocalMapSettings, Preset,
};
use glam::DVec2;

/// An open square of about four square metres per agent with nine pillars, half the agents
/// heading east and half west on rows two metres apart, each with random `v` held for 5–20
/// steps (ε = 0.5) and `sweeps` sweeps per step, steered on `preset`. Some rows clip at the
/// edge, so a few fewer agents than asked may be placed.
pub fn plaza(agents: usize, sweeps: usize, preset: Preset) -> Crowd {
    let side = (agents as f64 * 4.0).sqrt().max(30.0);
    let pillars: Vec<Shape> = (0..9)
        .map(|k| Shape::Disc {
            centre: DVec2::new(
                side * (0.25 + 0.25 * (k % 3) as f64),
                side * (0.25 + 0.25 * (k / 3) as f64),
            ),
            radius: 1.0,
        })
        .collect();
    let settings = CrowdSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(side),
        global_cell_size: 1.0,
        preset,
        ..Default::default()
    };
    let mut crowd = Crowd::new(settings, pillars).unwrap();
    let east = crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(side - 2.0, 1.0),
            max: DVec2::new(side - 1.0, side - 1.0),
        })
        .unwrap();
    let west = crowd
        .add_goal(Shape::Aabb {
            min: DVec2::new(1.0, 1.0),
            max: DVec2::new(2.0, side - 1.0),
        })
        .unwrap();
    let per_row = (side / 2.0) as usize - 1;
    let mut k = 0;
    'outer: for row in 0.. {
        for col in 0..per_row {
            if k == agents {
                break 'outer;
            }
            let p = DVec2::new(
                2.0 + 2.0 * col as f64 + (row % 2) as f64,
                2.0 + 2.0 * row as f64,
            );
            if p.y > side - 2.0 {
                break 'outer;
            }
            let params = AgentParams {
                position: p,
                goals: vec![if k % 2 == 0 { east } else { west }],
                behaviour: BehaviourSlots::single(Behaviour::RandomHeld {
                    epsilon: 0.5,
                    min_hold: 5,
                    max_hold: 20,
                }),
                local_map: LocalMapSettings {
                    sweeps,
                    ..Default::default()
                },
                seed: k as u64,
                ..Default::default()
            };
            if crowd.spawn(params).is_ok() {
                k += 1;
            }
        }
    }
    crowd
}
