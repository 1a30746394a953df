//! An O(N) solver for large global maps: Krylov iterations preconditioned by an aggregation
//! multigrid cycle.
//!
//! Global maps are relaxed to convergence once, then reused by every agent heading to the same
//! goal (digest 000 §3.1). Gauss–Seidel needs O(N²) sweeps on an N×N map and SOR O(N) (anchors
//! §D.3); multigrid needs a number of cycles that grows only slowly with N, each costing a few
//! sweeps. The equation and boundary conditions are those of [`crate::bias`] (digest 000
//! Eq. 3.5 with the bias of §2.8); unknowns are the free cells, fixed cells become the
//! right-hand side:
//!
//! ```text
//! p_c − Σ_k w_k p_k = Σ_{k fixed} w_k p_k        (k ∈ {E, W, N, S}, w_k from Bias::weights)
//! ```
//!
//! # Hierarchy
//!
//! Each coarse cell aggregates a 2×2 block of fine cells. Transfers are piecewise constant
//! (prolongation copies the coarse value to its children; restriction sums the children) and the
//! coarse operator is the Galerkin product Rᵀ A P. On a 5-point grid that product is again a
//! 5-point stencil with variable coefficients, so obstacles of any shape are represented exactly:
//! a one-cell passage stays connected on every level, walls stay walls. Coarsening stops at a
//! few dozen cells, solved with symmetric Gauss–Seidel sweeps. The smoother is damped Jacobi:
//! branchless (inactive cells carry zero coefficients), so it vectorises, which lexicographic
//! Gauss–Seidel cannot.
//!
//! # Iteration
//!
//! - Harmonic fields (ε = 0): the operator is symmetric positive definite and preconditioned
//!   conjugate gradients drive the solve.
//! - Biased fields: the operator is not symmetric; the same cycle preconditions BiCGStab.
//!
//! The preconditioner is a W-cycle by default (each coarse level is visited twice per visit of
//! the level above, [`MultigridSolver::cycle_index`]) with two damped-Jacobi sweeps before and
//! after each coarse correction. It runs in single precision: it only has to approximate the
//! inverse, while the Krylov iteration around it runs in f64 and sets the attainable accuracy
//! (the tests solve to residuals of 1e-13). Because rounding makes the preconditioner linear
//! only approximately, CG uses the flexible (Polak–Ribière) β. On a 256×256 room the
//! single-precision W-cycle needs half the iterations of a double-precision V-cycle and under
//! half its time (`cargo bench -p crowdfield_field --bench solvers`; the figures are in
//! docs/performance.md, *Measurements behind tuning constants*).
//!
//! Stopping uses the same residual as [`crate::relax`](mod@crate::relax): the largest change a
//! Jacobi update would make, `max |Σ w_k p_k − p_c|` (the rows above have unit diagonal). The
//! solve works in place on the field's potentials, whose current values are the initial guess,
//! so a solve after a small edit (warm start) takes fewer iterations.

use crate::FieldError;
use crate::bias::Bias;
use crate::field::{CellKind, Field};

/// Settings of the multigrid solver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultigridSolver {
    /// Damped-Jacobi sweeps (ω = 0.8) before restriction on each level.
    pub pre_smooth: usize,
    /// Damped-Jacobi sweeps after prolongation on each level.
    pub post_smooth: usize,
    /// Stop after this many Krylov iterations.
    pub max_iterations: usize,
    /// Stop coarsening when a level has at most this many unknowns.
    pub coarsest_unknowns: usize,
    /// Factor applied to the coarse-grid correction of harmonic solves. Piecewise-constant
    /// aggregation underestimates smooth errors; scaling the correction up (over-correction)
    /// restores most of the convergence rate of classical multigrid: on the 256×256 benchmark
    /// room a V-cycle needs 19 CG iterations at 1.0 and 10 at 1.8, the W-cycle 9 at 1.0 and 5
    /// at 1.6. Biased solves use 1.0.
    pub harmonic_coarse_scale: f64,
    /// Coarse-level passes per visit: 1 is a V-cycle, 2 (the default) a W-cycle, which costs
    /// about 1.5 V-cycles and halves the iterations on aggregation hierarchies. The cost of a
    /// cycle grows like `cycle_index^levels / 4^levels` relative to the fine level, so values
    /// above 3 get expensive quickly; 0 counts as 1.
    pub cycle_index: usize,
}

impl Default for MultigridSolver {
    fn default() -> Self {
        Self::new()
    }
}

/// What a solve did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolveReport {
    /// Krylov iterations (one preconditioning cycle each; BiCGStab uses two).
    pub iterations: usize,
    /// Levels in the hierarchy, the fine grid included.
    pub levels: usize,
    /// Final residual (see the module docs).
    pub residual: f64,
    /// Whether the residual reached the tolerance.
    pub converged: bool,
}

/// Reusable memory for [`MultigridSolver::solve_with`]: the hierarchy's coefficient arrays and
/// the work vectors, recycled between solves.
///
/// A solve of a 256×256 map touches about 4 MB of work arrays, and fresh pages cost page
/// faults. Every solve draws its vectors from a pool, so a single solve faults each page once;
/// keeping the workspace between solves saves that too (docs/performance.md, *Measurements
/// behind tuning constants*).
#[derive(Debug, Default, Clone)]
pub struct MultigridWorkspace {
    singles: Vec<Vec<f32>>,
    doubles: Vec<Vec<f64>>,
}

impl MultigridWorkspace {
    /// An empty workspace; it grows on the first solve.
    pub fn new() -> Self {
        Self::default()
    }

    /// A zeroed vector of `n` singles, from the pool when one is large enough.
    fn single(&mut self, n: usize) -> Vec<f32> {
        let mut v = take_fitting(&mut self.singles, n);
        v.clear();
        v.resize(n, 0.0);
        v
    }

    /// A zeroed vector of `n` doubles, from the pool when one is large enough.
    fn double(&mut self, n: usize) -> Vec<f64> {
        let mut v = take_fitting(&mut self.doubles, n);
        v.clear();
        v.resize(n, 0.0);
        v
    }

    fn give_single(&mut self, v: Vec<f32>) {
        if v.capacity() > 0 {
            self.singles.push(v);
        }
    }

    fn give_double(&mut self, v: Vec<f64>) {
        if v.capacity() > 0 {
            self.doubles.push(v);
        }
    }
}

/// Removes and returns the vector of smallest capacity ≥ `n` from `pool`, or an empty one.
fn take_fitting<T>(pool: &mut Vec<Vec<T>>, n: usize) -> Vec<T> {
    let best = pool
        .iter()
        .enumerate()
        .filter(|(_, v)| v.capacity() >= n)
        .min_by_key(|(_, v)| v.capacity())
        .map(|(i, _)| i);
    match best {
        Some(i) => pool.swap_remove(i),
        None => Vec::new(),
    }
}

impl MultigridSolver {
    /// A W-cycle with two pre- and two post-sweeps, over-correction 1.6, up to 200 iterations.
    pub fn new() -> Self {
        Self {
            pre_smooth: 2,
            post_smooth: 2,
            max_iterations: 200,
            coarsest_unknowns: 32,
            harmonic_coarse_scale: 1.6,
            cycle_index: 2,
        }
    }

    /// Solves `field` in place to the given residual. Errors when the field has no goal (every
    /// free cell would simply tend to 1) or the tolerance is NaN. A tolerance of zero or below
    /// solves as far as the iteration goes: it stops at the iteration's breakdown (nothing left
    /// to reduce) with the last iterate, never with values that are not finite.
    pub fn solve(
        &self,
        field: &mut Field<f64>,
        bias: &Bias,
        tolerance: f64,
    ) -> Result<SolveReport, FieldError> {
        self.solve_with(&mut MultigridWorkspace::new(), field, bias, tolerance)
    }

    /// [`Self::solve`] with work memory taken from, and returned to, `workspace`.
    pub fn solve_with(
        &self,
        workspace: &mut MultigridWorkspace,
        field: &mut Field<f64>,
        bias: &Bias,
        tolerance: f64,
    ) -> Result<SolveReport, FieldError> {
        if !field.has_goal() {
            return Err(FieldError::NoGoal);
        }
        if tolerance.is_nan() {
            return Err(FieldError::NonFinite {
                what: "tolerance",
                value: tolerance,
            });
        }
        let ws = workspace;
        let hierarchy = Hierarchy::build(field, bias, self.coarsest_unknowns.max(1), ws);
        let (_, _, p) = field.parts_mut();
        let mut r = ws.double(p.len());
        let initial = hierarchy.fine_operator().residual(p, &mut r);
        let (iterations, residual) = if initial <= tolerance {
            (0, initial)
        } else if bias.is_harmonic() {
            let cycle = Cycle {
                settings: self,
                coarse_scale: self.harmonic_coarse_scale as f32,
            };
            self.conjugate_gradients(&hierarchy, &cycle, p, &mut r, tolerance, ws)
        } else {
            let cycle = Cycle {
                settings: self,
                coarse_scale: 1.0,
            };
            self.bicgstab(&hierarchy, &cycle, p, &mut r, tolerance, ws)
        };
        ws.give_double(r);
        let levels = hierarchy.levels.len();
        hierarchy.recycle(ws);
        Ok(SolveReport {
            iterations,
            levels,
            residual,
            converged: residual <= tolerance,
        })
    }

    /// Preconditioned conjugate gradients on the potentials `x` (fixed cells included, never
    /// changed: every search direction is zero there). Returns (iterations, final residual).
    fn conjugate_gradients(
        &self,
        h: &Hierarchy,
        cycle: &Cycle,
        x: &mut [f64],
        r: &mut [f64],
        tolerance: f64,
        ws: &mut MultigridWorkspace,
    ) -> (usize, f64) {
        let n = x.len();
        let mut z = ws.double(n);
        let mut p = ws.double(n);
        let mut q = ws.double(n);
        let mut scratch = Scratch::new(h, ws);
        let result = self.cg_iterations(
            h,
            cycle,
            x,
            tolerance,
            [r, &mut z[..], &mut p[..], &mut q[..]],
            &mut scratch,
        );
        scratch.recycle(ws);
        for v in [z, p, q] {
            ws.give_double(v);
        }
        result
    }

    fn cg_iterations(
        &self,
        h: &Hierarchy,
        cycle: &Cycle,
        x: &mut [f64],
        tolerance: f64,
        [r, z, p, q]: [&mut [f64]; 4],
        scratch: &mut Scratch,
    ) -> (usize, f64) {
        let fine = h.fine_operator();
        let mut worst = f64::INFINITY;
        let (_, mut rz) = h.precondition(cycle, r, z, scratch);
        p.copy_from_slice(z);
        for iteration in 1..=self.max_iterations {
            let pq = fine.apply_dot(p, q);
            if pq <= 0.0 || !pq.is_finite() {
                return (iteration, fine.residual(x, r));
            }
            let alpha = rz / pq;
            if !alpha.is_finite() {
                return (iteration, fine.residual(x, r));
            }
            if iteration % 8 == 0 {
                // Recompute the true residual now and then against rounding drift.
                axpy(alpha, p, x);
                worst = fine.residual(x, r);
            } else {
                worst = cg_step(alpha, p, q, x, r);
            }
            if worst <= tolerance {
                worst = fine.residual(x, r);
                if worst <= tolerance {
                    return (iteration, worst);
                }
            }
            // Flexible (Polak–Ribière) β: the single-precision preconditioner is linear only
            // up to rounding, which the classical Fletcher–Reeves β assumes exactly.
            let (r_z_old, rz_new) = h.precondition(cycle, r, z, scratch);
            let beta = (rz_new - r_z_old) / rz;
            rz = rz_new;
            for (pi, zi) in p.iter_mut().zip(z.iter()) {
                *pi = zi + beta * *pi;
            }
        }
        (self.max_iterations, worst)
    }

    /// Preconditioned BiCGStab on the potentials `x`, as [`Self::conjugate_gradients`].
    fn bicgstab(
        &self,
        h: &Hierarchy,
        cycle: &Cycle,
        x: &mut [f64],
        r: &mut [f64],
        tolerance: f64,
        ws: &mut MultigridWorkspace,
    ) -> (usize, f64) {
        let n = x.len();
        let mut vectors: [Vec<f64>; 6] = std::array::from_fn(|_| ws.double(n));
        vectors[0].copy_from_slice(r);
        let mut scratch = Scratch::new(h, ws);
        let result =
            self.bicgstab_iterations(h, cycle, x, tolerance, r, &mut vectors, &mut scratch);
        scratch.recycle(ws);
        for v in vectors {
            ws.give_double(v);
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn bicgstab_iterations(
        &self,
        h: &Hierarchy,
        cycle: &Cycle,
        x: &mut [f64],
        tolerance: f64,
        r: &mut [f64],
        [r_hat, v, p, y, z, t]: &mut [Vec<f64>; 6],
        scratch: &mut Scratch,
    ) -> (usize, f64) {
        let fine = h.fine_operator();
        let n = x.len();
        let mut worst = f64::INFINITY;
        let (mut rho, mut alpha, mut omega) = (1.0, 1.0, 1.0);
        for iteration in 1..=self.max_iterations {
            let rho_new = dot(r_hat, r);
            if rho_new == 0.0 || !rho_new.is_finite() || omega == 0.0 {
                return (iteration, fine.residual(x, r));
            }
            let beta = (rho_new / rho) * (alpha / omega);
            rho = rho_new;
            for i in 0..n {
                p[i] = r[i] + beta * (p[i] - omega * v[i]);
            }
            h.precondition(cycle, p, y, scratch);
            fine.apply(y, v);
            // Breakdown (r̂ ⟂ v, as when the residual has fallen to rounding with nothing
            // left to reduce): stop with the iterate as it is rather than divide by zero.
            alpha = rho / dot(r_hat, v);
            if !alpha.is_finite() {
                return (iteration, fine.residual(x, r));
            }
            axpy(alpha, y, x);
            worst = axpy_max(-alpha, v, r);
            if worst <= tolerance {
                worst = fine.residual(x, r);
                if worst <= tolerance {
                    return (iteration, worst);
                }
            }
            h.precondition(cycle, r, z, scratch);
            fine.apply(z, t);
            let tt = dot(t, t);
            omega = if tt > 0.0 { dot(t, r) / tt } else { 0.0 };
            if !omega.is_finite() {
                return (iteration, fine.residual(x, r));
            }
            axpy(omega, z, x);
            worst = axpy_max(-omega, t, r);
            if worst <= tolerance {
                worst = fine.residual(x, r);
                if worst <= tolerance {
                    return (iteration, worst);
                }
            }
        }
        (self.max_iterations, worst)
    }
}

/// The V-cycle's settings for one solve.
struct Cycle<'a> {
    settings: &'a MultigridSolver,
    coarse_scale: f32,
}

/// Damping of the Jacobi smoother: 4/5 is the classical smoothing optimum for the 5-point
/// Laplacian.
const JACOBI_DAMPING: f32 = 0.8;

/// How a level stores its operator.
#[derive(Debug, Clone)]
enum Operator {
    /// The fine level: every active row is `x_i − Σ_k w_k x_k` with the bias's constant weights
    /// (stored negated), because couplings to fixed cells vanish on their own (those cells hold
    /// 0 in every unknown vector). Its sweeps stream three arrays instead of eight.
    Uniform([f32; 4]),
    /// Coarse levels: rows `diag_i·(x_i + Σ_k c_k[i]·x_k)`, coefficients already divided by the
    /// diagonal so an update needs no division. Inactive rows are all zero.
    Variable {
        diag: Vec<f32>,
        inv_diag: Vec<f32>,
        /// Scaled coefficients towards east, west, north and south.
        c: [Vec<f32>; 4],
    },
}

/// One level of the preconditioner: a 5-point operator on a `width × height` grid whose outer
/// ring is inactive (so neighbour indices never leave the arrays). Unknown vectors are kept at
/// zero on inactive cells. Levels are single precision: the preconditioner only has to be
/// close to the inverse, the Krylov iteration around it runs in f64 and sets the accuracy, and
/// half-width numbers halve the memory traffic and double the SIMD lanes.
#[derive(Debug, Clone)]
struct Level {
    width: usize,
    height: usize,
    /// 1 on active (free) cells, 0 elsewhere.
    mask: Vec<f32>,
    op: Operator,
}

impl Level {
    fn len(&self) -> usize {
        self.width * self.height
    }

    /// Row `i` as (diagonal, scaled coefficients E, W, N, S); zero for inactive rows. For the
    /// slow paths (coarsening, the coarsest solve).
    #[inline]
    fn row(&self, i: usize) -> (f32, [f32; 4]) {
        let w = self.width;
        match &self.op {
            Operator::Uniform(u) => {
                let m = self.mask[i];
                (
                    m,
                    [
                        m * u[0] * self.mask[i + 1],
                        m * u[1] * self.mask[i - 1],
                        m * u[2] * self.mask[i + w],
                        m * u[3] * self.mask[i - w],
                    ],
                )
            }
            Operator::Variable { diag, c, .. } => (diag[i], [c[0][i], c[1][i], c[2][i], c[3][i]]),
        }
    }

    /// `f(i, (A x)_i)` over the interior cells of row `y`.
    #[inline(always)]
    fn for_each_in_row(&self, x: &[f32], y: usize, mut f: impl FnMut(usize, f32)) {
        let w = self.width;
        let r = y * w;
        let (south, centre, north) = (&x[r - w..r], &x[r..r + w], &x[r + w..r + 2 * w]);
        let m = &self.mask[r..r + w];
        match &self.op {
            Operator::Uniform(u) => {
                for i in 1..w - 1 {
                    let ax = centre[i]
                        + u[0] * centre[i + 1]
                        + u[1] * centre[i - 1]
                        + u[2] * north[i]
                        + u[3] * south[i];
                    f(i, m[i] * ax);
                }
            }
            Operator::Variable { diag, c, .. } => {
                let (d, ce, cw, cn, cs) = (
                    &diag[r..r + w],
                    &c[0][r..r + w],
                    &c[1][r..r + w],
                    &c[2][r..r + w],
                    &c[3][r..r + w],
                );
                for i in 1..w - 1 {
                    let ax = centre[i]
                        + ce[i] * centre[i + 1]
                        + cw[i] * centre[i - 1]
                        + cn[i] * north[i]
                        + cs[i] * south[i];
                    f(i, d[i] * ax);
                }
            }
        }
    }

    /// One damped-Jacobi sweep from `x` into `out`: x ← x + ω (b / diag − x − Σ_k c_k x_k).
    /// Branchless (inactive cells stay 0), so it vectorises.
    fn jacobi_into(&self, x: &[f32], b: &[f32], out: &mut [f32], omega: f32) {
        let w = self.width;
        for y in 1..self.height - 1 {
            let r = y * w;
            let (south, centre, north) = (&x[r - w..r], &x[r..r + w], &x[r + w..r + 2 * w]);
            let bb = &b[r..r + w];
            let o = &mut out[r..r + w];
            match &self.op {
                Operator::Uniform(u) => {
                    let m = &self.mask[r..r + w];
                    for i in 1..w - 1 {
                        let ax = centre[i]
                            + u[0] * centre[i + 1]
                            + u[1] * centre[i - 1]
                            + u[2] * north[i]
                            + u[3] * south[i];
                        o[i] = m[i] * (centre[i] + omega * (bb[i] - ax));
                    }
                }
                Operator::Variable { inv_diag, c, .. } => {
                    let (inv, ce, cw, cn, cs) = (
                        &inv_diag[r..r + w],
                        &c[0][r..r + w],
                        &c[1][r..r + w],
                        &c[2][r..r + w],
                        &c[3][r..r + w],
                    );
                    for i in 1..w - 1 {
                        let ax = centre[i]
                            + ce[i] * centre[i + 1]
                            + cw[i] * centre[i - 1]
                            + cn[i] * north[i]
                            + cs[i] * south[i];
                        o[i] = centre[i] + omega * (bb[i] * inv[i] - ax);
                    }
                }
            }
        }
    }

    /// `sweeps` damped-Jacobi sweeps on `x`, ping-ponging through `tmp`.
    fn smooth(&self, x: &mut [f32], b: &[f32], tmp: &mut [f32], sweeps: usize) {
        for _ in 0..sweeps / 2 {
            self.jacobi_into(x, b, tmp, JACOBI_DAMPING);
            self.jacobi_into(tmp, b, x, JACOBI_DAMPING);
        }
        if sweeps % 2 == 1 {
            self.jacobi_into(x, b, tmp, JACOBI_DAMPING);
            x.copy_from_slice(tmp);
        }
    }

    /// Symmetric Gauss–Seidel (forward then backward), for the coarsest level.
    fn symmetric_gauss_seidel(&self, x: &mut [f32], b: &[f32]) {
        let w = self.width;
        let update = |x: &mut [f32], i: usize| {
            let (d, c) = self.row(i);
            if d != 0.0 {
                x[i] = b[i] / d
                    - (c[0] * x[i + 1] + c[1] * x[i - 1] + c[2] * x[i + w] + c[3] * x[i - w]);
            }
        };
        for y in 1..self.height - 1 {
            for i in y * w + 1..y * w + w - 1 {
                update(x, i);
            }
        }
        for y in (1..self.height - 1).rev() {
            for i in (y * w + 1..y * w + w - 1).rev() {
                update(x, i);
            }
        }
    }

    /// Returns the level's arrays to `ws`.
    fn recycle(self, ws: &mut MultigridWorkspace) {
        ws.give_single(self.mask);
        if let Operator::Variable { diag, inv_diag, c } = self.op {
            ws.give_single(diag);
            ws.give_single(inv_diag);
            c.into_iter().for_each(|v| ws.give_single(v));
        }
    }

    fn unknowns(&self) -> usize {
        self.mask.iter().filter(|m| **m != 0.0).count()
    }

    /// Width and height of the coarse level: fine interior cell (x, y) belongs to coarse cell
    /// (⌈x/2⌉, ⌈y/2⌉).
    fn coarse_size(&self) -> (usize, usize) {
        ((self.width - 1) / 2 + 2, (self.height - 1) / 2 + 2)
    }

    /// The Galerkin coarse level of 2×2 aggregates, coarse cell by coarse cell (coefficients
    /// accumulated in f64). Children a (odd column, odd row), b east of a, c north of a and d
    /// north-east: couplings between siblings fold into the diagonal, the others become the
    /// coarse cell's couplings.
    fn coarsen(&self, ws: &mut MultigridWorkspace) -> Level {
        let w = self.width;
        match &self.op {
            Operator::Uniform(u) => {
                let m = &self.mask;
                self.coarsen_rows(ws, |i| {
                    (
                        1.0,
                        [
                            u[0] * m[i + 1],
                            u[1] * m[i - 1],
                            u[2] * m[i + w],
                            u[3] * m[i - w],
                        ],
                    )
                })
            }
            Operator::Variable { diag, c, .. } => {
                self.coarsen_rows(ws, |i| (diag[i], [c[0][i], c[1][i], c[2][i], c[3][i]]))
            }
        }
    }

    /// [`Self::coarsen`] with the row of an active cell given by `row`, so each operator kind
    /// gets its own inlined loop.
    #[inline(always)]
    fn coarsen_rows(
        &self,
        ws: &mut MultigridWorkspace,
        row: impl Fn(usize) -> (f32, [f32; 4]),
    ) -> Level {
        let (cw, ch) = self.coarse_size();
        let n = cw * ch;
        let mut mask = ws.single(n);
        let mut diag = ws.single(n);
        let mut inv_diag = ws.single(n);
        let mut c: [Vec<f32>; 4] = std::array::from_fn(|_| ws.single(n));
        let w = self.width;
        // Unscaled row of a child: diagonal and couplings E, W, N, S (zero when inactive or
        // outside the interior).
        let child = |x: usize, y: usize| -> (f64, [f64; 4]) {
            if x >= w - 1 || y >= self.height - 1 {
                return (0.0, [0.0; 4]);
            }
            let i = y * w + x;
            if self.mask[i] == 0.0 {
                return (0.0, [0.0; 4]);
            }
            let (d, k) = row(i);
            let d = f64::from(d);
            (d, k.map(|v| d * f64::from(v)))
        };
        for cy in 1..ch - 1 {
            for cx in 1..cw - 1 {
                let (x, y) = (2 * cx - 1, 2 * cy - 1);
                let (da, a) = child(x, y);
                let (db, b) = child(x + 1, y);
                let (dc, cc) = child(x, y + 1);
                let (dd, d) = child(x + 1, y + 1);
                let sum = da + db + dc + dd;
                if sum == 0.0 {
                    continue;
                }
                let dg = sum + a[0] + a[2] + b[1] + b[2] + cc[0] + cc[3] + d[1] + d[3];
                let ci = cy * cw + cx;
                let inv = 1.0 / dg;
                mask[ci] = 1.0;
                diag[ci] = dg as f32;
                inv_diag[ci] = inv as f32;
                c[0][ci] = ((b[0] + d[0]) * inv) as f32;
                c[1][ci] = ((a[1] + cc[1]) * inv) as f32;
                c[2][ci] = ((cc[2] + d[2]) * inv) as f32;
                c[3][ci] = ((a[3] + b[3]) * inv) as f32;
            }
        }
        Level {
            width: cw,
            height: ch,
            mask,
            op: Operator::Variable { diag, inv_diag, c },
        }
    }

    /// out = b − A x.
    fn residual(&self, x: &[f32], b: &[f32], out: &mut [f32]) {
        let w = self.width;
        for y in 1..self.height - 1 {
            let (bb, o) = (&b[y * w..y * w + w], &mut out[y * w..y * w + w]);
            self.for_each_in_row(x, y, |i, ax| o[i] = bb[i] - ax);
        }
    }

    /// coarse_b = Rᵀ (b − A x): each coarse cell sums the residuals of its 2×2 children.
    /// `rows` is scratch for two fine rows.
    fn residual_restrict(
        &self,
        x: &[f32],
        b: &[f32],
        coarse: &Level,
        coarse_b: &mut [f32],
        rows: &mut [f32],
    ) {
        let (w, cw) = (self.width, coarse.width);
        let (lower, upper) = rows.split_at_mut(w);
        for cy in 1..coarse.height - 1 {
            for (y, row) in [(2 * cy - 1, &mut *lower), (2 * cy, &mut *upper)] {
                row.iter_mut().for_each(|v| *v = 0.0);
                if y < self.height - 1 {
                    let bb = &b[y * w..y * w + w];
                    self.for_each_in_row(x, y, |i, ax| row[i] = bb[i] - ax);
                }
            }
            // Coarse column c sums fine columns 2c − 1 and 2c.
            let out = &mut coarse_b[cy * cw + 1..cy * cw + cw - 1];
            let pairs = 2 * out.len();
            for ((o, lo), up) in out
                .iter_mut()
                .zip(lower[1..1 + pairs].chunks_exact(2))
                .zip(upper[1..1 + pairs].chunks_exact(2))
            {
                *o = lo[0] + lo[1] + up[0] + up[1];
            }
        }
    }

    /// x += scale · P coarse_x: every active fine cell adds its parent's value.
    fn prolong_add(&self, coarse_x: &[f32], coarse: &Level, scale: f32, x: &mut [f32]) {
        let (w, cw) = (self.width, coarse.width);
        for y in 1..self.height - 1 {
            let cy = y.div_ceil(2);
            let parent = &coarse_x[cy * cw..cy * cw + cw];
            // Fine columns 2c − 1 and 2c share coarse column c; a last column past the
            // interior is the border, whose mask is 0.
            let pairs = cw - 2;
            let row = &mut x[y * w + 1..y * w + 1 + 2 * pairs];
            let m = &self.mask[y * w + 1..y * w + 1 + 2 * pairs];
            for ((xs, ms), p) in row
                .chunks_exact_mut(2)
                .zip(m.chunks_exact(2))
                .zip(&parent[1..cw - 1])
            {
                let v = scale * p;
                xs[0] += v * ms[0];
                xs[1] += v * ms[1];
            }
        }
    }
}

#[derive(Debug)]
struct Hierarchy {
    levels: Vec<Level>,
    /// Negated stencil weights (E, W, N, S) of the fine level in double precision.
    weights: [f64; 4],
}

/// Per-level work vectors of the V-cycle, and the single-precision copies of the fine-level
/// input and output.
struct Scratch {
    b: Vec<Vec<f32>>,
    x: Vec<Vec<f32>>,
    tmp: Vec<Vec<f32>>,
    r: Vec<Vec<f32>>,
    d: Vec<Vec<f32>>,
    rows: Vec<f32>,
}

impl Scratch {
    fn new(h: &Hierarchy, ws: &mut MultigridWorkspace) -> Self {
        let sizes: Vec<usize> = h.levels.iter().map(Level::len).collect();
        // Only coarse levels take W-cycle defect corrections.
        let coarse = |l: usize, n: usize| if l > 0 { n } else { 0 };
        Self {
            b: sizes.iter().map(|n| ws.single(*n)).collect(),
            x: sizes.iter().map(|n| ws.single(*n)).collect(),
            tmp: sizes.iter().map(|n| ws.single(*n)).collect(),
            r: sizes
                .iter()
                .enumerate()
                .map(|(l, n)| ws.single(coarse(l, *n)))
                .collect(),
            d: sizes
                .iter()
                .enumerate()
                .map(|(l, n)| ws.single(coarse(l, *n)))
                .collect(),
            rows: ws.single(2 * h.levels[0].width),
        }
    }

    fn recycle(self, ws: &mut MultigridWorkspace) {
        for set in [self.b, self.x, self.tmp, self.r, self.d] {
            set.into_iter().for_each(|v| ws.give_single(v));
        }
        ws.give_single(self.rows);
    }
}

impl Hierarchy {
    fn build(
        field: &Field<f64>,
        bias: &Bias,
        coarsest: usize,
        ws: &mut MultigridWorkspace,
    ) -> Self {
        let (w, h) = (field.width(), field.height());
        let weights = bias.weights();
        let negated = [weights.east, weights.west, weights.north, weights.south].map(|w| -w);
        let fine = Level {
            width: w,
            height: h,
            mask: {
                let mut mask = ws.single(w * h);
                for (m, k) in mask.iter_mut().zip(field.kinds()) {
                    *m = if *k == CellKind::Free { 1.0 } else { 0.0 };
                }
                mask
            },
            op: Operator::Uniform(negated.map(|w| w as f32)),
        };
        let mut levels = vec![fine];
        loop {
            let last = levels.last().expect("the fine level is always present");
            if last.unknowns() <= coarsest || last.width <= 4 || last.height <= 4 {
                break;
            }
            let next = last.coarsen(ws);
            levels.push(next);
        }
        Self {
            levels,
            weights: negated,
        }
    }

    fn recycle(self, ws: &mut MultigridWorkspace) {
        self.levels.into_iter().for_each(|l| l.recycle(ws));
    }

    fn fine_operator(&self) -> FineOperator<'_> {
        let fine = &self.levels[0];
        FineOperator {
            width: fine.width,
            height: fine.height,
            mask: &fine.mask,
            u: self.weights,
        }
    }

    /// out ≈ A⁻¹ r on the fine level: rounds r to single precision, runs one V-cycle, widens
    /// the result. Returns (r·out before, r·out after), which the flexible CG step needs.
    fn precondition(
        &self,
        cycle: &Cycle,
        r: &[f64],
        out: &mut [f64],
        s: &mut Scratch,
    ) -> (f64, f64) {
        let mut b = std::mem::take(&mut s.b[0]);
        let mut x = std::mem::take(&mut s.x[0]);
        b.iter_mut().zip(r).for_each(|(b, r)| *b = *r as f32);
        self.v_cycle(cycle, 0, &b, &mut x, s);
        let (mut before, mut after) = ([0.0; LANES], [0.0; LANES]);
        let n = out.len() - out.len() % LANES;
        for ((o, x), r) in out[..n]
            .chunks_exact_mut(LANES)
            .zip(x[..n].chunks_exact(LANES))
            .zip(r[..n].chunks_exact(LANES))
        {
            for k in 0..LANES {
                let new = f64::from(x[k]);
                before[k] += r[k] * o[k];
                after[k] += r[k] * new;
                o[k] = new;
            }
        }
        for i in n..out.len() {
            let new = f64::from(x[i]);
            before[0] += r[i] * out[i];
            after[0] += r[i] * new;
            out[i] = new;
        }
        s.b[0] = b;
        s.x[0] = x;
        (before.iter().sum(), after.iter().sum())
    }

    /// out ≈ A⁻¹ b on `level`, from a zero guess. A fixed linear operator (up to rounding),
    /// symmetric when A is.
    fn v_cycle(&self, cycle: &Cycle, level: usize, b: &[f32], out: &mut [f32], s: &mut Scratch) {
        let settings = cycle.settings;
        let lv = &self.levels[level];
        out.iter_mut().for_each(|v| *v = 0.0);
        if level + 1 == self.levels.len() {
            for _ in 0..8 {
                lv.symmetric_gauss_seidel(out, b);
            }
            return;
        }
        let mut tmp = std::mem::take(&mut s.tmp[level]);
        lv.smooth(out, b, &mut tmp, settings.pre_smooth);
        let coarse = &self.levels[level + 1];
        let mut cb = std::mem::take(&mut s.b[level + 1]);
        let mut cx = std::mem::take(&mut s.x[level + 1]);
        lv.residual_restrict(out, b, coarse, &mut cb, &mut s.rows);
        self.v_cycle(cycle, level + 1, &cb, &mut cx, s);
        if settings.cycle_index > 1 && level + 2 < self.levels.len() {
            // W-cycle: more defect-correction passes on the coarse level.
            let mut cr = std::mem::take(&mut s.r[level + 1]);
            let mut cd = std::mem::take(&mut s.d[level + 1]);
            for _ in 1..settings.cycle_index {
                coarse.residual(&cx, &cb, &mut cr);
                self.v_cycle(cycle, level + 1, &cr, &mut cd, s);
                cx.iter_mut().zip(&cd).for_each(|(x, d)| *x += d);
            }
            s.r[level + 1] = cr;
            s.d[level + 1] = cd;
        }
        lv.prolong_add(&cx, coarse, cycle.coarse_scale, out);
        lv.smooth(out, b, &mut tmp, settings.post_smooth);
        s.tmp[level] = tmp;
        s.b[level + 1] = cb;
        s.x[level + 1] = cx;
    }
}

/// The fine operator in double precision for the outer iteration: rows `x_i − Σ_k w_k x_k` on
/// free cells (fixed neighbours hold 0 and drop out).
struct FineOperator<'a> {
    width: usize,
    height: usize,
    mask: &'a [f32],
    /// Negated weights E, W, N, S.
    u: [f64; 4],
}

impl FineOperator<'_> {
    /// Writes (A x)_i for the interior cells of row `y` into `out[y·w + i]`.
    #[inline(always)]
    fn apply_row(&self, x: &[f64], y: usize, out: &mut [f64]) {
        let w = self.width;
        let u = self.u;
        let r = y * w;
        let (south, centre, north) = (&x[r - w..r], &x[r..r + w], &x[r + w..r + 2 * w]);
        let m = &self.mask[r..r + w];
        let o = &mut out[r..r + w];
        for i in 1..w - 1 {
            let ax = centre[i]
                + u[0] * centre[i + 1]
                + u[1] * centre[i - 1]
                + u[2] * north[i]
                + u[3] * south[i];
            o[i] = f64::from(m[i]) * ax;
        }
    }

    /// out = A x; returns x·out (summed row by row while the row is in cache).
    fn apply_dot(&self, x: &[f64], out: &mut [f64]) -> f64 {
        let w = self.width;
        let mut total = 0.0;
        for y in 1..self.height - 1 {
            self.apply_row(x, y, out);
            total += dot(&x[y * w..y * w + w], &out[y * w..y * w + w]);
        }
        total
    }

    /// out = A x.
    fn apply(&self, x: &[f64], out: &mut [f64]) {
        for y in 1..self.height - 1 {
            self.apply_row(x, y, out);
        }
    }

    /// out = −A x on the free cells, where x holds the potentials of every cell (fixed ones
    /// with their values): the Jacobi change `Σ_k w_k x_k − x_i` of each free cell, which is
    /// the residual of the free unknowns. Returns its largest magnitude.
    fn residual(&self, x: &[f64], out: &mut [f64]) -> f64 {
        let w = self.width;
        let mut worst = 0.0f64;
        for y in 1..self.height - 1 {
            self.apply_row(x, y, out);
            let row = &mut out[y * w..y * w + w];
            row.iter_mut().for_each(|v| *v = -*v);
            worst = worst.max(max_abs(row));
        }
        worst
    }
}

/// Lanes of the reductions below: independent partial sums let the compiler vectorise and
/// hide the add latency, and a fixed lane count keeps the summation order (and so the result)
/// the same on every machine.
const LANES: usize = 8;

fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..LANES {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f64>() + tail
}

fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// x += αp and r −= αq in one pass; returns max |r|.
fn cg_step(alpha: f64, p: &[f64], q: &[f64], x: &mut [f64], r: &mut [f64]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let mut tail = 0.0f64;
    let n = x.len() - x.len() % LANES;
    for (((xs, rs), ps), qs) in x[..n]
        .chunks_exact_mut(LANES)
        .zip(r[..n].chunks_exact_mut(LANES))
        .zip(p[..n].chunks_exact(LANES))
        .zip(q[..n].chunks_exact(LANES))
    {
        for k in 0..LANES {
            xs[k] += alpha * ps[k];
            rs[k] -= alpha * qs[k];
            let a = rs[k].abs();
            acc[k] = if a > acc[k] { a } else { acc[k] };
        }
    }
    for i in n..x.len() {
        x[i] += alpha * p[i];
        r[i] -= alpha * q[i];
        tail = tail.max(r[i].abs());
    }
    acc.iter().fold(tail, |m, v| m.max(*v))
}

/// y += alpha·x; returns max |y|.
fn axpy_max(alpha: f64, x: &[f64], y: &mut [f64]) -> f64 {
    axpy(alpha, x, y);
    max_abs(y)
}

fn max_abs(v: &[f64]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let chunks = v.chunks_exact(LANES);
    let tail = chunks
        .remainder()
        .iter()
        .fold(0.0f64, |m, x| m.max(x.abs()));
    for c in chunks {
        for k in 0..LANES {
            let a = c[k].abs();
            acc[k] = if a > acc[k] { a } else { acc[k] };
        }
    }
    acc.iter().fold(tail, |m, x| m.max(*x))
}

#[cfg(test)]
mod tests {
    use glam::DVec2;

    use super::*;
    use crate::grid::GridGeometry;
    use crate::relax::{Relaxation, Tolerance, relax_until};

    fn maze(n: usize, seed: u64) -> Field<f64> {
        let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, n, n).unwrap(), 1.0);
        let mut s = seed;
        for y in 1..n - 1 {
            for x in 1..n - 1 {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if (s >> 40) % 100 < 25 {
                    f.set_obstacle(x, y).unwrap();
                }
            }
        }
        f.set_goal(n / 2, n / 2).unwrap();
        f.set_goal(2, 3).unwrap();
        f
    }

    fn assert_matches_gauss_seidel(field: Field<f64>, bias: Bias) {
        let mut mg = field.clone();
        let report = MultigridSolver::new().solve(&mut mg, &bias, 1e-11).unwrap();
        assert!(report.converged, "{report:?}");
        let mut gs = field;
        let sor = Relaxation::GAUSS_SEIDEL;
        let relaxed = relax_until(&mut gs, &bias, &sor, &Tolerance::new(1e-13, 1_000_000)).unwrap();
        assert!(relaxed.converged);
        let diff = mg
            .potentials()
            .iter()
            .zip(gs.potentials())
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(diff < 1e-8, "max difference {diff}");
    }

    #[test]
    fn harmonic_solution_matches_relaxation_on_a_maze() {
        assert_matches_gauss_seidel(maze(41, 7), Bias::HARMONIC);
    }

    #[test]
    fn biased_solution_matches_relaxation_on_a_maze() {
        assert_matches_gauss_seidel(maze(37, 3), Bias::new(1.2, DVec2::new(0.6, -0.8)).unwrap());
    }

    #[test]
    fn iterations_stay_nearly_flat_as_the_grid_grows() {
        let mut counts = Vec::new();
        for n in [33, 65, 129, 257] {
            let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, n, n).unwrap(), 1.0);
            f.set_goal(n - 2, n / 2).unwrap();
            let r = MultigridSolver::new()
                .solve(&mut f, &Bias::HARMONIC, 1e-6)
                .unwrap();
            assert!(r.converged);
            counts.push(r.iterations);
        }
        // Gauss–Seidel needs ~4× the sweeps per doubling; multigrid-CG should grow slowly.
        assert!(counts[3] <= 2 * counts[0] + 6, "{counts:?}");
    }

    #[test]
    fn a_kept_workspace_gives_the_same_bits_as_a_fresh_one() {
        let solver = MultigridSolver::new();
        let mut workspace = MultigridWorkspace::new();
        // Different sizes in turn, so recycled vectors of other lengths are reused.
        for (n, seed) in [(41, 1), (23, 2), (41, 3), (57, 4)] {
            for bias in [
                Bias::HARMONIC,
                Bias::new(0.9, DVec2::new(0.0, 1.0)).unwrap(),
            ] {
                let mut fresh = maze(n, seed);
                let mut kept = fresh.clone();
                let a = solver.solve(&mut fresh, &bias, 1e-10).unwrap();
                let b = solver
                    .solve_with(&mut workspace, &mut kept, &bias, 1e-10)
                    .unwrap();
                assert_eq!(a, b);
                assert_eq!(fresh.potentials(), kept.potentials());
            }
        }
    }

    /// Found by the field fuzz target: with a tolerance of zero (or NaN, or negative) BiCGStab
    /// went on past the point where its residual had nothing left to reduce, divided by zero
    /// and filled the map with NaN, reported as converged at residual 0. It now stops at the
    /// breakdown with the last iterate; a NaN tolerance is refused.
    #[test]
    fn a_zero_tolerance_stops_at_the_breakdown_with_finite_values() {
        let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, 33, 32).unwrap(), 1.0);
        f.set_goal(20, 16).unwrap();
        f.set_fixed(1, 3, 0.4).unwrap();
        for bias in [
            Bias::HARMONIC,
            Bias::new(-0.59, DVec2::new(-0.666, 0.746)).unwrap(),
        ] {
            for tolerance in [0.0, -1.0] {
                let mut g = f.clone();
                let report = MultigridSolver::new()
                    .solve(&mut g, &bias, tolerance)
                    .unwrap();
                assert!(
                    g.potentials()
                        .iter()
                        .all(|p| p.is_finite() && (0.0..=1.0 + 1e-9).contains(p)),
                    "{bias:?} {tolerance}: {report:?}"
                );
                assert!(report.residual < 1e-12, "{report:?}");
            }
        }
        assert!(matches!(
            MultigridSolver::new().solve(&mut f, &Bias::HARMONIC, f64::NAN),
            Err(FieldError::NonFinite { .. })
        ));
    }

    #[test]
    fn a_field_without_goal_is_rejected() {
        let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, 9, 9).unwrap(), 1.0);
        assert_eq!(
            MultigridSolver::new().solve(&mut f, &Bias::HARMONIC, 1e-6),
            Err(FieldError::NoGoal)
        );
    }
}
