//! # crowdfield_group
//!
//! Groups in formation on moving BVP group maps (seed 004 chapters 5–6; the specification is
//! digest 004 §5, §6, §11 and §12, which docs/references.md maps to the seed's sections; the
//! method and the choices are in docs/groups.md). Plain Rust over the field and steering cores; no Bevy.
//!
//! A group is a set of the crowd's agents that decide their steps together. Its members stay
//! agents of the [`Crowd`](crowdfield_steer::Crowd) (one spatial index, one collision guard,
//! one set of states and ids for everyone): only their decision differs. Instead of each
//! relaxing a local map of its own, the group relaxes **one map** that moves with it, with the
//! members stamped in as obstacles, and each member blends that map's descent with the pull to
//! its **formation slot**:
//!
//! ```text
//! Δr = υ_max [ μ Ψ(|ζ − φ_prev|) φ  +  (1 − μ) Ψ(|ω − ω_prev|) min(‖z‖, 1) ω ]      (Eq 5.1)
//! ```
//!
//! μ is 1 next to obstacles, the map's border and other members, and falls to 0 a few rings
//! away ([`GroupSettings::bands`]): in the open the formation holds, in a corridor the map's
//! descent files the members through, and the formation forms again beyond it. The map itself
//! moves as one agent along the group's guidance: a crowd goal's global map, a map from outside
//! (a drawn stroke), or a leader.
//!
//! ```
//! use crowdfield_field::Shape;
//! use crowdfield_group::{Formation, GroupSettings, Groups, Template};
//! use crowdfield_steer::{AgentParams, Crowd, CrowdSettings};
//! use glam::DVec2;
//!
//! let mut crowd = Crowd::new(
//!     CrowdSettings { max: DVec2::new(40.0, 20.0), ..CrowdSettings::default() },
//!     Vec::new(),
//! )?;
//! let members: Vec<_> = (0..5)
//!     .map(|i| crowd.spawn(AgentParams {
//!         position: DVec2::new(4.0, 8.0 + i as f64),
//!         ..AgentParams::default()
//!     }))
//!     .collect::<Result<_, _>>()?;
//! let mut groups = Groups::new();
//! let wedge = Some(Formation::template(Template::Wedge));
//! let group = groups.create(&mut crowd, &members, GroupSettings::default(), wedge)?;
//! groups.move_to(&mut crowd, group, Shape::Disc { centre: DVec2::new(34.0, 10.0), radius: 1.0 })?;
//! for _ in 0..200 {
//!     groups.step(&mut crowd);
//! }
//! assert!(groups.group(group).unwrap().has_arrived());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Modules
//!
//! - [`formation`]: templates, point lists, the seed's resampling and a Catmull–Rom option.
//! - [`assign`]: which member takes which slot: the seed's fixed order, or ours that keeps
//!   members' paths from crossing when an order turns the formation round.
//! - [`map`]: the group map: re-centring, stamping, the intermediate goal with its fallback,
//!   bands, incremental restamping.
//! - [`group`]: one group's step: layer 2 (the map moves as one agent) and layer 1 (Eq 5.1).
//! - [`world`]: [`Groups`], the table of every group, orders, and the step with the crowd.
//! - [`measure`]: formation error, cohesion, splits, arrival spread.
//!
//! Sign convention (the field core's): with ε > 0 a group's paths bend towards +v in world
//! space. Results do not depend on the number of threads.

pub mod assign;
mod error;
pub mod formation;
pub mod group;
pub mod map;
pub mod measure;
mod settings;
pub mod world;

pub use assign::SlotAssignment;
pub use error::GroupError;
pub use formation::{Formation, Resampling, Template};
pub use group::{FLAT_DESCENT, Group, GroupMeasures, Guide, Member, OBSTACLE_GROWTH};
pub use map::{GroupMap, MAX_MAP_SIDE, MIN_MAP_SIDE};
pub use settings::{DEFAULT_BANDS, GroupSettings};
pub use world::{GroupEvent, GroupId, GroupReport, Groups, LostReason, check_group};

/// What a game spawns and configures.
pub mod prelude {
    pub use crate::{
        Formation, GroupError, GroupEvent, GroupId, GroupSettings, Groups, Resampling,
        SlotAssignment, Template,
    };
}
