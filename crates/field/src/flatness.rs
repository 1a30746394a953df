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
//! field changes. A sub-goal field depends only on its parent field and on the connected free
//! region the agent stands in, so every agent of that region on that base field would build the
//! same one: a [`SubgoalCache`] shared by their stacks builds it once
//! ([`SubgoalStack::descent_shared`]). An agent whose own cell is not free (it stands in an
//! obstacle's margin grown on the grid, which the real shape leaves clear) takes the region of
//! the nearest free cell within two cells: otherwise a flat field there would leave it without
//! a direction for as long as it stands still.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use glam::{DVec2, IVec2};

use crate::FieldError;
use crate::bias::Bias;
use crate::field::{CellKind, Field};
use crate::grid::GridGeometry;
use crate::multigrid::MultigridSolver;

/// ‖∇p‖ below which a field counts as flat at a point (seed 000 §4.2).
pub const FLATNESS_THRESHOLD: f64 = 1e-8;

/// Potential of the iso-contour that becomes a sub-goal, p_min = 1 − 1e-5 (seed 000 §4.2).
pub const SUBGOAL_LEVEL: f64 = 1.0 - 1e-5;

/// Sub-goals a [`SubgoalStack`] holds at most by default.
///
/// Each sub-goal carries the agent about five decades of `1 − p` further (from 1 at its goals
/// to the next iso-contour at 1e-5): about 8 cells along a one-cell passage (830 cells took 103
/// sub-goals in the test `a_passage_longer_than_64_sub_goals_is_walked_to_its_end`) and 11
/// along a two-cell one (1,193 cells took 107), so 256 of them cover a passage some
/// 2,000–2,800 cells long. Every layer holds a whole field and its region labels (13 bytes a
/// cell), shared through the [`SubgoalCache`] by the agents that need it: 256 layers of a
/// 260 × 260 map take about 220 MB. Walkers in a converted Menge maze (1 m corridors, 0.25 m
/// cells) needed up to 118; the cap was 64 before, which left them without a direction.
pub const MAX_SUBGOAL_DEPTH: usize = 256;

/// Residual to which sub-goal fields are solved.
const SUBGOAL_TOLERANCE: f64 = 1e-13;

/// One sub-goal: its field and the cells fixed at 0 in it.
#[derive(Debug)]
struct Layer {
    field: Field<f64>,
    goals: usize,
    /// Region labels from the base field up to this layer: the layer's identity.
    key: Vec<u32>,
    /// Connected free regions of `field` (see [`region_labels`]), for the layer above.
    labels: Vec<u32>,
}

/// Label of cells that are not free.
const NO_REGION: u32 = u32::MAX;

/// Sub-goal fields shared by the [`SubgoalStack`]s of every agent on one base field.
///
/// Fields are keyed by the chain of free regions they were built in, so an agent asking for a
/// sub-goal another agent of its region already built gets that field (the same values it would
/// have computed) instead of solving it again. Thread-safe: stacks of agents planned in parallel
/// share it; a field is built under the cache's lock. [`SubgoalCache::clear`] it, with the
/// stacks, when the base field changes.
#[derive(Debug, Default)]
pub struct SubgoalCache {
    inner: Mutex<CacheInner>,
}

#[derive(Debug, Default)]
struct CacheInner {
    /// Connected free regions of the base field, computed at the first sub-goal.
    base_labels: Option<Arc<Vec<u32>>>,
    /// Built layers by key; `None` where the region had no iso-contour to aim at.
    layers: HashMap<Vec<u32>, Option<Arc<Layer>>>,
    solver: MultigridSolver,
}

impl Clone for SubgoalCache {
    fn clone(&self) -> Self {
        let inner = self.lock();
        Self {
            inner: Mutex::new(CacheInner {
                base_labels: inner.base_labels.clone(),
                layers: inner.layers.clone(),
                solver: inner.solver,
            }),
        }
    }
}

impl SubgoalCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every field (call when the base field changes).
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.base_labels = None;
        inner.layers.clear();
    }

    /// Sub-goal fields held.
    pub fn len(&self) -> usize {
        self.lock().layers.values().flatten().count()
    }

    /// Whether no sub-goal field is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, CacheInner> {
        // A panic while building leaves at worst a missing entry: the data stays usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The layer over `parent` (the base when `below` is `None`) for an agent at `position`:
    /// built on first request, then shared. `Ok(None)` when the agent's region has no cell at
    /// the sub-goal level.
    fn layer(
        &self,
        base: &Field<f64>,
        below: Option<&Arc<Layer>>,
        position: DVec2,
    ) -> Result<Option<Arc<Layer>>, FieldError> {
        let parent = below.map_or(base, |l| &l.field);
        let cell = parent.geometry().world_to_cell(position);
        if !parent.geometry().contains_cell(cell) {
            return Ok(None);
        }
        let mut inner = self.lock();
        let base_labels;
        let labels: &[u32] = match below {
            Some(l) => &l.labels,
            None => {
                base_labels = inner
                    .base_labels
                    .get_or_insert_with(|| Arc::new(region_labels(base)))
                    .clone();
                &base_labels
            }
        };
        let Some(region) = region_near(labels, parent.geometry(), position, cell) else {
            return Ok(None);
        };
        let mut key = below.map_or_else(Vec::new, |l| l.key.clone());
        key.push(region);
        if let Some(layer) = inner.layers.get(&key) {
            return Ok(layer.clone());
        }
        let layer = build_layer(parent, labels, region, key.clone(), &inner.solver)?.map(Arc::new);
        inner.layers.insert(key, layer.clone());
        Ok(layer)
    }
}

/// A stack of sub-goal fields over one base field, for one agent.
#[derive(Debug, Clone)]
pub struct SubgoalStack {
    layers: Vec<Arc<Layer>>,
    max_depth: usize,
}

impl Default for SubgoalStack {
    fn default() -> Self {
        Self::new()
    }
}

impl SubgoalStack {
    /// An empty stack that holds at most [`MAX_SUBGOAL_DEPTH`] sub-goals.
    pub fn new() -> Self {
        Self::with_max_depth(MAX_SUBGOAL_DEPTH)
    }

    /// An empty stack that holds at most `max_depth` sub-goals: where more would be needed,
    /// [`Self::descent`] gives no direction.
    pub fn with_max_depth(max_depth: usize) -> Self {
        Self {
            layers: Vec::new(),
            max_depth,
        }
    }

    /// The most sub-goals this stack holds.
    pub fn max_depth(&self) -> usize {
        self.max_depth
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
        // Nothing shared: every sub-goal this call needs is built for it.
        self.descent_shared(base, position, &SubgoalCache::new())
    }

    /// [`Self::descent`] with sub-goal fields taken from, and added to, `cache`, which every
    /// stack on `base` may share (clear it when `base` changes). The same directions as
    /// [`Self::descent`].
    pub fn descent_shared(
        &mut self,
        base: &Field<f64>,
        position: DVec2,
        cache: &SubgoalCache,
    ) -> Result<DVec2, FieldError> {
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
            let Some(layer) = cache.layer(base, self.layers.last(), position)? else {
                return Ok(DVec2::ZERO);
            };
            self.layers.push(layer);
        }
    }

    /// Number of goal cells of each stacked sub-goal, bottom first (for overlays and tests).
    pub fn goal_counts(&self) -> Vec<usize> {
        self.layers.iter().map(|l| l.goals).collect()
    }
}

/// The sub-goal field over `parent` for the free region `region` of `labels`: the region's
/// cells at the sub-goal level next to a cell above it become goals, and the field is solved.
/// `None` when the region has no such cell.
fn build_layer(
    parent: &Field<f64>,
    labels: &[u32],
    region: u32,
    key: Vec<u32>,
    solver: &MultigridSolver,
) -> Result<Option<Layer>, FieldError> {
    let (w, h) = (parent.width(), parent.height());
    let p = parent.potentials();
    let kinds = parent.kinds();
    let mut field = parent.clone();
    field.clear_goals(1.0);
    field.reset_free(1.0);
    let mut goals = 0;
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let i = y * w + x;
            if labels[i] != region || p[i] > SUBGOAL_LEVEL {
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
    solver.solve(&mut field, &Bias::HARMONIC, SUBGOAL_TOLERANCE)?;
    let labels = region_labels(&field);
    Ok(Some(Layer {
        field,
        goals,
        key,
        labels,
    }))
}

/// How many cells from the agent's own a sub-goal's region is looked for when that cell is not
/// free (an obstacle grown on the global grid reaches a cell or two past the real shape).
const REGION_SEARCH_CELLS: i32 = 2;

/// The region of `cell`, or, where `cell` is not free (the agent stands in an obstacle's grown
/// margin, which the real shape leaves clear, or on a goal cell of the layer below), the region
/// of the free cell nearest to `position` within [`REGION_SEARCH_CELLS`]; ties go to the lower
/// cell index. `None` where no free cell is that near.
fn region_near(
    labels: &[u32],
    geometry: &GridGeometry,
    position: DVec2,
    cell: IVec2,
) -> Option<u32> {
    let w = geometry.width();
    let at = |c: IVec2| labels[c.y as usize * w + c.x as usize];
    if at(cell) != NO_REGION {
        return Some(at(cell));
    }
    if !position.is_finite() {
        return None;
    }
    let r = REGION_SEARCH_CELLS;
    let mut best: Option<(f64, usize, u32)> = None;
    for dy in -r..=r {
        for dx in -r..=r {
            let c = cell + IVec2::new(dx, dy);
            if !geometry.contains_cell(c) || at(c) == NO_REGION {
                continue;
            }
            let d = (geometry.cell_centre(c.x as usize, c.y as usize) - position).length_squared();
            let i = c.y as usize * w + c.x as usize;
            if best.is_none_or(|(bd, bi, _)| (d, i) < (bd, bi)) {
                best = Some((d, i, at(c)));
            }
        }
    }
    best.map(|(_, _, region)| region)
}

/// Every free cell labelled with its 4-connected free region (regions numbered in scan order
/// of their first cell), [`NO_REGION`] elsewhere.
fn region_labels(field: &Field<f64>) -> Vec<u32> {
    let w = field.width();
    let kinds = field.kinds();
    let mut labels = vec![NO_REGION; kinds.len()];
    let mut next = 0;
    let mut stack = Vec::new();
    for start in 0..kinds.len() {
        if kinds[start] != CellKind::Free || labels[start] != NO_REGION {
            continue;
        }
        stack.push(start);
        while let Some(i) = stack.pop() {
            if labels[i] != NO_REGION || kinds[i] != CellKind::Free {
                continue;
            }
            labels[i] = next;
            // Free cells are never on the border ring, so all four neighbours exist.
            stack.extend([i + 1, i - 1, i + w, i - w]);
        }
        next += 1;
    }
    labels
}
