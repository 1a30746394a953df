//! Relaxation sweeps of the biased update (digest 000 §2.2 and §2.6, digest 004 §2.2).
//!
//! Every sweep applies, to each free cell c,
//!
//! ```text
//! p_c ← (1 − ω) p_c + ω [ w_E p_E + w_W p_W + w_N p_N + w_S p_S ]
//! ```
//!
//! with the weights of [`Bias::weights`] (¼ ± ε v / 8) and ω = 1 except for SOR. They differ in
//! the order cells are visited, which matters when relaxation is partial (a few dozen sweeps per
//! planner step), because the seeds' trajectories come from partially relaxed fields:
//!
//! - [`SweepOrder::Lexicographic`]: the seeds' in-place Gauss–Seidel, x fastest, then y, both
//!   increasing; W and S neighbours already carry the new iterate (digest 000 Eq. 5.1). This is
//!   the default for local maps.
//! - [`SweepOrder::Alternating`]: odd sweeps run forwards, even sweeps backwards (digest 000 §2.2,
//!   after Prestes 2003); converges faster on global maps.
//! - [`SweepOrder::RedBlack`]: all cells with even x + y, then all odd ones. Each half-sweep is
//!   order-independent, so it parallelises; it is a different smoother from lexicographic order.
//! - [`jacobi_sweep`]: two arrays, every cell from old values. Slow to converge but the most
//!   vectorisable; benchmarks use it as the machine's practical roof.
//!
//! SOR (ω > 1) converges in O(N) sweeps on an N×N map instead of O(N²), but its partial iterates
//! oscillate; the seeds rejected it for local maps (digest 000 §2.2). Use it for global maps, or
//! the multigrid solver in [`crate::multigrid`].
//!
//! Stopping: [`relax_until`] stops when [`Field::residual`] (the largest change a Jacobi update
//! would make) falls to the tolerance, or at a sweep cap.

use crate::FieldError;
use crate::bias::{Bias, StencilWeights};
use crate::field::{CellKind, Field};
use crate::scalar::Potential;

/// The order in which a sweep visits free cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SweepOrder {
    /// x fastest then y, both increasing: the seeds' Gauss–Seidel.
    #[default]
    Lexicographic,
    /// Lexicographic forwards on odd sweeps, backwards on even ones.
    Alternating,
    /// Even (x + y) cells, then odd ones.
    RedBlack,
}

/// How to relax: the visiting order and the over-relaxation factor ω.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relaxation {
    /// The visiting order.
    pub order: SweepOrder,
    /// ω: 1 is Gauss–Seidel, in (1, 2) is SOR. Values outside (0, 2) diverge and are clamped;
    /// a non-finite ω is treated as 1.
    pub omega: f64,
}

impl Default for Relaxation {
    fn default() -> Self {
        Self::GAUSS_SEIDEL
    }
}

impl Relaxation {
    /// The seeds' lexicographic Gauss–Seidel.
    pub const GAUSS_SEIDEL: Self = Self {
        order: SweepOrder::Lexicographic,
        omega: 1.0,
    };

    /// Red–black Gauss–Seidel.
    pub const RED_BLACK: Self = Self {
        order: SweepOrder::RedBlack,
        omega: 1.0,
    };

    /// Lexicographic SOR with factor ω.
    pub fn sor(omega: f64) -> Self {
        Self {
            order: SweepOrder::Lexicographic,
            omega,
        }
    }

    /// Lexicographic SOR with the optimal ω for Laplace's equation on an `n`-cell-wide square,
    /// `2 / (1 + sin(π / n))` (the classical result for the model problem; docs/field.md). A starting point for biased or irregular maps.
    pub fn sor_for_size(n: usize) -> Self {
        let n = n.max(3) as f64;
        Self::sor(2.0 / (1.0 + (std::f64::consts::PI / n).sin()))
    }
}

/// When [`relax_until`] stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Stop once [`Field::residual`] ≤ this.
    pub residual: f64,
    /// Stop after this many sweeps regardless.
    pub max_sweeps: usize,
    /// Compute the residual every this many sweeps (1 = every sweep, exact sweep counts).
    pub check_every: usize,
}

impl Tolerance {
    /// Stop at `residual`, or after `max_sweeps`, checking every sweep.
    pub fn new(residual: f64, max_sweeps: usize) -> Self {
        Self {
            residual,
            max_sweeps,
            check_every: 1,
        }
    }
}

/// What a run of [`relax_until`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelaxReport {
    /// Sweeps performed.
    pub sweeps: usize,
    /// Residual at the end.
    pub residual: f64,
    /// Whether the residual reached the tolerance.
    pub converged: bool,
}

/// Runs `sweeps` sweeps in place (the partial relaxation of a planner step). Cheap and
/// infallible; a field without a goal simply tends to 1 (check [`Field::has_goal`] when the
/// goal may be missing).
pub fn relax<T: Potential>(
    field: &mut Field<T>,
    bias: &Bias,
    relaxation: &Relaxation,
    sweeps: usize,
) {
    let weights = bias.weights();
    for s in 0..sweeps {
        sweep(field, &weights, relaxation, s);
    }
}

/// Sweeps until the residual reaches `tolerance.residual` or `tolerance.max_sweeps` sweeps ran.
///
/// Errors with [`FieldError::NoGoal`] when the field has no goal: relaxing it would only drive
/// every free cell towards 1.
pub fn relax_until<T: Potential>(
    field: &mut Field<T>,
    bias: &Bias,
    relaxation: &Relaxation,
    tolerance: &Tolerance,
) -> Result<RelaxReport, FieldError> {
    if !field.has_goal() {
        return Err(FieldError::NoGoal);
    }
    let weights = bias.weights();
    let check_every = tolerance.check_every.max(1);
    let mut residual = field.residual(bias);
    let mut sweeps = 0;
    while residual > tolerance.residual && sweeps < tolerance.max_sweeps {
        sweep(field, &weights, relaxation, sweeps);
        sweeps += 1;
        if sweeps % check_every == 0 || sweeps == tolerance.max_sweeps {
            residual = field.residual(bias);
        }
    }
    Ok(RelaxReport {
        sweeps,
        residual,
        converged: residual <= tolerance.residual,
    })
}

/// One sweep; `index` is the sweep's number (selects the direction of alternating sweeps).
fn sweep<T: Potential>(
    field: &mut Field<T>,
    weights: &StencilWeights,
    relaxation: &Relaxation,
    index: usize,
) {
    // A non-finite ω would poison every cell; fall back to Gauss–Seidel.
    let omega = if relaxation.omega.is_finite() {
        relaxation.omega.clamp(1e-3, 1.999)
    } else {
        1.0
    };
    let (geometry, kinds, p) = field.parts_mut();
    let (w, h) = (geometry.width(), geometry.height());
    let wt = Weights::<T>::new(weights);
    match relaxation.order {
        SweepOrder::Lexicographic => sweep_forward(p, kinds, w, h, &wt, omega),
        SweepOrder::Alternating if index % 2 == 1 => sweep_backward(p, kinds, w, h, &wt, omega),
        SweepOrder::Alternating => sweep_forward(p, kinds, w, h, &wt, omega),
        SweepOrder::RedBlack => {
            sweep_colour(p, kinds, w, h, &wt, omega, 0);
            sweep_colour(p, kinds, w, h, &wt, omega, 1);
        }
    }
}

/// Stencil weights converted to the field's precision.
#[derive(Clone, Copy)]
struct Weights<T> {
    east: T,
    west: T,
    north: T,
    south: T,
}

impl<T: Potential> Weights<T> {
    fn new(w: &StencilWeights) -> Self {
        Self {
            east: T::from_f64(w.east),
            west: T::from_f64(w.west),
            north: T::from_f64(w.north),
            south: T::from_f64(w.south),
        }
    }

    #[inline(always)]
    fn update(&self, p: &[T], i: usize, w: usize) -> T {
        self.east * p[i + 1] + self.west * p[i - 1] + self.north * p[i + w] + self.south * p[i - w]
    }
}

#[inline(always)]
fn blend<T: Potential>(old: T, new: T, omega: f64) -> T {
    if omega == 1.0 {
        new
    } else {
        old + T::from_f64(omega) * (new - old)
    }
}

fn sweep_forward<T: Potential>(
    p: &mut [T],
    kinds: &[CellKind],
    w: usize,
    h: usize,
    wt: &Weights<T>,
    omega: f64,
) {
    for y in 1..h - 1 {
        for i in y * w + 1..y * w + w - 1 {
            if kinds[i] == CellKind::Free {
                p[i] = blend(p[i], wt.update(p, i, w), omega);
            }
        }
    }
}

fn sweep_backward<T: Potential>(
    p: &mut [T],
    kinds: &[CellKind],
    w: usize,
    h: usize,
    wt: &Weights<T>,
    omega: f64,
) {
    for y in (1..h - 1).rev() {
        for i in (y * w + 1..y * w + w - 1).rev() {
            if kinds[i] == CellKind::Free {
                p[i] = blend(p[i], wt.update(p, i, w), omega);
            }
        }
    }
}

fn sweep_colour<T: Potential>(
    p: &mut [T],
    kinds: &[CellKind],
    w: usize,
    h: usize,
    wt: &Weights<T>,
    omega: f64,
    colour: usize,
) {
    for y in 1..h - 1 {
        let first = 1 + (y + 1 + colour) % 2;
        for x in (first..w - 1).step_by(2) {
            let i = y * w + x;
            if kinds[i] == CellKind::Free {
                p[i] = blend(p[i], wt.update(p, i, w), omega);
            }
        }
    }
}

/// One Jacobi sweep: every free cell from the old values, written into `scratch`, which then
/// becomes the field's potential buffer (the old buffer is handed back in `scratch`). Reuse the
/// same `scratch` across sweeps to avoid allocation.
pub fn jacobi_sweep<T: Potential>(field: &mut Field<T>, bias: &Bias, scratch: &mut Vec<T>) {
    let wt = Weights::<T>::new(&bias.weights());
    let (geometry, kinds, p) = field.parts_mut();
    let (w, h) = (geometry.width(), geometry.height());
    if scratch.len() != p.len() {
        scratch.clear();
        scratch.extend_from_slice(p);
    } else {
        // The border ring is fixed and never written below.
        scratch[..w].copy_from_slice(&p[..w]);
        scratch[(h - 1) * w..].copy_from_slice(&p[(h - 1) * w..]);
        for y in 1..h - 1 {
            scratch[y * w] = p[y * w];
            scratch[y * w + w - 1] = p[y * w + w - 1];
        }
    }
    for y in 1..h - 1 {
        let row = y * w;
        let south = &p[row - w..row];
        let centre = &p[row..row + w];
        let north = &p[row + w..row + 2 * w];
        let kind = &kinds[row..row + w];
        let out = &mut scratch[row..row + w];
        for x in 1..w - 1 {
            let s = wt.east * centre[x + 1]
                + wt.west * centre[x - 1]
                + wt.north * north[x]
                + wt.south * south[x];
            out[x] = if kind[x] == CellKind::Free {
                s
            } else {
                centre[x]
            };
        }
    }
    field.swap_potentials(scratch);
}

#[cfg(test)]
mod tests {
    use glam::DVec2;

    use super::*;
    use crate::grid::GridGeometry;

    fn room(n: usize) -> Field<f64> {
        let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, n, n).unwrap(), 1.0);
        f.set_goal(n - 1, n / 2).unwrap();
        f
    }

    #[test]
    fn every_order_converges_to_the_same_field() {
        let tol = Tolerance::new(1e-12, 100_000);
        let mut reference = room(15);
        assert!(
            relax_until(
                &mut reference,
                &Bias::HARMONIC,
                &Relaxation::GAUSS_SEIDEL,
                &tol
            )
            .unwrap()
            .converged
        );
        for r in [
            Relaxation::RED_BLACK,
            Relaxation::sor_for_size(15),
            Relaxation {
                order: SweepOrder::Alternating,
                omega: 1.0,
            },
        ] {
            let mut f = room(15);
            assert!(
                relax_until(&mut f, &Bias::HARMONIC, &r, &tol)
                    .unwrap()
                    .converged,
                "{r:?}"
            );
            let diff = f
                .potentials()
                .iter()
                .zip(reference.potentials())
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(diff < 1e-9, "{r:?}: {diff}");
        }
        let mut f = room(15);
        let mut scratch = Vec::new();
        for _ in 0..20_000 {
            jacobi_sweep(&mut f, &Bias::HARMONIC, &mut scratch);
        }
        assert!(f.residual(&Bias::HARMONIC) < 1e-12);
    }

    #[test]
    fn sor_converges_in_fewer_sweeps_than_gauss_seidel() {
        let tol = Tolerance::new(1e-8, 100_000);
        let gs = relax_until(
            &mut room(32),
            &Bias::HARMONIC,
            &Relaxation::GAUSS_SEIDEL,
            &tol,
        )
        .unwrap();
        let sor = relax_until(
            &mut room(32),
            &Bias::HARMONIC,
            &Relaxation::sor_for_size(32),
            &tol,
        )
        .unwrap();
        assert!(gs.converged && sor.converged);
        assert!(
            sor.sweeps * 4 < gs.sweeps,
            "SOR {} vs GS {}",
            sor.sweeps,
            gs.sweeps
        );
    }

    #[test]
    fn fixed_cells_are_never_changed() {
        let mut f = room(9);
        f.set_fixed(3, 3, 0.7).unwrap();
        f.set_obstacle(5, 5).unwrap();
        relax(
            &mut f,
            &Bias::new(1.5, DVec2::new(1.0, 0.3)).unwrap(),
            &Relaxation::RED_BLACK,
            50,
        );
        assert_eq!(f.potential(3, 3), Some(0.7));
        assert_eq!(f.potential(5, 5), Some(1.0));
        assert_eq!(f.potential(8, 4), Some(0.0));
    }

    #[test]
    fn a_non_finite_omega_does_not_poison_the_field() {
        let mut f = room(9);
        relax(&mut f, &Bias::HARMONIC, &Relaxation::sor(f64::NAN), 20);
        assert!(
            f.potentials()
                .iter()
                .all(|p| p.is_finite() && (0.0..=1.0).contains(p))
        );
    }

    #[test]
    fn relaxing_to_a_tolerance_needs_a_goal() {
        let mut f = Field::<f64>::new(GridGeometry::new(DVec2::ZERO, 1.0, 9, 9).unwrap(), 0.5);
        let r = relax_until(
            &mut f,
            &Bias::HARMONIC,
            &Relaxation::GAUSS_SEIDEL,
            &Tolerance::new(1e-6, 10),
        );
        assert_eq!(r, Err(FieldError::NoGoal));
    }

    #[test]
    fn a_sweep_cap_stops_relaxation() {
        let r = relax_until(
            &mut room(40),
            &Bias::HARMONIC,
            &Relaxation::GAUSS_SEIDEL,
            &Tolerance::new(1e-12, 7),
        )
        .unwrap();
        assert_eq!(r.sweeps, 7);
        assert!(!r.converged);
    }
}
