//! # bevy_crowdfield
//!
//! The Bevy plugin of crowdfield: crowds steered by boundary-value-problem potential fields
//! (seeds 000 and 001), driven from components.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_crowdfield::prelude::*;
//!
//! fn main() {
//!     App::new()
//!         .add_plugins((MinimalPlugins, CrowdfieldPlugins))
//!         .insert_resource(CrowdfieldSettings {
//!             world_min: Vec2::ZERO,
//!             world_max: Vec2::new(40.0, 20.0),
//!             ..default()
//!         })
//!         .add_systems(Startup, |mut commands: Commands| {
//!             commands.spawn((
//!                 CrowdObstacle::fixed(Shape::Aabb {
//!                     min: DVec2::new(19.0, 0.0),
//!                     max: DVec2::new(21.0, 14.0),
//!                 }),
//!                 Transform::IDENTITY,
//!             ));
//!             commands.spawn((
//!                 CrowdAgent,
//!                 Transform::from_xyz(2.0, 10.0, 0.0),
//!                 AgentGoals::point(Vec2::new(38.0, 10.0)),
//!             ));
//!         })
//!         .run();
//! }
//! ```
//!
//! ## What a planner step does
//!
//! Planner steps run in `FixedUpdate` at [`CrowdfieldSettings::planner_hz`] (the seeds plan
//! 2–3.5 times a second, one footstep each), in the public [`CrowdfieldSystems`] sets:
//!
//! 1. **SceneInput**: [`CrowdObstacle`]s and rapier colliders become static shapes (written
//!    into every goal's global map, re-solved around edits a few maps per step) or moving
//!    shapes (stamped into local maps); [`CrowdAgent`]s register, change goals or style, leave.
//! 2. **Guidance**: global maps waiting for a re-solve after an edit.
//! 3. **Sensing**: each agent reads its global descent, picks its behaviour slot and (v, ε),
//!    and stamps neighbours and obstacles into its local map; one that an obstacle overlaps (a
//!    moving one ran onto it, a static one was added over it) plans a step out of it instead.
//! 4. **Relaxation**: the local maps, batched across SIMD lanes and threads.
//! 5. **Decision**: heading rule and speed law on the local descent.
//! 6. **Motion**: steps committed through the collision guard; [`AgentPlan`],
//!    [`DesiredVelocity`] and [`AgentState`] written.
//! 7. **Events**: [`AgentArrived`], [`AgentReachedWaypoint`], [`AgentTimedOut`], [`AgentStuck`],
//!    [`AgentUnreachable`], [`AgentRecovered`]; [`AgentRejected`], [`ObstacleRejected`] and
//!    [`SettingsRejected`] come from SceneInput.
//!
//! Every frame, [`CrowdfieldSystems::Interpolate`] moves agents' Transforms between the two
//! positions of the last step ([`MotionMode::Transform`], the default). With
//! [`MotionMode::External`] the game moves agents itself from [`DesiredVelocity`], and the
//! plugin reads their Transform back before each step.
//!
//! ## Bad input
//!
//! Nothing a game puts on an entity makes a system panic. An agent whose components are
//! rejected (ε out of range, a NaN goal, a start inside a wall or on another agent, a step
//! longer than a local cell) gets [`AgentState::Rejected`] and an [`AgentRejected`] message
//! with the typed error, and takes part again once its goals, style or Transform change. A bad
//! obstacle gets an [`ObstacleRejected`] message and is left out. Settings no crowd can be built
//! from (a world too large for its global cells, bounds that are not finite) get a
//! [`SettingsRejected`] message, and the crowd built from the last accepted ones, if any,
//! steps on.
//!
//! ## Conventions
//!
//! World units are metres; x and y of the Transform are the ground plane (2D). With ε > 0 a
//! path bends towards +v in world space. Agents are top-level entities: their start is their
//! Transform. Crowd state is deterministic: the same scenario gives the same trajectories on
//! any thread count.
//!
//! ## Features
//!
//! - `rapier` (default): read bevy_rapier2d colliders ([`CrowdfieldRapierPlugin`]).
//! - `groups` (default): groups in formation on moving group maps ([`group`]).
//! - `markers` (default): markers over the walkable ground, edited with brushes ([`marker`]).
//! - `sketch` (default): groups and single agents along drawn paths ([`GroupOrder::FollowPath`],
//!   [`paths`]); brush strokes on the markers ([`MarkerBrush`]).

mod components;
#[cfg(feature = "groups")]
pub mod group;
#[cfg(feature = "markers")]
pub mod marker;
#[cfg(feature = "markers")]
pub mod marker_agents;
mod messages;
#[cfg(feature = "sketch")]
pub mod paths;
mod plugin;
#[cfg(feature = "rapier")]
mod rapier;
pub mod scenario;
mod settings;
#[cfg(feature = "markers")]
pub mod terrain;
mod world;

use bevy::app::{PluginGroup, PluginGroupBuilder};

pub use components::{
    AgentGoals, AgentPlan, AgentState, AgentStyle, CrowdAgent, CrowdObstacle, DesiredVelocity,
    GoalTarget, ObstacleKind,
};
#[cfg(feature = "groups")]
pub use group::{
    CrowdGroup, CrowdfieldGroupPlugin, GroupArrived, GroupFormationBroken, GroupFormationReached,
    GroupMemberLost, GroupMembers, GroupOrder, GroupRejected, GroupStatus, GroupWorld,
    KeepTogether, MemberOf,
};
#[cfg(feature = "sketch")]
pub use marker::{BrushRejected, MarkerBrush};
#[cfg(feature = "markers")]
pub use marker::{
    CrowdfieldMarkerPlugin, MarkerFile, MarkerFileError, MarkerFileLoader, MarkerGround,
    MarkerGroundFile, MarkerWorld, MarkersRejected,
};
#[cfg(feature = "markers")]
pub use marker_agents::{
    MarkerAgents, MarkerOrderRejected, MarkerSteering, MarkerSteeringSettings,
};
pub use messages::{
    AgentArrived, AgentReachedWaypoint, AgentRecovered, AgentRejected, AgentStuck, AgentTimedOut,
    AgentUnreachable, ObstacleRejected, SettingsRejected,
};
#[cfg(feature = "sketch")]
pub use paths::{AgentPath, CrowdfieldPathPlugin, PathRejected, PathSettings, PathWorld};
pub use plugin::{CrowdfieldPlugin, CrowdfieldSystems, PlannerClock, planner_due};
#[cfg(feature = "rapier")]
pub use rapier::{CrowdfieldRapierPlugin, collider_shapes};
pub use scenario::{Scenario, ScenarioError, ScenarioPlugin, ScenarioRoot};
#[cfg(feature = "markers")]
pub use scenario::{ScenarioMarkerOrder, ScenarioMarkers, ScenarioSpray};
pub use settings::{CrowdfieldSettings, GroundHeight, GroundPlane, MotionMode};
#[cfg(feature = "markers")]
pub use terrain::{
    BioAgents, BioOrderRejected, BioSteering, BioSteeringSettings, CrowdfieldTerrainPlugin,
    FromTerrain, TerrainFileError, TerrainFileLoader, TerrainGround, TerrainGroundFile,
    TerrainRejected, TerrainWorld,
};
pub use world::CrowdWorld;

/// The steering core, re-exported for behaviours, motion laws and direct crowd access.
pub use crowdfield_steer as steer;

/// The field core, re-exported for shapes and fields.
pub use crowdfield_field as field;

/// The group core, re-exported for formations, settings and measures (with the `groups`
/// feature).
#[cfg(feature = "groups")]
pub use crowdfield_group as groups;

/// Marker sets and painted terrain, re-exported (with the `markers` feature).
#[cfg(feature = "markers")]
pub use crowdfield_markers as markers;

/// The sketch planner, re-exported for strokes, stroke fields and routes (with the `sketch`
/// feature).
#[cfg(feature = "sketch")]
pub use crowdfield_sketch as sketch;

/// Everything a game needs in one import.
pub mod prelude {
    pub use crate::{
        AgentArrived, AgentGoals, AgentPlan, AgentReachedWaypoint, AgentRecovered, AgentRejected,
        AgentState, AgentStuck, AgentStyle, AgentTimedOut, AgentUnreachable, CrowdAgent,
        CrowdObstacle, CrowdWorld, CrowdfieldPlugins, CrowdfieldSettings, CrowdfieldSystems,
        DesiredVelocity, GoalTarget, GroundHeight, GroundPlane, MotionMode, ObstacleKind,
        ObstacleRejected, Scenario, ScenarioRoot, SettingsRejected,
    };
    #[cfg(feature = "sketch")]
    pub use crate::{AgentPath, BrushRejected, MarkerBrush, PathRejected, PathSettings, PathWorld};
    #[cfg(feature = "markers")]
    pub use crate::{
        BioAgents, BioOrderRejected, BioSteering, BioSteeringSettings, TerrainGround,
        TerrainGroundFile, TerrainRejected, TerrainWorld,
    };
    #[cfg(feature = "markers")]
    pub use crate::{
        MarkerAgents, MarkerFile, MarkerGround, MarkerGroundFile, MarkerOrderRejected,
        MarkerSteering, MarkerSteeringSettings, MarkerWorld, MarkersRejected,
    };
    pub use bevy::math::DVec2;
    pub use crowdfield_field::Shape;
    #[cfg(feature = "groups")]
    pub use crowdfield_group::{
        Formation, GroupSettings, Resampling, SlotAssignment, Template as FormationTemplate,
    };
    #[cfg(feature = "markers")]
    pub use crowdfield_markers::Terrain;
    #[cfg(feature = "sketch")]
    pub use crowdfield_sketch::{Brush, BrushKind};
    #[cfg(feature = "sketch")]
    pub use crowdfield_sketch::{Joining, Stroke, formation_from_stroke};

    #[cfg(feature = "groups")]
    pub use crate::{
        CrowdGroup, GroupArrived, GroupFormationBroken, GroupFormationReached, GroupMemberLost,
        GroupMembers, GroupOrder, GroupRejected, GroupStatus, GroupWorld, KeepTogether, MemberOf,
    };
    pub use crowdfield_steer::{
        ArrivalAction, Behaviour, BehaviourSlots, Frame, HeadingRule, LocalMapSettings,
        NeighbourStamping, Preset, SpeedLaw,
    };
}

/// All crowdfield plugins: [`CrowdfieldPlugin`], [`ScenarioPlugin`], with the `groups` feature
/// [`CrowdfieldGroupPlugin`], with the `sketch` feature
/// [`CrowdfieldPathPlugin`], with the `markers` feature [`CrowdfieldMarkerPlugin`] and
/// [`CrowdfieldTerrainPlugin`] and with the
/// `rapier` feature [`CrowdfieldRapierPlugin`]. Works with `MinimalPlugins` (add Bevy's `AssetPlugin`
/// before it for scenario files) as well as `DefaultPlugins`.
#[derive(Debug, Default, Clone, Copy)]
pub struct CrowdfieldPlugins;

impl PluginGroup for CrowdfieldPlugins {
    fn build(self) -> PluginGroupBuilder {
        let group = PluginGroupBuilder::start::<Self>()
            .add(CrowdfieldPlugin)
            .add(ScenarioPlugin);
        #[cfg(feature = "groups")]
        let group = group.add(CrowdfieldGroupPlugin);
        #[cfg(feature = "sketch")]
        let group = group.add(CrowdfieldPathPlugin);
        #[cfg(feature = "markers")]
        let group = group
            .add(CrowdfieldMarkerPlugin)
            .add(CrowdfieldTerrainPlugin);
        #[cfg(feature = "rapier")]
        let group = group.add(CrowdfieldRapierPlugin);
        group
    }
}
