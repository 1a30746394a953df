//! Planner steps of groups in formation (see `fixture`): 100 and 1,000 groups of 10 on one and
//! two threads, each step the groups' maps, their relaxation in SIMD batches, the members'
//! decisions and the crowd's commit. The 10,000-group figure of the README comes from
//! `examples/group_steps.rs`, whose set-up would dominate a criterion run.
//!
//! `cargo bench -p crowdfield_group --bench group_step`

mod fixture;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn steps(c: &mut Criterion) {
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let mut bench = c.benchmark_group(format!("group_step/{threads}t"));
        bench.sample_size(10);
        for groups_n in [100usize, 1_000] {
            let (mut crowd, mut groups, _) =
                pool.install(|| fixture::formation_world(groups_n, 10));
            bench.throughput(Throughput::Elements((groups_n * 10) as u64));
            bench.bench_function(BenchmarkId::from_parameter(groups_n), |b| {
                b.iter(|| pool.install(|| groups.step(&mut crowd)))
            });
        }
        bench.finish();
    }
}

criterion_group!(benches, steps);
criterion_main!(benches);
