//! Agent-steps per second of the marker back end's step at the seed's 60 markers/m²:
//!
//! - `direct/<agents>/<threads>t`: personal space (each marker within R to its nearest agent)
//!   and direct motion with alignment weights, d_enf by projection, for 1k, 10k and 100k
//!   agents one per 3 m² (100k agents: 18 million markers), one step per iteration;
//! - `trees/<agents>/<threads>t`: agents with fresh orders to a goal 20 m away, the first
//!   second (24 steps) of growth and walking per iteration, for 1, 5, 10 and 50 agents (the
//!   seed's cases) and 1k and 10k;
//! - `tree_growth/one_tree`: growing one tree until it reaches its goal round the wall of the
//!   digest's test room (30 × 12 m, start and goal 26 m apart).
//!
//! `cargo bench -p crowdfield_markers --bench marker_step`, or a filter such as
//! `-- 'direct/10000/'`.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use crowdfield_field::Shape;
use crowdfield_markers::{
    Aim, Generation, MarkerCrowd, MarkerCrowdSettings, MarkerSet, MarkerSettings, Mask, Order,
    Sensed, TreePath, TreeSettings,
};
use crowdfield_steer::AgentId;
use glam::DVec2;

/// A square of `agents` × 3 m² with markers at 60 per m², the agents on a jittered grid.
fn world(agents: usize) -> (MarkerSet, Vec<Sensed>) {
    let side = (agents as f64 * 3.0).sqrt();
    let settings = MarkerSettings {
        min: DVec2::ZERO,
        max: DVec2::splat(side + 24.0),
        ..Default::default()
    };
    let mut set = MarkerSet::new(settings, vec![]).unwrap();
    set.generate(Generation::JitteredGrid, 60.0, 1).unwrap();
    let per_row = (agents as f64).sqrt().ceil() as usize;
    let spacing = side / per_row as f64;
    let sensed = (0..agents)
        .map(|k| {
            let (i, j) = (k % per_row, k / per_row);
            let jitter = DVec2::new(((k * 7) % 11) as f64, ((k * 5) % 13) as f64) * 0.02;
            Sensed {
                id: AgentId(k as u32),
                position: DVec2::new(2.0, 2.0) + DVec2::new(i as f64, j as f64) * spacing + jitter,
                goal: None,
            }
        })
        .collect();
    (set, sensed)
}

fn pools() -> Vec<(usize, rayon::ThreadPool)> {
    [1usize, 2]
        .into_iter()
        .map(|n| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap();
            (n, pool)
        })
        .collect()
}

fn step(crowd: &mut MarkerCrowd, set: &MarkerSet, agents: &mut [Sensed]) {
    for (id, d) in crowd.step(set, agents) {
        agents[id.0 as usize].position += d;
    }
}

fn direct(c: &mut Criterion) {
    let pools = pools();
    for agents in [1_000usize, 10_000, 100_000] {
        let (set, sensed) = world(agents);
        let mut group = c.benchmark_group(format!("direct/{agents}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(agents as u64));
        for (threads, pool) in &pools {
            let mut crowd = MarkerCrowd::new(MarkerCrowdSettings::default()).unwrap();
            let mask = crowd
                .add_mask(Mask::Grid {
                    origin: DVec2::ZERO,
                    spacing: 2.5,
                    width: 0.2,
                })
                .unwrap();
            for a in &sensed {
                crowd.insert(&set, a.id, Order::Align(mask)).unwrap();
            }
            let mut positions = sensed.clone();
            pool.install(|| step(&mut crowd, &set, &mut positions));
            group.bench_function(BenchmarkId::from_parameter(format!("{threads}t")), |b| {
                b.iter(|| pool.install(|| step(&mut crowd, &set, black_box(&mut positions))))
            });
        }
        group.finish();
    }
}

fn trees(c: &mut Criterion) {
    let pools = pools();
    for agents in [1usize, 5, 10, 50, 1_000, 10_000] {
        let (set, sensed) = world(agents);
        let mut group = c.benchmark_group(format!("trees/{agents}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(agents as u64 * 24));
        for (threads, pool) in &pools {
            group.bench_function(BenchmarkId::from_parameter(format!("{threads}t")), |b| {
                b.iter_batched(
                    || {
                        let mut crowd = MarkerCrowd::new(MarkerCrowdSettings::default()).unwrap();
                        for a in &sensed {
                            let goal = a.position + DVec2::new(20.0, 0.0);
                            crowd.insert(&set, a.id, Order::Seek(goal)).unwrap();
                        }
                        (crowd, sensed.clone())
                    },
                    |(mut crowd, mut positions)| {
                        pool.install(|| {
                            for _ in 0..24 {
                                step(&mut crowd, &set, &mut positions);
                            }
                        });
                        (crowd, positions)
                    },
                    BatchSize::PerIteration,
                )
            });
        }
        group.finish();
    }
}

fn tree_growth(c: &mut Criterion) {
    let settings = MarkerSettings {
        min: DVec2::ZERO,
        max: DVec2::new(30.0, 12.0),
        ..Default::default()
    };
    let wall = Shape::Aabb {
        min: DVec2::new(14.0, 0.0),
        max: DVec2::new(16.0, 8.0),
    };
    let mut set = MarkerSet::new(settings, vec![wall]).unwrap();
    set.generate(Generation::default(), 60.0, 1).unwrap();
    let mut seed = 0;
    c.bench_function("tree_growth/one_tree", |b| {
        b.iter(|| {
            seed += 1;
            let aim = Aim::Towards(DVec2::new(28.0, 4.0));
            let mut tree = TreePath::new(
                TreeSettings::default(),
                &set,
                DVec2::new(2.0, 4.0),
                aim,
                seed,
                0,
            )
            .unwrap();
            while tree.goal().is_none() && tree.iterations() < 60 {
                tree.grow(&set, None);
            }
            black_box(tree.live_count())
        })
    });
}

criterion_group!(benches, direct, trees, tree_growth);
criterion_main!(benches);
