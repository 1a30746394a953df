//! Seed 003's costs:
//!
//! - `bio_step/<agents>/<threads>t`: one step of the BioCrowds back end over typed markers
//!   (the area-equalised mesh at 60 markers per m² of surface over rolling hills, with
//!   ground to avoid and forbidden ponds painted; markers on forbidden ground kept), every
//!   agent walking straight for a goal, for 1,000 and 10,000 agents one per 3 m²;
//! - `astar/512`: one A* route across a 512 × 512 terrain graph (1 m spacing, 8 neighbours,
//!   hills, ponds and patches to avoid), corner to corner;
//! - `terrain_map/<side>`: one weighted harmonic map for BVP walkers (∇·(k∇p) = 0 over a
//!   `side` × `side` m ground with ponds and patches to avoid, 0.5 m cells, the plugin's
//!   default), goal in a corner.
//!
//! `cargo bench -p crowdfield_markers --bench terrain`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use crowdfield_field::Shape;
use crowdfield_markers::{
    BioCrowd, BioCrowdSettings, BioOrder, Generation, GraphSettings, HeightMap, MarkerSet,
    MarkerSettings, Sensed, Terrain, TerrainGraph, Way,
};
use crowdfield_steer::AgentId;
use glam::DVec2;

/// Rolling hills over a `side` m square, ponds and patches to avoid every 20 m.
fn ground(side: f64, markers: bool) -> MarkerSet {
    let mut set = MarkerSet::new(
        MarkerSettings {
            min: DVec2::ZERO,
            max: DVec2::splat(side),
            forbidden_markers: true,
            ..Default::default()
        },
        vec![],
    )
    .unwrap();
    let hills = HeightMap::from_fn(DVec2::ZERO, DVec2::splat(side), 1.0, |p| {
        (p.x / 9.0).sin() * (p.y / 7.0).cos() * 1.5
    })
    .unwrap();
    set.set_heights(Some(hills)).unwrap();
    let mut k = 0;
    let mut y = 10.0;
    while y < side {
        let mut x = 10.0 + (k % 2) as f64 * 10.0;
        while x < side {
            let c = DVec2::new(x, y);
            let shape = Shape::Disc {
                centre: c,
                radius: 1.5,
            };
            let terrain = if k % 3 == 0 {
                Terrain::Forbidden
            } else {
                Terrain::Avoid { intensity: 0.6 }
            };
            set.paint(shape, terrain).unwrap();
            k += 1;
            x += 20.0;
        }
        y += 20.0;
    }
    if markers {
        set.generate(Generation::Mesh, 60.0, 0).unwrap();
    }
    set
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

fn bio_step(c: &mut Criterion) {
    let pools = pools();
    for agents in [1_000usize, 10_000] {
        let side = (agents as f64 * 3.0).sqrt() + 24.0;
        let set = ground(side, true);
        let per_row = (agents as f64).sqrt().ceil() as usize;
        let spacing = (side - 24.0) / per_row as f64;
        let sensed: Vec<Sensed> = (0..agents)
            .map(|k| {
                let (i, j) = (k % per_row, k / per_row);
                let p = DVec2::new(12.0, 12.0) + DVec2::new(i as f64, j as f64) * spacing;
                Sensed {
                    id: AgentId(k as u32),
                    position: p,
                    goal: Some(p + DVec2::new(if j % 2 == 0 { 8.0 } else { -8.0 }, 3.0)),
                }
            })
            .collect();
        let mut group = c.benchmark_group(format!("bio_step/{agents}"));
        group.sample_size(10);
        group.throughput(Throughput::Elements(agents as u64));
        for (threads, pool) in &pools {
            let mut bio = BioCrowd::new(BioCrowdSettings::default()).unwrap();
            for a in &sensed {
                bio.insert(
                    a.id,
                    BioOrder {
                        way: Way::Direct,
                        ..Default::default()
                    },
                )
                .unwrap();
            }
            group.bench_function(BenchmarkId::from_parameter(format!("{threads}t")), |b| {
                b.iter(|| pool.install(|| black_box(bio.step(&set, &sensed).unwrap())))
            });
        }
        group.finish();
        println!("bio_step/{agents}: {} markers", set.len());
    }
}

fn astar(c: &mut Criterion) {
    let set = ground(511.0, false);
    let graph = TerrainGraph::build(
        &set,
        GraphSettings {
            spacing: 1.0,
            ..Default::default()
        },
    )
    .unwrap();
    println!("astar/512: {} nodes", graph.nodes().len());
    let mut group = c.benchmark_group("astar");
    group.sample_size(10);
    group.bench_function("512", |b| {
        b.iter(|| {
            black_box(
                graph
                    .route(&set, DVec2::new(2.0, 3.0), DVec2::new(508.0, 505.0))
                    .unwrap(),
            )
        })
    });
    group.finish();
}

fn terrain_map(c: &mut Criterion) {
    let mut group = c.benchmark_group("terrain_map");
    group.sample_size(10);
    for side in [60.0, 120.0] {
        let set = ground(side, false);
        let goal = Shape::Disc {
            centre: DVec2::splat(side - 3.0),
            radius: 1.0,
        };
        let settings = crowdfield_markers::bvp::TerrainMapSettings {
            cell: 0.5,
            ..Default::default()
        };
        group.bench_function(BenchmarkId::from_parameter(side), |b| {
            b.iter(|| {
                black_box(crowdfield_markers::bvp::terrain_map(&set, &goal, &settings).unwrap())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bio_step, astar, terrain_map);
criterion_main!(benches);
