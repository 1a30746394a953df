//! Typed errors of the marker crate.

use thiserror::Error;

use crowdfield_field::FieldError;
use crowdfield_steer::SteerError;

/// Why a marker set, an edit or a painted region was refused. Nothing is changed when one is
/// returned.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum MarkerError {
    /// An error of the steering core.
    #[error(transparent)]
    Steer(#[from] SteerError),
    /// A shape that is not valid (not finite, negative sizes, a polygon that is not convex).
    #[error(transparent)]
    Field(#[from] FieldError),
    /// A position or size that is not finite.
    #[error("{0} must be finite")]
    NonFinite(&'static str),
    /// A density of zero, negative, not finite, or above [`crate::MAX_DENSITY`].
    #[error("a marker density must lie in (0, {max}] per m², not {density}", max = crate::MAX_DENSITY)]
    BadDensity {
        /// The density asked for, markers per m².
        density: f64,
    },
    /// An edit would make the set hold more than [`crate::MAX_MARKERS`] markers.
    #[error("{wanted} markers asked for; a set holds at most {max}", max = crate::MAX_MARKERS)]
    TooManyMarkers {
        /// How many the set would hold.
        wanted: u64,
    },
    /// A goal off the walkable ground (outside the world, in an obstacle, on forbidden
    /// ground): no tree could reach it.
    #[error("the goal ({x}, {y}) is not on walkable ground")]
    GoalNotWalkable {
        /// Where.
        x: f64,
        /// Where.
        y: f64,
    },
    /// The terrain graph joins no node near the start to one near the goal.
    #[error("no route on the terrain graph")]
    NoRoute,
    /// An order that cannot be followed (a target that is the agent itself, an unknown mask).
    #[error("bad order: {0}")]
    BadOrder(&'static str),
    /// A terrain mesh that cannot give markers (empty, degenerate triangles, bad indices).
    #[error("bad terrain mesh: {0}")]
    BadMesh(&'static str),
    /// A house that cannot be walked (rooms without doors, doors joining no rooms).
    #[error("bad house: {0}")]
    BadHouse(&'static str),
    /// A setting out of range.
    #[error("bad marker setting: {0}")]
    BadSetting(&'static str),
}
