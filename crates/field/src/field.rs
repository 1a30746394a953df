//! A potential field on a grid: cell kinds (boundary conditions) and potentials.
//!
//! Boundary conditions are Dirichlet throughout (digest 000 §2.3): obstacle cells are fixed at
//! p = 1, goal cells at p = 0, and [`CellKind::Fixed`] cells at any value in [0, 1] (used for
//! sub-goals, masks and stroke tubes). Only [`CellKind::Free`] cells are relaxed. The outermost
//! ring of cells is the closed border of the domain: it is never free, so every stencil read
//! stays inside the grid and the domain is "surrounded by obstacles" as the seeds assume.

use glam::{DVec2, IVec2};

use crate::bias::Bias;
use crate::grid::{GridGeometry, floor_i32};
use crate::scalar::Potential;
use crate::{FLATNESS_THRESHOLD, FieldError};

/// The role of a cell in the boundary value problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum CellKind {
    /// Relaxed by the solvers.
    #[default]
    Free = 0,
    /// Fixed at p = 1.
    Obstacle = 1,
    /// Fixed at p = 0.
    Goal = 2,
    /// Fixed at the value stored in the cell's potential (in [0, 1]).
    Fixed = 3,
}

impl CellKind {
    /// Whether the solvers leave this cell's value alone.
    #[inline(always)]
    pub fn is_fixed(self) -> bool {
        self != CellKind::Free
    }
}

/// The four cell centres around a world point, in the order lower left, lower right, upper
/// left, upper right: whether each is not an obstacle, its descent, and the point's fractions
/// between them.
struct Corners {
    open: [bool; 4],
    descent: [DVec2; 4],
    fraction: DVec2,
}

impl Corners {
    /// The bilinear interpolation of the four descents.
    fn bilinear(&self) -> DVec2 {
        let [d00, d10, d01, d11] = self.descent;
        let DVec2 { x: fx, y: fy } = self.fraction;
        d00.lerp(d10, fx).lerp(d01.lerp(d11, fx), fy)
    }
}

/// Potentials of type `T` (`f64` for global maps, `f32` allowed for small local maps) on a grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Field<T: Potential = f64> {
    geometry: GridGeometry,
    kinds: Vec<CellKind>,
    potential: Vec<T>,
}

impl<T: Potential> Field<T> {
    /// A field with every interior cell free at `free_value` and the border ring obstacles.
    ///
    /// `free_value` is the initial guess for relaxation: the seeds start near 0.9 for maps up to
    /// 25×25 and very close to 1 for larger ones (digest 004 §3.1); never 0 when relaxation is
    /// partial (digest 000 §2.8).
    pub fn new(geometry: GridGeometry, free_value: f64) -> Self {
        let (w, h) = (geometry.width(), geometry.height());
        let mut kinds = vec![CellKind::Free; w * h];
        let mut potential = vec![T::from_f64(free_value); w * h];
        for y in 0..h {
            for x in 0..w {
                if geometry.is_border(x, y) {
                    kinds[y * w + x] = CellKind::Obstacle;
                    potential[y * w + x] = T::ONE;
                }
            }
        }
        Self {
            geometry,
            kinds,
            potential,
        }
    }

    /// The grid this field lives on.
    pub fn geometry(&self) -> &GridGeometry {
        &self.geometry
    }

    /// Cells along x.
    pub fn width(&self) -> usize {
        self.geometry.width()
    }

    /// Cells along y.
    pub fn height(&self) -> usize {
        self.geometry.height()
    }

    /// Cell kinds, row-major.
    pub fn kinds(&self) -> &[CellKind] {
        &self.kinds
    }

    /// Potentials, row-major.
    pub fn potentials(&self) -> &[T] {
        &self.potential
    }

    /// Mutable potentials, row-major. Writing a fixed cell changes its boundary value; keep
    /// obstacles at 1 and goals at 0.
    pub fn potentials_mut(&mut self) -> &mut [T] {
        &mut self.potential
    }

    /// Kinds and mutable potentials together, for solvers (a group map's local sweeps): the
    /// kinds cannot change while the potentials are written.
    pub fn parts_mut(&mut self) -> (&GridGeometry, &[CellKind], &mut [T]) {
        (&self.geometry, &self.kinds, &mut self.potential)
    }

    /// Exchanges the potential buffer with `other` (same length), for two-array sweeps.
    pub(crate) fn swap_potentials(&mut self, other: &mut Vec<T>) {
        debug_assert_eq!(other.len(), self.potential.len());
        std::mem::swap(&mut self.potential, other);
    }

    /// The kind of cell `(x, y)`; `None` when out of bounds.
    pub fn kind(&self, x: usize, y: usize) -> Option<CellKind> {
        (x < self.width() && y < self.height()).then(|| self.kinds[self.geometry.index(x, y)])
    }

    /// The potential of cell `(x, y)`; `None` when out of bounds.
    pub fn potential(&self, x: usize, y: usize) -> Option<T> {
        (x < self.width() && y < self.height()).then(|| self.potential[self.geometry.index(x, y)])
    }

    fn checked_index(&self, x: usize, y: usize) -> Result<usize, FieldError> {
        if x < self.width() && y < self.height() {
            Ok(self.geometry.index(x, y))
        } else {
            Err(FieldError::CellOutOfBounds {
                x: x as i64,
                y: y as i64,
                width: self.width(),
                height: self.height(),
            })
        }
    }

    /// Makes `(x, y)` an obstacle (p = 1).
    pub fn set_obstacle(&mut self, x: usize, y: usize) -> Result<(), FieldError> {
        let i = self.checked_index(x, y)?;
        self.kinds[i] = CellKind::Obstacle;
        self.potential[i] = T::ONE;
        Ok(())
    }

    /// Makes the cells `(x0 + k, y)` for the set bits `k` of `bits` obstacles (p = 1), one
    /// write per set bit; bits past the grid are left out. Returns how many were set.
    #[inline]
    pub fn set_obstacles_by_bits(&mut self, x0: usize, y: usize, bits: u64) -> usize {
        let Some((at, mut bits)) = self.clip_bits(x0, y, bits) else {
            return 0;
        };
        let kinds = &mut self.kinds[at..];
        let potential = &mut self.potential[at..];
        let n = bits.count_ones() as usize;
        while bits != 0 {
            let k = bits.trailing_zeros() as usize;
            kinds[k] = CellKind::Obstacle;
            potential[k] = T::ONE;
            bits &= bits - 1;
        }
        n
    }

    /// [`Self::set_obstacles_by_bits`] for rows `y0 + j` with the bits `rows[j]`; rows past
    /// the grid are left out. Returns how many cells were set.
    ///
    /// On `f64` fields, where the CPU has AVX-512 (F, BW, VL), a row whose bits lie within 16
    /// cells of `x0` is written whole: those 16 cells' kinds and potentials are read, the set
    /// bits' cells replaced by a blend, and everything written back (the same values where no
    /// bit is set), instead of one write per set bit; the same result (property test).
    pub fn set_obstacles_by_bit_rows(&mut self, x0: usize, y0: usize, rows: &[u64]) -> usize {
        #[cfg(target_arch = "x86_64")]
        if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>()
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            // SAFETY: the CPU has the features the function is built for.
            #[allow(unsafe_code)]
            return unsafe { self.set_obstacles_by_bit_rows_avx512(x0, y0, rows) };
        }
        self.set_obstacles_by_bit_rows_scalar(x0, y0, rows)
    }

    /// [`Self::set_obstacles_by_bit_rows`] one write per set bit.
    fn set_obstacles_by_bit_rows_scalar(&mut self, x0: usize, y0: usize, rows: &[u64]) -> usize {
        rows.iter()
            .enumerate()
            .map(|(j, &bits)| self.set_obstacles_by_bits(x0, y0.saturating_add(j), bits))
            .sum()
    }

    /// Where row `y`'s cells from `x0` start in the arrays, and `bits` less those past the
    /// grid's edge; `None` for a row or start outside the grid.
    #[inline]
    fn clip_bits(&self, x0: usize, y: usize, bits: u64) -> Option<(usize, u64)> {
        let w = self.width();
        if y >= self.height() || x0 >= w {
            return None;
        }
        let bits = if w - x0 < 64 {
            bits & ((1u64 << (w - x0)) - 1)
        } else {
            bits
        };
        Some((y * w + x0, bits))
    }

    /// [`Self::set_obstacles_by_bit_rows`] sixteen cells of a row at once, for `f64` fields.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512F, AVX-512BW and AVX-512VL.
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn set_obstacles_by_bit_rows_avx512(
        &mut self,
        x0: usize,
        y0: usize,
        rows: &[u64],
    ) -> usize {
        use std::arch::x86_64::*;
        if std::any::TypeId::of::<T>() != std::any::TypeId::of::<f64>() {
            return self.set_obstacles_by_bit_rows_scalar(x0, y0, rows);
        }
        let len = self.kinds.len();
        let obstacle = _mm_set1_epi8(CellKind::Obstacle as i8);
        let one = _mm512_set1_pd(1.0);
        let mut set = 0;
        for (j, &bits) in rows.iter().enumerate() {
            let y = y0.saturating_add(j);
            let Some((at, bits)) = self.clip_bits(x0, y, bits) else {
                continue;
            };
            if bits >> 16 != 0 || at + 16 > len {
                set += self.set_obstacles_by_bits(x0, y, bits);
                continue;
            }
            if bits == 0 {
                continue;
            }
            set += bits.count_ones() as usize;
            let mask = bits as u16;
            // SAFETY: cells at..at + 16 lie in both arrays (checked above); `CellKind` is a
            // `u8`, and `T` is `f64` (checked above), so the casts read and write those cells.
            unsafe {
                let kinds = self.kinds.as_mut_ptr().add(at).cast::<__m128i>();
                let old = _mm_loadu_si128(kinds);
                _mm_storeu_si128(kinds, _mm_mask_blend_epi8(mask, old, obstacle));
                let p = self.potential.as_mut_ptr().add(at).cast::<f64>();
                let lo = _mm512_loadu_pd(p);
                _mm512_storeu_pd(p, _mm512_mask_blend_pd(mask as u8, lo, one));
                let hi = _mm512_loadu_pd(p.add(8));
                _mm512_storeu_pd(p.add(8), _mm512_mask_blend_pd((mask >> 8) as u8, hi, one));
            }
        }
        set
    }

    /// Makes `(x, y)` a goal (p = 0). Border cells may be goals (the intermediate goal of a
    /// local map lies on its border).
    pub fn set_goal(&mut self, x: usize, y: usize) -> Result<(), FieldError> {
        let i = self.checked_index(x, y)?;
        self.kinds[i] = CellKind::Goal;
        self.potential[i] = T::ZERO;
        Ok(())
    }

    /// Fixes `(x, y)` at `value` ∈ [0, 1].
    pub fn set_fixed(&mut self, x: usize, y: usize, value: f64) -> Result<(), FieldError> {
        if !(0.0..=1.0).contains(&value) {
            return Err(FieldError::FixedValueOutOfRange(value));
        }
        let i = self.checked_index(x, y)?;
        self.kinds[i] = CellKind::Fixed;
        self.potential[i] = T::from_f64(value);
        Ok(())
    }

    /// Makes an interior cell free again, starting at `value`. Border cells cannot be free, and
    /// the starting value must be finite (a NaN start would survive over-relaxed sweeps, which
    /// keep part of the old value; the field fuzz target found it).
    pub fn set_free(&mut self, x: usize, y: usize, value: f64) -> Result<(), FieldError> {
        let i = self.checked_index(x, y)?;
        if self.geometry.is_border(x, y) {
            return Err(FieldError::FreeBorderCell { x, y });
        }
        if !value.is_finite() {
            return Err(FieldError::NonFinite {
                what: "a free cell's starting value",
                value,
            });
        }
        self.kinds[i] = CellKind::Free;
        self.potential[i] = T::from_f64(value);
        Ok(())
    }

    /// Turns every goal and fixed cell back into a free cell at `value` (border cells become
    /// obstacles), keeping obstacles.
    pub fn clear_goals(&mut self, value: f64) {
        for y in 0..self.height() {
            for x in 0..self.width() {
                let i = self.geometry.index(x, y);
                if matches!(self.kinds[i], CellKind::Goal | CellKind::Fixed) {
                    if self.geometry.is_border(x, y) {
                        self.kinds[i] = CellKind::Obstacle;
                        self.potential[i] = T::ONE;
                    } else {
                        self.kinds[i] = CellKind::Free;
                        self.potential[i] = T::from_f64(value);
                    }
                }
            }
        }
    }

    /// Closes the border (every border cell an obstacle at 1) and makes every interior cell
    /// free, restarting the cells that were not free from `value` and keeping the others'
    /// potentials: a window re-used for the next step's stamping.
    pub fn reopen_interior(&mut self, value: f64) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU was just checked for AVX2, all `reopen_avx2` needs.
            #[allow(unsafe_code)]
            unsafe {
                self.reopen_avx2(value)
            };
            return;
        }
        self.reopen(value);
    }

    /// [`Self::reopen_interior`] built for AVX2 (four potentials per vector).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn reopen_avx2(&mut self, value: f64) {
        self.reopen(value);
    }

    #[inline(always)]
    fn reopen(&mut self, value: f64) {
        let (w, h) = (self.width(), self.height());
        let v = T::from_f64(value);
        // Over the whole grid in one run, border included (closed again below), without a
        // branch: which cells were stamped follows the crowd, and a branch mispredicts often.
        // Not a select either: compilers turn `if free { p } else { v }` into a masked store
        // of `v`, microcoded on AMD CPUs (a 15×15 map took 2.3 times as long). `p·1 + v·0 = p`
        // and `p·0 + v·1 = v` exactly for the finite, non-negative potentials of a map (none
        // is -0, which this would turn into +0).
        for (k, p) in self.kinds.iter().zip(self.potential.iter_mut()) {
            let keep = if *k == CellKind::Free {
                T::ONE
            } else {
                T::ZERO
            };
            *p = *p * keep + v * (T::ONE - keep);
        }
        self.kinds.fill(CellKind::Free);
        for y in [0, h - 1] {
            self.kinds[y * w..][..w].fill(CellKind::Obstacle);
            self.potential[y * w..][..w].fill(T::ONE);
        }
        for y in 1..h - 1 {
            for x in [y * w, y * w + w - 1] {
                self.kinds[x] = CellKind::Obstacle;
                self.potential[x] = T::ONE;
            }
        }
    }

    /// What [`Self::translate_by_cells`]`(offset, fill)` then [`Self::reopen_interior`]`(value)`
    /// give (a local map moving with its agent), faster: every cell's potential moves, one block
    /// move per row, since reopening restarts the non-free cells anyway.
    pub fn translate_and_reopen(&mut self, offset: IVec2, fill: f64, value: f64) {
        if offset == IVec2::ZERO {
            self.reopen_interior(value);
            return;
        }
        let (w, h) = (self.width(), self.height());
        let fill = T::from_f64(fill);
        let (dx, dy) = (offset.x as i64, offset.y as i64);
        // Interior columns whose source column x + dx lies in the grid.
        let first = 1.max(-dx);
        let last = (w as i64 - 2).min(w as i64 - 1 - dx);
        // Interior rows whose source row y + dy lies in the grid.
        let top = 1.max(-dy);
        let bottom = (h as i64 - 2).min(h as i64 - 1 - dy);
        let potential = &mut self.potential;
        let carried = if first <= last && top <= bottom {
            let (first, last, top, bottom) =
                (first as usize, last as usize, top as usize, bottom as usize);
            // Source and destination rows have the same stride, so one block move carries
            // every row's interior columns at once; it also writes the cells between them
            // (border columns, and columns whose source lies outside), which are filled or
            // closed below.
            let start = top * w + first;
            let end = bottom * w + last + 1;
            let from = (start as i64 + dy * w as i64 + dx) as usize;
            potential.copy_within(from..from + (end - start), start);
            top..bottom + 1
        } else {
            0..0
        };
        for (y, line) in potential.chunks_exact_mut(w).enumerate() {
            if y == 0 || y + 1 == h {
                continue;
            }
            if carried.contains(&y) {
                line[1..first as usize].fill(fill);
                line[last as usize + 1..w - 1].fill(fill);
            } else {
                line[1..w - 1].fill(fill);
            }
        }
        // Cells stamped last step (kinds are still last step's) restart from `value`; every
        // interior cell becomes free and the border closes at 1.
        self.reopen_interior(value);
        let origin = self.geometry.origin() + offset.as_dvec2() * self.geometry.cell_size();
        self.geometry = self.geometry.with_origin(origin);
    }

    /// Resets every free cell to `value` (a cold start).
    pub fn reset_free(&mut self, value: f64) {
        let v = T::from_f64(value);
        for (k, p) in self.kinds.iter().zip(self.potential.iter_mut()) {
            if *k == CellKind::Free {
                *p = v;
            }
        }
    }

    /// Whether at least one cell is a goal, or fixed below 1.
    pub fn has_goal(&self) -> bool {
        self.kinds
            .iter()
            .zip(&self.potential)
            .any(|(k, p)| *k == CellKind::Goal || (*k == CellKind::Fixed && p.to_f64() < 1.0))
    }

    /// Moves the grid by whole cells `(dx, dy)` in world space and carries the potentials with
    /// it (warm start, digest 004 §3.1): the new cell `(x, y)` takes the old value of
    /// `(x + dx, y + dy)`, cells that come in from outside take `fill`. Kinds are kept as they
    /// were: the caller stamps obstacles and goals for the new position afterwards, and border
    /// cells stay obstacles.
    pub fn translate_by_cells(&mut self, offset: IVec2, fill: f64) {
        let (w, h) = (self.width() as i64, self.height() as i64);
        let fill = T::from_f64(fill);
        // In place: cell i reads cell i + shift, so walking away from the sources (forwards
        // for a positive shift, backwards for a negative one) reads every source before it is
        // overwritten.
        let shift = offset.y as i64 * w + offset.x as i64;
        let (kinds, potential) = (&self.kinds, &mut self.potential);
        let mut carry = |x: i64, y: i64| {
            let i = (y * w + x) as usize;
            if kinds[i] != CellKind::Free {
                return;
            }
            let (sx, sy) = (x + offset.x as i64, y + offset.y as i64);
            potential[i] = if sx >= 0 && sy >= 0 && sx < w && sy < h {
                potential[(sy * w + sx) as usize]
            } else {
                fill
            };
        };
        if shift > 0 {
            for y in 0..h {
                for x in 0..w {
                    carry(x, y);
                }
            }
        } else {
            for y in (0..h).rev() {
                for x in (0..w).rev() {
                    carry(x, y);
                }
            }
        }
        let origin = self.geometry.origin() + offset.as_dvec2() * self.geometry.cell_size();
        self.geometry = self.geometry.with_origin(origin);
    }

    /// The largest change a Jacobi update would make to any free cell:
    /// `max |Σ w_k p_k − p_c|` over free cells. This is the residual every solver in this crate
    /// stops on (the stencil equation's residual divided by its diagonal, in L∞).
    pub fn residual(&self, bias: &Bias) -> f64 {
        let wts = bias.weights();
        let (w, h) = (self.width(), self.height());
        let p = &self.potential;
        let mut worst = 0.0f64;
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                let i = y * w + x;
                if self.kinds[i] != CellKind::Free {
                    continue;
                }
                let update = wts.apply(
                    p[i + 1].to_f64(),
                    p[i - 1].to_f64(),
                    p[i + w].to_f64(),
                    p[i - w].to_f64(),
                );
                worst = worst.max((update - p[i].to_f64()).abs());
            }
        }
        worst
    }

    /// The descent direction −∇p at cell `(x, y)` by central differences, in potential per cell
    /// along grid axes (= world axes): `((p_W − p_E)/2, (p_S − p_N)/2)`
    /// (digest 000 Eq. 3.6 halved, §2.7 with the sign made descending). Neighbours outside the
    /// grid count as obstacles (p = 1). Returns zero out of bounds.
    pub fn descent_at_cell(&self, x: usize, y: usize) -> DVec2 {
        let (w, h) = (self.width(), self.height());
        if x >= w || y >= h {
            return DVec2::ZERO;
        }
        let at = |xx: i64, yy: i64| -> f64 {
            if xx < 0 || yy < 0 || xx >= w as i64 || yy >= h as i64 {
                1.0
            } else {
                self.potential[yy as usize * w + xx as usize].to_f64()
            }
        };
        let (x, y) = (x as i64, y as i64);
        DVec2::new(
            (at(x - 1, y) - at(x + 1, y)) * 0.5,
            (at(x, y - 1) - at(x, y + 1)) * 0.5,
        )
    }

    /// The descent direction at a world point: the bilinear interpolation of the four
    /// surrounding cell-centre descents. Units as [`Self::descent_at_cell`]. Zero outside the grid.
    pub fn descent_at(&self, point: DVec2) -> DVec2 {
        self.corners(point).map_or(DVec2::ZERO, |c| c.bilinear())
    }

    /// The descent at a world point interpolated over the surrounding cell centres that are not
    /// obstacles, their bilinear weights rescaled to sum to one; [`Self::descent_at`] where all
    /// four are obstacles. Zero outside the grid.
    ///
    /// An obstacle cell's central difference reads the cells on both sides of it, so where an
    /// obstacle is one cell thick (an agent's disc in a local map) it carries the potential of
    /// the far side into the interpolation: a walker touching a neighbour would be drawn towards
    /// whatever lies beyond that neighbour. Only a free cell's difference belongs to the space
    /// the walker stands in. A point within a free cell always has that cell among its corners,
    /// with a weight of at least a quarter.
    pub fn free_descent_at(&self, point: DVec2) -> DVec2 {
        let Some(c) = self.corners(point) else {
            return DVec2::ZERO;
        };
        let (fx, fy) = (c.fraction.x, c.fraction.y);
        let weights = [
            (1.0 - fx) * (1.0 - fy),
            fx * (1.0 - fy),
            (1.0 - fx) * fy,
            fx * fy,
        ];
        let (mut sum, mut total) = (DVec2::ZERO, 0.0);
        for ((open, d), w) in c.open.iter().zip(c.descent).zip(weights) {
            if *open {
                sum += d * w;
                total += w;
            }
        }
        if total > 0.0 {
            sum / total
        } else {
            c.bilinear()
        }
    }

    /// The four cell centres around a world point, `None` outside the grid.
    fn corners(&self, point: DVec2) -> Option<Corners> {
        let g = self.geometry.world_to_grid(point);
        let max = DVec2::new(self.width() as f64 - 1.0, self.height() as f64 - 1.0);
        if !(g.x >= -0.5 && g.y >= -0.5 && g.x <= max.x + 0.5 && g.y <= max.y + 0.5) {
            return None;
        }
        let g = g.clamp(DVec2::ZERO, max);
        let x0 = (floor_i32(g.x).max(0) as usize).min(self.width() - 2);
        let y0 = (floor_i32(g.y).max(0) as usize).min(self.height() - 2);
        let (fx, fy) = (g.x - x0 as f64, g.y - y0 as f64);
        let w = self.width();
        let [d00, d10, d01, d11] = if x0 >= 1 && y0 >= 1 && x0 + 2 < w && y0 + 2 < self.height() {
            // Away from the edges: the 4×4 cells around the four centres, read once (the same
            // differences as `descent_at_cell`).
            let rows: [&[T; 4]; 4] = std::array::from_fn(|k| {
                self.potential[(y0 - 1 + k) * w + x0 - 1..][..4]
                    .try_into()
                    .expect("four cells")
            });
            let p = |x: usize, y: usize| rows[y][x].to_f64();
            let d = |x: usize, y: usize| {
                DVec2::new(
                    (p(x - 1, y) - p(x + 1, y)) * 0.5,
                    (p(x, y - 1) - p(x, y + 1)) * 0.5,
                )
            };
            [d(1, 1), d(2, 1), d(1, 2), d(2, 2)]
        } else {
            [
                self.descent_at_cell(x0, y0),
                self.descent_at_cell(x0 + 1, y0),
                self.descent_at_cell(x0, y0 + 1),
                self.descent_at_cell(x0 + 1, y0 + 1),
            ]
        };
        let open = |x: usize, y: usize| self.kinds[y * w + x] != CellKind::Obstacle;
        Some(Corners {
            open: [
                open(x0, y0),
                open(x0 + 1, y0),
                open(x0, y0 + 1),
                open(x0 + 1, y0 + 1),
            ],
            descent: [d00, d10, d01, d11],
            fraction: DVec2::new(fx, fy),
        })
    }

    /// The potential at a world point, bilinearly interpolated between cell centres. `None`
    /// outside the grid.
    pub fn potential_at(&self, point: DVec2) -> Option<f64> {
        let g = self.geometry.world_to_grid(point);
        let max = DVec2::new(self.width() as f64 - 1.0, self.height() as f64 - 1.0);
        if !(g.x >= -0.5 && g.y >= -0.5 && g.x <= max.x + 0.5 && g.y <= max.y + 0.5) {
            return None;
        }
        let g = g.clamp(DVec2::ZERO, max);
        let x0 = (floor_i32(g.x).max(0) as usize).min(self.width() - 2);
        let y0 = (floor_i32(g.y).max(0) as usize).min(self.height() - 2);
        let (fx, fy) = (g.x - x0 as f64, g.y - y0 as f64);
        let p = |x: usize, y: usize| self.potential[y * self.width() + x].to_f64();
        let bottom = p(x0, y0) * (1.0 - fx) + p(x0 + 1, y0) * fx;
        let top = p(x0, y0 + 1) * (1.0 - fx) + p(x0 + 1, y0 + 1) * fx;
        Some(bottom * (1.0 - fy) + top * fy)
    }

    /// Whether the descent at cell `(x, y)` is flat: `‖∇p‖ < 1e-8` (digest 000 §2.9).
    pub fn is_flat_at_cell(&self, x: usize, y: usize) -> bool {
        self.descent_at_cell(x, y).length() < FLATNESS_THRESHOLD
    }

    /// Free cells that are interior local minima: value ≤ every 4-neighbour and not all equal
    /// (digest 000 §8.2 test 4). A converged field with a valid bias has none.
    pub fn interior_local_minima(&self) -> Vec<(usize, usize)> {
        let (w, h) = (self.width(), self.height());
        let p = &self.potential;
        let mut found = Vec::new();
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                let i = y * w + x;
                if self.kinds[i] != CellKind::Free {
                    continue;
                }
                let c = p[i];
                let n = [p[i + 1], p[i - 1], p[i + w], p[i - w]];
                if n.iter().all(|v| c <= *v) && n.iter().any(|v| *v != c) {
                    found.push((x, y));
                }
            }
        }
        found
    }

    /// A copy of this field in another precision.
    pub fn convert<U: Potential>(&self) -> Field<U> {
        Field {
            geometry: self.geometry,
            kinds: self.kinds.clone(),
            potential: self
                .potential
                .iter()
                .map(|p| U::from_f64(p.to_f64()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(w: usize, h: usize) -> Field<f64> {
        Field::new(GridGeometry::new(DVec2::ZERO, 1.0, w, h).unwrap(), 1.0)
    }

    #[test]
    fn new_field_has_an_obstacle_border_and_free_interior() {
        let f = field(5, 4);
        assert_eq!(f.kind(0, 2), Some(CellKind::Obstacle));
        assert_eq!(f.kind(4, 1), Some(CellKind::Obstacle));
        assert_eq!(f.kind(2, 3), Some(CellKind::Obstacle));
        assert_eq!(f.kind(2, 2), Some(CellKind::Free));
        assert_eq!(f.kind(5, 0), None);
    }

    #[test]
    fn border_cells_cannot_be_freed_and_out_of_bounds_is_an_error() {
        let mut f = field(5, 5);
        assert_eq!(
            f.set_free(0, 2, 0.5),
            Err(FieldError::FreeBorderCell { x: 0, y: 2 })
        );
        assert!(matches!(
            f.set_goal(9, 9),
            Err(FieldError::CellOutOfBounds { .. })
        ));
        assert!(f.set_fixed(2, 2, 1.5).is_err());
        // A free cell must start finite (found by the field fuzz target: SOR kept a NaN start).
        for bad in [f64::NAN, f64::INFINITY] {
            assert!(matches!(
                f.set_free(2, 2, bad),
                Err(FieldError::NonFinite { .. })
            ));
        }
        assert_eq!(f.potential(2, 2), Some(1.0), "unchanged");
        assert!(f.set_goal(4, 2).is_ok(), "border goals are allowed");
        assert!(f.has_goal());
    }

    #[test]
    fn translating_carries_values_and_moves_the_origin() {
        let mut f = field(6, 6);
        let w = 6;
        for (i, p) in f.potentials_mut().iter_mut().enumerate() {
            *p = i as f64 / 100.0;
        }
        f.translate_by_cells(IVec2::new(1, 0), 0.9);
        assert_eq!(f.potential(2, 2), Some((2 * w + 3) as f64 / 100.0));
        assert_eq!(f.potential(4, 2), Some((2 * w + 5) as f64 / 100.0));
        assert_eq!(f.geometry().origin(), DVec2::new(1.0, 0.0));
        f.translate_by_cells(IVec2::new(0, -5), 0.9);
        assert_eq!(f.potential(2, 2), Some(0.9));
    }

    /// A 7×5 field of scattered potentials with an obstacle and a fixed cell inside.
    fn mixed_field() -> Field<f64> {
        let mut f = field(7, 5);
        for (i, p) in f.potentials_mut().iter_mut().enumerate() {
            *p = (i as f64 * 0.37).fract();
        }
        f.set_obstacle(2, 2).unwrap();
        f.set_fixed(4, 1, 0.25).unwrap();
        f
    }

    /// The in-place translation gives what copying from a snapshot of the old values gives,
    /// for every offset direction (including ones larger than the grid) and with fixed cells.
    #[test]
    fn translating_in_place_matches_copying_from_the_old_values() {
        for dy in -7..=7 {
            for dx in -7..=7 {
                let mut f = mixed_field();
                let old = f.clone();
                f.translate_by_cells(IVec2::new(dx, dy), 0.9);
                for y in 0..5i32 {
                    for x in 0..7i32 {
                        let (sx, sy) = (x + dx, y + dy);
                        let want = if old.kind(x as usize, y as usize) != Some(CellKind::Free) {
                            old.potential(x as usize, y as usize)
                        } else if (0..7).contains(&sx) && (0..5).contains(&sy) {
                            old.potential(sx as usize, sy as usize)
                        } else {
                            Some(0.9)
                        };
                        assert_eq!(f.potential(x as usize, y as usize), want, "({dx}, {dy})");
                    }
                }
            }
        }
    }

    /// A row stamped through bits sets exactly the cells of the set bits, as `set_obstacle`
    /// would, stops at the grid's edge and counts what it set.
    #[test]
    fn a_row_of_bits_stamps_what_cell_by_cell_stamping_does() {
        let mut f = mixed_field();
        f.set_goal(3, 2).unwrap();
        for bits in [0u64, 1, 0b1011_0110, u64::MAX, 1 << 63, 0b100_0001] {
            for x0 in 0..8 {
                for y in 0..6 {
                    let mut rows = f.clone();
                    let mut cells = f.clone();
                    let n = rows.set_obstacles_by_bits(x0, y, bits);
                    let m = (0..64)
                        .filter(|k| (bits >> k) & 1 == 1)
                        .filter(|k| cells.set_obstacle(x0 + k, y).is_ok())
                        .count();
                    assert_eq!(n, m, "{bits:b} at ({x0}, {y})");
                    assert_eq!(rows.kinds(), cells.kinds());
                    assert_eq!(rows.potentials(), cells.potentials());
                }
            }
        }
    }

    /// One pass gives what translating and then reopening give, kinds, potentials and origin,
    /// for every offset direction, with goals on the border and fixed and obstacle cells inside.
    #[test]
    fn translating_and_reopening_in_one_pass_matches_the_two_passes() {
        for dy in -7..=7 {
            for dx in -7..=7 {
                let mut f = mixed_field();
                f.set_goal(6, 2).unwrap();
                f.set_goal(3, 0).unwrap();
                let mut two = f.clone();
                two.translate_by_cells(IVec2::new(dx, dy), 0.9);
                two.reopen_interior(0.8);
                f.translate_and_reopen(IVec2::new(dx, dy), 0.9, 0.8);
                assert_eq!(f.kinds(), two.kinds(), "({dx}, {dy})");
                assert_eq!(f.potentials(), two.potentials(), "({dx}, {dy})");
                assert_eq!(f.geometry(), two.geometry());
            }
        }
    }

    #[test]
    fn descent_points_down_a_linear_ramp() {
        let mut f = field(7, 7);
        for y in 0..7 {
            for x in 0..7 {
                f.potentials_mut()[y * 7 + x] = 0.1 * x as f64;
            }
        }
        let d = f.descent_at_cell(3, 3);
        assert!((d - DVec2::new(-0.1, 0.0)).length() < 1e-12);
        let d = f.descent_at(f.geometry().cell_centre(3, 3) + DVec2::new(0.3, 0.2));
        assert!((d - DVec2::new(-0.1, 0.0)).length() < 1e-12);
        let p = f.potential_at(f.geometry().cell_centre(3, 3) + DVec2::new(0.5, 0.0));
        assert!((p.unwrap() - 0.35).abs() < 1e-12);
        assert_eq!(f.descent_at(DVec2::new(-50.0, 0.0)), DVec2::ZERO);
    }

    /// A one-cell obstacle below the point, with low potential beyond it: the plain descent
    /// reads the far side through the obstacle's own difference and points into it; the free
    /// descent keeps to the free cells' differences and points up, away from it.
    #[test]
    fn free_descent_does_not_look_through_a_thin_obstacle() {
        let mut f = field(7, 7);
        for y in 0..7 {
            for x in 0..7 {
                // Falling upwards (1 - p grows by 1e-6 a row) above row 2 ...
                f.potentials_mut()[y * 7 + x] = 1.0 - 1e-6 * y as f64;
            }
        }
        // ... and far lower below it, behind a one-cell obstacle at (3, 2).
        f.potentials_mut()[7 + 3] = 0.5;
        f.set_obstacle(3, 2).unwrap();
        let point = f.geometry().cell_centre(3, 3) - DVec2::new(0.0, 0.4);
        assert!(f.descent_at(point).y < 0.0, "{}", f.descent_at(point));
        let free = f.free_descent_at(point);
        assert!(free.y > 0.0 && free.x.abs() < 1e-12, "{free}");
        // Away from obstacles the two agree.
        let open = f.geometry().cell_centre(3, 4) + DVec2::new(0.2, 0.3);
        assert!((f.free_descent_at(open) - f.descent_at(open)).length() < 1e-15);
    }

    /// What reopening must give: free cells keep their potential bit for bit, every other
    /// interior cell restarts at `value`, and the border closes at 1.
    fn reopened_by_select<T: Potential>(f: &Field<T>, value: f64) -> Vec<T> {
        let (w, h) = (f.width(), f.height());
        (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                if f.geometry().is_border(x, y) {
                    T::ONE
                } else if f.kinds()[i] == CellKind::Free {
                    f.potentials()[i]
                } else {
                    T::from_f64(value)
                }
            })
            .collect()
    }

    proptest::proptest! {
        /// Rows of bits stamp the same cells and count the same whichever build runs (sixteen
        /// cells at a time with AVX-512 on `f64` fields, one write per bit otherwise), for any
        /// grid, start, rows running past the grid (and past `usize::MAX`), and bits past its
        /// edge. On a CPU without AVX-512 (F, BW, VL) both sides take the per-bit writes, and
        /// only the clipping is checked.
        #[test]
        fn rows_of_bits_stamp_the_same_in_every_build(
            w in 3usize..40,
            h in 3usize..20,
            x0 in 0usize..42,
            y0 in 0usize..22,
            rows in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..24),
            narrow in proptest::prelude::any::<bool>(),
            seed in 0u64..1_000,
        ) {
            let geometry = GridGeometry::new(DVec2::ZERO, 1.0, w, h).unwrap();
            let mut f = Field::<f64>::new(geometry, 0.5);
            for (i, p) in f.potentials_mut().iter_mut().enumerate() {
                *p = ((i as u64 * 7919 + seed) % 1000) as f64 / 1000.0;
            }
            let _ = f.set_goal(w / 2, h / 2);
            let _ = f.set_fixed(1, 1, 0.25);
            // Mostly rows of up to sixteen cells, as local maps stamp them.
            let rows: Vec<u64> = if narrow {
                rows.iter().map(|b| b & 0xffff).collect()
            } else {
                rows
            };
            let mut fast = f.clone();
            let mut slow = f.clone();
            // Starts near `usize::MAX` must not wrap round to the first rows.
            let y0 = if y0 == 21 { usize::MAX - 1 } else { y0 };
            let n = fast.set_obstacles_by_bit_rows(x0, y0, &rows);
            let m = slow.set_obstacles_by_bit_rows_scalar(x0, y0, &rows);
            proptest::prop_assert_eq!(n, m);
            if y0 >= h {
                proptest::prop_assert_eq!(n, 0);
            }
            proptest::prop_assert_eq!(fast.kinds(), slow.kinds());
            let bits = |v: &[f64]| v.iter().map(|p| p.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(fast.potentials()), bits(slow.potentials()));
        }
    }

    proptest::proptest! {
        /// Reopening computes its select with arithmetic (see `reopen`); over any kinds and
        /// any potentials in [0, 1] (0, 1, subnormals and values a rounding away from them
        /// included) it gives the plain select's bits, in both precisions.
        #[test]
        fn reopening_keeps_free_potentials_bit_for_bit(
            w in 3usize..20,
            h in 3usize..20,
            cells in proptest::collection::vec((0u8..4, 0usize..8, 0.0f64..=1.0), 400),
            value in 0.0f64..=1.0,
        ) {
            let special = [0.0, 1.0, f64::MIN_POSITIVE / 8.0, 1e-300, 1.0 - f64::EPSILON / 2.0];
            let geometry = GridGeometry::new(DVec2::ZERO, 1.0, w, h).unwrap();
            let mut f64_map = Field::<f64>::new(geometry, 0.5);
            let mut f32_map = Field::<f32>::new(geometry, 0.5);
            for (i, &(kind, pick, p)) in cells.iter().take(w * h).enumerate() {
                let p = special.get(pick).copied().unwrap_or(p);
                let kind = [CellKind::Free, CellKind::Obstacle, CellKind::Goal, CellKind::Fixed]
                    [usize::from(kind)];
                f64_map.kinds[i] = kind;
                f64_map.potential[i] = p;
                f32_map.kinds[i] = kind;
                f32_map.potential[i] = if pick == 2 { f32::MIN_POSITIVE / 8.0 } else { p as f32 };
            }
            let want = reopened_by_select(&f64_map, value);
            f64_map.reopen_interior(value);
            let bits = |v: &[f64]| v.iter().map(|p| p.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(f64_map.potentials()), bits(&want));
            let want = reopened_by_select(&f32_map, value);
            f32_map.reopen_interior(value);
            let bits = |v: &[f32]| v.iter().map(|p| p.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(f32_map.potentials()), bits(&want));
            let reopened = f64_map.kinds().iter().enumerate().all(|(i, k)| {
                let border = f64_map.geometry().is_border(i % w, i / w);
                *k == if border { CellKind::Obstacle } else { CellKind::Free }
            });
            proptest::prop_assert!(reopened, "a kind was not reset");
        }

        /// The descent at a point is the bilinear interpolation of the four surrounding cell
        /// descents, bit for bit, inside the grid and along its edges.
        #[test]
        fn descent_at_a_point_interpolates_the_cell_descents(
            w in 3usize..9,
            h in 3usize..9,
            seed in 0u64..1000,
            gx in -0.5f64..9.0,
            gy in -0.5f64..9.0,
        ) {
            let mut f = field(w, h);
            for (i, p) in f.potentials_mut().iter_mut().enumerate() {
                *p = ((i as u64 * 7919 + seed * 104_729) % 1000) as f64 * 1e-3;
            }
            let point = f.geometry().cell_centre(0, 0) + DVec2::new(gx, gy);
            let g = f.geometry().world_to_grid(point);
            let max = DVec2::new(w as f64 - 1.0, h as f64 - 1.0);
            let want = if g.x >= -0.5 && g.y >= -0.5 && g.x <= max.x + 0.5 && g.y <= max.y + 0.5 {
                let g = g.clamp(DVec2::ZERO, max);
                let x0 = (floor_i32(g.x).max(0) as usize).min(w - 2);
                let y0 = (floor_i32(g.y).max(0) as usize).min(h - 2);
                let (fx, fy) = (g.x - x0 as f64, g.y - y0 as f64);
                let d = |x, y| f.descent_at_cell(x, y);
                d(x0, y0)
                    .lerp(d(x0 + 1, y0), fx)
                    .lerp(d(x0, y0 + 1).lerp(d(x0 + 1, y0 + 1), fx), fy)
            } else {
                DVec2::ZERO
            };
            proptest::prop_assert_eq!(f.descent_at(point), want);
        }

        /// Over the corners that are not obstacles, the free descent is the bilinear weights'
        /// mean of their cell descents; with every corner an obstacle it is the plain descent.
        #[test]
        fn free_descent_leaves_out_obstacle_corners(
            w in 3usize..9,
            h in 3usize..9,
            seed in 0u64..1000,
            mask in 0u64..u64::MAX,
            gx in -0.5f64..9.0,
            gy in -0.5f64..9.0,
        ) {
            let mut f = field(w, h);
            for (i, p) in f.potentials_mut().iter_mut().enumerate() {
                *p = ((i as u64 * 7919 + seed * 104_729) % 1000) as f64 * 1e-3;
            }
            for y in 1..h - 1 {
                for x in 1..w - 1 {
                    if mask >> ((y * w + x) % 64) & 1 == 1 {
                        f.set_obstacle(x, y).unwrap();
                    }
                }
            }
            let point = f.geometry().cell_centre(0, 0) + DVec2::new(gx, gy);
            let got = f.free_descent_at(point);
            let g = f.geometry().world_to_grid(point);
            let max = DVec2::new(w as f64 - 1.0, h as f64 - 1.0);
            if !(g.x >= -0.5 && g.y >= -0.5 && g.x <= max.x + 0.5 && g.y <= max.y + 0.5) {
                proptest::prop_assert_eq!(got, DVec2::ZERO);
                return Ok(());
            }
            let g = g.clamp(DVec2::ZERO, max);
            let x0 = (floor_i32(g.x).max(0) as usize).min(w - 2);
            let y0 = (floor_i32(g.y).max(0) as usize).min(h - 2);
            let (fx, fy) = (g.x - x0 as f64, g.y - y0 as f64);
            let corners = [
                (x0, y0, (1.0 - fx) * (1.0 - fy)),
                (x0 + 1, y0, fx * (1.0 - fy)),
                (x0, y0 + 1, (1.0 - fx) * fy),
                (x0 + 1, y0 + 1, fx * fy),
            ];
            let (mut sum, mut total) = (DVec2::ZERO, 0.0);
            for (x, y, weight) in corners {
                if f.kind(x, y) != Some(CellKind::Obstacle) {
                    sum += f.descent_at_cell(x, y) * weight;
                    total += weight;
                }
            }
            let want = if total > 0.0 { sum / total } else { f.descent_at(point) };
            proptest::prop_assert!((got - want).length() < 1e-12, "{got} against {want}");
        }
    }

    #[test]
    fn local_minimum_detector_finds_a_planted_pit() {
        let mut f = field(7, 7);
        f.potentials_mut()[3 * 7 + 3] = 0.5;
        assert_eq!(f.interior_local_minima(), vec![(3, 3)]);
        f.reset_free(1.0);
        assert!(
            f.interior_local_minima().is_empty(),
            "a flat plateau is not a minimum"
        );
    }
}
