//! Typed errors of the sketch crate.

use thiserror::Error;

use crowdfield_field::FieldError;
use crowdfield_group::GroupError;
use crowdfield_steer::SteerError;

use crate::StrokeId;

/// Why a stroke, a field or an order was refused. Nothing is changed when one is returned.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum SketchError {
    /// An error of the steering core (an unknown agent or goal, a shape that is not finite…).
    #[error(transparent)]
    Steer(#[from] SteerError),
    /// An error of the group crate (a formation stroke for a group that cannot take it…).
    #[error(transparent)]
    Group(#[from] GroupError),
    /// An error of the marker crate (a brush's density or radius out of range…).
    #[error(transparent)]
    Markers(#[from] crowdfield_markers::MarkerError),
    /// A drawn point that is not finite.
    #[error("a drawn point must be finite")]
    NonFinite,
    /// A drawn point earlier than the one before it.
    #[error("a drawn point cannot be earlier than the one before it")]
    TimeGoesBack,
    /// An empty stroke where one with points is needed.
    #[error("the stroke has no points")]
    EmptyStroke,
    /// No part of the stroke lies on walkable ground inside the world.
    #[error("no part of the stroke lies on walkable ground inside the world")]
    NothingWalkable,
    /// A stroke id never given, or whose stroke was removed.
    #[error("unknown {0}")]
    UnknownStroke(StrokeId),
    /// A setting out of range.
    #[error("bad sketch setting: {0}")]
    BadSetting(&'static str),
    /// Nothing to undo or redo.
    #[error("nothing to {0}")]
    NothingToUndo(&'static str),
}

impl From<FieldError> for SketchError {
    fn from(e: FieldError) -> Self {
        SketchError::Steer(e.into())
    }
}
