//! Agent-steps per second of the full planner step (global descent, behaviour, local map
//! re-centring, stamping, 30 or 60 sweeps, decision, collision guard) in an open area with
//! pillars, for 1k, 10k and 100k agents on 15×15 maps, with 1 and 2 threads.
//!
//! `cargo bench -p crowdfield_steer --bench crowd_step` (all), or a filter such as
//! `-- 'crowd_step/1000/'`. Ids read `crowd_step/<agents>/<sweeps>_sweeps_<threads>t/<live>`,
//! where `<live>` is the number of agents actually placed (the plaza's rows clip a few), on the
//! default preset; at 10,000 agents and 30 sweeps `…_<threads>t_flow/<live>` steps the same
//! plaza on `Preset::Flow`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use crowdfield_fixtures::plaza;
use crowdfield_steer::Preset;

fn steps(c: &mut Criterion) {
    let pools: Vec<(usize, rayon::ThreadPool)> = [1usize, 2]
        .into_iter()
        .map(|n| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap();
            (n, pool)
        })
        .collect();
    for agents in [1_000usize, 10_000, 100_000] {
        let mut group = c.benchmark_group(format!("crowd_step/{agents}"));
        group.sample_size(10);
        if agents >= 100_000 {
            group.warm_up_time(std::time::Duration::from_millis(100));
            group.measurement_time(std::time::Duration::from_secs(8));
        }
        // `Flow` beside `Seeds` (the default) where the preset's cost is judged: 10,000 agents
        // at 30 sweeps (docs/steering.md, *Presets*).
        let runs: &[(usize, Preset, &str)] = if agents == 10_000 {
            &[
                (30, Preset::Seeds, ""),
                (30, Preset::Flow, "_flow"),
                (60, Preset::Seeds, ""),
            ]
        } else {
            &[(30, Preset::Seeds, ""), (60, Preset::Seeds, "")]
        };
        for &(sweeps, preset, suffix) in runs {
            // Five steps first, so local maps are warm and the crowd is under way.
            let mut warm = plaza(agents, sweeps, preset);
            pools[1].1.install(|| {
                for _ in 0..5 {
                    warm.step();
                }
            });
            let n = warm.agents().count() as u64;
            group.throughput(Throughput::Elements(n));
            for (threads, pool) in &pools {
                let id = BenchmarkId::new(format!("{sweeps}_sweeps_{threads}t{suffix}"), n);
                group.bench_function(id, |b| {
                    // Consecutive steps of one crowd, as a game runs them: each sample
                    // clones the warmed crowd, takes one untimed step, then times `iters`
                    // steps; cloning and dropping stay outside the timing.
                    b.iter_custom(|iters| {
                        let mut crowd = warm.clone();
                        pool.install(|| black_box(crowd.step()));
                        let start = std::time::Instant::now();
                        for _ in 0..iters {
                            pool.install(|| black_box(crowd.step()));
                        }
                        let elapsed = start.elapsed();
                        drop(crowd);
                        elapsed
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, steps);
criterion_main!(benches);
