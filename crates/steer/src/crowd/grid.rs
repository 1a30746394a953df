//! Spatial indices of a step's agent positions: [`AgentGrid`], a counting sort of the snapshot
//! by cell that the crowd's sensing and commit query (public for hosts and benchmarks), and the
//! hash that keeps spawned agents apart.

use glam::DVec2;

use crowdfield_field::floor_i64;

/// Points (agents of one step) bucketed on a uniform grid over their bounding box: a counting
/// sort by cell, so each cell's points are one slice, in increasing index order. The crowd
/// indexes its snapshot with it; hosts and benchmarks may use it for their own neighbour
/// queries.
#[derive(Debug, Clone)]
pub struct AgentGrid {
    origin: DVec2,
    inv_cell: f64,
    cols: i64,
    rows: i64,
    /// `starts[c]..starts[c + 1]` indexes `items` for cell `c`.
    starts: Vec<u32>,
    items: Vec<u32>,
    /// Position and radius of each item, in the same order: a query reads them in sequence
    /// rather than gathering them by index.
    points: Vec<(DVec2, f64)>,
}

impl AgentGrid {
    /// Buckets the present points (`Some((position, radius))`; the radius is not used) on cells
    /// of about `cell` (larger where that would give more than about four cells per point, so a
    /// lone far-away agent cannot blow the grid up). Positions must be finite.
    pub fn build(points: &[Option<(DVec2, f64)>], cell: f64) -> Self {
        let (mut lo, mut hi, mut n) = (DVec2::INFINITY, DVec2::NEG_INFINITY, 0usize);
        for (p, _) in points.iter().flatten() {
            lo = lo.min(*p);
            hi = hi.max(*p);
            n += 1;
        }
        if n == 0 {
            return Self {
                origin: DVec2::ZERO,
                inv_cell: 1.0,
                cols: 0,
                rows: 0,
                starts: vec![0],
                items: Vec::new(),
                points: Vec::new(),
            };
        }
        let extent = hi - lo;
        let mut cell = cell.max(1e-3);
        let budget = (4 * n + 1024) as f64;
        let cells = |c: f64| ((extent.x / c).floor() + 1.0) * ((extent.y / c).floor() + 1.0);
        if cells(cell) > budget {
            cell *= (cells(cell) / budget).sqrt();
            while cells(cell) > budget {
                cell *= 1.25;
            }
        }
        let inv_cell = 1.0 / cell;
        let cols = (extent.x * inv_cell).floor() as i64 + 1;
        let rows = (extent.y * inv_cell).floor() as i64 + 1;
        let key = |p: DVec2| {
            let x = (((p.x - lo.x) * inv_cell) as i64).clamp(0, cols - 1);
            let y = (((p.y - lo.y) * inv_cell) as i64).clamp(0, rows - 1);
            (y * cols + x) as usize
        };
        let mut starts = vec![0u32; (cols * rows) as usize + 1];
        for (p, _) in points.iter().flatten() {
            starts[key(*p) + 1] += 1;
        }
        for c in 1..starts.len() {
            starts[c] += starts[c - 1];
        }
        let mut fill = starts.clone();
        let mut items = vec![0u32; n];
        let mut sorted = vec![(DVec2::ZERO, 0.0); n];
        for (i, p) in points.iter().enumerate() {
            if let Some((p, r)) = p {
                let c = key(*p);
                items[fill[c] as usize] = i as u32;
                sorted[fill[c] as usize] = (*p, *r);
                fill[c] += 1;
            }
        }
        Self {
            origin: lo,
            inv_cell,
            cols,
            rows,
            starts,
            items,
            points: sorted,
        }
    }

    /// Calls `f` with the index of every point within `radius` of `p` (and possibly a few
    /// more), cell by cell. Callers must not depend on the order.
    #[inline]
    pub fn for_each_near(&self, p: DVec2, radius: f64, mut f: impl FnMut(usize)) {
        self.for_each_point_near(p, radius, |i, _, _| f(i));
    }

    /// [`Self::for_each_near`] with each point's position and radius as they were indexed.
    #[inline]
    pub fn for_each_point_near(&self, p: DVec2, radius: f64, mut f: impl FnMut(usize, DVec2, f64)) {
        self.for_each_run_near(p, radius, |items, points| {
            for (&i, &(q, r)) in items.iter().zip(points) {
                f(i as usize, q, r);
            }
        });
    }

    /// The points [`Self::for_each_point_near`] visits, a run of them at a time (the points of
    /// neighbouring cells of one row): `f(indices, points)` with their indices and their
    /// positions and radii, so that a caller may size its buffers once a run.
    #[inline]
    pub(crate) fn for_each_run_near(
        &self,
        p: DVec2,
        radius: f64,
        mut f: impl FnMut(&[u32], &[(DVec2, f64)]),
    ) {
        let cell = |v: f64, o: f64| floor_i64((v - o) * self.inv_cell);
        let (x0, x1) = (
            cell(p.x - radius, self.origin.x).max(0),
            cell(p.x + radius, self.origin.x).min(self.cols - 1),
        );
        let (y0, y1) = (
            cell(p.y - radius, self.origin.y).max(0),
            cell(p.y + radius, self.origin.y).min(self.rows - 1),
        );
        for y in y0..=y1 {
            let row = (y * self.cols) as usize;
            if x0 > x1 {
                break;
            }
            let (a, b) = (
                self.starts[row + x0 as usize] as usize,
                self.starts[row + x1 as usize + 1] as usize,
            );
            f(&self.items[a..b], &self.points[a..b]);
        }
    }
}

/// Cell size of the spawn-time agent index.
pub(super) const SPAWN_CELL: f64 = 2.0;

/// A uniform grid over agent positions.
#[derive(Debug, Clone)]
pub(super) struct SpatialHash {
    cell: f64,
    buckets: std::collections::HashMap<(i64, i64), Vec<usize>>,
}

impl SpatialHash {
    pub(super) fn build(points: &[Option<(DVec2, f64)>], cell: f64) -> Self {
        let mut buckets: std::collections::HashMap<(i64, i64), Vec<usize>> =
            std::collections::HashMap::new();
        for (i, p) in points.iter().enumerate() {
            if let Some((p, _)) = p {
                buckets.entry(Self::key(*p, cell)).or_default().push(i);
            }
        }
        Self { cell, buckets }
    }

    /// Adds point `i` at `p`.
    pub(super) fn insert(&mut self, i: usize, p: DVec2) {
        self.buckets
            .entry(Self::key(p, self.cell))
            .or_default()
            .push(i);
    }

    pub(super) fn key(p: DVec2, cell: f64) -> (i64, i64) {
        (floor_i64(p.x / cell), floor_i64(p.y / cell))
    }

    /// Calls `f` for every indexed point within `radius` of `p` (and possibly a few more), in
    /// increasing index order.
    pub(super) fn for_each_near(&self, p: DVec2, radius: f64, mut f: impl FnMut(usize)) {
        let lo = Self::key(p - DVec2::splat(radius), self.cell);
        let hi = Self::key(p + DVec2::splat(radius), self.cell);
        let mut found = Vec::new();
        let span = (hi.0 - lo.0 + 1).saturating_mul(hi.1 - lo.1 + 1);
        if span > self.buckets.len() as i64 {
            // A query wider than the occupied cells (a huge agent, a coarse world): walk the
            // buckets instead of the empty cells.
            for (key, v) in &self.buckets {
                if (lo.0..=hi.0).contains(&key.0) && (lo.1..=hi.1).contains(&key.1) {
                    found.extend_from_slice(v);
                }
            }
        } else {
            for x in lo.0..=hi.0 {
                for y in lo.1..=hi.1 {
                    if let Some(v) = self.buckets.get(&(x, y)) {
                        found.extend_from_slice(v);
                    }
                }
            }
        }
        found.sort_unstable();
        for i in found {
            f(i);
        }
    }
}
