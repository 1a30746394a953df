//! Other agents' discs, grown by one radius, rasterised once per step on the world lattice the
//! local maps are aligned to (seed 000 §3.2: agents stamped as discs of the summed radii; DESIGN
//! "Performance").
//!
//! A local map's cell k covers `[k·c, (k + 1)·c)` of the lattice of its cell size c, and a disc
//! stamped into it covers the cells whose centres lie within the summed radii of the disc's
//! centre. Which lattice cells those are does not depend on whose window they fall in, only on
//! the stamping agent's radius. So every agent's disc of the step's snapshot is counted once
//! into a lattice grid per (cell size, radius), and each window reads its update zone out of
//! it, less its own disc, instead of finding its neighbours and stamping their discs one by one.

use glam::{DVec2, IVec2};

/// How many discs of one step, grown by one radius, cover each cell of a lattice.
#[derive(Debug, Clone)]
pub(crate) struct DiscRaster {
    cell: f64,
    /// Radius every disc is grown by (the stamping agents' own radius).
    inflation: f64,
    /// Lattice cell of grid cell (0, 0).
    first: IVec2,
    width: usize,
    height: usize,
    counts: Vec<u16>,
}

/// Lattice cells a raster may span at most (a few tens of megabytes); a crowd spread wider
/// stamps its discs one by one.
const MAX_CELLS: usize = 1 << 24;

impl DiscRaster {
    /// Counts the discs `(centre, radius)` of `discs` (absent entries skipped), each grown by
    /// `inflation`, on the lattice of `cell`; discs with a non-finite centre or a non-finite or
    /// negative grown radius are left out. `None` when no disc is left, or the grid would
    /// exceed [`MAX_CELLS`].
    pub(crate) fn build(discs: &[Option<(DVec2, f64)>], cell: f64, inflation: f64) -> Option<Self> {
        // A disc counts when its centre and its grown radius are finite and not negative.
        let finite =
            |q: DVec2, r: f64| q.is_finite() && (r + inflation).is_finite() && r + inflation >= 0.0;
        let (mut lo, mut hi) = (DVec2::INFINITY, DVec2::NEG_INFINITY);
        for &(q, r) in discs.iter().flatten() {
            if finite(q, r) {
                let reach = DVec2::splat(r + inflation);
                lo = lo.min(q - reach);
                hi = hi.max(q + reach);
            }
        }
        if !(lo.is_finite() && hi.is_finite() && cell > 0.0 && inflation.is_finite()) {
            return None;
        }
        let to_cell = |v: f64| (v / cell).floor();
        let (x0, y0) = (to_cell(lo.x) - 1.0, to_cell(lo.y) - 1.0);
        let (x1, y1) = (to_cell(hi.x) + 1.0, to_cell(hi.y) + 1.0);
        let (w, h) = (x1 - x0 + 1.0, y1 - y0 + 1.0);
        let in_range = |v: f64| v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX);
        if !([x0, x1, y0, y1].into_iter().all(in_range) && w * h <= MAX_CELLS as f64) {
            return None;
        }
        let mut raster = Self {
            cell,
            inflation,
            first: IVec2::new(x0 as i32, y0 as i32),
            width: w as usize,
            height: h as usize,
            counts: vec![0; (w * h) as usize],
        };
        for &(q, r) in discs.iter().flatten() {
            if finite(q, r) {
                raster.add(q, r + inflation);
            }
        }
        Some(raster)
    }

    /// Counts one disc of radius `reach` around `q` into every cell it covers.
    fn add(&mut self, q: DVec2, reach: f64) {
        // One cell of margin around the disc's box; `covers` decides.
        let lo = ((q - DVec2::splat(reach)) / self.cell).floor().as_ivec2() - IVec2::ONE;
        let hi = ((q + DVec2::splat(reach)) / self.cell).floor().as_ivec2() + IVec2::ONE;
        let lo = (lo - self.first).max(IVec2::ZERO);
        let hi = (hi - self.first).min(IVec2::new(self.width as i32 - 1, self.height as i32 - 1));
        for y in lo.y..=hi.y {
            for x in lo.x..=hi.x {
                if self.covers(self.first + IVec2::new(x, y), q, reach) {
                    let i = y as usize * self.width + x as usize;
                    self.counts[i] = self.counts[i].saturating_add(1);
                }
            }
        }
    }

    /// Whether the centre of lattice cell `g` lies within `reach` of `q`: the test every count
    /// was made with, so a window can take its own disc back out exactly.
    #[inline]
    pub(crate) fn covers(&self, g: IVec2, q: DVec2, reach: f64) -> bool {
        let dx = (f64::from(g.x) + 0.5) * self.cell - q.x;
        let dy = (f64::from(g.y) + 0.5) * self.cell - q.y;
        dx * dx + dy * dy <= reach * reach
    }

    /// The radius the discs are grown by.
    pub(crate) fn inflation(&self) -> f64 {
        self.inflation
    }

    /// The counts of lattice cells `start + (k, 0)` for `k` in `0..len`, zero outside the grid,
    /// passed to `f` with their k.
    #[inline]
    pub(crate) fn for_each_in_row(&self, start: IVec2, len: usize, mut f: impl FnMut(usize, u16)) {
        let d = start - self.first;
        if d.y < 0 || d.y as usize >= self.height {
            return;
        }
        let from = d.x.max(0);
        let to = (d.x + len as i32).min(self.width as i32);
        if from >= to {
            return;
        }
        let row = &self.counts[d.y as usize * self.width..][from as usize..to as usize];
        for (k, &count) in row.iter().enumerate() {
            if count > 0 {
                f((from - d.x) as usize + k, count);
            }
        }
    }
}
