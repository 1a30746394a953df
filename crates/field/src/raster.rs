//! Raster placeholder.
/// Coverage.
pub enum Coverage { Centre }
/// Shape.
pub enum Shape { Disc }
