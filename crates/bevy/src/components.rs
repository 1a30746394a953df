//! Components a game puts on entities, and the ones the plugin writes back.
//!
//! Inputs: [`CrowdAgent`] (with [`AgentGoals`] and [`AgentStyle`]) and [`CrowdObstacle`].
//! Outputs: [`AgentState`], [`DesiredVelocity`] and [`AgentPlan`].

use bevy::prelude::*;

use crowdfield_field::Shape;
use crowdfield_steer::{
    ArrivalAction, Behaviour, BehaviourSlots, HeadingRule, LocalMapSettings, SpeedLaw,
};

/// Marks an entity as a crowd agent. Its start position is its [`Transform`]'s x and y when
/// the plugin first sees it (agents are meant to be top-level entities).
///
/// Requires [`AgentGoals`] (empty: the agent stands), [`AgentStyle`], and the outputs
/// [`AgentState`], [`DesiredVelocity`] and [`AgentPlan`].
#[derive(Component, Debug, Clone, Copy, Default, Reflect)]
#[reflect(Component, Default)]
#[require(
    Transform,
    AgentGoals,
    AgentStyle,
    AgentState,
    DesiredVelocity,
    AgentPlan
)]
pub struct CrowdAgent;

/// A goal: where an agent is going.
#[derive(Debug, Clone, PartialEq, Reflect, serde::Serialize, serde::Deserialize)]
pub enum GoalTarget {
    /// A point; the goal region is a disc of
    /// [`CrowdfieldSettings::point_goal_radius`](crate::CrowdfieldSettings::point_goal_radius).
    Point(Vec2),
    /// Any region, in world coordinates.
    Region(Shape),
}

impl GoalTarget {
    /// The goal region in world coordinates.
    pub fn shape(&self, point_radius: f64) -> Shape {
        match self {
            GoalTarget::Point(p) => Shape::Disc {
                centre: p.as_dvec2(),
                radius: point_radius,
            },
            GoalTarget::Region(shape) => shape.clone(),
        }
    }
}

/// The goals an agent visits in order. Replacing the list (or any field) re-routes the agent
/// from its current position at the next planner step, starting with the first target.
///
/// Every goal gets one converged global map shared by all agents heading to the same region,
/// so prefer a few shared goal regions over one point per agent.
#[derive(Component, Debug, Clone, PartialEq, Reflect, serde::Serialize, serde::Deserialize)]
#[reflect(Component, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AgentGoals {
    /// Targets in order.
    pub targets: Vec<GoalTarget>,
    /// Distance to a goal region that counts as reached.
    pub arrival_radius: f64,
    /// What happens after the last target: stop (an obstacle for others), walk on into the
    /// target's region to make room and stop there, or despawn the entity.
    pub on_arrival: ArrivalAction,
    /// Seconds the agent may spend on each target, by index (missing or `None`: no limit;
    /// finite and non-negative, or the agent is rejected). When one runs out the agent gives
    /// that target up ([`AgentTimedOut`](crate::AgentTimedOut)) and walks on to the next; after
    /// the last it stops (state `Arrived`, or despawned per `on_arrival`) without an
    /// [`AgentArrived`](crate::AgentArrived) message. SteerSuite's timed goals work this way.
    pub time_limits: Vec<Option<f64>>,
}

impl Default for AgentGoals {
    fn default() -> Self {
        Self {
            targets: Vec::new(),
            arrival_radius: 0.5,
            on_arrival: ArrivalAction::Stop,
            time_limits: Vec::new(),
        }
    }
}

impl AgentGoals {
    /// One point goal, stopping there.
    pub fn point(target: Vec2) -> Self {
        Self::points([target])
    }

    /// Point goals visited in order, stopping at the last.
    pub fn points(targets: impl IntoIterator<Item = Vec2>) -> Self {
        Self {
            targets: targets.into_iter().map(GoalTarget::Point).collect(),
            ..Default::default()
        }
    }

    /// Despawn the entity after the last goal.
    pub fn then_despawn(mut self) -> Self {
        self.on_arrival = ArrivalAction::Despawn;
        self
    }

    /// After the last goal, walk on into its region towards its centre and stop there
    /// ([`ArrivalAction::Settle`]), so that walkers who arrive later find the way in open.
    /// The agent is `Arrived` (and its [`AgentArrived`](crate::AgentArrived) message written)
    /// when it first reaches the goal; its [`AgentPlan`] goes on moving it while it settles.
    pub fn then_settle(mut self) -> Self {
        self.on_arrival = ArrivalAction::Settle;
        self
    }
}

/// How an agent steers: its behaviour program for (v, ε), heading inertia, speed law, size,
/// speed and local map. Changing the behaviour applies at the next planner step; changing
/// the radius, speed, heading rule, speed law, local map or seed re-registers the agent at its
/// current position (fresh local map, goal queue started over from the first target).
/// `initial_heading` is read at registration only.
#[derive(Component, Debug, Clone, PartialEq, Reflect, serde::Serialize, serde::Deserialize)]
#[reflect(Component, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AgentStyle {
    /// Disc radius (world units).
    pub radius: f64,
    /// Top speed (world units per second). One planner step moves at most
    /// `max_speed / planner_hz`, which must not exceed one local-map cell.
    pub max_speed: f64,
    /// Behaviour slots: (v, ε) while clear and while something is within dvis ahead.
    pub behaviour: BehaviourSlots,
    /// Heading rule (inertia).
    pub heading: HeadingRule,
    /// Speed law.
    pub speed_law: SpeedLaw,
    /// Local map: side, cell size, sweeps per step.
    pub local_map: LocalMapSettings,
    /// Facing at spawn (zero: the first descent, at full speed).
    pub initial_heading: Vec2,
    /// Seed of the agent's own random stream; `None` derives one from its start position, so
    /// replays do not depend on entity ids.
    pub seed: Option<u64>,
}

impl Default for AgentStyle {
    fn default() -> Self {
        Self {
            radius: 0.25,
            max_speed: 1.2,
            behaviour: BehaviourSlots::default(),
            heading: HeadingRule::default(),
            speed_law: SpeedLaw::default(),
            local_map: LocalMapSettings::default(),
            initial_heading: Vec2::ZERO,
            seed: None,
        }
    }
}

impl AgentStyle {
    /// The same style with one behaviour in both slots.
    pub fn with_behaviour(mut self, behaviour: Behaviour) -> Self {
        self.behaviour = BehaviourSlots::single(behaviour);
        self
    }

    /// The same style with another radius.
    pub fn with_radius(mut self, radius: f64) -> Self {
        self.radius = radius;
        self
    }

    /// The same style with another top speed.
    pub fn with_max_speed(mut self, max_speed: f64) -> Self {
        self.max_speed = max_speed;
        self
    }
}

/// Where an agent stands, written by the plugin after every planner step.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Reflect)]
#[reflect(Component, Default, PartialEq, Hash)]
pub enum AgentState {
    /// Not registered yet (it will be at the next planner step).
    #[default]
    Pending,
    /// Walking.
    Moving,
    /// Stopped this step (turning, or held by the collision guard).
    Waiting,
    /// At its last goal.
    Arrived,
    /// No progress towards its goal for `stuck_after` planner steps; still trying.
    Stuck,
    /// No route to its goal; it holds its position and checks again every step.
    Unreachable,
    /// Its components were rejected (an [`AgentRejected`](crate::AgentRejected) message says
    /// why); it takes part again once its goals, style or Transform change.
    Rejected,
}

/// The velocity the planner wants for the agent over the current planner step (world units
/// per second). With [`MotionMode::External`](crate::MotionMode::External) the game applies it.
#[derive(Component, Debug, Clone, Copy, PartialEq, Default, Deref, DerefMut, Reflect)]
#[reflect(Component, Default, PartialEq)]
pub struct DesiredVelocity(pub Vec2);

/// The last planner step of an agent: where it went from and to, and why.
#[derive(Component, Debug, Clone, Copy, PartialEq, Default, Reflect)]
#[reflect(Component, Default, PartialEq)]
pub struct AgentPlan {
    /// Position before the step.
    pub from: Vec2,
    /// Position after the step (the Transform reaches it when the next step is due).
    pub to: Vec2,
    /// Unit heading after the step.
    pub heading: Vec2,
    /// Speed factor the speed law gave (0 = stopped to turn).
    pub speed_factor: f32,
    /// Index into [`AgentGoals::targets`] of the goal being walked to.
    pub goal_index: usize,
}

/// Whether an obstacle stays put or moves.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Reflect, serde::Serialize, serde::Deserialize,
)]
#[reflect(Default, PartialEq)]
pub enum ObstacleKind {
    /// Written into the global maps; moving or changing it re-solves them around the edit.
    #[default]
    Static,
    /// Stamped into local maps at its pose of each planner step (doors, carts); global maps
    /// ignore it.
    Moving,
}

/// A plain obstacle for games without rapier: a shape in the entity's own frame, placed by
/// its Transform (translation, rotation about z, scale).
#[derive(Component, Debug, Clone, PartialEq, Reflect)]
#[reflect(Component)]
#[require(Transform)]
pub struct CrowdObstacle {
    /// The shape, in the entity's frame.
    pub shape: Shape,
    /// Static or moving.
    pub kind: ObstacleKind,
}

impl CrowdObstacle {
    /// A static obstacle.
    pub fn fixed(shape: Shape) -> Self {
        Self {
            shape,
            kind: ObstacleKind::Static,
        }
    }

    /// A moving obstacle.
    pub fn moving(shape: Shape) -> Self {
        Self {
            shape,
            kind: ObstacleKind::Moving,
        }
    }
}
