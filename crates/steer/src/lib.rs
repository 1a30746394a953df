//! # crowdfield_steer
//!
//! Agent steering on per-agent BVP local maps (seeds 000 and 001): a plain-Rust crowd that the
//! Bevy plugin drives, tested and benchmarked without Bevy.
//!
//! Every planner step each agent
//!
//! 1. reads the descent of its goal's harmonic **global map** (shared by all agents heading
//!    there, solved once with multigrid; sub-goals recover flat regions),
//! 2. picks its **behaviour** program for (v, ε) — the `clear` slot, or the `ahead` slot while
//!    something is within dvis ahead ([`behaviour`]),
//! 3. re-centres its **local map** (warm start), stamps static obstacles and neighbours, projects
//!    the intermediate goal on the border and relaxes with its own bias ([`local_map`]),
//! 4. turns the local descent into a heading and a speed with a heading rule and a speed law
//!    ([`motion`]),
//! 5. commits its step through a collision guard, in id order ([`crowd`]).
//!
//! Agents may also search a world they do not know for a hidden target ([`search`]).
//!
//! Units: positions in world units (metres), steps per planner step. Sign convention (from
//! `crowdfield_field`): with ε > 0 the path bends towards +v in world space.

pub mod behaviour;
pub mod crowd;
mod disc_raster;
pub mod error;
pub mod local_map;
pub mod motion;
pub mod preset;
pub mod search;
mod static_raster;

pub use behaviour::{Behaviour, BehaviourSlots, Frame, SEED_OMEGA};
pub use crowd::{
    Agent, AgentGrid, AgentId, AgentParams, AgentState, ArrivalAction, CONTACT_TOLERANCE, Crowd,
    CrowdSettings, Goal, GoalId, Guidance, HandedStep, ObstacleId, Steering, StepPhase, StepReport,
};
pub use error::SteerError;
pub use local_map::{
    LocalMap, LocalMapSettings, LocalPrecision, MAX_LOCAL_SWEEPS, NeighbourStamping, SAME_WAY_COS,
    SAME_WAY_PACE, SAME_WAY_STALL,
};
pub use motion::{HeadingRule, SpeedLaw, decide};
pub use preset::Preset;
pub use search::SearchSettings;
