//! Typed errors of the group crate.

use thiserror::Error;

use crowdfield_field::FieldError;
use crowdfield_steer::{AgentId, SteerError};

use crate::GroupId;

/// Why a group, an order or a setting was rejected. Nothing is changed when one is returned.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum GroupError {
    /// An error of the steering core (an unknown agent or goal, a goal inside obstacles, a
    /// position that is not finite…).
    #[error(transparent)]
    Steer(#[from] SteerError),
    /// A group id never given, or whose group was removed.
    #[error("unknown {0}")]
    UnknownGroup(GroupId),
    /// A group needs at least one member.
    #[error("a group needs at least one member")]
    EmptyGroup,
    /// An agent is already a member of a group (of this one, or another).
    #[error("{agent} is already a member of {group}")]
    AlreadyInGroup {
        /// The agent.
        agent: AgentId,
        /// The group it belongs to.
        group: GroupId,
    },
    /// An agent is not a member of the group.
    #[error("{agent} is not a member of {group}")]
    NotAMember {
        /// The agent.
        agent: AgentId,
        /// The group.
        group: GroupId,
    },
    /// A formation with too few points for its members: none at all, or one point for more
    /// than one member (the seed's straight extension needs a last segment).
    #[error("a formation of {points} point(s) cannot give {members} member(s) a slot each")]
    FormationTooShort {
        /// Points in the formation.
        points: usize,
        /// Members to place.
        members: usize,
    },
    /// A formation that cannot be used as given.
    #[error("bad formation: {0}")]
    BadFormation(&'static str),
    /// Group map sides are in [`MIN_MAP_SIDE`](crate::MIN_MAP_SIDE)..=
    /// [`MAX_MAP_SIDE`](crate::MAX_MAP_SIDE) cells.
    #[error("group map side {0} is out of range")]
    BadMapSide(usize),
    /// The group's formation (or, without one, its members) does not fit inside its map.
    #[error("a group map of {side} cells cannot hold the group: it needs {needed}")]
    MapTooSmall {
        /// The map's side, in cells.
        side: usize,
        /// The side it would need.
        needed: usize,
    },
    /// A setting out of range.
    #[error("bad group settings: {0}")]
    BadSettings(&'static str),
    /// An order that cannot be followed (a point that is not finite, a leader who is one of
    /// the group's own members…).
    #[error("bad order: {0}")]
    BadOrder(&'static str),
}

impl From<FieldError> for GroupError {
    fn from(e: FieldError) -> Self {
        GroupError::Steer(e.into())
    }
}
