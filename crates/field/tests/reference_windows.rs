//! The reference windows of digest 000 §2.8 and §8.2 tests 1–3, the world-space sign
//! convention, and the precision, warm-start and initial-value claims of digest 004 §3.1.
//!
//! Window: 15×15, outer ring fixed at 1 except three goal cells in the middle of the +x edge,
//! free cells starting at 1. Angles are of the descent direction at the centre cell, measured
//! from +x; magnitudes are of the central-difference gradient ((p₊ − p₋)/2 per cell).

use crowdfield_field::{
    Bias, Field, FieldBatchF32, GridGeometry, MultigridSolver, Relaxation, Tolerance, relax,
    relax_until,
};
use glam::{DVec2, IVec2};

fn window<T: crowdfield_field::Potential>(free: f64) -> Field<T> {
    let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, 15, 15).unwrap(), free);
    for y in 6..=8 {
        f.set_goal(14, y).unwrap();
    }
    f
}

fn converged(bias: Bias) -> Field<f64> {
    let mut f = window(1.0);
    let r = relax_until(
        &mut f,
        &bias,
        &Relaxation::GAUSS_SEIDEL,
        &Tolerance::new(1e-15, 200_000),
    )
    .unwrap();
    assert!(r.converged, "{r:?}");
    f
}

fn angle_deg(d: DVec2) -> f64 {
    d.y.atan2(d.x).to_degrees()
}

#[test]
fn harmonic_window_points_straight_at_the_goal() {
    let d = converged(Bias::HARMONIC).descent_at_cell(7, 7);
    assert!(angle_deg(d).abs() < 0.5, "{}", angle_deg(d));
    let g = d.length();
    assert!((g / 2.38e-2 - 1.0).abs() < 0.02, "‖∇p‖ = {g}");
}

#[test]
fn printed_kernel_reproduces_the_seed_reference_table() {
    let cases = [
        // (ε, v, angle °, ‖∇p‖, relative tolerance on ‖∇p‖)
        (0.7, DVec2::Y, -35.5, 1.55e-2, 0.02),
        (0.7, DVec2::NEG_Y, 35.5, 1.55e-2, 0.02),
        (2.0, DVec2::Y, -41.8, 1.0e-3, 0.05),
        (0.7, DVec2::X, 0.0, 2.89e-2, 0.02),
        (0.7, DVec2::NEG_X, 0.0, 1.63e-3, 0.02),
    ];
    for (eps, v, angle, mag, rel) in cases {
        let d = converged(Bias::from_printed_kernel(eps, v).unwrap()).descent_at_cell(7, 7);
        assert!(
            (angle_deg(d) - angle).abs() < 1.0,
            "ε={eps} v={v}: {}°",
            angle_deg(d)
        );
        assert!(
            (d.length() / mag - 1.0).abs() < rel,
            "ε={eps} v={v}: ‖∇p‖ = {}",
            d.length()
        );
    }
}

#[test]
fn world_bias_bends_the_valley_towards_plus_v() {
    // Our convention: ε > 0 draws towards +v. v = +y must tilt the descent to +y.
    let up = converged(Bias::new(0.7, DVec2::Y).unwrap()).descent_at_cell(7, 7);
    let down = converged(Bias::new(0.7, DVec2::NEG_Y).unwrap()).descent_at_cell(7, 7);
    assert!((angle_deg(up) - 35.5).abs() < 1.0, "{}", angle_deg(up));
    assert!((angle_deg(down) + 35.5).abs() < 1.0, "{}", angle_deg(down));
    // (−ε, v) ≡ (ε, −v).
    let neg = converged(Bias::new(-0.7, DVec2::Y).unwrap()).descent_at_cell(7, 7);
    assert!((neg - down).length() < 1e-12);
}

#[test]
fn corridor_valley_moves_towards_the_plus_v_wall_and_saturates() {
    // Digest 000 §2.8 corridor check: 17 cells wide (walls at rows 0 and 16), goal at the far
    // end, printed v = (0, +1): valley at rows 8, 7, 5, 3, 2, 2, 1 for the listed ε. Under the
    // world convention the same numbers appear mirrored (row 16 − j) for v = (0, +1).
    let epsilons = [0.0, 0.1, 0.3, 0.7, 1.0, 1.2, 2.0];
    let printed_rows = [8, 7, 5, 3, 2, 2, 1];
    let (len, width) = (60, 17);
    for (eps, expect) in epsilons.iter().zip(printed_rows) {
        let mut f = Field::<f64>::new(
            GridGeometry::new(DVec2::ZERO, 1.0, len, width).unwrap(),
            1.0,
        );
        for y in 1..width - 1 {
            f.set_goal(len - 1, y).unwrap();
        }
        let bias = Bias::new(*eps, DVec2::Y).unwrap();
        let r = MultigridSolver::new().solve(&mut f, &bias, 1e-14).unwrap();
        assert!(r.converged, "{r:?}");
        let x = len / 2;
        let valley = (1..width - 1)
            .min_by(|a, b| {
                f.potential(x, *a)
                    .unwrap()
                    .total_cmp(&f.potential(x, *b).unwrap())
            })
            .unwrap();
        println!("ε = {eps}: valley row {valley} (printed kernel: {expect})");
        assert_eq!(valley, width - 1 - expect, "ε = {eps}");
    }
}

#[test]
fn thirty_sweeps_from_one_land_within_five_degrees_of_converged() {
    for bias in [
        Bias::HARMONIC,
        Bias::from_printed_kernel(0.7, DVec2::Y).unwrap(),
        Bias::from_printed_kernel(0.7, DVec2::NEG_Y).unwrap(),
    ] {
        let full = angle_deg(converged(bias).descent_at_cell(7, 7));
        let mut f = window::<f64>(1.0);
        relax(&mut f, &bias, &Relaxation::GAUSS_SEIDEL, 30);
        let partial = angle_deg(f.descent_at_cell(7, 7));
        assert!(
            (partial - full).abs() < 5.0,
            "{bias:?}: {partial} vs {full}"
        );
    }
}

/// Window sides and biases of the precision tests: the seeds' 11–35 cell windows and four
/// biases up to the largest valid ε.
const PRECISION_CASES: [(f64, DVec2); 4] = [
    (0.0, DVec2::X),
    (0.7, DVec2::Y),
    (1.2, DVec2::new(0.7, -0.7)),
    (2.0, DVec2::NEG_X),
];
const PRECISION_SIDES: [usize; 4] = [11, 15, 21, 35];

/// A `side`-cell window with three goal cells on the east border and a wall in front of them,
/// open at both ends, so the descent at the centre must bend around it.
fn walled_window<T: crowdfield_field::Potential>(side: usize) -> Field<T> {
    let g = GridGeometry::new(DVec2::ZERO, 1.0, side, side).unwrap();
    let mut f = Field::<T>::new(g, 0.9);
    for y in side / 2 - 1..=side / 2 + 1 {
        f.set_goal(side - 1, y).unwrap();
    }
    for y in 4..side - 4 {
        f.set_obstacle(side / 2 + 2, y).unwrap();
    }
    f
}

#[test]
fn f32_and_f64_local_maps_pick_the_same_direction() {
    // The same decisions for the seed's window sizes, biases and sweep counts, wherever the
    // descent is at least 1e-5 per cell. Measured below that: 2° apart at 2.5e-6, 14° at 3e-8,
    // and f32 rounds flat (zero gradient) below ~1e-8. Local maps are therefore never swept in
    // plain f32 (the next test: f32 on the complement 1 − p).
    let mut checked = 0;
    let mut weak_f32: Vec<f64> = Vec::new();
    for side in PRECISION_SIDES {
        for (eps, v) in PRECISION_CASES {
            let bias = Bias::new(eps, v).unwrap();
            let mut a = walled_window::<f64>(side);
            let mut b = walled_window::<f32>(side);
            for sweeps in [30, 60, 100] {
                relax(&mut a, &bias, &Relaxation::GAUSS_SEIDEL, sweeps);
                relax(&mut b, &bias, &Relaxation::GAUSS_SEIDEL, sweeps);
                let c = side / 2;
                let da = a.descent_at_cell(c, c);
                let db = b.descent_at_cell(c, c);
                let turn = da.angle_to(db).to_degrees().abs();
                if da.length() < 1e-5 {
                    // Too close to flat for f32's 24-bit mantissa near p = 1.
                    if da.length() < 1e-7 {
                        weak_f32.push(if turn.is_nan() { 180.0 } else { turn });
                    }
                    continue;
                }
                checked += 1;
                assert!(
                    turn < 0.5,
                    "side {side} ε {eps}: f64 {da} vs f32 {db} ({turn}°)"
                );
            }
        }
    }
    assert!(checked >= 25, "only {checked} cases had a usable gradient");
    // The limit is real: in near-flat cases f32 loses the direction.
    assert!(weak_f32.iter().any(|t| *t > 1.0), "{weak_f32:?}");
}

#[test]
fn f32_sweeps_on_the_complement_pick_the_f64_direction_where_plain_f32_cannot() {
    // The windows of the test above, relaxed by `FieldBatchF32` (f32 on q = 1 − p): the same
    // direction as f64 (within 0.01°; measured 0.0000° in all 47 cases) down to descents of
    // 1e-10, five orders of magnitude below the 1e-5 where plain f32 stops agreeing. Below
    // 1e-14 f64 itself is at its floor near p = 1 and is no reference.
    let mut checked = 0;
    let mut smallest = f64::INFINITY;
    let mut worst: f64 = 0.0;
    for side in PRECISION_SIDES {
        for (eps, v) in PRECISION_CASES {
            let bias = Bias::new(eps, v).unwrap();
            let mut a = walled_window::<f64>(side);
            let mut b = a.clone();
            let mut batch = FieldBatchF32::new(side, side);
            for sweeps in [30, 60, 100] {
                relax(&mut a, &bias, &Relaxation::GAUSS_SEIDEL, sweeps);
                batch.load(0, &b, &bias);
                batch.relax(sweeps);
                batch.store(0, &mut b);
                let c = side / 2;
                let da = a.descent_at_cell(c, c);
                let db = b.descent_at_cell(c, c);
                let turn = da.angle_to(db).to_degrees().abs();
                println!(
                    "side {side} ε {eps} sweeps {sweeps}: |descent| {:.2e}, {turn:.4}°",
                    da.length()
                );
                if da.length() < 1e-14 {
                    continue;
                }
                checked += 1;
                smallest = smallest.min(da.length());
                worst = worst.max(turn);
                assert!(
                    turn < 0.01,
                    "side {side} ε {eps}: f64 {da} vs f32 complement {db} ({turn}°)"
                );
            }
        }
    }
    println!("{checked} cases, smallest descent {smallest:.2e}, worst {worst:.4}°");
    assert!(checked >= 40, "only {checked} cases");
    assert!(smallest < 1e-8, "no near-flat case checked ({smallest:e})");
}

/// A 20×20 local map with a few stamped agents and a goal on the border, as after one planner
/// step of an agent walking +y.
fn local_map(shift: i32) -> Field<f64> {
    let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, 20, 20).unwrap(), 0.9);
    stamp(&mut f, shift);
    f
}

fn stamp(f: &mut Field<f64>, shift: i32) {
    for x in 8..=11 {
        f.set_goal(x, 19).unwrap();
    }
    for (cx, cy) in [(6, 12), (13, 9), (9, 15), (4, 6)] {
        let y = cy - shift;
        for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            let (x, yy) = ((cx + dx) as usize, (y + dy) as usize);
            f.set_obstacle(x, yy).unwrap();
        }
    }
}

#[test]
fn warm_start_after_a_one_cell_step_saves_at_least_a_fifth_of_the_sweeps() {
    let tol = Tolerance::new(1e-3, 10_000);
    let mut f = local_map(0);
    let first = relax_until(&mut f, &Bias::HARMONIC, &Relaxation::GAUSS_SEIDEL, &tol).unwrap();
    // The agent steps one cell along +y: carry the potentials, rebuild the stamps.
    let mut warm = Field::new(*f.geometry(), 0.9);
    warm.potentials_mut().copy_from_slice(f.potentials());
    warm.translate_by_cells(IVec2::new(0, 1), 0.9);
    stamp(&mut warm, 1);
    let warm_report =
        relax_until(&mut warm, &Bias::HARMONIC, &Relaxation::GAUSS_SEIDEL, &tol).unwrap();
    let mut cold = local_map(1);
    let cold_report =
        relax_until(&mut cold, &Bias::HARMONIC, &Relaxation::GAUSS_SEIDEL, &tol).unwrap();
    assert!(first.converged && warm_report.converged && cold_report.converged);
    let saving = 1.0 - warm_report.sweeps as f64 / cold_report.sweeps as f64;
    println!(
        "cold {} sweeps, warm {} sweeps, saving {:.0} %",
        cold_report.sweeps,
        warm_report.sweeps,
        saving * 100.0
    );
    assert!(
        saving >= 0.2,
        "cold {} vs warm {}",
        cold_report.sweeps,
        warm_report.sweeps
    );
}

#[test]
fn initial_value_point_nine_beats_one_half() {
    for side in [10usize, 15, 20, 25] {
        let sweeps = |free: f64| {
            let mut f = Field::<f64>::new(
                GridGeometry::new(DVec2::ZERO, 1.0, side, side).unwrap(),
                free,
            );
            f.set_goal(side - 1, side / 2).unwrap();
            relax_until(
                &mut f,
                &Bias::HARMONIC,
                &Relaxation::GAUSS_SEIDEL,
                &Tolerance::new(1e-3, 100_000),
            )
            .unwrap()
            .sweeps
        };
        let (high, half) = (sweeps(0.9), sweeps(0.5));
        assert!(
            high < half,
            "{side}×{side}: 0.9 took {high}, 0.5 took {half}"
        );
    }
}
