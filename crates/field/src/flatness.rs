//! Flat regions and their recovery with a stack of sub-goals (seed 000 §3.2.2 and §4.2,
//! digest 000 §2.9).
//!
//! Behind a long narrow passage a harmonic potential approaches 1 exponentially (in a one-cell
//! corridor 1 − p shrinks by 2 − √3 ≈ 0.27 per cell), so far enough away it rounds to exactly 1
//! even in `f64` and the gradient vanishes. The seed's remedy:
//!
//! 1. **Detect**: the descent at the agent is flat, ‖∇p‖ < [`FLATNESS_THRESHOLD`] = 1e-8.
//! 2. **Sub-goal**: make the cells at potential [`SUBGOAL_LEVEL`] = 1 − 1e-5 goals of a new
//!    field and relax it. We read "cells at p_min" as the iso-contour: free cells with
//!    p ≤ p_min that have a free 4-neighbour with p > p_min, i.e. the edge of the region where
//!    the field still has a usable gradient. The seed relaxes 100 iterations; we solve the
//!    sub-goal field to convergence with the multigrid solver, which costs about as much.
//! 3. **Stack**: if the sub-goal field is itself flat at the agent, repeat on it. The agent
//!    follows the top field; a sub-goal is popped once the agent stands where the field below it
//!    is no longer flat (p ≤ p_min there), which hands over smoothly.
//!
//! The stack belongs to one agent and one base field; [`SubgoalStack::clear`] it when the base
//! field changes.

use glam::DVec2;

use crate::FieldError;
use crate::bias::Bias;
use crate::field::{CellKind, Field};
use crate::multigrid::MultigridSolver;

/// ‖∇p‖ below which a field counts as flat at a point (seed 000 §4.2).
pub const FLATNESS_THRESHOLD: f64 = 1e-8;

/// Potential of the iso-contour that becomes a sub-goal, p_min = 1 − 1e-5 (seed 000 §4.2).
pub const SUBGOAL_LEVEL: f64 = 1.0 - 1e-5;

/// Residual to which sub-goal fields are solved.
const SUBGOAL_TOLERANCE: f64 = 1e-13;

/// One sub-goal: its field and the cells fixed at 0 in it.
#[derive(Debug, Clone)]
struct Layer {
    field: Field<f64>,
    goals: usize,
}

/// A stack of sub-goal fields over one base field, for one agent.
#[derive(Debug, Clone)]
pub struct SubgoalStack {
    layers: Vec<Layer>,
    max_depth: usize,
    solver: MultigridSolver,
}

impl Default for SubgoalStack {
    fn default() -> Self {
        Self::new()
    }
}

impl SubgoalStack {
    /// An empty stack that holds at most 64 sub-goals.
    pub fn new() -> Self {
        Self {
            layers: Vec::new(),
            max_depth: 64,
            solver: MultigridSolver::new(),
        }
    }

    /// Sub-goals currently stacked.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether the agent follows the base field directly.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The sub-goal fields from the bottom of the stack to the top; the goal cells of each are
    /// its iso-contour of the field below.
    pub fn layers(&self) -> impl ExactSizeIterator<Item = &Field<f64>> {
        self.layers.iter().map(|l| &l.field)
    }

    /// Drops every sub-goal (call when the base field changes).
    pub fn clear(&mut self) {
        self.layers.clear();
    }

    /// The field the agent should follow now: the top sub-goal field, or `base`.
    pub fn active_field<'a>(&'a self, base: &'a Field<f64>) -> &'a Field<f64> {
        self.layers.last().map_or(base, |l| &l.field)
    }

    /// The descent direction for an agent at `position` on `base`, popping sub-goals the agent
    /// has reached and pushing new ones while the followed field is flat there.
    ///
    /// Returns a zero vector when no field with a usable gradient can be built (the agent's
    /// region has no route to any goal, or the stack is full).
    pub fn descent(&mut self, base: &Field<f64>, position: DVec2) -> Result<DVec2, FieldError> {
        if base.geometry()
            != self
                .layers
                .first()
                .map_or(base.geometry(), |l| l.field.geometry())
        {
            return Err(FieldError::GeometryMismatch);
        }
        // Pop every sub-goal whose parent field is no longer flat here.
        while let Some(n) = self.layers.len().checked_sub(1) {
            let parent = if n == 0 {
                base
            } else {
                &self.layers[n - 1].field
            };
            let reached = parent
                .potential_at(position)
                .is_some_and(|p| p <= SUBGOAL_LEVEL);
            if reached {
                self.layers.pop();
            } else {
                break;
            }
        }
        loop {
            let field = self.active_field(base);
            let d = field.descent_at(position);
            if d.length() >= FLATNESS_THRESHOLD {
                return Ok(d);
            }
            if self.layers.len() >= self.max_depth {
                return Ok(DVec2::ZERO);
            }
            let Some(layer) = self.build_layer(field, position)? else {
                return Ok(DVec2::ZERO);
            };
            self.layers.push(layer);
        }
    }

    /// A field whose goals are the SUBGOAL_LEVEL iso-contour of `parent`, restricted to the
    /// contour cells 4-connected to the agent's cell through free cells. `None` when there are
    /// none (the agent's region has no route out).
    fn build_layer(
        &self,
        parent: &Field<f64>,
        position: DVec2,
    ) -> Result<Option<Layer>, FieldError> {
        let (w, h) = (parent.width(), parent.height());
        let p = parent.potentials();
        let kinds = parent.kinds();
        let region = free_region(parent, position);
        let mut field = parent.clone();
        field.clear_goals(1.0);
        field.reset_free(1.0);
        let mut goals = 0;
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                let i = y * w + x;
                if !region[i] || p[i] > SUBGOAL_LEVEL {
                    continue;
                }
                let edge = [i + 1, i - 1, i + w, i - w]
                    .iter()
                    .any(|&j| kinds[j] == CellKind::Free && p[j] > SUBGOAL_LEVEL);
                if edge {
                    field.set_goal(x, y)?;
                    goals += 1;
                }
            }
        }
        if goals == 0 {
            return Ok(None);
        }
        self.solver
            .solve(&mut field, &Bias::HARMONIC, SUBGOAL_TOLERANCE)?;
        Ok(Some(Layer { field, goals }))
    }

    /// Number of goal cells of each stacked sub-goal, bottom first (for overlays and tests).
    pub fn goal_counts(&self) -> Vec<usize> {
        self.layers.iter().map(|l| l.goals).collect()
    }
}

/// Free cells 4-connected to the cell containing `position`.
fn free_region(field: &Field<f64>, position: DVec2) -> Vec<bool> {
    let (w, h) = (field.width(), field.height());
    let kinds = field.kinds();
    let mut seen = vec![false; w * h];
    let start = field.geometry().world_to_cell(position);
    if !field.geometry().contains_cell(start) {
        return seen;
    }
    let mut stack = vec![start.y as usize * w + start.x as usize];
    while let Some(i) = stack.pop() {
        if seen[i] || kinds[i] != CellKind::Free {
            continue;
        }
        seen[i] = true;
        // Free cells are never on the border ring, so all four neighbours exist.
        stack.extend([i + 1, i - 1, i + w, i - w]);
    }
    seen
}
