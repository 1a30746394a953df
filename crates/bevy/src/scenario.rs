//! Scenario files: a world, its obstacles and its agents as a Bevy asset (RON or JSON).
//!
//! ```ron
//! (
//!     name: "corridor",
//!     bounds: (min: (0.0, 0.0), max: (30.0, 6.0)),
//!     settings: (planner_hz: Some(3.5)),
//!     obstacles: [
//!         (shape: Aabb(min: (10.0, 0.0), max: (11.0, 2.0))),
//!         (shape: Disc(centre: (20.0, 3.0), radius: 0.5), kind: Moving),
//!     ],
//!     agents: [
//!         (position: (1.0, 3.0), goals: (targets: [Point((29.0, 3.0))])),
//!     ],
//!     regions: [
//!         (min: (1.0, 0.5), max: (4.0, 5.5), count: 20, seed: 7,
//!          goals: (targets: [Point((29.0, 3.0))]),
//!          style: (behaviour: (clear: Constant(epsilon: 0.7, v: (0.0, -1.0), frame: World),
//!                              ahead: None, dvis: 1.0))),
//!     ],
//! )
//! ```
//!
//! Every field but `bounds` may be left out. Shapes, goals and styles are checked while the
//! file is read, so a bad value is reported with its line and column like a syntax error.
//! The full format is described in `docs/scenario-format.md`.

use bevy::asset::{AssetLoader, LoadContext, io::Reader};
use bevy::prelude::*;
use serde::{Deserialize, Deserializer, Serialize};

use crowdfield_field::Shape;
use crowdfield_steer::LocalMapSettings;

use crate::components::{AgentGoals, AgentStyle, CrowdAgent, CrowdObstacle, ObstacleKind};
use crate::settings::{CrowdfieldSettings, GroundHeight, GroundPlane};

/// A scenario: world bounds, optional planner settings, obstacles, agents one by one and
/// agents spread over regions.
#[derive(Asset, TypePath, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A name for listings and outputs.
    #[serde(default)]
    pub name: String,
    /// What the scenario shows.
    #[serde(default)]
    pub description: String,
    /// The walkable rectangle.
    #[serde(deserialize_with = "valid_bounds")]
    pub bounds: Bounds,
    /// Planner settings that differ from the defaults.
    #[serde(default, deserialize_with = "valid_settings")]
    pub settings: ScenarioSettings,
    /// Obstacles.
    #[serde(default)]
    pub obstacles: Vec<ScenarioObstacle>,
    /// Agents one by one.
    #[serde(default)]
    pub agents: Vec<ScenarioAgent>,
    /// Agents spread over rectangles.
    #[serde(default)]
    pub regions: Vec<ScenarioRegion>,
    /// Where a headless run measures the crowd (density, speed and flow); the plugin ignores
    /// them.
    #[serde(default)]
    pub measurements: Vec<Measurement>,
    /// Groups in formation, each with its own members (with the `groups` feature).
    #[cfg(feature = "groups")]
    #[serde(default)]
    pub groups: Vec<ScenarioGroup>,
    /// The marker ground and its sprays (with the `markers` feature); marker agents without
    /// it get the seed's ground.
    #[cfg(feature = "markers")]
    #[serde(default)]
    pub markers: Option<ScenarioMarkers>,
    /// The terrain (seed 003: heights, painted regions, a house; with the `markers` feature):
    /// inserted as [`TerrainGround`](crate::TerrainGround).
    #[cfg(feature = "markers")]
    #[serde(default)]
    pub terrain: Option<crate::TerrainGround>,
}

/// A group of a scenario: its members, formation, settings and order.
#[cfg(feature = "groups")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioGroup {
    /// A name for outputs.
    #[serde(default)]
    pub name: String,
    /// Member start positions, in member order.
    pub members: Vec<Vec2>,
    /// Every member's style.
    #[serde(default, deserialize_with = "valid_style")]
    pub style: AgentStyle,
    /// The formation; `None` for a free group.
    #[serde(default)]
    pub formation: Option<crowdfield_group::Formation>,
    /// The group's settings.
    #[serde(default)]
    pub settings: crowdfield_group::GroupSettings,
    /// What the group does from the start.
    #[serde(default)]
    pub order: ScenarioOrder,
}

/// A scenario group's order.
#[cfg(feature = "groups")]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub enum ScenarioOrder {
    /// Stand.
    #[default]
    Hold,
    /// Walk to a point.
    MoveTo(Vec2),
    /// Walk into a region.
    MoveToRegion(Shape),
    /// Follow the scenario's agent with this index (in `agents`), `distance` metres behind.
    Follow {
        /// Index into the scenario's `agents`.
        agent: usize,
        /// Metres behind the leader.
        distance: f32,
    },
    /// Walk along a drawn path on its stroke field (with the `sketch` feature).
    #[cfg(feature = "sketch")]
    FollowPath {
        /// The path's points, in order.
        points: Vec<Vec2>,
        /// `NearestPoint` (default) or `WholeCurve`.
        #[serde(default)]
        joining: crowdfield_sketch::Joining,
    },
    /// Walk through waypoints every 2 m along a drawn path (with the `sketch` feature).
    #[cfg(feature = "sketch")]
    Waypoints(Vec<Vec2>),
}

/// A place where the headless runner measures the crowd, for fundamental diagrams and
/// bottleneck flows (docs/runner.md, *Fundamental diagram and flow*). The plugin spawns nothing for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawMeasurement")]
pub enum Measurement {
    /// An axis-aligned measurement area: density (agents per m², counted and Voronoi), speed
    /// and specific flow inside it after every planner step. `min` must lie below and left of
    /// `max`, and no side may be longer than [`MAX_MEASUREMENT_SIDE`].
    Area {
        /// A label for outputs.
        name: String,
        /// Lower-left corner.
        min: Vec2,
        /// Upper-right corner.
        max: Vec2,
    },
    /// A measurement line from `a` to `b` (distinct points): agents crossing it each way, flow
    /// (agents per second) and specific flow (per second and metre of the line's length).
    /// Forward is from the right of `a → b` to its left: along `b − a` turned a quarter turn
    /// counter-clockwise.
    Line {
        /// A label for outputs.
        name: String,
        /// One end.
        a: Vec2,
        /// The other end.
        b: Vec2,
    },
}

/// A [`Measurement`] as read, before its checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
enum RawMeasurement {
    Area {
        #[serde(default)]
        name: String,
        #[serde(deserialize_with = "finite_vec2")]
        min: Vec2,
        #[serde(deserialize_with = "finite_vec2")]
        max: Vec2,
    },
    Line {
        #[serde(default)]
        name: String,
        #[serde(deserialize_with = "finite_vec2")]
        a: Vec2,
        #[serde(deserialize_with = "finite_vec2")]
        b: Vec2,
    },
}

impl TryFrom<RawMeasurement> for Measurement {
    type Error = String;

    fn try_from(raw: RawMeasurement) -> Result<Self, String> {
        match raw {
            RawMeasurement::Area { min, max, .. } if !min.cmplt(max).all() => Err(format!(
                "measurement area min {min} must lie below and left of max {max}"
            )),
            RawMeasurement::Area { min, max, .. }
                if (max - min).max_element() > MAX_MEASUREMENT_SIDE =>
            {
                Err(format!(
                    "a measurement area is at most {MAX_MEASUREMENT_SIDE} m a side, got {} m × {} m",
                    max.x - min.x,
                    max.y - min.y
                ))
            }
            RawMeasurement::Line { a, b, .. } if a == b => {
                Err(format!("measurement line ends must differ, both are {a}"))
            }
            RawMeasurement::Area { name, min, max } => Ok(Self::Area { name, min, max }),
            RawMeasurement::Line { name, a, b } => Ok(Self::Line { name, a, b }),
        }
    }
}

/// An axis-aligned rectangle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    /// Lower-left corner.
    #[serde(deserialize_with = "finite_vec2")]
    pub min: Vec2,
    /// Upper-right corner.
    #[serde(deserialize_with = "finite_vec2")]
    pub max: Vec2,
}

/// Planner rates a scenario file may ask for, in steps a second: the seeds plan at 2–3.5. At
/// a hundredth of a step a second a walker would need a local cell of 100 m per m/s of its
/// speed, and a thousand steps a second is more than any frame rate; a headless run also turns
/// the period into a fixed time step, which a rate past either end could not be (found with a
/// file asking for 10⁻³⁰⁰ and 10³⁰⁰).
pub const PLANNER_HZ_RANGE: std::ops::RangeInclusive<f64> = 0.01..=1_000.0;

/// Planner settings a scenario may set; the others keep the app's values.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScenarioSettings {
    /// Planner steps per second, within [`PLANNER_HZ_RANGE`].
    pub planner_hz: Option<f64>,
    /// Global-map cell size.
    pub global_cell_size: Option<f64>,
    /// Radius obstacles are grown by in global maps.
    pub global_inflation: Option<f64>,
    /// Behaviours see only neighbours in line of sight
    /// ([`CrowdfieldSettings::line_of_sight`]).
    pub line_of_sight: Option<bool>,
    /// The steering preset ([`CrowdfieldSettings::preset`]): `Some(Seeds)` walks the file as
    /// the seeds' steering does.
    pub preset: Option<crowdfield_steer::Preset>,
}

/// One obstacle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioObstacle {
    /// The shape in world coordinates.
    #[serde(deserialize_with = "valid_shape")]
    pub shape: Shape,
    /// Static (default) or moving.
    #[serde(default)]
    pub kind: ObstacleKind,
    /// Groups keep together round it ([`KeepTogether`](crate::KeepTogether); static obstacles,
    /// with the `groups` feature).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_together: bool,
}

/// One agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioAgent {
    /// Start position.
    #[serde(deserialize_with = "finite_vec2")]
    pub position: Vec2,
    /// Goals.
    #[serde(default, deserialize_with = "valid_goals")]
    pub goals: AgentGoals,
    /// Steering style.
    #[serde(default, deserialize_with = "valid_style")]
    pub style: AgentStyle,
    /// A drawn path the agent walks instead of its goals (with the `sketch` feature).
    #[cfg(feature = "sketch")]
    #[serde(default)]
    pub path: Option<ScenarioPath>,
    /// Steered by the marker back end (seed 002) with this order (with the `markers`
    /// feature; [`MarkerSteering`](crate::MarkerSteering)).
    #[cfg(feature = "markers")]
    #[serde(default)]
    pub markers: Option<ScenarioMarkerOrder>,
    /// Steered by the BioCrowds back end (seed 003) on the scenario's terrain (with the
    /// `markers` feature; [`BioSteering`](crate::BioSteering)).
    #[cfg(feature = "markers")]
    #[serde(default)]
    pub bio: Option<crate::BioSteering>,
}

/// A marker agent's order in a scenario ([`MarkerSteering`](crate::MarkerSteering)); other
/// agents are named by their index among the scenario's agents (those of `agents`, then the
/// regions' in order).
#[cfg(feature = "markers")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ScenarioMarkerOrder {
    /// Walk its goals on tree paths.
    Goals,
    /// Pursue the agent with this index.
    Pursue(usize),
    /// Surround the agent with this index with the others surrounding it.
    Surround(usize),
    /// Leave the circle of these agents.
    Escape(Vec<usize>),
    /// Fill the shape sprayed with this marker tag (see [`ScenarioMarkers::sprays`]).
    Formation {
        /// The shape's tag.
        shape: u32,
        /// Align inside it too, on this mask (an index in [`ScenarioMarkers::masks`]).
        #[serde(default)]
        mask: Option<usize>,
    },
    /// Direct motion on the alignment mask with this index in [`ScenarioMarkers::masks`].
    Align(usize),
}

/// The marker ground of a scenario ([`MarkerGround`](crate::MarkerGround)) and tagged sprays
/// on it (formation shapes).
#[cfg(feature = "markers")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioMarkers {
    /// Markers per m² (the seed's 60).
    #[serde(default = "seed_density")]
    pub density: f64,
    /// The random streams' seed.
    #[serde(default)]
    pub seed: u64,
    /// Markers sprayed over shapes, each with a tag (formation shapes), at a density.
    #[serde(default)]
    pub sprays: Vec<ScenarioSpray>,
    /// Alignment masks, by index ([`MarkerSteeringSettings::masks`](crate::MarkerSteeringSettings::masks)).
    #[serde(default)]
    pub masks: Vec<crowdfield_markers::Mask>,
    /// The seed's group mode (d_enf) or its crowd mode (marker reservation).
    #[serde(default)]
    pub mode: crowdfield_markers::Mode,
}

#[cfg(feature = "markers")]
fn seed_density() -> f64 {
    60.0
}

/// Markers sprayed over a shape with a tag.
#[cfg(feature = "markers")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpray {
    /// Where.
    pub shape: Shape,
    /// Markers per m² added.
    pub density: f64,
    /// The tag they carry.
    pub tag: u32,
}

/// A drawn path for an agent or a region's agents ([`AgentPath`](crate::AgentPath)).
#[cfg(feature = "sketch")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ScenarioPath {
    /// Follow the path's stroke field.
    Follow {
        /// The path's points, in order.
        points: Vec<Vec2>,
        /// `NearestPoint` (default) or `WholeCurve`.
        #[serde(default)]
        joining: crowdfield_sketch::Joining,
    },
    /// Walk through waypoints every 2 m along the path.
    Waypoints(Vec<Vec2>),
}

#[cfg(feature = "sketch")]
impl ScenarioPath {
    fn points(&self) -> &[Vec2] {
        match self {
            ScenarioPath::Follow { points, .. } | ScenarioPath::Waypoints(points) => points,
        }
    }

    /// The agent component.
    pub fn to_agent_path(&self) -> crate::AgentPath {
        match self {
            ScenarioPath::Follow { points, joining } => crate::AgentPath::Follow {
                points: points.clone(),
                joining: *joining,
            },
            ScenarioPath::Waypoints(points) => crate::AgentPath::Waypoints(points.clone()),
        }
    }
}

/// Agents spread over a rectangle at random, seeded positions, never overlapping each other,
/// earlier agents or static obstacles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioRegion {
    /// Lower-left corner.
    #[serde(deserialize_with = "finite_vec2")]
    pub min: Vec2,
    /// Upper-right corner.
    #[serde(deserialize_with = "finite_vec2")]
    pub max: Vec2,
    /// How many agents (at most [`MAX_REGION_AGENTS`]).
    #[serde(deserialize_with = "valid_count")]
    pub count: usize,
    /// Seed of the placement (and, mixed with each agent's index, of its own stream).
    #[serde(default)]
    pub seed: u64,
    /// Goals of every agent of the region.
    #[serde(default, deserialize_with = "valid_goals")]
    pub goals: AgentGoals,
    /// Style of every agent of the region.
    #[serde(default, deserialize_with = "valid_style")]
    pub style: AgentStyle,
    /// A drawn path every agent of the region walks (with the `sketch` feature); they share
    /// one stroke field.
    #[cfg(feature = "sketch")]
    #[serde(default)]
    pub path: Option<ScenarioPath>,
    /// Every agent of the region steered by the marker back end with this order (with the
    /// `markers` feature).
    #[cfg(feature = "markers")]
    #[serde(default)]
    pub markers: Option<ScenarioMarkerOrder>,
    /// Every agent of the region steered by the BioCrowds back end (with the `markers`
    /// feature).
    #[cfg(feature = "markers")]
    #[serde(default)]
    pub bio: Option<crate::BioSteering>,
}

/// The longest side of a measurement area, in metres. The runner rasterises each area's
/// Voronoi cells on a 5 cm lattice (two metres wider on every side) at every step: 200 m a side
/// is 16.6 million lattice points, far past the few square metres pedestrian measurements use,
/// and a larger area would ask for more memory than a run can have.
pub const MAX_MEASUREMENT_SIDE: f32 = 200.0;

/// The most agents one region may ask for: far beyond what a crowd steps in real time, and
/// small enough that placing them cannot overflow.
pub const MAX_REGION_AGENTS: usize = 1_000_000;

/// Why a scenario file was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("could not read the scenario: {0}")]
    Io(#[from] std::io::Error),
    /// Syntax or a bad value, at a position of the file (1-based line and column).
    #[error("{line}:{column}: {message}")]
    Parse {
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A file that is neither `.ron` nor `.json`.
    #[error("unknown scenario format {0:?} (use .ron or .json)")]
    Format(String),
    /// The file is well formed, but no crowd can be built for its world: its bounds over its
    /// global cells make a grid of more than
    /// [`MAX_GRID_CELLS`](crowdfield_field::MAX_GRID_CELLS) cells, or are not finite.
    #[error(
        "bounds ({}, {}) to ({}, {}) over global cells of {cell_size} m: {error}",
        bounds.min.x,
        bounds.min.y,
        bounds.max.x,
        bounds.max.y
    )]
    World {
        /// The scenario's bounds.
        bounds: Bounds,
        /// The global cell size the crowd would use.
        cell_size: f64,
        /// Why the crowd cannot be built.
        error: crowdfield_steer::SteerError,
    },
    /// A marker order naming an agent that does not exist or the agent itself, or a bad
    /// marker ground.
    #[cfg(feature = "markers")]
    #[error("marker agent {index}: {message}")]
    Markers {
        /// Index of the agent among the scenario's agents (regions' after `agents`).
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// A group that cannot be formed: no members, a formation or settings that cannot be
    /// used, a map too small for its formation, a leader index past the scenario's agents.
    #[error("group {index}: {message}")]
    Group {
        /// Index of the group in `groups`.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// An agent's or a region's path with no points, or with points that are not finite.
    #[error(
        "path {index} (agents first, then regions): a path needs at least one point, and finite ones"
    )]
    Path {
        /// Index among the scenario's agents followed by its regions.
        index: usize,
    },
}

impl Scenario {
    /// Reads a scenario from RON text, and checks that a crowd can be built for its world
    /// ([`Scenario::check_world`]).
    pub fn from_ron(text: &str) -> Result<Self, ScenarioError> {
        // Optional settings may be written bare (`obstacle_coverage: Centre`) as well as
        // `Some(Centre)`: files written before those settings became optional still read.
        let scenario: Self = ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(text)
            .map_err(|e| ScenarioError::Parse {
                line: e.span.start.line,
                column: e.span.start.col,
                message: e.code.to_string(),
            })?;
        scenario.check_world()?;
        Ok(scenario)
    }

    /// Reads a scenario from JSON text, and checks that a crowd can be built for its world
    /// ([`Scenario::check_world`]).
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        let scenario: Self = serde_json::from_str(text).map_err(|e| ScenarioError::Parse {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        })?;
        scenario.check_world()?;
        Ok(scenario)
    }

    /// Whether a crowd can be built for the scenario's world, its bounds over its global cells
    /// (the scenario's `global_cell_size`, or the default): a grid of at most
    /// [`MAX_GRID_CELLS`](crowdfield_field::MAX_GRID_CELLS) cells, with finite bounds. The
    /// plugin would otherwise refuse the settings at its first step
    /// ([`SettingsRejected`](crate::SettingsRejected)) and nothing would walk.
    pub fn check_world(&self) -> Result<(), ScenarioError> {
        let mut settings = CrowdfieldSettings::default();
        self.apply_settings(&mut settings);
        if let Err(error) = crowdfield_steer::Crowd::new(settings.crowd_settings(), Vec::new()) {
            return Err(ScenarioError::World {
                bounds: self.bounds,
                cell_size: settings.global_cell_size,
                error,
            });
        }
        #[cfg(feature = "sketch")]
        {
            let paths = self
                .agents
                .iter()
                .map(|a| &a.path)
                .chain(self.regions.iter().map(|r| &r.path));
            for (index, path) in paths.enumerate() {
                if let Some(path) = path
                    && (path.points().is_empty() || path.points().iter().any(|p| !p.is_finite()))
                {
                    return Err(ScenarioError::Path { index });
                }
            }
        }
        #[cfg(feature = "markers")]
        self.check_markers()?;
        #[cfg(feature = "groups")]
        for (index, group) in self.groups.iter().enumerate() {
            let bad = |message: String| ScenarioError::Group { index, message };
            crowdfield_group::check_group(
                &group.settings,
                group.formation.as_ref(),
                group.members.len(),
                group.style.radius,
            )
            .map_err(|e| bad(e.to_string()))?;
            if let Some(p) = group.members.iter().find(|p| !p.is_finite()) {
                return Err(bad(format!("member position {p} is not finite")));
            }
            if let ScenarioOrder::Follow { agent, distance } = &group.order
                && (*agent >= self.agents.len() || !(distance.is_finite() && *distance >= 0.0))
            {
                return Err(bad(format!(
                    "follows agent {agent} at {distance} m: the scenario has {} agents, and \
                     the distance must be finite and not negative",
                    self.agents.len()
                )));
            }
            #[cfg(feature = "sketch")]
            if let ScenarioOrder::FollowPath { points, .. } | ScenarioOrder::Waypoints(points) =
                &group.order
                && (points.is_empty() || points.iter().any(|p| !p.is_finite()))
            {
                return Err(bad(
                    "a path needs at least one point, and finite ones".to_string()
                ));
            }
        }
        Ok(())
    }

    /// Reads a scenario file, RON or JSON by its extension.
    pub fn from_path(path: &std::path::Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path)?;
        match path.extension().and_then(|e| e.to_str()) {
            Some("ron") => Self::from_ron(&text),
            Some("json") => Self::from_json(&text),
            other => Err(ScenarioError::Format(other.unwrap_or("").to_owned())),
        }
    }

    /// The scenario as RON text.
    pub fn to_ron(&self) -> String {
        ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default())
            .expect("scenarios always serialise")
    }

    /// Writes the scenario's world and planner settings into `settings`.
    pub fn apply_settings(&self, settings: &mut CrowdfieldSettings) {
        settings.world_min = self.bounds.min;
        settings.world_max = self.bounds.max;
        if let Some(hz) = self.settings.planner_hz {
            settings.planner_hz = hz;
        }
        if let Some(size) = self.settings.global_cell_size {
            settings.global_cell_size = size;
        }
        if let Some(inflation) = self.settings.global_inflation {
            settings.global_inflation = inflation;
        }
        if let Some(sight) = self.settings.line_of_sight {
            settings.line_of_sight = sight;
        }
        if let Some(preset) = self.settings.preset {
            settings.preset = preset;
        }
    }

    /// Every agent of the scenario with its start position: the single agents, then each
    /// region's placed agents. Region agents without their own seed get the region's seed
    /// mixed with their index. Returns the agents and, per region, how many could not be
    /// placed (the region was too full).
    pub fn agents(&self) -> (Vec<ScenarioAgent>, Vec<usize>) {
        let statics: Vec<&Shape> = self
            .obstacles
            .iter()
            .filter(|o| o.kind == ObstacleKind::Static)
            .map(|o| &o.shape)
            .collect();
        let mut placed: Vec<(Vec2, f64)> = self
            .agents
            .iter()
            .map(|a| (a.position, a.style.radius))
            .collect();
        let mut agents = self.agents.clone();
        let mut missing = Vec::new();
        for region in &self.regions {
            let mut rng = SplitMix(region.seed);
            let r = region.style.radius;
            let lo = region.min.as_dvec2() + r;
            let hi = region.max.as_dvec2() - r;
            let mut made = 0;
            let mut tries = 0;
            while made < region.count
                && tries < region.count.max(1).saturating_mul(200)
                && lo.cmple(hi).all()
            {
                tries += 1;
                let p = lo + (hi - lo) * bevy::math::DVec2::new(rng.unit(), rng.unit());
                let clear_agents = placed
                    .iter()
                    .all(|(q, rq)| (q.as_dvec2() - p).length() >= r + rq + 0.05);
                let clear_walls = statics
                    .iter()
                    .all(|s| s.distance(p).is_ok_and(|d| d >= r + 0.05));
                if !(clear_agents && clear_walls) {
                    continue;
                }
                let mut style = region.style.clone();
                if style.seed.is_none() {
                    style.seed = Some(SplitMix(region.seed ^ (made as u64 + 1)).next());
                }
                placed.push((p.as_vec2(), r));
                agents.push(ScenarioAgent {
                    position: p.as_vec2(),
                    goals: region.goals.clone(),
                    style,
                    #[cfg(feature = "sketch")]
                    path: region.path.clone(),
                    #[cfg(feature = "markers")]
                    markers: region.markers.clone(),
                    #[cfg(feature = "markers")]
                    bio: region.bio,
                });
                made += 1;
            }
            missing.push(region.count - made);
        }
        (agents, missing)
    }

    /// Spawns the scenario's obstacles and agents (top-level entities, each tagged with
    /// [`FromScenario`]) on a 2D game's x–y ground and returns how many agents each region
    /// could not place. [`Scenario::spawn_on`] spawns them on a 3D game's ground.
    pub fn spawn(&self, commands: &mut Commands, root: Option<Entity>) -> Vec<usize> {
        self.spawn_on(commands, root, GroundPlane::XY, &GroundHeight::default())
    }

    /// [`Scenario::spawn`] on `plane`: the scenario's points are the crowd's plane; on x–z each
    /// agent's Transform is put on the ground through [`GroundPlane::to_world`] at `height` (the
    /// [`ScenarioPlugin`] spawns files with the app's [`CrowdfieldSettings::plane`] and
    /// [`GroundHeight`]); a scenario's own terrain's heights come first where it has them.
    pub fn spawn_on(
        &self,
        commands: &mut Commands,
        root: Option<Entity>,
        plane: GroundPlane,
        height: &GroundHeight,
    ) -> Vec<usize> {
        #[cfg(feature = "markers")]
        let own = self
            .terrain
            .as_ref()
            .and_then(|t| t.heights.clone())
            .map(GroundHeight::from_height_map);
        #[cfg(feature = "markers")]
        let height = own.as_ref().unwrap_or(height);
        // On x–y the height would be z, the game's drawing order: left at 0 as before.
        let at = |p: Vec2| match plane {
            GroundPlane::XY => Transform::from_translation(p.extend(0.0)),
            GroundPlane::XZ => Transform::from_translation(plane.to_world(p, height.height(p))),
        };
        for obstacle in &self.obstacles {
            let mut entity = commands.spawn((
                Name::new("crowd obstacle"),
                CrowdObstacle {
                    shape: obstacle.shape.clone(),
                    kind: obstacle.kind,
                },
                Transform::IDENTITY,
                FromScenario(root),
            ));
            #[cfg(feature = "groups")]
            if obstacle.keep_together {
                entity.insert(crate::KeepTogether);
            }
            #[cfg(not(feature = "groups"))]
            let _ = &mut entity;
        }
        let (agents, missing) = self.agents();
        let mut spawned = Vec::with_capacity(agents.len());
        for agent in agents {
            let mut entity = commands.spawn((
                Name::new("crowd agent"),
                CrowdAgent,
                at(agent.position),
                agent.goals,
                agent.style,
                FromScenario(root),
            ));
            #[cfg(feature = "sketch")]
            if let Some(path) = &agent.path {
                entity.insert(path.to_agent_path());
            }
            spawned.push(entity.id());
        }
        #[cfg(feature = "markers")]
        self.spawn_markers(commands, &spawned);
        #[cfg(feature = "groups")]
        for group in &self.groups {
            use crate::group::{CrowdGroup, GroupOrder, MemberOf};
            let order = match &group.order {
                ScenarioOrder::Hold => GroupOrder::Hold,
                ScenarioOrder::MoveTo(p) => GroupOrder::MoveTo(*p),
                ScenarioOrder::MoveToRegion(shape) => GroupOrder::MoveToRegion(shape.clone()),
                ScenarioOrder::Follow { agent, distance } => match spawned.get(*agent) {
                    Some(leader) => GroupOrder::Follow {
                        leader: *leader,
                        distance: *distance,
                    },
                    None => GroupOrder::Hold,
                },
                #[cfg(feature = "sketch")]
                ScenarioOrder::FollowPath { points, joining } => GroupOrder::FollowPath {
                    points: points.clone(),
                    joining: *joining,
                },
                #[cfg(feature = "sketch")]
                ScenarioOrder::Waypoints(points) => GroupOrder::Waypoints(points.clone()),
            };
            let entity = commands
                .spawn((
                    Name::new(if group.name.is_empty() {
                        "crowd group".to_string()
                    } else {
                        group.name.clone()
                    }),
                    CrowdGroup {
                        settings: group.settings.clone(),
                        formation: group.formation.clone(),
                    },
                    order,
                    FromScenario(root),
                ))
                .id();
            for p in &group.members {
                commands.spawn((
                    Name::new("group member"),
                    CrowdAgent,
                    at(*p),
                    group.style.clone(),
                    MemberOf(entity),
                    FromScenario(root),
                ));
            }
        }
        missing
    }
}

#[cfg(feature = "markers")]
impl Scenario {
    /// Marker orders name agents that exist (and not themselves); the ground's density and the
    /// sprays are valid.
    fn check_markers(&self) -> Result<(), ScenarioError> {
        let total = self.agents.len() + self.regions.iter().map(|r| r.count).sum::<usize>();
        let orders = self
            .agents
            .iter()
            .map(|a| (&a.markers, 1))
            .chain(self.regions.iter().map(|r| (&r.markers, r.count)));
        let mut index = 0;
        for (order, count) in orders {
            let bad = |message: String| ScenarioError::Markers { index, message };
            let named: Vec<usize> = match order {
                Some(ScenarioMarkerOrder::Pursue(i) | ScenarioMarkerOrder::Surround(i)) => {
                    vec![*i]
                }
                Some(ScenarioMarkerOrder::Escape(from)) => {
                    if from.is_empty() {
                        return Err(bad("an escape needs followers".into()));
                    }
                    from.clone()
                }
                Some(
                    ScenarioMarkerOrder::Align(m)
                    | ScenarioMarkerOrder::Formation { mask: Some(m), .. },
                ) => {
                    let masks = self.markers.as_ref().map_or(0, |g| g.masks.len());
                    if *m >= masks {
                        return Err(bad(format!("mask {m} does not exist ({masks} masks)")));
                    }
                    Vec::new()
                }
                _ => Vec::new(),
            };
            for i in named {
                if i >= total {
                    return Err(bad(format!("agent {i} does not exist ({total} agents)")));
                }
                if (index..index + count).contains(&i) {
                    return Err(bad(format!("agent {i} cannot pursue or flee itself")));
                }
            }
            index += count;
        }
        // BioCrowds agents: ft tables in [0, 1]; the terrain's density and house.
        let bios = self
            .agents
            .iter()
            .map(|a| (&a.bio, 1))
            .chain(self.regions.iter().map(|r| (&r.bio, r.count)));
        let mut index = 0;
        for (bio, count) in bios {
            if let Some(bio) = bio {
                bio.ft.validate().map_err(|e| ScenarioError::Markers {
                    index,
                    message: e.to_string(),
                })?;
            }
            index += count;
        }
        if let Some(terrain) = &self.terrain {
            let bad = |message: String| ScenarioError::Markers { index: 0, message };
            if !(terrain.density > 0.0 && terrain.density <= crowdfield_markers::MAX_DENSITY) {
                return Err(bad(
                    "the terrain's marker density must lie in (0, 10,000] per m²".into(),
                ));
            }
            if let Some(house) = &terrain.house {
                house.validate().map_err(|e| bad(e.to_string()))?;
            }
            if let Some(heights) = &terrain.heights {
                heights.validate().map_err(|e| bad(e.to_string()))?;
            }
            let mut map = crowdfield_markers::TerrainMap::new();
            for r in &terrain.regions {
                map.paint(r.shape.clone(), r.terrain)
                    .map_err(|e| bad(e.to_string()))?;
            }
        }
        if let Some(ground) = &self.markers {
            let density_ok = |d: f64| d > 0.0 && d <= crowdfield_markers::MAX_DENSITY;
            if !density_ok(ground.density) || ground.sprays.iter().any(|s| !density_ok(s.density)) {
                return Err(ScenarioError::Markers {
                    index: 0,
                    message: "a marker density must lie in (0, 10,000] per m²".into(),
                });
            }
            // The back end checks masks as it takes them.
            let mut check = crowdfield_markers::MarkerCrowd::new(Default::default())
                .expect("the default settings are valid");
            for (k, mask) in ground.masks.iter().enumerate() {
                check
                    .add_mask(mask.clone())
                    .map_err(|e| ScenarioError::Markers {
                        index: 0,
                        message: format!("mask {k}: {e}"),
                    })?;
            }
        }
        Ok(())
    }

    /// The marker ground, its sprays and the marker agents' orders (agents by index).
    fn spawn_markers(&self, commands: &mut Commands, spawned: &[Entity]) {
        use crate::marker::MarkerGround;
        use crate::marker_agents::MarkerSteering;
        if let Some(ground) = &self.markers {
            commands.insert_resource(MarkerGround {
                density: ground.density,
                seed: ground.seed,
                ..MarkerGround::default()
            });
            if !ground.masks.is_empty() || ground.mode != crowdfield_markers::Mode::default() {
                commands.insert_resource(crate::MarkerSteeringSettings {
                    settings: crowdfield_markers::MarkerCrowdSettings {
                        mode: ground.mode,
                        ..Default::default()
                    },
                    masks: ground.masks.clone(),
                });
            }
            for spray in &ground.sprays {
                commands.queue(spray_command(spray.clone()));
            }
        }
        if let Some(terrain) = &self.terrain {
            commands.insert_resource(terrain.clone());
        }
        let (agents, _) = self.agents();
        let entity = |i: &usize| spawned.get(*i).copied();
        for (agent, me) in agents.iter().zip(spawned) {
            if let Some(bio) = agent.bio {
                commands.entity(*me).insert(bio);
            }
            let Some(order) = &agent.markers else {
                continue;
            };
            let steering = match order {
                ScenarioMarkerOrder::Goals => Some(MarkerSteering::Goals),
                ScenarioMarkerOrder::Pursue(i) => entity(i).map(MarkerSteering::Pursue),
                ScenarioMarkerOrder::Surround(i) => entity(i).map(MarkerSteering::Surround),
                ScenarioMarkerOrder::Escape(from) => from
                    .iter()
                    .map(entity)
                    .collect::<Option<Vec<_>>>()
                    .map(MarkerSteering::Escape),
                ScenarioMarkerOrder::Formation { shape, mask } => Some(MarkerSteering::Formation {
                    shape: *shape,
                    mask: *mask,
                }),
                ScenarioMarkerOrder::Align(m) => Some(MarkerSteering::Align(*m)),
            };
            if let Some(steering) = steering {
                commands.entity(*me).insert(steering);
            }
        }
    }
}

/// Queues a scenario's spray for the marker set: the plugin applies it once the set is built
/// (and it stays in the set's edit log, so rebuilds keep it).
#[cfg(feature = "markers")]
fn spray_command(spray: ScenarioSpray) -> impl FnOnce(&mut World) {
    move |world: &mut World| {
        world
            .get_resource_or_insert_with(PendingSprays::default)
            .0
            .push(spray);
    }
}

/// Scenario sprays waiting for the marker set.
#[cfg(feature = "markers")]
#[derive(Resource, Debug, Default)]
pub(crate) struct PendingSprays(pub(crate) Vec<ScenarioSpray>);

/// Tags entities spawned from a scenario, with the [`ScenarioRoot`] entity they came from.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Reflect)]
#[reflect(Component)]
pub struct FromScenario(pub Option<Entity>);

/// Put on an entity to spawn a scenario asset once it has loaded: the plugin applies its
/// settings, spawns its obstacles and agents, and then adds [`ScenarioSpawned`].
#[derive(Component, Debug, Clone)]
pub struct ScenarioRoot(pub Handle<Scenario>);

/// Added to a [`ScenarioRoot`] once its scenario was spawned.
#[derive(Component, Debug, Clone, PartialEq, Eq)]
pub struct ScenarioSpawned {
    /// Per region, agents that did not fit.
    pub missing: Vec<usize>,
}

/// Loads `.scenario.ron` and `.scenario.json` files as [`Scenario`] assets.
#[derive(Debug, Default, TypePath)]
pub struct ScenarioLoader;

impl AssetLoader for ScenarioLoader {
    type Asset = Scenario;
    type Settings = ();
    type Error = ScenarioError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        _settings: &(),
        load_context: &mut LoadContext<'_>,
    ) -> Result<Scenario, ScenarioError> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await?;
        let text = String::from_utf8(bytes).map_err(|e| ScenarioError::Parse {
            line: 1,
            column: 1,
            message: format!("not UTF-8: {e}"),
        })?;
        let json = load_context
            .path()
            .path()
            .extension()
            .is_some_and(|e| e == "json");
        if json {
            Scenario::from_json(&text)
        } else {
            Scenario::from_ron(&text)
        }
    }

    fn extensions(&self) -> &[&str] {
        &["scenario.ron", "scenario.json"]
    }
}

/// Scenario assets and [`ScenarioRoot`] spawning. Part of
/// [`CrowdfieldPlugins`](crate::CrowdfieldPlugins). Scenario assets need Bevy's `AssetPlugin`,
/// added before this plugin (`DefaultPlugins` has it); without it `Scenario::from_path` and
/// `Scenario::spawn` still work.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScenarioPlugin;

impl Plugin for ScenarioPlugin {
    fn build(&self, app: &mut App) {
        app.register_type::<FromScenario>();
        if !app.is_plugin_added::<bevy::asset::AssetPlugin>() {
            // Headless apps without assets still spawn scenarios with `Scenario::spawn`.
            debug!(
                "crowdfield: no AssetPlugin, scenario files load only through Scenario::from_path"
            );
            return;
        }
        app.init_asset::<Scenario>()
            .init_asset_loader::<ScenarioLoader>()
            .add_systems(PreUpdate, spawn_scenarios);
    }
}

fn spawn_scenarios(
    mut commands: Commands,
    roots: Query<(Entity, &ScenarioRoot), Without<ScenarioSpawned>>,
    scenarios: Res<Assets<Scenario>>,
    server: Res<AssetServer>,
    mut settings: ResMut<CrowdfieldSettings>,
    height: Option<Res<GroundHeight>>,
) {
    for (entity, root) in &roots {
        if let Some(scenario) = scenarios.get(&root.0) {
            scenario.apply_settings(&mut settings);
            let height = height.as_deref().cloned().unwrap_or_default();
            let missing = scenario.spawn_on(&mut commands, Some(entity), settings.plane, &height);
            if missing.iter().any(|m| *m > 0) {
                warn!(
                    "crowdfield: scenario {:?} could not place {missing:?} agents in its regions",
                    scenario.name
                );
            }
            commands.entity(entity).insert(ScenarioSpawned { missing });
        } else if let Some(bevy::asset::LoadState::Failed(e)) = server.get_load_state(&root.0) {
            error!("crowdfield: scenario failed to load: {e}");
            commands.entity(entity).insert(ScenarioSpawned {
                missing: Vec::new(),
            });
        }
    }
}

/// serde_json appends " at line L column C" to its messages; the error carries both already.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

fn finite_vec2<'de, D: Deserializer<'de>>(d: D) -> Result<Vec2, D::Error> {
    let v = Vec2::deserialize(d)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!(
            "coordinates must be finite, got {v}"
        )))
    }
}

fn valid_bounds<'de, D: Deserializer<'de>>(d: D) -> Result<Bounds, D::Error> {
    let b = Bounds::deserialize(d)?;
    if b.min.cmplt(b.max).all() {
        Ok(b)
    } else {
        Err(serde::de::Error::custom(format!(
            "bounds min {} must lie below and left of max {}",
            b.min, b.max
        )))
    }
}

fn valid_settings<'de, D: Deserializer<'de>>(d: D) -> Result<ScenarioSettings, D::Error> {
    let s = ScenarioSettings::deserialize(d)?;
    if let Some(hz) = s.planner_hz
        && !PLANNER_HZ_RANGE.contains(&hz)
    {
        return Err(serde::de::Error::custom(format!(
            "planner_hz must lie in {}..={} steps a second, got {hz:e}",
            PLANNER_HZ_RANGE.start(),
            PLANNER_HZ_RANGE.end()
        )));
    }
    for (what, value, ok) in [
        (
            "global_cell_size",
            s.global_cell_size,
            s.global_cell_size.map(|v| v > 0.0),
        ),
        (
            "global_inflation",
            s.global_inflation,
            s.global_inflation.map(|v| v >= 0.0),
        ),
    ] {
        if let Some(v) = value
            && !(v.is_finite() && ok == Some(true))
        {
            return Err(serde::de::Error::custom(format!(
                "{what} must be finite and {}, got {v}",
                if what == "global_inflation" {
                    "non-negative"
                } else {
                    "positive"
                }
            )));
        }
    }
    Ok(s)
}

fn valid_count<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let count = usize::deserialize(d)?;
    if count <= MAX_REGION_AGENTS {
        Ok(count)
    } else {
        Err(serde::de::Error::custom(format!(
            "a region holds at most {MAX_REGION_AGENTS} agents, got {count}"
        )))
    }
}

fn valid_shape<'de, D: Deserializer<'de>>(d: D) -> Result<Shape, D::Error> {
    let shape = Shape::deserialize(d)?;
    shape.validate().map_err(serde::de::Error::custom)?;
    Ok(shape)
}

fn valid_goals<'de, D: Deserializer<'de>>(d: D) -> Result<AgentGoals, D::Error> {
    let goals = AgentGoals::deserialize(d)?;
    for target in &goals.targets {
        target
            .shape(1.0)
            .validate()
            .map_err(serde::de::Error::custom)?;
    }
    if !(goals.arrival_radius.is_finite() && goals.arrival_radius >= 0.0) {
        return Err(serde::de::Error::custom(format!(
            "arrival radius must be finite and non-negative, got {}",
            goals.arrival_radius
        )));
    }
    if let Some(t) = goals
        .time_limits
        .iter()
        .flatten()
        .find(|t| !(t.is_finite() && **t >= 0.0))
    {
        return Err(serde::de::Error::custom(format!(
            "time limits must be finite and non-negative seconds, got {t}"
        )));
    }
    Ok(goals)
}

fn valid_style<'de, D: Deserializer<'de>>(d: D) -> Result<AgentStyle, D::Error> {
    let style = AgentStyle::deserialize(d)?;
    let positive = |what: &str, v: f64| {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(serde::de::Error::custom(format!(
                "{what} must be finite and positive, got {v}"
            )))
        }
    };
    positive("radius", style.radius)?;
    positive("max speed", style.max_speed)?;
    style
        .behaviour
        .validate()
        .map_err(serde::de::Error::custom)?;
    let map: LocalMapSettings = style.local_map;
    map.validate().map_err(serde::de::Error::custom)?;
    Ok(style)
}

/// SplitMix64: seeded placement that replays on every platform.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
