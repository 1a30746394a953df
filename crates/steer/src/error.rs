//! Typed errors of the steering core.

use thiserror::Error;

use crowdfield_field::FieldError;

use crate::crowd::{AgentId, GoalId, ObstacleId};

/// Why an agent, a goal or a setting was rejected.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum SteerError {
    /// A field-level error: bias out of range, non-finite number, bad shape.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// Local maps need an odd side in 5..=101 cells.
    #[error("local map side {0} must be odd and in 5..=101")]
    BadLocalMapSide(usize),
    /// Local maps take at most [`crate::MAX_LOCAL_SWEEPS`] sweeps a step.
    #[error("{0} sweeps a step is more than the {max} a local map takes", max = crate::MAX_LOCAL_SWEEPS)]
    TooManySweeps(usize),
    /// A view cone needs an aperture in (0, 2π] radians.
    #[error("view angle {0} must be in (0, 2π] radians")]
    BadViewAngle(f64),
    /// A search needs a finite sensor range above zero and an unknown value in [0, 1).
    #[error("bad search settings: {0}")]
    BadSearch(&'static str),
    /// A position outside the crowd's world bounds.
    #[error("position ({x}, {y}) is outside the world bounds")]
    OutOfBounds {
        /// x.
        x: f64,
        /// y.
        y: f64,
    },
    /// The agent's disc overlaps a static obstacle.
    #[error("agent at ({x}, {y}) overlaps a static obstacle")]
    InsideObstacle {
        /// x.
        x: f64,
        /// y.
        y: f64,
    },
    /// The agent's disc overlaps another agent.
    #[error("agent at ({x}, {y}) overlaps {other}")]
    OverlapsAgent {
        /// x.
        x: f64,
        /// y.
        y: f64,
        /// The other agent.
        other: AgentId,
    },
    /// Every cell of the goal lies inside (inflated) obstacles.
    #[error("goal lies entirely inside obstacles")]
    GoalBlocked,
    /// A goal id that was never added, or whose goal was removed.
    #[error("unknown {0}")]
    UnknownGoal(GoalId),
    /// A goal that agents still walk to cannot be removed.
    #[error("{goal} is still the goal of {agent}")]
    GoalInUse {
        /// The goal.
        goal: GoalId,
        /// The first agent (lowest id) whose goal queue holds it.
        agent: AgentId,
    },
    /// An obstacle id that does not exist (never added, or removed).
    #[error("unknown {0}")]
    UnknownObstacle(ObstacleId),
    /// An agent id that does not exist (never spawned, or removed).
    #[error("unknown {0}")]
    UnknownAgent(AgentId),
    /// A step handed over for an agent steered from outside that it cannot take: not finite,
    /// or longer than its `max_step`.
    #[error("step ({x}, {y}) handed to {agent} is not finite or longer than its max step")]
    BadHandedStep {
        /// The agent.
        agent: AgentId,
        /// x of the displacement.
        x: f64,
        /// y of the displacement.
        y: f64,
    },
    /// A step was handed over for an agent that steers itself
    /// ([`Steering::LocalMap`](crate::Steering::LocalMap)).
    #[error("{0} steers itself; only agents with external steering take handed steps")]
    NotSteeredFromOutside(AgentId),
    /// A goal whose guidance does not come from outside cannot take [`crate::Guidance`].
    #[error("{0} was not added with guidance from outside")]
    NotGuidedFromOutside(GoalId),
    /// Every goal id (2³² of them, never reused) has been given out.
    #[error("no goal id left to give")]
    TooManyGoals,
    /// Every agent id (2³² of them, never reused) has been given out.
    #[error("no agent id left to give")]
    TooManyAgents,
    /// An agent's step would be longer than one local cell and could jump over a stamped agent.
    #[error("max step {max_step} exceeds one local cell ({cell_size})")]
    StepTooLong {
        /// Requested max step.
        max_step: f64,
        /// Local cell size.
        cell_size: f64,
    },
    /// A shape the crowd cannot represent (a collider kind without an obstacle equivalent).
    #[error("unsupported shape: {0}")]
    UnsupportedShape(&'static str),
}
