//! Time to solve a 256×256 harmonic global map to residual 1e-6 with Gauss–Seidel, SOR and the
//! multigrid solver (with a fresh and with a kept workspace), beside one Jacobi sweep of the same map (the practical roof, in cell
//! updates per second).
//!
//! `cargo bench -p crowdfield_field --bench solvers`. The map is `common::room(256)`: a walled
//! room with a long box, a disc and a rotated box, goal patch at the east wall, free cells
//! starting at 1. The residual is [`crowdfield_field::Field::residual`].

mod common;

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use crowdfield_field::{
    Bias, MultigridSolver, MultigridWorkspace, Relaxation, Tolerance, jacobi_sweep, relax_until,
};

const SIDE: usize = 256;
const TOLERANCE: f64 = 1e-6;

fn solvers(c: &mut Criterion) {
    let mut group = c.benchmark_group("solve_256_to_1e-6");
    group.sample_size(10);
    let fresh = || common::room::<f64>(SIDE, 1.0);
    let tol = Tolerance {
        residual: TOLERANCE,
        max_sweeps: 1_000_000,
        check_every: 8,
    };
    for (name, relaxation) in [
        ("gauss_seidel", Relaxation::GAUSS_SEIDEL),
        ("sor", Relaxation::sor_for_size(SIDE)),
    ] {
        group.bench_function(BenchmarkId::new(name, SIDE), |b| {
            b.iter_batched(
                fresh,
                |mut f| {
                    let r = relax_until(&mut f, &Bias::HARMONIC, &relaxation, &tol).unwrap();
                    assert!(r.converged);
                    black_box(f)
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.bench_function(BenchmarkId::new("multigrid", SIDE), |b| {
        b.iter_batched(
            fresh,
            |mut f| {
                let r = MultigridSolver::new()
                    .solve(&mut f, &Bias::HARMONIC, TOLERANCE)
                    .unwrap();
                assert!(r.converged);
                black_box(f)
            },
            BatchSize::LargeInput,
        )
    });
    // The same solve with work memory kept between solves, as a game that rebuilds maps does.
    let mut workspace = MultigridWorkspace::new();
    group.bench_function(BenchmarkId::new("multigrid_kept_workspace", SIDE), |b| {
        b.iter_batched(
            fresh,
            |mut f| {
                let r = MultigridSolver::new()
                    .solve_with(&mut workspace, &mut f, &Bias::HARMONIC, TOLERANCE)
                    .unwrap();
                assert!(r.converged);
                black_box(f)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();

    let mut roof = c.benchmark_group("roof_256");
    let mut field = fresh();
    let mut scratch = Vec::new();
    roof.throughput(Throughput::Elements(common::free_cells(&field)));
    roof.bench_function("jacobi_sweep", |b| {
        b.iter(|| jacobi_sweep(black_box(&mut field), &Bias::HARMONIC, &mut scratch))
    });
    roof.finish();
}

criterion_group!(benches, solvers);
criterion_main!(benches);
