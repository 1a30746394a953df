//! # crowdfield_field
//!
//! The potential-field core of crowdfield: grids, the biased boundary value problem of the
//! seeds, solvers, descent directions, flatness recovery and rasterising of shapes into cells.
//! Plain Rust over `glam`; no Bevy.
//!
//! ## The equation
//!
//! A field holds a potential p on a regular grid of square cells (spacing h = 1 in cell units).
//! Free cells satisfy
//!
//! ```text
//! ∇²p + ε v·∇p = 0
//! ```
//!
//! - **v** is the *behaviour vector* and **ε** its strength ([`Bias`]). ε = 0 gives Laplace's
//!   equation: a *harmonic* field, the smoothest route at maximal clearance from obstacles.
//! - Discretised with a 5-point Laplacian and central differences, each free cell becomes a
//!   weighted mean of its four neighbours with weights ¼ ± ε v/8 (see [`bias`] for the printed
//!   form, seed 000 Eq. 5.1 / seed 004 Eq. 3.3).
//!
//! ## Boundary conditions
//!
//! Dirichlet everywhere (seed 000 §3.2.1): **obstacles are fixed at p = 1**, **goals at p = 0**,
//! and [`CellKind::Fixed`] cells at any value in [0, 1]. The outer ring of every grid is the
//! closed border and counts as obstacle (it may hold goals, as a local map's intermediate goal
//! does). Agents move **down** the field, along −∇p ([`Field::descent_at`]).
//!
//! ## Range of ε
//!
//! The four weights are non-negative, so every update is a convex average and no interior local
//! minimum can form, exactly when `|ε|·max(|v_x|, |v_y|) ≤ 2` (digest 000 §2.6 \[DERIVED\]).
//! [`Bias::new`] returns [`FieldError::BiasOutOfRange`] beyond that; [`Bias::clamped`] scales ε
//! down instead. The seeds recommend |ε| ≤ 1.2 in practice; ε is per cell, so the same value
//! bends paths more on grids with more cells across.
//!
//! ## Sign convention
//!
//! In world space, **ε > 0 bends paths towards +v** (v "pointing at a wall" makes the agent walk
//! by that wall, as the seeds' text says). The printed update does the opposite in grid
//! coordinates, so [`Bias`] feeds −v to it; [`Bias::from_printed_kernel`] reproduces the printed
//! numbers. Grid rows grow along world +y (up). Tests lock both facts.
//!
//! ## Precision
//!
//! [`Field`] is generic over [`Potential`] (`f64` default, `f32` for small local maps whose
//! descent stays at or above 1e-5 per cell; see [`scalar`]). Use `f64` for global maps: far from
//! the goal p gets within 1e-8 of 1 and `f32` rounds it flat. [`FieldBatchF32`] sweeps `f64`
//! maps in `f32` on their complements 1 − p, which keep their relative precision where p goes
//! flat (see [`batch`]).
//!
//! ## Modules
//!
//! - [`grid`]: world ↔ cell transforms.
//! - [`field`]: cell kinds, potentials, warm start by whole-cell translation, residual, descent,
//!   local-minimum diagnostics.
//! - [`bias`]: (v, ε), validation, the stencil weights and the printed reference update.
//! - [`relax`](mod@relax): Gauss–Seidel (lexicographic, alternating, red–black), SOR and Jacobi sweeps;
//!   stopping on a residual or a sweep cap.
//! - [`batch`]: lexicographic Gauss–Seidel on up to 16 (`f64`) or 32 (`f32`, on complements)
//!   same-size maps at once, one per SIMD lane, each lane bit-identical to relaxing its map alone
//!   (agents' local maps).
//! - [`multigrid`]: an O(N) solver for large global maps.
//! - [`flatness`]: detection of flat regions (‖∇p‖ < 1e-8) and recovery with a stack of
//!   sub-goals at p = 1 − 1e-5 (seed 000 §3.2.2), their fields shared by all agents of a region.
//! - [`raster`]: discs, boxes, rotated boxes, convex polygons, thick segments and polylines,
//!   inflated by an agent radius, written into cells.
//!
//! ## Example
//!
//! ```
//! use crowdfield_field::{Bias, Field, GridGeometry, MultigridSolver};
//! use glam::DVec2;
//!
//! let grid = GridGeometry::new(DVec2::ZERO, 0.5, 64, 64)?;
//! let mut field = Field::<f64>::new(grid, 1.0);
//! field.set_goal(60, 32)?;
//! let report = MultigridSolver::new().solve(&mut field, &Bias::HARMONIC, 1e-8)?;
//! assert!(report.converged);
//! // Descent from the far side points towards the goal, mostly along +x.
//! let d = field.descent_at(grid.cell_centre(4, 32));
//! assert!(d.x > 0.0 && d.y.abs() < 0.1 * d.x);
//! # Ok::<(), crowdfield_field::FieldError>(())
//! ```

pub mod batch;
pub mod bias;
pub mod error;
pub mod field;
pub mod flatness;
pub mod grid;
pub mod multigrid;
pub mod raster;
pub mod relax;
pub mod scalar;
mod skewed;

pub use batch::{BATCH_LANES, BATCH_LANES_F32, FieldBatch, FieldBatchF32, SKEWED_MAX_MAPS};
pub use bias::{Bias, MAX_BIAS, StencilWeights};
pub use error::FieldError;
pub use field::{CellKind, Field};
pub use flatness::{
    FLATNESS_THRESHOLD, MAX_SUBGOAL_DEPTH, SUBGOAL_LEVEL, SubgoalCache, SubgoalStack,
};
pub use grid::{GridGeometry, MAX_GRID_CELLS, floor_i32, floor_i64};
pub use multigrid::{MultigridSolver, MultigridWorkspace, SolveReport};
pub use raster::{Coverage, Shape, rasterise_goal, rasterise_obstacle};
pub use relax::{RelaxReport, Relaxation, SweepOrder, Tolerance, jacobi_sweep, relax, relax_until};
pub use scalar::Potential;
