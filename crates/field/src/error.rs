//! Typed errors for everything the field core validates at its boundary.

use thiserror::Error;

/// What went wrong when a field, a bias or a shape was built or used.
///
/// Every public entry point that takes user data validates it and returns one of these
/// instead of panicking. Variants carry the offending value so the caller can report it.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum FieldError {
    /// `|ε|·max(|v_x|, |v_y|)` exceeds 2, so some stencil weight would be negative and the
    /// discrete maximum principle (no interior local minima) would no longer hold
    /// (digest 000 §2.6, digest 004 §2.3).
    #[error("bias out of range: |ε|·max|v_i| = {product} > 2 (ε = {epsilon}, v = ({vx}, {vy}))")]
    BiasOutOfRange {
        /// The offending ε.
        epsilon: f64,
        /// x component of the offending v.
        vx: f64,
        /// y component of the offending v.
        vy: f64,
        /// `|ε|·max(|v_x|, |v_y|)`.
        product: f64,
    },
    /// A number that must be finite was NaN or infinite.
    #[error("non-finite {what}: {value}")]
    NonFinite {
        /// Which input it was.
        what: &'static str,
        /// The value received.
        value: f64,
    },
    /// A grid needs at least 3×3 cells: one free cell inside the closed border ring.
    #[error("grid of {width}×{height} cells is too small (at least 3×3)")]
    GridTooSmall {
        /// Requested width in cells.
        width: usize,
        /// Requested height in cells.
        height: usize,
    },
    /// A grid of more than [`MAX_GRID_CELLS`](crate::MAX_GRID_CELLS) cells: a world too large
    /// for its cell size (the sizes are as asked, so they may exceed what a `usize` holds).
    #[error(
        "grid of {width:.0}×{height:.0} cells is too large (at most {max} cells): use larger \
         cells or a smaller world"
    )]
    GridTooLarge {
        /// Requested width in cells.
        width: f64,
        /// Requested height in cells.
        height: f64,
        /// The most cells a grid may have.
        max: usize,
    },
    /// Cell sizes must be finite and strictly positive.
    #[error("cell size must be finite and > 0, got {0}")]
    BadCellSize(f64),
    /// A cell coordinate outside the grid.
    #[error("cell ({x}, {y}) is outside the {width}×{height} grid")]
    CellOutOfBounds {
        /// Column.
        x: i64,
        /// Row.
        y: i64,
        /// Grid width.
        width: usize,
        /// Grid height.
        height: usize,
    },
    /// The outermost ring is the closed border of the domain and cannot be made free.
    #[error("cell ({x}, {y}) is on the closed border ring and cannot be free")]
    FreeBorderCell {
        /// Column.
        x: usize,
        /// Row.
        y: usize,
    },
    /// A fixed (Dirichlet) value must lie in [0, 1].
    #[error("fixed potential {0} is outside [0, 1]")]
    FixedValueOutOfRange(f64),
    /// Solving needs at least one goal cell (p = 0); without one every free cell tends to 1.
    #[error("the field has no goal cell")]
    NoGoal,
    /// A polygon must have at least three vertices and be convex.
    #[error("polygon is not convex or has fewer than 3 distinct vertices")]
    NotConvex,
    /// A shape with a negative radius, thickness or half-extent.
    #[error("negative or non-finite extent {0}")]
    BadExtent(f64),
    /// Two fields that must share a geometry do not.
    #[error("grid geometries differ")]
    GeometryMismatch,
}
