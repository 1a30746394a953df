//! Grid geometry: how cells map to world space.
//!
//! A grid of `width × height` square cells of side `cell_size` metres. Cell `(x, y)` covers the
//! world square `[origin + (x, y)·cell_size, origin + (x + 1, y + 1)·cell_size)`; its centre is
//! half a cell further. Column `x` grows along world +x and row `y` along world **+y** (up, as in
//! Bevy's 2D world), so the kernel's "north" neighbour `(x, y + 1)` lies in world +y. Storage is
//! row-major: index `y·width + x`.

use glam::{DVec2, IVec2};

use crate::FieldError;

/// The most cells a grid may have: 2²⁶ (67,108,864), a world of 4 km × 4 km at 0.5 m cells,
/// whose `f64` map with its cell kinds takes 576 MiB. Larger grids are refused with
/// [`FieldError::GridTooLarge`] rather than left to fail, or abort the process, when their
/// memory is allocated.
pub const MAX_GRID_CELLS: usize = 1 << 26;

/// Size, placement and resolution of a grid in world space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridGeometry {
    origin: DVec2,
    cell_size: f64,
    width: usize,
    height: usize,
}

impl GridGeometry {
    /// A grid whose cell `(0, 0)` has its lower-left corner at `origin`.
    ///
    /// Errors if the grid is smaller than 3×3 (one free cell inside the border ring) or larger
    /// than [`MAX_GRID_CELLS`], the cell size is not finite and positive, or the origin is not
    /// finite.
    pub fn new(
        origin: DVec2,
        cell_size: f64,
        width: usize,
        height: usize,
    ) -> Result<Self, FieldError> {
        if width < 3 || height < 3 {
            return Err(FieldError::GridTooSmall { width, height });
        }
        check_cells(width as f64, height as f64)?;
        if !(cell_size.is_finite() && cell_size > 0.0) {
            return Err(FieldError::BadCellSize(cell_size));
        }
        check_finite("origin.x", origin.x)?;
        check_finite("origin.y", origin.y)?;
        Ok(Self {
            origin,
            cell_size,
            width,
            height,
        })
    }

    /// A grid covering the world rectangle `[min, max]` plus one border ring of cells around it,
    /// so that the closed border of the grid lies outside the rectangle.
    pub fn covering(min: DVec2, max: DVec2, cell_size: f64) -> Result<Self, FieldError> {
        for (what, v) in [
            ("min.x", min.x),
            ("min.y", min.y),
            ("max.x", max.x),
            ("max.y", max.y),
        ] {
            check_finite(what, v)?;
        }
        if !(cell_size.is_finite() && cell_size > 0.0) {
            return Err(FieldError::BadCellSize(cell_size));
        }
        let size = (max - min).max(DVec2::ZERO);
        // Counted in f64 first: a huge world over tiny cells must not wrap a usize.
        let (width, height) = ((size.x / cell_size).ceil(), (size.y / cell_size).ceil());
        check_cells(width + 2.0, height + 2.0)?;
        let (width, height) = (width as usize + 2, height as usize + 2);
        Self::new(
            min - DVec2::splat(cell_size),
            cell_size,
            width.max(3),
            height.max(3),
        )
    }

    /// A grid of `side × side` cells centred on `centre` (the centre cell's centre is `centre`
    /// when `side` is odd), as used for per-agent local maps.
    pub fn centred(centre: DVec2, cell_size: f64, side: usize) -> Result<Self, FieldError> {
        let half = side as f64 * cell_size * 0.5;
        Self::new(centre - DVec2::splat(half), cell_size, side, side)
    }

    /// World position of the lower-left corner of cell `(0, 0)`.
    pub fn origin(&self) -> DVec2 {
        self.origin
    }

    /// Side of one cell in world units.
    pub fn cell_size(&self) -> f64 {
        self.cell_size
    }

    /// Cells along x.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Cells along y.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.width * self.height
    }

    /// Always false: a grid has at least 3×3 cells.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The same grid moved so that its origin is `origin`.
    pub fn with_origin(mut self, origin: DVec2) -> Self {
        self.origin = origin;
        self
    }

    /// Row-major index of an in-bounds cell.
    #[inline]
    pub fn index(&self, x: usize, y: usize) -> usize {
        debug_assert!(x < self.width && y < self.height);
        y * self.width + x
    }

    /// Whether a (possibly negative) cell coordinate lies inside the grid.
    #[inline]
    pub fn contains_cell(&self, cell: IVec2) -> bool {
        cell.x >= 0
            && cell.y >= 0
            && (cell.x as usize) < self.width
            && (cell.y as usize) < self.height
    }

    /// Whether a cell lies on the outermost ring (the closed border).
    #[inline]
    pub fn is_border(&self, x: usize, y: usize) -> bool {
        x == 0 || y == 0 || x + 1 == self.width || y + 1 == self.height
    }

    /// The cell containing a world point; may be outside the grid.
    pub fn world_to_cell(&self, point: DVec2) -> IVec2 {
        let local = (point - self.origin) / self.cell_size;
        IVec2::new(floor_i32(local.x), floor_i32(local.y))
    }

    /// Continuous cell coordinates of a world point: cell `(x, y)`'s centre maps to
    /// `(x as f64, y as f64)`.
    pub fn world_to_grid(&self, point: DVec2) -> DVec2 {
        (point - self.origin) / self.cell_size - DVec2::splat(0.5)
    }

    /// World position of a cell's centre.
    pub fn cell_centre(&self, x: usize, y: usize) -> DVec2 {
        self.origin + (DVec2::new(x as f64, y as f64) + DVec2::splat(0.5)) * self.cell_size
    }

    /// World position of a continuous grid coordinate (inverse of [`Self::world_to_grid`]).
    pub fn grid_to_world(&self, grid: DVec2) -> DVec2 {
        self.origin + (grid + DVec2::splat(0.5)) * self.cell_size
    }

    /// World-space lower-left and upper-right corners of the whole grid.
    pub fn world_bounds(&self) -> (DVec2, DVec2) {
        let size = DVec2::new(self.width as f64, self.height as f64) * self.cell_size;
        (self.origin, self.origin + size)
    }
}

/// `v.floor() as i32` (saturating, NaN to 0) without calling `floor`, which is a libm call on
/// the baseline x86-64 target (no SSE4.1 rounding): a cast that truncates, one down for
/// negative non-integers.
#[inline]
pub fn floor_i32(v: f64) -> i32 {
    let t = v as i32;
    // Far below i32::MIN the cast already saturated.
    t.saturating_sub(i32::from(f64::from(t) > v))
}

/// `v.floor() as i64` (saturating, NaN to 0), as [`floor_i32`].
#[inline]
pub fn floor_i64(v: f64) -> i64 {
    let t = v as i64;
    // Beyond 2^52 every f64 is an integer, so `t` is exact wherever it did not saturate.
    t.saturating_sub(i64::from(t as f64 > v))
}

/// Refuses a `width × height` grid of more than [`MAX_GRID_CELLS`] cells.
fn check_cells(width: f64, height: f64) -> Result<(), FieldError> {
    if width * height > MAX_GRID_CELLS as f64 {
        return Err(FieldError::GridTooLarge {
            width,
            height,
            max: MAX_GRID_CELLS,
        });
    }
    Ok(())
}

pub(crate) fn check_finite(what: &'static str, value: f64) -> Result<f64, FieldError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(FieldError::NonFinite { what, value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The cast floors are `floor` then a saturating cast, for any bits: negative and
        /// positive non-integers, integers, ±0, far values, infinities and NaN.
        #[test]
        fn cast_floors_are_floor_then_cast(bits: u64, small in -1e4f64..1e4) {
            for v in [f64::from_bits(bits), small, small.trunc(), -small.trunc()] {
                proptest::prop_assert_eq!(floor_i32(v), v.floor() as i32, "{}", v);
                proptest::prop_assert_eq!(floor_i64(v), v.floor() as i64, "{}", v);
            }
        }
    }

    #[test]
    fn cast_floors_at_the_edges() {
        for v in [
            0.0,
            -0.0,
            -0.5,
            0.5,
            -1.0,
            f64::from(i32::MIN) - 0.5,
            f64::from(i32::MAX) + 0.5,
            -9.3e18,
            9.3e18,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -4503599627370495.5,
        ] {
            assert_eq!(floor_i32(v), v.floor() as i32, "{v}");
            assert_eq!(floor_i64(v), v.floor() as i64, "{v}");
        }
    }

    #[test]
    fn world_and_cell_coordinates_round_trip() {
        let g = GridGeometry::new(DVec2::new(-2.0, 3.0), 0.5, 10, 8).unwrap();
        let c = g.cell_centre(4, 6);
        assert_eq!(c, DVec2::new(0.25, 6.25));
        assert_eq!(g.world_to_cell(c), IVec2::new(4, 6));
        assert_eq!(g.world_to_grid(c), DVec2::new(4.0, 6.0));
        assert_eq!(g.grid_to_world(DVec2::new(4.0, 6.0)), c);
        assert_eq!(g.world_to_cell(DVec2::new(-2.1, 3.0)), IVec2::new(-1, 0));
        // Far-away and non-finite points saturate instead of overflowing.
        assert_eq!(
            g.world_to_cell(DVec2::new(-1e12, 1e12)),
            IVec2::new(i32::MIN, i32::MAX)
        );
        assert_eq!(g.world_to_cell(DVec2::NAN), IVec2::ZERO);
    }

    #[test]
    fn row_y_grows_along_world_up() {
        let g = GridGeometry::new(DVec2::ZERO, 1.0, 5, 5).unwrap();
        assert!(g.cell_centre(2, 3).y > g.cell_centre(2, 2).y);
        assert!(g.cell_centre(3, 2).x > g.cell_centre(2, 2).x);
    }

    #[test]
    fn odd_centred_grid_puts_the_centre_cell_on_the_point() {
        let p = DVec2::new(7.3, -1.1);
        let g = GridGeometry::centred(p, 0.59, 15).unwrap();
        assert!((g.cell_centre(7, 7) - p).length() < 1e-12);
    }

    #[test]
    fn covering_adds_a_border_ring() {
        let g = GridGeometry::covering(DVec2::ZERO, DVec2::new(10.0, 5.0), 1.0).unwrap();
        assert_eq!((g.width(), g.height()), (12, 7));
        assert_eq!(g.world_to_cell(DVec2::new(0.5, 0.5)), IVec2::new(1, 1));
    }

    #[test]
    fn bad_geometry_is_a_typed_error() {
        assert_eq!(
            GridGeometry::new(DVec2::ZERO, 1.0, 2, 9),
            Err(FieldError::GridTooSmall {
                width: 2,
                height: 9
            })
        );
        assert!(matches!(
            GridGeometry::new(DVec2::ZERO, 0.0, 9, 9),
            Err(FieldError::BadCellSize(_))
        ));
        assert!(matches!(
            GridGeometry::new(DVec2::new(f64::NAN, 0.0), 1.0, 9, 9),
            Err(FieldError::NonFinite { .. })
        ));
    }

    #[test]
    fn grids_past_the_cell_limit_are_refused_before_anything_is_allocated() {
        // 8192 × 8192 is exactly the limit; one row more is past it.
        assert!(GridGeometry::new(DVec2::ZERO, 1.0, 8192, 8192).is_ok());
        assert_eq!(
            GridGeometry::new(DVec2::ZERO, 1.0, 8192, 8193),
            Err(FieldError::GridTooLarge {
                width: 8192.0,
                height: 8193.0,
                max: MAX_GRID_CELLS
            })
        );
        // A world of 30 m × 10⁹ m, and one of 10³⁰⁰ m over nanometre cells, whose cell counts
        // do not fit a usize: refused, not wrapped.
        let tall = GridGeometry::covering(DVec2::ZERO, DVec2::new(30.0, 1e9), 0.5);
        assert!(matches!(tall, Err(FieldError::GridTooLarge { height, .. }) if height > 1e9));
        let vast = GridGeometry::covering(DVec2::splat(-1e300), DVec2::splat(1e300), 1e-9);
        assert!(matches!(vast, Err(FieldError::GridTooLarge { .. })));
        let message = tall.unwrap_err().to_string();
        assert!(message.contains("too large"), "{message}");
    }
}
