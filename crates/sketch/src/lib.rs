//! # crowdfield_sketch
//!
//! The sketch planner of seed 004 chapter 5: what the user draws steers agents and groups
//! (the specification is digest 004 §4, §5.1, §10 and §12 tests 8–10 in
//! `shared/research/seed-004-group-formations.md` beside the repository). Plain Rust over the
//! field, steering and group cores; no Bevy.
//!
//! - [`stroke`]: strokes captured from the pointer, simplified, resampled, edited.
//! - [`field`]: Mode B, a stroke turned into a field whose descent follows it (two-stage masked
//!   relaxation, both ways of joining, sub-goals where f64 runs out).
//!
//! ## Modules
pub mod error;
pub mod field;
pub mod follow;
pub mod formation;
pub mod sketch;
pub mod stroke;

pub use error::SketchError;
pub use field::{BuildStats, ChainCell, Joining, Leg, Segment, StrokeField, StrokeFieldSettings};
pub use follow::{Route, RouteId, RouteKind, Routes, WaypointSettings};
pub use formation::{apply_formation_stroke, formation_from_stroke};
pub use sketch::{Sketch, SketchStroke, StrokeKind};
pub use stroke::{Stroke, StrokePoint, farthest_from};

/// Identifies a stroke of a [`Sketch`](crate::sketch::Sketch).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrokeId(pub u32);

impl std::fmt::Display for StrokeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stroke {}", self.0)
    }
}
