//! Cell updates per second of each relaxation kernel on 15×15, 32×32 and 256×256 maps.
//!
//! `cargo bench -p crowdfield_field --bench kernels`. Throughput is counted in free cells
//! updated (criterion reports it as elements/s). The two-array Jacobi sweep is the machine's
//! practical roof: it vectorises; the in-place Gauss–Seidel orders cannot.

mod common;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use crowdfield_field::{
    BATCH_LANES, BATCH_LANES_F32, Bias, FieldBatch, FieldBatchF32, Potential, Relaxation,
    SweepOrder, jacobi_sweep, relax,
};
use glam::DVec2;

fn kernels(c: &mut Criterion) {
    let bias = Bias::new(0.7, DVec2::Y).unwrap();
    let mut group = c.benchmark_group("sweep");
    for side in [15usize, 32, 256] {
        let orders = [
            ("gauss_seidel", Relaxation::GAUSS_SEIDEL),
            (
                "alternating",
                Relaxation {
                    order: SweepOrder::Alternating,
                    omega: 1.0,
                },
            ),
            ("red_black", Relaxation::RED_BLACK),
            ("sor", Relaxation::sor_for_size(side)),
        ];
        for (name, relaxation) in orders {
            bench_in_place::<f64>(&mut group, name, side, &bias, relaxation);
        }
        bench_in_place::<f32>(
            &mut group,
            "gauss_seidel_f32",
            side,
            &bias,
            Relaxation::GAUSS_SEIDEL,
        );
        bench_batch(&mut group, side, &bias);
        for used in [2, 8, 16, BATCH_LANES_F32] {
            bench_batch_f32(&mut group, side, &bias, used);
        }
        bench_jacobi::<f64>(&mut group, "jacobi", side, &bias);
        bench_jacobi::<f32>(&mut group, "jacobi_f32", side, &bias);
    }
    group.finish();
}

fn bench_in_place<T: Potential>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    side: usize,
    bias: &Bias,
    relaxation: Relaxation,
) {
    let mut field = common::room::<T>(side, 0.9);
    // Sweeps per iteration so that one iteration is ~64k updates at every size.
    let sweeps = (65_536 / (side * side)).max(1);
    group.throughput(Throughput::Elements(
        common::free_cells(&field) * sweeps as u64,
    ));
    group.bench_function(BenchmarkId::new(name, side), |b| {
        b.iter(|| relax(black_box(&mut field), bias, &relaxation, sweeps))
    });
}

/// Lexicographic Gauss–Seidel on [`BATCH_LANES`] maps at once (one per SIMD lane); throughput
/// counts the free cells of all lanes.
fn bench_batch(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    side: usize,
    bias: &Bias,
) {
    let field = common::room::<f64>(side, 0.9);
    let mut batch = FieldBatch::new(side, side);
    for lane in 0..BATCH_LANES {
        batch.load(lane, &field, bias);
    }
    let sweeps = (65_536 / (side * side)).max(1);
    group.throughput(Throughput::Elements(
        common::free_cells(&field) * (sweeps * BATCH_LANES) as u64,
    ));
    group.bench_function(BenchmarkId::new("gauss_seidel_batch", side), |b| {
        b.iter(|| black_box(&mut batch).relax(sweeps))
    });
}

/// The same on `used` of the [`BATCH_LANES_F32`] lanes of an `f32` batch, on the maps'
/// complements (a crowd of fewer agents than lanes sweeps only the vectors in use).
fn bench_batch_f32(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    side: usize,
    bias: &Bias,
    used: usize,
) {
    let field = common::room::<f64>(side, 0.9);
    let mut batch = FieldBatchF32::new(side, side);
    for lane in 0..used {
        batch.load(lane, &field, bias);
    }
    let sweeps = (65_536 / (side * side)).max(1);
    group.throughput(Throughput::Elements(
        common::free_cells(&field) * (sweeps * used) as u64,
    ));
    let name = if used == BATCH_LANES_F32 {
        "gauss_seidel_batch_f32".to_string()
    } else {
        format!("gauss_seidel_batch_f32_{used}_lanes")
    };
    group.bench_function(BenchmarkId::new(name, side), |b| {
        b.iter(|| black_box(&mut batch).relax(sweeps))
    });
}

fn bench_jacobi<T: Potential>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    side: usize,
    bias: &Bias,
) {
    let mut field = common::room::<T>(side, 0.9);
    let mut scratch = Vec::new();
    let sweeps = (65_536 / (side * side)).max(1);
    group.throughput(Throughput::Elements(
        common::free_cells(&field) * sweeps as u64,
    ));
    group.bench_function(BenchmarkId::new(name, side), |b| {
        b.iter(|| {
            for _ in 0..sweeps {
                jacobi_sweep(black_box(&mut field), bias, &mut scratch);
            }
        })
    });
}

/// A crowd's case: 30 sweeps of `used` 15×15 maps in one `f32` batch (a few maps take the
/// time-skewed kernel where the CPU has AVX-512F, more the lane-per-map one).
fn crowd_batches(c: &mut Criterion) {
    let bias = Bias::new(0.7, DVec2::Y).unwrap();
    let mut group = c.benchmark_group("crowd_batch_f32_30_sweeps");
    let side = 15;
    let field = common::room::<f64>(side, 0.9);
    for used in [1, 2, 4, 6, 8, 12, 16, 24, BATCH_LANES_F32] {
        let mut batch = FieldBatchF32::new(side, side);
        for lane in 0..used {
            batch.load(lane, &field, &bias);
        }
        group.throughput(Throughput::Elements(used as u64));
        group.bench_function(BenchmarkId::new("maps", used), |b| {
            b.iter(|| black_box(&mut batch).relax(30))
        });
        // As a crowd relaxes them: from and back into the maps themselves.
        let mut maps = vec![field.clone(); used];
        group.bench_function(BenchmarkId::new("whole_maps", used), |b| {
            b.iter(|| {
                let mut pairs: Vec<_> = maps.iter_mut().map(|f| (f, &bias)).collect();
                black_box(&mut batch).relax_whole(&mut pairs, 30)
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = kernels, crowd_batches
}
criterion_main!(benches);
