//! Messages the plugin writes in [`CrowdfieldSystems::Events`](crate::CrowdfieldSystems::Events).

use bevy::prelude::*;

use crowdfield_steer::SteerError;

/// An agent reached its last goal.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub struct AgentArrived {
    /// The agent. One that leaves on arrival
    /// ([`ArrivalAction::Despawn`](crate::prelude::ArrivalAction)) is despawned in the same
    /// step, so its entity is gone when the message is read.
    pub entity: Entity,
    /// Where it stood after the step in which it arrived, in world units: for an agent that
    /// leaves, the last place it was.
    pub position: Vec2,
}

/// An agent reached a goal that was not its last and walks on to the next.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentReachedWaypoint {
    /// The agent.
    pub entity: Entity,
    /// Index of the goal it walks to now.
    pub next: usize,
}

/// An agent gave up a target whose time limit ([`AgentGoals::time_limits`](crate::AgentGoals))
/// ran out: it walks on to the next target, or, after the last, stops without arriving.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub struct AgentTimedOut {
    /// The agent. One that leaves after its last target
    /// ([`ArrivalAction::Despawn`](crate::prelude::ArrivalAction)) and gave that target up is
    /// despawned in the same step, so its entity is gone when the message is read.
    pub entity: Entity,
    /// Where it stood after the step in which it gave the target up, in world units.
    pub position: Vec2,
    /// Index of the target it gave up.
    pub target: usize,
}

/// An agent made no progress for `stuck_after` planner steps: it came no nearer its goal (down
/// the field it follows, or in distance), however far it walked (a walker circling round a full goal is stuck;
/// see [`CrowdSettings::stuck_after`](crate::steer::CrowdSettings::stuck_after)). Written once
/// when it becomes stuck; it keeps trying, and may be written again after it progresses.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentStuck {
    /// The agent.
    pub entity: Entity,
}

/// An agent has no route to its goal (walled in, or the goal is): it holds its position.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentUnreachable {
    /// The agent.
    pub entity: Entity,
}

/// An agent met a flat region of its global map and recovered with a sub-goal.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentRecovered {
    /// The agent.
    pub entity: Entity,
}

/// An agent's components were rejected: it stays [`AgentState::Rejected`](crate::AgentState)
/// until its goals, style or Transform change.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct AgentRejected {
    /// The agent.
    pub entity: Entity,
    /// Why.
    pub error: SteerError,
    /// The other agent the error names, where it names one
    /// ([`SteerError::OverlapsAgent`], whose `other` is the crowd's internal id): its entity.
    pub other: Option<Entity>,
}

/// The [`CrowdfieldSettings`](crate::CrowdfieldSettings) were rejected: bounds that are not
/// finite, a global cell size or inflation out of range, or a world too large for its global
/// cells (more than [`MAX_GRID_CELLS`](crowdfield_field::MAX_GRID_CELLS) cells). No crowd is
/// built from them: a crowd built from earlier settings steps on with those, and without one
/// nothing steps until the settings change. Written in
/// [`CrowdfieldSystems::SceneInput`](crate::CrowdfieldSystems) at the first planner step that
/// meets them, and not again until settings have been accepted in between.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct SettingsRejected {
    /// Why.
    pub error: SteerError,
}

/// An obstacle (a [`CrowdObstacle`](crate::CrowdObstacle) or a collider) was rejected; the
/// crowd goes on without it.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct ObstacleRejected {
    /// The obstacle's entity.
    pub entity: Entity,
    /// Why.
    pub error: SteerError,
}
