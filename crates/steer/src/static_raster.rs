//! Static obstacles rasterised once per (local cell size, agent radius) on the world lattice
//! that local maps are aligned to (seed 000 §3.2; DESIGN "Performance").
//!
//! A local map's cell k covers `[k·c, (k + 1)·c)` of the world lattice of its cell size c, so a
//! static shape grown by an agent's radius covers the same lattice cells whichever agent's
//! window they fall in. Rasterising every static shape once into a lattice mask, and copying the
//! window out of it each step, replaces a per-agent, per-shape rasterisation whose cost grew
//! with the number of static shapes.

use glam::{DVec2, IVec2};

use crowdfield_field::{Coverage, GridGeometry, Shape};

/// Static obstacles (grown by one radius) on the lattice of one cell size.
#[derive(Debug, Clone)]
pub(crate) struct StaticRaster {
    /// Lattice cell of mask cell (0, 0).
    first: IVec2,
    width: usize,
    height: usize,
    blocked: Vec<bool>,
}

impl StaticRaster {
    /// Rasterises `statics` grown by `inflation` with touch coverage on the lattice of
    /// `cell_size`, over `[min, max]`. Lattice cells outside count as free.
    pub(crate) fn build(
        statics: &[Shape],
        cell_size: f64,
        inflation: f64,
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
        let mut blocked = vec![false; width * height];
        for shape in statics {
            for (x, y) in shape.cells(&geometry, inflation, Coverage::Touch).ok()? {
                blocked[y * width + x] = true;
            }
        }
        Some(Self {
            first,
            width,
            height,
            blocked,
        })
    }

    /// Whether lattice cell `cell` is covered.
    #[inline]
    pub(crate) fn blocked(&self, cell: IVec2) -> bool {
        let d = cell - self.first;
        if d.x < 0 || d.y < 0 || d.x as usize >= self.width || d.y as usize >= self.height {
            return false;
        }
        self.blocked[d.y as usize * self.width + d.x as usize]
    }
}
