//! Agent-steps per second of the full planner step (global descent, behaviour, local map
//! re-centring, stamping, 30 or 60 sweeps, decision, collision guard) in an open area with
//! obstacles. `cargo bench -p crowdfield_steer --bench crowd_step`.
//!
//! Single-threaded, unbatched baseline: one agent's local map at a time.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use crowdfield_field::Shape;
use crowdfield_steer::{
    AgentParams, Behaviour, BehaviourSlots, Crowd, CrowdSettings, LocalMapSettings,
};
use glam::DVec2;

fn plaza(agents: usize, sweeps: usize) -> Crowd {
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

fn steps(c: &mut Criterion) {
    let mut group = c.benchmark_group("crowd_step");
    group.sample_size(10);
    for agents in [1_000usize] {
        for sweeps in [30usize, 60] {
            // Measure the tenth step of a fresh crowd each time, so arrivals never thin it out.
            let mut warm = plaza(agents, sweeps);
            for _ in 0..9 {
                warm.step();
            }
            let n = warm.agents().count() as u64;
            group.throughput(Throughput::Elements(n));
            group.bench_function(BenchmarkId::new(format!("{sweeps}_sweeps"), n), |b| {
                b.iter_batched(
                    || warm.clone(),
                    |mut crowd| black_box(crowd.step()),
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, steps);
criterion_main!(benches);
