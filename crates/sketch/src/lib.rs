//! # crowdfield_sketch
//!
//! The sketch planner of seed 004 chapter 5: what the user draws steers walkers and groups (the
//! specification is digest 004 §4, §5.1, §10 and §12 tests 8–10, which docs/references.md
//! maps to the seed's sections; docs/sketch.md states the method and the choices). Plain Rust over the
//! field, steering and group cores; no Bevy.
//!
//! - **Mode A** (digest 004 §4.1): points along a stroke as successive intermediate goals,
//!   shared by a subset of walkers ([`Routes::waypoints`]).
//! - **Mode B** (digest 004 §4.2): a field whose descent follows the stroke, from a two-stage
//!   masked relaxation ([`StrokeField`]), cut into sub-goals where f64 runs out (§10), followed
//!   by walkers ([`Routes::follow`]) or by a group's map ([`Routes::follow_with_group`]).
//! - **Formation strokes** (digest 004 §5.1): a drawn shape as a group's formation
//!   ([`formation_from_stroke`]).
//! - **Brushes** (digest 002 §3 A1, digest 003 §2.2): a stroke dragged with a brush sprays or
//!   erases markers, or paints terrain, on a `crowdfield_markers::MarkerSet` ([`Brush`]).
//!
//! ```
//! use crowdfield_sketch::{Joining, Routes, Stroke, StrokeFieldSettings};
//! use crowdfield_steer::{AgentParams, AgentState, Crowd, CrowdSettings};
//! use glam::DVec2;
//!
//! let mut crowd = Crowd::new(
//!     CrowdSettings { max: DVec2::new(40.0, 20.0), ..CrowdSettings::default() },
//!     Vec::new(),
//! )?;
//! let walker = crowd.spawn(AgentParams { position: DVec2::new(3.0, 4.0), ..AgentParams::default() })?;
//! // An L drawn from near the walker to the far corner.
//! let stroke = Stroke::from_positions([
//!     DVec2::new(4.0, 4.0),
//!     DVec2::new(30.0, 4.0),
//!     DVec2::new(30.0, 16.0),
//! ])?;
//! let mut routes = Routes::new();
//! routes.follow(&mut crowd, &[walker], &stroke, Joining::NearestPoint, StrokeFieldSettings::default())?;
//! for _ in 0..400 {
//!     crowd.step();
//! }
//! assert_eq!(crowd.agent(walker).unwrap().state(), AgentState::Arrived);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Modules
//!
//! - [`brush`]: brushes for markers and terrain.
//! - [`stroke`]: strokes captured from the pointer, simplified, rounded, resampled, edited.
//! - [`sketch`]: every stroke drawn, with branches, undo and redo.
//! - [`field`]: Mode B's stroke fields.
//! - [`follow`]: orders along strokes for walkers and groups.
//! - [`formation`]: drawn shapes as formations.

pub mod brush;
pub mod error;
pub mod field;
pub mod follow;
pub mod formation;
pub mod sketch;
pub mod stroke;

pub use brush::{Brush, BrushKind};
pub use error::SketchError;
pub use field::{BuildStats, ChainCell, Joining, Leg, Segment, StrokeField, StrokeFieldSettings};
pub use follow::{Route, RouteId, RouteKind, Routes, WaypointSettings};
pub use formation::{apply_formation_stroke, formation_from_stroke};
pub use sketch::{Sketch, SketchStroke, StrokeKind};
pub use stroke::{Stroke, StrokePoint, farthest_from};

/// Identifies a stroke of a [`Sketch`].
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrokeId(pub u32);

impl std::fmt::Display for StrokeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stroke {}", self.0)
    }
}
