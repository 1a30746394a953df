//! Static obstacles rasterised once per (local cell size, agent radius) on the world lattice
//! that local maps are aligned to (seed 000 §3.2; docs/performance.md, *Rasters of discs and statics*).
//!
//! A local map's cell k covers `[k·c, (k + 1)·c)` of the world lattice of its cell size c, so a
//! static shape grown by an agent's radius covers the same lattice cells whichever agent's
//! window they fall in. Rasterising every static shape once into a lattice mask, and copying the
//! window out of it each step, replaces a per-agent, per-shape rasterisation whose cost grew
//! with the number of static shapes.

use glam::{DVec2, IVec2};

use crowdfield_field::{Coverage, GridGeometry, Shape};

use crate::disc_raster::{STATIC, bit_words, nonzero_bits};

/// Static obstacles (grown by one radius) on the lattice of one cell size.
#[derive(Debug, Clone)]
pub(crate) struct StaticRaster {
    /// The mask's cells as a grid on the lattice.
    geometry: GridGeometry,
    /// Radius the shapes are grown by.
    inflation: f64,
    /// Which cells a grown shape marks.
    coverage: Coverage,
    /// Lattice cell of mask cell (0, 0).
    first: IVec2,
    width: usize,
    height: usize,
    /// The mask, row by row, as the counts a disc raster laid over it starts from: [`STATIC`]
    /// where covered, 0 elsewhere.
    counts: Vec<u16>,
    /// The mask as bits, [`bit_words`] per row, as a disc raster keeps them.
    bits: Vec<u64>,
}

impl StaticRaster {
    /// Rasterises `statics` grown by `inflation` with `coverage` on the lattice of
    /// `cell_size`, over `[min, max]`. Lattice cells outside count as free.
    pub(crate) fn build(
        statics: &[Shape],
        cell_size: f64,
        inflation: f64,
        coverage: Coverage,
        min: DVec2,
        max: DVec2,
    ) -> Option<Self> {
        let first = IVec2::new(
            (min.x / cell_size).floor() as i32,
            (min.y / cell_size).floor() as i32,
        );
        let last = IVec2::new(
            (max.x / cell_size).floor() as i32,
            (max.y / cell_size).floor() as i32,
        );
        let width = (last.x - first.x + 1).max(1) as usize;
        let height = (last.y - first.y + 1).max(1) as usize;
        let geometry =
            GridGeometry::new(first.as_dvec2() * cell_size, cell_size, width, height).ok()?;
        let mut counts = vec![0; width * height];
        for shape in statics {
            for (x, y) in shape.cells(&geometry, inflation, coverage).ok()? {
                counts[y * width + x] = STATIC;
            }
        }
        let mut raster = Self {
            geometry,
            inflation,
            coverage,
            first,
            width,
            height,
            counts,
            bits: vec![0; bit_words(width) * height],
        };
        raster.update_bits(0..height);
        Some(raster)
    }

    /// The bits of rows `rows`, from the counts.
    fn update_bits(&mut self, rows: std::ops::Range<usize>) {
        let words = bit_words(self.width);
        for (row, bits) in self
            .counts
            .chunks_exact(self.width)
            .zip(self.bits.chunks_exact_mut(words))
            .skip(rows.start)
            .take(rows.len())
        {
            for (word, cells) in bits.iter_mut().zip(row.chunks(64)) {
                *word = nonzero_bits(cells);
            }
        }
    }

    /// The mask as counts ([`STATIC`] or 0), row by row.
    pub(crate) fn counts(&self) -> &[u16] {
        &self.counts
    }

    /// The mask as bits, [`bit_words`] per row.
    pub(crate) fn bits(&self) -> &[u64] {
        &self.bits
    }

    /// Recomputes the cells that shapes grown by the raster's radius could cover inside the
    /// world box `[lo, hi]`, from `statics` (with their bounding boxes `bounds`), after an edit
    /// there, and the bits of their rows.
    pub(crate) fn refresh(
        &mut self,
        lo: DVec2,
        hi: DVec2,
        statics: &[Shape],
        bounds: &[(DVec2, DVec2)],
    ) {
        let grow = DVec2::splat(self.inflation + self.geometry.cell_size());
        let (lo, hi) = (lo - grow, hi + grow);
        let last = IVec2::new(self.width as i32 - 1, self.height as i32 - 1);
        let Some(region) = CellRegion::new(&self.geometry, lo, hi, IVec2::ZERO, last) else {
            return;
        };
        for (x, y) in region.cells() {
            self.counts[y * self.width + x] = 0;
        }
        for (shape, (slo, shi)) in statics.iter().zip(bounds) {
            if !boxes_overlap(*slo - grow, *shi + grow, lo, hi) {
                continue;
            }
            let Ok(cells) = shape.cells(&self.geometry, self.inflation, self.coverage) else {
                continue;
            };
            for (x, y) in cells.into_iter().filter(|&(x, y)| region.contains(x, y)) {
                self.counts[y * self.width + x] = STATIC;
            }
        }
        self.update_bits(region.rows());
    }

    /// Lattice cell of mask cell (0, 0), and the mask's width and height.
    pub(crate) fn frame(&self) -> (IVec2, usize, usize) {
        (self.first, self.width, self.height)
    }

    /// Whether the raster alone says if a disc of its radius centred in lattice cell `cell`
    /// overlaps a static shape: where it marks every cell a grown shape reaches into
    /// ([`Coverage::Touch`]), no point of an unmarked cell lies within the radius of a shape;
    /// [`Coverage::Centre`] leaves such cells unmarked, and cells off the raster count as free.
    pub(crate) fn marks_every_overlap(&self, cell: IVec2) -> bool {
        let d = cell - self.first;
        self.coverage == Coverage::Touch
            && d.x >= 0
            && d.y >= 0
            && (d.x as usize) < self.width
            && (d.y as usize) < self.height
    }

    /// Whether lattice cell `cell` is covered.
    pub(crate) fn blocked(&self, cell: IVec2) -> bool {
        let d = cell - self.first;
        if d.x < 0 || d.y < 0 || d.x as usize >= self.width || d.y as usize >= self.height {
            return false;
        }
        self.counts[d.y as usize * self.width + d.x as usize] != 0
    }
}

impl StaticRaster {
    /// Calls `f(k)` for each covered cell `k` of the run of `len` lattice cells starting at
    /// `start` and going +x.
    #[inline]
    pub(crate) fn for_each_blocked_in_row(
        &self,
        start: IVec2,
        len: usize,
        mut f: impl FnMut(usize),
    ) {
        let d = start - self.first;
        if d.y < 0 || d.y as usize >= self.height {
            return;
        }
        // The part of the run inside the mask.
        let skip = (-d.x).max(0) as usize;
        let from = d.x.max(0) as usize;
        let to = (d.x + len as i32).clamp(0, self.width as i32) as usize;
        if from >= to {
            return;
        }
        let row = &self.counts[d.y as usize * self.width..][from..to];
        for (k, c) in row.iter().enumerate() {
            if *c != 0 {
                f(skip + k);
            }
        }
    }
}

/// The cells of a grid that overlap a world box, clamped to an index range.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CellRegion {
    first: IVec2,
    last: IVec2,
}

impl CellRegion {
    /// Cells of `geometry` touching `[lo, hi]` with indices in `min..=max`; `None` if empty.
    pub(crate) fn new(
        geometry: &GridGeometry,
        lo: DVec2,
        hi: DVec2,
        min: IVec2,
        max: IVec2,
    ) -> Option<Self> {
        let first = geometry.world_to_cell(lo).max(min);
        let last = geometry.world_to_cell(hi).min(max);
        (first.x <= last.x && first.y <= last.y).then_some(Self { first, last })
    }

    /// Whether cell `(x, y)` is in the region.
    pub(crate) fn contains(&self, x: usize, y: usize) -> bool {
        let c = IVec2::new(x as i32, y as i32);
        c.cmpge(self.first).all() && c.cmple(self.last).all()
    }

    /// The region's rows.
    pub(crate) fn rows(&self) -> std::ops::Range<usize> {
        self.first.y as usize..self.last.y as usize + 1
    }

    /// The region's cells, row by row.
    pub(crate) fn cells(&self) -> impl Iterator<Item = (usize, usize)> + use<> {
        let (first, last) = (self.first, self.last);
        (first.y..=last.y)
            .flat_map(move |y| (first.x..=last.x).map(move |x| (x as usize, y as usize)))
    }
}

/// Whether two axis-aligned boxes overlap (touching counts).
pub(crate) fn boxes_overlap(a_lo: DVec2, a_hi: DVec2, b_lo: DVec2, b_hi: DVec2) -> bool {
    a_lo.x <= b_hi.x && a_lo.y <= b_hi.y && a_hi.x >= b_lo.x && a_hi.y >= b_lo.y
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An edit refreshed in place gives the raster built afresh, with either coverage (the
    /// raster keeps the coverage it was built with).
    #[test]
    fn refreshing_after_edits_matches_a_fresh_raster() {
        let (min, max) = (DVec2::splat(-5.0), DVec2::splat(15.0));
        let a = Shape::RotatedBox {
            centre: DVec2::new(4.0, 4.0),
            half_extents: DVec2::new(3.0, 0.4),
            angle: 0.3,
        };
        let b = Shape::Disc {
            centre: DVec2::new(5.0, 5.0),
            radius: 1.2,
        };
        let bounds = |s: &[Shape]| -> Vec<(DVec2, DVec2)> {
            s.iter().map(|s| s.bounds().unwrap()).collect()
        };
        for coverage in [Coverage::Touch, Coverage::Centre] {
            let build = |shapes: &[Shape]| {
                StaticRaster::build(shapes, 0.5, 0.3, coverage, min, max).unwrap()
            };
            let mut raster = build(std::slice::from_ref(&a));
            // Add b.
            let both = [a.clone(), b.clone()];
            let (lo, hi) = b.bounds().unwrap();
            raster.refresh(lo, hi, &both, &bounds(&both));
            let fresh = build(&both);
            assert_eq!((&raster.counts, &raster.bits), (&fresh.counts, &fresh.bits));
            // Remove a (it overlaps b, whose cells must survive).
            let only_b = [b.clone()];
            let (lo, hi) = a.bounds().unwrap();
            raster.refresh(lo, hi, &only_b, &bounds(&only_b));
            let fresh = build(&only_b);
            assert_eq!((&raster.counts, &raster.bits), (&fresh.counts, &fresh.bits));
            assert!(raster.counts.iter().any(|c| *c != 0));
        }
        // The two coverages do mark different cells here, so the test tells them apart.
        let of_b = |coverage| {
            StaticRaster::build(std::slice::from_ref(&b), 0.5, 0.3, coverage, min, max).unwrap()
        };
        assert_ne!(of_b(Coverage::Touch).counts, of_b(Coverage::Centre).counts);
    }

    /// A row run reports exactly the cells `blocked` says are covered, wherever the run lies
    /// against the mask's edges (inside, across either end, beyond it, above or below).
    #[test]
    fn row_runs_match_cell_lookups_across_the_mask_edges() {
        let shape = Shape::Disc {
            centre: DVec2::new(1.0, 1.0),
            radius: 2.2,
        };
        let raster = StaticRaster::build(
            std::slice::from_ref(&shape),
            0.5,
            0.3,
            Coverage::Touch,
            DVec2::splat(-2.0),
            DVec2::splat(3.0),
        )
        .unwrap();
        let (first, w, h) = (raster.first, raster.width as i32, raster.height as i32);
        for y in first.y - 2..first.y + h + 2 {
            for x in first.x - 14..first.x + w + 2 {
                for len in [1usize, 5, 11, 40] {
                    let start = IVec2::new(x, y);
                    let mut got = Vec::new();
                    raster.for_each_blocked_in_row(start, len, |k| got.push(k));
                    let want: Vec<usize> = (0..len)
                        .filter(|k| raster.blocked(start + IVec2::new(*k as i32, 0)))
                        .collect();
                    assert_eq!(got, want, "start {start} len {len}");
                }
            }
        }
        assert!(raster.counts.iter().any(|c| *c != 0));
    }
}
