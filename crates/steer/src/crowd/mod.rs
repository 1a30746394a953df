//! The crowd world: global maps, agents, and one planner step for all of them
//! (seed 000 §3.5, seed 001 A2 and A4).
//!
//! # One step
//!
//! 1. **Snapshot** every agent's position (a double buffer, digest 001 G20), and index them in a
//!    spatial hash.
//! 2. **Plan**, per agent, from the snapshot only: global descent at the agent (with sub-goals
//!    against flat regions) → behaviour slot → (v, ε) → re-centre the local map (warm start) →
//!    stamp static obstacles and neighbours → project the intermediate goal → relax → local
//!    descent → heading rule and speed law → a proposed displacement. An agent that an
//!    obstacle overlaps (a moving one ran onto it, or a static one was added over it) instead
//!    steps out by the shortest way (ours; the seeds' maps give it no way: its own cells are
//!    obstacle in both).
//! 3. **Commit**, in agent-id order: a collision guard shortens each displacement so the agent
//!    stays at least the sum of radii from every agent's committed position and its radius from
//!    every static shape. The seeds rely on the speed law alone (seed 000 §4.4 says rule C does
//!    not guarantee it); the guard makes "no overlap" an invariant.
//! 4. **Goals**: an agent within its arrival radius of its goal (or standing on a goal cell)
//!    takes the next goal, or stops or is removed after the last.
//!
//! Planning reads only the snapshot and the agent's own state, and the commit order is fixed, so
//! results do not depend on how planning is scheduled. A host may run the step one
//! [`StepPhase`] at a time ([`Crowd::advance_to`]) and schedule its own work in between.
//!
//! # Host input
//!
//! Between steps a host may move agents ([`Crowd::set_position`]), re-route them
//! ([`Crowd::set_goals`]), change their behaviour ([`Crowd::set_behaviour`]) and hand over the
//! moving obstacles of the step ([`Crowd::set_moving_obstacles`]): shapes stamped into local
//! maps and respected by the collision guard, never written into global maps.
//!
//! # Obstacle edits
//!
//! [`Crowd::add_obstacle`] and [`Crowd::remove_obstacle`] change the static shapes between
//! steps. The local-map rasters are patched around the edit at once. Each goal's global map is
//! patched around it into a pending copy; at the start of the following steps at most
//! [`CrowdSettings::map_solves_per_step`] pending maps are solved (multigrid, warm-started from
//! the previous solution, work memory kept in the crowd) and swapped in, so a small edit costs a
//! few milliseconds per step instead of a pause while every goal's map is solved. Until its
//! turn, a goal keeps its previous converged map; local maps already avoid the new shape.
//!
//! # Layout
//!
//! This file holds the crowd, its agents and the phases of a step up to the decision. Beside
//! it: `goals` (goal regions, their global maps and searches, static obstacle edits), `plan`
//! (one agent's planning from the snapshot, step 2), `jobs` (how planning is split into jobs
//! and shared between threads), `pipeline` (a whole step committing while it plans), `commit`
//! (the motion phase, steps 3 and 4), `guard` (the commit's collision guard), `ahead`
//! (counting the next step's disc rasters during the commit), `grid` ([`AgentGrid`] and the
//! spawn-time hash) and `tests`.

use std::time::{Duration, Instant};

use glam::DVec2;

use crowdfield_field::{
    Bias, Coverage, FieldError, GridGeometry, MultigridWorkspace, Shape, SubgoalStack,
};
use rayon::prelude::*;

use crate::SteerError;
use crate::behaviour::{BehaviourSlots, BehaviourState};
use crate::disc_raster::DiscRaster;
use crate::local_map::{LocalMap, LocalMapSettings};
use crate::motion::{HeadingRule, SpeedLaw, decide};
use crate::static_raster::StaticRaster;

mod ahead;
mod grid;
mod guard;
mod jobs;
mod plan;

use ahead::CountedAhead;
pub use grid::AgentGrid;
use grid::{SPAWN_CELL, SpatialHash};
use guard::ShapeGrid;
use jobs::{ChunkScratch, ScratchPool, ShareTuner, WarmWorkers, job_sizes, split_into, to_relax};
use plan::{Neighbours, World};

/// The read-only [`World`] of crowd `$crowd` for its next step: a macro, not a method, so that
/// the crowd's agents stay free to be borrowed mutably beside it.
macro_rules! world_of {
    ($crowd:expr, $discs:expr) => {
        World {
            discs: $discs,
            statics: &$crowd.statics,
            static_bounds: &$crowd.static_bounds,
            sight: $crowd.settings.line_of_sight,
            queues: $crowd
                .settings
                .preset
                .queues()
                .then(|| $crowd.settings.preset.impatience()),
            moving: &$crowd.moving,
            goals: &$crowd.goals,
            step: $crowd.step,
            rasters: &$crowd.rasters,
            max_radius: $crowd.largest_radius,
            ways: &$crowd.ways,
            shape_grid: $crowd.shape_grid.as_ref(),
            moving_grid: $crowd.moving_grid.as_ref(),
            #[cfg(test)]
            sense_whole_box: $crowd.sense_whole_box,
        }
    };
}

/// The [`CommitWorld`] of a crowd's commit (a macro, like `world_of!`, so that it borrows only
/// the fields it reads while the commit holds the agents mutably).
macro_rules! commit_world_of {
    ($crowd:expr, $hash:expr, $others:expr, $late:expr) => {
        CommitWorld {
            hash: $hash,
            others: $others,
            late: $late,
            obstacles: Obstacles {
                statics: &$crowd.statics,
                static_bounds: &$crowd.static_bounds,
                moving: &$crowd.moving,
                grid: $crowd.shape_grid.as_ref(),
                moving_grid: $crowd.moving_grid.as_ref(),
            },
            ids: &$crowd.ids,
            goals: &$crowd.goals,
            stuck_after: $crowd.settings.stuck_after,
            slides: $crowd.settings.preset.slides(),
        }
    };
}

mod commit;
mod goals;
mod pipeline;

use commit::{CommitWorld, commit_agent};
pub use goals::{Goal, Guidance};

/// Planners above which a commit counts the next step's disc rasters ahead (see [`ahead`]), and
/// a step run whole commits while it plans (see [`pipeline`]): the steps of such crowds are
/// always shared between threads, so the other thread is awake when the commit starts. For smaller
/// crowds, whose steps may run on the stepping thread alone while the other sleeps, waking it cost
/// more than the count saved (docs/performance.md, *Measurements behind tuning constants*).
const AHEAD_PLANNERS: usize = jobs::TUNED_PLANNERS;

/// How far (m) a disc may reach into another disc or into an obstacle and still count as
/// touching rather than overlapping. Contact in floating point reads as a few nanometres either
/// way: two walkers 0.4 m apart with radii of 0.2 m, both given in `f32` as a scenario file
/// holds them, lie 0.39999998 m apart. [`Crowd::spawn`] rejects only deeper overlaps, a walker
/// walks out of an obstacle only when it reaches deeper, and the CLI's metrics count only deeper
/// overlaps.
pub const CONTACT_TOLERANCE: f64 = 1e-6;

/// Whether a disc whose centre lies `distance` from a shape (0 inside it; for two discs, the
/// distance between their centres) overlaps it, when touching means `distance == reach` (the
/// radius, or the two radii summed): it reaches in by more than [`CONTACT_TOLERANCE`], or its
/// centre is inside (or, for two discs, on the other's), however small the discs.
fn overlaps_beyond_contact(distance: f64, reach: f64) -> bool {
    distance <= 0.0 || distance < reach - CONTACT_TOLERANCE
}

/// Removed agents' slots kept at least, before they are dropped (see `Crowd::compact_slots`).
const DEAD_SLOTS: usize = 1024;

/// At most this many (cell size, radius, obstacle coverage) keys get a static raster; agents
/// with other keys rasterise static shapes themselves each step.
const MAX_STATIC_RASTERS: usize = 32;

/// World-wide settings of a crowd.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrowdSettings {
    /// Lower-left corner of the walkable world.
    pub min: DVec2,
    /// Upper-right corner of the walkable world.
    pub max: DVec2,
    /// Cell size of the global maps.
    pub global_cell_size: f64,
    /// Radius static obstacles are grown by in the global maps (the typical agent radius).
    pub global_inflation: f64,
    /// Residual the global maps are solved to.
    pub global_tolerance: f64,
    /// Planner steps without progress before an agent is reported stuck
    /// ([`AgentState::Stuck`]; it keeps trying, and is no longer stuck once it progresses).
    ///
    /// Progress is measured towards the goal, not by the distance walked (our rule; the seeds
    /// have none). An agent progresses when, against its last mark, the level of the field it
    /// follows (its goal's map or the sub-goal field on top of its stack) has fallen by the
    /// field's fall over half a local cell along the descent at the mark, or its distance from
    /// the goal's region has shrunk by half a local cell, or it has stacked or reached a
    /// sub-goal; it is then marked where it stands. A walker circling round a goal it cannot
    /// get into, pacing to and fro, or pushed back by a crowd makes none however far it walks,
    /// until it comes nearer than it was at its mark. A map solved again (obstacles changed) is
    /// read afresh at the mark; a new goal starts afresh. Towards a search's target, whose map
    /// changes every step, and outside the global grid, progress is a net displacement of one
    /// local cell. At 0, every step without progress is stuck and no step with it.
    pub stuck_after: u32,
    /// Global maps re-solved at most per step after obstacle edits; the others keep their
    /// previous (converged) map until their turn, so an edit never stalls a step by solving
    /// every goal's map at once. 0 counts as 1.
    pub map_solves_per_step: usize,
    /// Sight: when on, an agent's behaviour sees only neighbours it has a line of sight to
    /// (the segment between the two centres touches no static shape, [`Shape::segment_distance`]).
    /// It decides the nearest agent of `TowardsNearest` / `AroundNearest` and whether someone is
    /// ahead for the `ahead` slot. Neighbours are stamped into the local map either way: they
    /// are obstacles whether seen or not. Off by default (the seeds test distance only).
    pub line_of_sight: bool,
    /// The seeds' steering (the default for now) or crowdfield's for crowds that flow: see
    /// [`Preset`](crate::Preset). Agents' local-map choices left to it are filled in when
    /// they spawn.
    pub preset: crate::Preset,
}

impl Default for CrowdSettings {
    fn default() -> Self {
        Self {
            min: DVec2::ZERO,
            max: DVec2::splat(50.0),
            global_cell_size: 0.5,
            global_inflation: 0.25,
            global_tolerance: 1e-10,
            stuck_after: 60,
            map_solves_per_step: 2,
            line_of_sight: false,
            preset: crate::Preset::default(),
        }
    }
}

impl CrowdSettings {
    /// The default settings on the seeds' steering ([`Preset::Seeds`](crate::Preset::Seeds)).
    pub fn seeds() -> Self {
        Self {
            preset: crate::Preset::Seeds,
            ..Self::default()
        }
    }
}

/// Identifies a goal (and its global map).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GoalId(pub u32);

/// Identifies a static obstacle added with [`Crowd::add_obstacle`]. Ids are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObstacleId(pub u32);

/// Identifies an agent. Ids are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId(pub u32);

impl std::fmt::Display for AgentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "agent {}", self.0)
    }
}

impl std::fmt::Display for GoalId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "goal {}", self.0)
    }
}

impl std::fmt::Display for ObstacleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "obstacle {}", self.0)
    }
}

/// Who decides an agent's steps.
///
/// Every agent of a crowd, however it is steered, is sensed by the others (stamped into their
/// maps), kept apart by the collision guard, and has the same states and ids. Only the
/// decision differs: an agent with [`Steering::LocalMap`] relaxes a local map of its own every
/// step (seeds 000 and 001); one with [`Steering::External`] takes the step a host hands over
/// with [`Crowd::hand_over_step`] (a group deciding from its group map, seed 004 Eq 5.1; a
/// marker crowd; a game's own controller) and commits it through the same guard, in the same
/// id order.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Steering {
    /// The agent's own local map: sensing, relaxation and decision inside the crowd.
    #[default]
    LocalMap,
    /// Steps handed over from outside before each step ([`Crowd::hand_over_step`]); without
    /// one, the agent stands for that step. Such an agent need not have goals; with goals, it
    /// takes the next one on reaching each, as any agent does. It is never reported stuck or
    /// unreachable: whoever steers it judges its progress.
    External,
}

/// A step handed over for an agent with [`Steering::External`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HandedStep {
    /// Displacement for this planner step (world units, at most the agent's `max_step`).
    pub displacement: DVec2,
    /// Unit heading the agent faces after the step (zero: keep the current one, or take the
    /// displacement's direction when it moves).
    pub heading: DVec2,
    /// The share of its top speed it walks (0 to 1), reported as [`Agent::speed_factor`].
    pub speed_factor: f64,
}

/// What an agent does after its last goal.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ArrivalAction {
    /// Stay, in state [`AgentState::Arrived`], still an obstacle for others.
    #[default]
    Stop,
    /// Leave the crowd.
    Despawn,
    /// Walk on into the last goal's region, towards its centre, to make room behind, then
    /// stay as with [`Stop`](Self::Stop). Walkers that stop where they first touch an area goal
    /// stand in its doorway; these clear it. The agent is reported arrived once, when it
    /// first reaches the goal, and is in state [`AgentState::Arrived`] from then on while it
    /// keeps planning, guarded as any step, with a local map whose goal is the way to the
    /// centre: the border towards it while the centre is beyond the window, then the open cells
    /// inside the region nearest the centre among those it can reach (those settled before it
    /// push them out; where none is left it stays where it is, so a full goal keeps the margin
    /// where others arrive as `Stop` does). It stops planning on one of those cells, or after
    /// [`CrowdSettings::stuck_after`] steps without coming a local cell nearer the centre, and
    /// never moves again unless given new goals. Meant for area goals: at a line goal it heads
    /// for the line's middle and settles on the line's cells nearest it, or stays where none
    /// is within reach. A goal given up on its time limit is not walked into.
    Settle,
}

/// Where an agent stands.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentState {
    /// Walking towards its goal.
    Moving,
    /// Planned a stop this step (speed law gave 0, or the collision guard held it).
    Waiting,
    /// Reached its last goal and stopped.
    Arrived,
    /// No progress for `stuck_after` steps; still trying.
    Stuck,
    /// No route from its region to its goal.
    Unreachable,
}

/// Everything that defines one agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentParams {
    /// Start position.
    pub position: DVec2,
    /// Disc radius.
    pub radius: f64,
    /// Longest step per planner step (world units, at most one local cell).
    pub max_step: f64,
    /// Goals in order.
    pub goals: Vec<GoalId>,
    /// Distance to a goal's centre that counts as reached (also reached on any goal cell).
    pub arrival_radius: f64,
    /// What to do after the last goal.
    pub on_arrival: ArrivalAction,
    /// Planner steps the agent may spend on each goal, by index (missing or `None`: no limit),
    /// counted whether it walks, waits or has no route. When a goal's limit runs out the agent
    /// gives it up ([`StepReport::timed_out`]) and walks to the next one; after the last it
    /// stops (state [`AgentState::Arrived`], or it leaves with [`ArrivalAction::Despawn`]) but is
    /// not reported as arrived. SteerSuite's timed goals work this way.
    pub time_limits: Vec<Option<u32>>,
    /// Behaviour slots for (v, ε).
    pub behaviour: BehaviourSlots,
    /// Facing at spawn (zero: take the first descent at full speed).
    pub initial_heading: DVec2,
    /// Heading rule (default rule C, m_a = 4).
    pub heading: HeadingRule,
    /// Speed law (default the Fa table).
    pub speed: SpeedLaw,
    /// Local map.
    pub local_map: LocalMapSettings,
    /// Seed of the agent's own random stream.
    pub seed: u64,
    /// Who decides its steps: its own local map (the default) or a host ([`Steering`]).
    pub steering: Steering,
}

impl Default for AgentParams {
    fn default() -> Self {
        Self {
            position: DVec2::ZERO,
            radius: 0.25,
            max_step: 0.35,
            goals: Vec::new(),
            arrival_radius: 0.5,
            on_arrival: ArrivalAction::Stop,
            time_limits: Vec::new(),
            behaviour: BehaviourSlots::default(),
            initial_heading: DVec2::ZERO,
            heading: HeadingRule::default(),
            speed: SpeedLaw::default(),
            local_map: LocalMapSettings::default(),
            seed: 0,
            steering: Steering::LocalMap,
        }
    }
}

/// One agent's live state.
#[derive(Debug, Clone)]
pub struct Agent {
    params: AgentParams,
    position: DVec2,
    heading: DVec2,
    state: AgentState,
    goal_index: usize,
    local: LocalMap,
    behaviour_state: BehaviourState,
    subgoals: SubgoalStack,
    bias: Bias,
    speed_factor: f64,
    stalled: u32,
    /// Where the agent last made progress (for a settling agent: its nearest point to the
    /// goal's centre so far).
    progress_mark: DVec2,
    /// The followed field's level and the distance from the goal at `progress_mark`, when
    /// progress is measured towards the goal (see [`CrowdSettings::stuck_after`]); `None`: by
    /// net displacement.
    level_mark: Option<LevelMark>,
    /// Planner steps spent on the current goal.
    steps_on_goal: u32,
    /// Arrived with [`ArrivalAction::Settle`] and still walking in.
    settling: bool,
    /// The unit direction it wanted to walk at its last planning (its global map's descent,
    /// sub-goals included; zero where it had none).
    way: DVec2,
    /// For [`Steering::External`]: the step handed over for the next planning.
    handed: Option<HandedStep>,
}

/// What an agent's progress towards its goal is measured against: the level of the field it
/// followed at its progress mark (read on which map, at which sub-goal depth) and its distance
/// from the goal's region there.
#[derive(Debug, Clone, Copy)]
struct LevelMark {
    /// Potential of the followed field at the mark.
    level: f64,
    /// How far below `level` counts as progress: the field's fall over half a local cell along
    /// its descent at the mark.
    drop: f64,
    /// Distance from the mark to the goal's region.
    gap: f64,
    /// [`Goal::revision`] of the map read.
    revision: u64,
    /// Sub-goal layers stacked over it.
    depth: usize,
}

impl Agent {
    /// Counts a planner step on the current goal; true when its time limit has run out.
    fn tick_goal_clock(&mut self) -> bool {
        self.steps_on_goal = self.steps_on_goal.saturating_add(1);
        self.params
            .time_limits
            .get(self.goal_index)
            .copied()
            .flatten()
            .is_some_and(|limit| self.steps_on_goal >= limit)
    }

    /// Whether the agent takes part in planning (everything but arrived, and arrived agents
    /// still settling; always, when steered from outside).
    fn plans(&self) -> bool {
        self.is_external() || self.relaxes()
    }

    /// Whether the agent is steered from outside ([`Steering::External`]).
    fn is_external(&self) -> bool {
        self.params.steering == Steering::External
    }

    /// Whether the agent plans on a local map of its own this step.
    fn relaxes(&self) -> bool {
        !self.is_external()
            && (self.settling
                || matches!(
                    self.state,
                    AgentState::Moving
                        | AgentState::Waiting
                        | AgentState::Stuck
                        | AgentState::Unreachable
                ))
            && self.goal_index < self.params.goals.len()
    }

    /// Heading and speed from the relaxed local map.
    fn decide(&self, bias: Bias, recovered: bool, queue: plan::Queue) -> Plan {
        let mut descent = self.local.descent_at(self.position);
        // Queueing (`Preset::queues`): a descent that turns back from the way, or none at all,
        // where nothing but walkers lies ahead, is a window closed by neighbours (or cells
        // closed by the jambs of a door the agent stands in); press on along the way and let
        // the guard hold the agent behind them.
        let turned = descent.dot(self.way) < 0.0 || descent == DVec2::ZERO;
        match queue {
            plan::Queue::Press if turned => {
                descent = self.way;
            }
            plan::Queue::No | plan::Queue::Press => {}
        }
        let (heading, factor) = decide(
            self.heading,
            descent,
            self.params.heading,
            self.params.speed,
        );
        Plan {
            displacement: heading * self.params.max_step * factor,
            heading,
            speed_factor: factor,
            bias,
            unreachable: false,
            recovered,
        }
    }

    /// The unit direction the agent wanted to walk at its last planning: its global map's
    /// descent, sub-goals included (zero before its first planning, or where it had none).
    /// What [`NeighbourStamping::ExceptSameWay`](crate::NeighbourStamping) compares.
    pub fn way(&self) -> DVec2 {
        self.way
    }

    /// Planner steps since the agent last progressed towards its goal (see
    /// [`CrowdSettings::stuck_after`]); 0 on the step it progressed.
    pub fn stalled(&self) -> u32 {
        self.stalled
    }

    /// Current position.
    pub fn position(&self) -> DVec2 {
        self.position
    }
    /// Current unit heading (zero before the first step).
    pub fn heading(&self) -> DVec2 {
        self.heading
    }
    /// Current state.
    pub fn state(&self) -> AgentState {
        self.state
    }
    /// Parameters it was spawned with (goals, behaviour…).
    pub fn params(&self) -> &AgentParams {
        &self.params
    }
    /// The bias used in the last step.
    pub fn bias(&self) -> Bias {
        self.bias
    }
    /// The speed factor of the last step (0 = stopped by the speed law).
    pub fn speed_factor(&self) -> f64 {
        self.speed_factor
    }
    /// Whether it arrived with [`ArrivalAction::Settle`] and is still walking into its goal.
    pub fn is_settling(&self) -> bool {
        self.settling
    }
    /// Index into `params.goals` of the current goal.
    pub fn goal_index(&self) -> usize {
        self.goal_index
    }
    /// The local map as of the last step.
    pub fn local_map(&self) -> &LocalMap {
        &self.local
    }
    /// Sub-goals currently stacked against flat regions.
    pub fn subgoal_depth(&self) -> usize {
        self.subgoals.len()
    }
    /// The stack of sub-goal fields over the current goal's global map.
    pub fn subgoals(&self) -> &SubgoalStack {
        &self.subgoals
    }
}

/// What happened in one step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepReport {
    /// Agents that reached their last goal.
    pub arrived: Vec<AgentId>,
    /// Agents that reached an intermediate goal and took the next.
    pub advanced: Vec<AgentId>,
    /// Agents removed after their last goal ended, each with the position it committed in
    /// this step: the crowd no longer holds that agent, so this is the only record of its last
    /// move.
    pub removed: Vec<(AgentId, DVec2)>,
    /// Agents that became stuck this step.
    pub stuck: Vec<AgentId>,
    /// Agents found to have no route this step.
    pub unreachable: Vec<AgentId>,
    /// Agents that gave up a goal whose time limit ran out, with the index of that goal.
    pub timed_out: Vec<(AgentId, usize)>,
    /// Agents whose flat field was recovered with sub-goals this step.
    pub recovered: Vec<AgentId>,
    /// Goals whose global map was re-solved after obstacle edits at the start of this step.
    pub maps_solved: Vec<GoalId>,
}

/// The crowd.
#[derive(Debug, Clone)]
pub struct Crowd {
    settings: CrowdSettings,
    geometry: GridGeometry,
    /// Static shapes: the user's, then the four bounding walls.
    statics: Vec<Shape>,
    /// Id of each user shape in `statics` (`None` for the walls).
    static_ids: Vec<Option<ObstacleId>>,
    next_obstacle: u32,
    workspace: MultigridWorkspace,
    /// Goals by id (`None` once removed; ids are never reused).
    goals: Vec<Option<Goal>>,
    agents: Vec<Option<Agent>>,
    /// Each slot's agent id, increasing (ids are never reused; removed agents' slots are
    /// dropped between steps once they outnumber the live ones, see `compact_slots`).
    ids: Vec<u32>,
    /// The id the next agent spawned gets.
    next_id: u32,
    step: u64,
    /// Static shapes on the local-map lattices, keyed by the bits of (cell size, radius) and
    /// the obstacle coverage.
    rasters: Vec<(RasterKey, StaticRaster)>,
    /// How far beyond the world bounds the rasters reach.
    raster_reach: f64,
    /// Changes whenever `rasters` do, so that disc rasters laid over them can tell.
    raster_generation: u64,
    /// The next step's disc rasters, counted during the last commit (see [`ahead`]).
    ahead: Option<CountedAhead>,
    /// Bounding boxes of `statics`.
    static_bounds: Vec<(DVec2, DVec2)>,
    /// The static boxes on a grid for the collision guard, where there are many; built when
    /// first needed, dropped when a static obstacle is added or removed.
    shape_grid: Option<ShapeGrid>,
    /// Agent positions for overlap checks while spawning; dropped when agents move or leave.
    spawn_index: Option<SpatialHash>,
    /// Largest agent radius ever spawned.
    largest_radius: f64,
    /// Chunk buffers kept from step to step.
    scratch: ScratchPool,
    /// Pool threads kept awake between steps.
    warm: WarmWorkers,
    /// Whether small crowds' planning is shared between threads, by measurement.
    sharing: ShareTuner,
    /// Moving obstacles of the current step, with their bounding boxes.
    moving: Vec<(Shape, (DVec2, DVec2))>,
    /// The moving obstacles' boxes on a grid, where there are at least `guard::SHAPE_GRID_MIN`
    /// (built as they are set): sensing and the collision guard then look up those near an
    /// agent instead of scanning them all for each agent.
    moving_grid: Option<ShapeGrid>,
    /// The step under way, between phases.
    in_flight: Option<Box<InFlight>>,
    /// Each planning agent's [`Way`] as the step started (what neighbours read of each other
    /// under [`NeighbourStamping`](crate::NeighbourStamping)).
    ways: Vec<Option<Way>>,
    /// Tests: sensing programs search the whole sensing box at once (the reference the
    /// near-first search is compared with).
    #[cfg(test)]
    sense_whole_box: bool,
    /// Tests: steps run through [`Crowd::plan_and_commit`].
    #[cfg(test)]
    pipelined_steps: u64,
}

/// The phases of one planner step, in the order they run. The Bevy plugin runs each in its own
/// system set; [`Crowd::advance_to`] runs them one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepPhase {
    /// Pending global maps re-solved after obstacle edits (a few per step).
    Guidance,
    /// Snapshot of positions, spatial index, and per agent: global descent, behaviour slot,
    /// (v, ε), local map re-centred and stamped, intermediate goal projected.
    Sensing,
    /// Local maps relaxed, batched across agents.
    Relaxation,
    /// Local descent → heading rule and speed law → a proposed step per agent.
    Decision,
    /// Steps committed through the collision guard in id order; goals advanced. Ends the step.
    Motion,
}

impl StepPhase {
    /// The phase after this one (`None` after [`StepPhase::Motion`]).
    pub fn next(self) -> Option<Self> {
        match self {
            StepPhase::Guidance => Some(StepPhase::Sensing),
            StepPhase::Sensing => Some(StepPhase::Relaxation),
            StepPhase::Relaxation => Some(StepPhase::Decision),
            StepPhase::Decision => Some(StepPhase::Motion),
            StepPhase::Motion => None,
        }
    }
}

/// Every agent slot's position and radius as a step starts (`None` for empty slots).
type Snapshot = Vec<Option<(DVec2, f64)>>;

/// Where a planning agent walks, as its neighbours see it when the step starts.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Way {
    /// Its unit heading (zero before its first step).
    heading: DVec2,
    /// The unit direction it wanted to walk at its last planning (zero where it had none).
    way: DVec2,
    /// Its top speed, as the length of a full step.
    pace: f64,
    /// Planner steps since it last progressed.
    stalled: u32,
}

/// A step under way: what each phase hands to the next.
#[derive(Debug, Clone)]
struct InFlight {
    done: StepPhase,
    maps_solved: Vec<GoalId>,
    snapshot: Snapshot,
    hash: Option<AgentGrid>,
    prepared: Vec<Prepared>,
    plans: Vec<Option<Plan>>,
    /// How far agents were moved by the host since `hash` indexed them (summed over moves, a
    /// bound): the collision guard looks that much further.
    drift: f64,
    /// The planners counted as the step started and whether their planning is shared between
    /// threads (see [`ShareTuner`]).
    share: Option<(usize, bool)>,
    /// The keys of the step's disc rasters laid over static rasters, with the local cell size
    /// and radius of each: what the commit counts ahead for the next step.
    disc_keys: Vec<DiscKey>,
}

/// An agent's step after sensing and stamping.
#[derive(Debug, Clone)]
enum Prepared {
    /// Not planning (arrived or removed).
    Idle,
    /// Planned without relaxation (no route).
    Done(Plan),
    /// Local map stamped; relax it with `bias`, then decide (queueing where `queue` allows:
    /// see `World::may_queue`).
    Relax {
        bias: Bias,
        recovered: bool,
        queue: plan::Queue,
    },
}

#[derive(Debug, Clone)]
struct Plan {
    displacement: DVec2,
    heading: DVec2,
    speed_factor: f64,
    bias: Bias,
    unreachable: bool,
    recovered: bool,
}

impl Crowd {
    /// An empty world with static obstacles `statics` (validated).
    pub fn new(settings: CrowdSettings, statics: Vec<Shape>) -> Result<Self, SteerError> {
        let geometry =
            GridGeometry::covering(settings.min, settings.max, settings.global_cell_size)?;
        for s in &statics {
            s.validate()?;
        }
        if !(settings.global_inflation.is_finite() && settings.global_inflation >= 0.0) {
            return Err(crowdfield_field::FieldError::BadExtent(settings.global_inflation).into());
        }
        let mut statics = statics;
        let static_ids: Vec<Option<ObstacleId>> = (0..statics.len() as u32)
            .map(|i| Some(ObstacleId(i)))
            .chain([None; 4])
            .collect();
        let next_obstacle = statics.len() as u32;
        statics.extend(bounding_walls(settings.min, settings.max));
        let static_bounds = statics
            .iter()
            .map(Shape::bounds)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            settings,
            geometry,
            statics,
            static_ids,
            next_obstacle,
            workspace: MultigridWorkspace::new(),
            goals: Vec::new(),
            agents: Vec::new(),
            step: 0,
            rasters: Vec::new(),
            raster_reach: 0.0,
            raster_generation: 0,
            ahead: None,
            static_bounds,
            shape_grid: None,
            spawn_index: None,
            largest_radius: 0.0,
            scratch: ScratchPool::default(),
            warm: WarmWorkers::default(),
            sharing: ShareTuner::default(),
            moving: Vec::new(),
            moving_grid: None,
            ids: Vec::new(),
            next_id: 0,
            in_flight: None,
            ways: Vec::new(),
            #[cfg(test)]
            sense_whole_box: false,
            #[cfg(test)]
            pipelined_steps: 0,
        })
    }

    /// Settings.
    pub fn settings(&self) -> &CrowdSettings {
        &self.settings
    }

    /// How long the thread pool's other threads wait awake for the next step after a step's
    /// parallel work; zero (the default) lets them sleep at once.
    pub fn worker_spin(&self) -> Duration {
        self.warm.spin
    }

    /// Sets how long, after a step's parallel work, the other threads of the rayon pool it ran
    /// in stay awake for the next step: as many as the step had jobs beyond the first (all but
    /// the caller after a phase-by-phase step), each busy-waiting until the next step hands
    /// out its jobs, the crowd is dropped or `spin` has passed, running any other work queued
    /// in the pool meanwhile.
    /// Results never depend on it. Off (zero) by default.
    ///
    /// For steps taken back to back (headless runs and experiments). A pool thread idle for
    /// more than a few tens of microseconds goes to sleep, and waking it takes about as long
    /// again, while the serial part of a step (the commit, the caller's work between steps, the
    /// snapshot and rasters of the next) lasts about that long, so every parallel part starts
    /// with one thread; a spin of 1 ms made crowds stepped back to back faster
    /// (docs/performance.md, *Measurements behind tuning constants* and *Two threads*). In a
    /// game, whose steps are far apart, it only costs: up to `spin` of a core's time per kept
    /// thread and step. It can also slow other parallel work run in the same process afterwards
    /// (*Two threads*).
    pub fn set_worker_spin(&mut self, spin: Duration) {
        self.warm.spin = spin;
    }

    /// Static obstacles, ending with the four walls just outside the world bounds. The first
    /// ones given to [`Crowd::new`] have ids 0, 1, 2…
    pub fn statics(&self) -> &[Shape] {
        &self.statics
    }

    /// Planner steps taken.
    pub fn step_count(&self) -> u64 {
        self.step
    }

    /// Moves an agent to `position` (a host whose physics or animation owns motion reports
    /// where the agent really is before each step). The position must be finite and inside the
    /// world bounds; overlaps are not checked here (the guard keeps later steps from deepening
    /// them). During a step (between [`Crowd::advance_to`] phases) the agent keeps the plan it
    /// sensed for, steps from the new position, and the others' steps are guarded against it
    /// there. Its progress mark stays ([`CrowdSettings::stuck_after`]): a host's small
    /// corrections every step count as the walk they are, but an agent carried away from its
    /// goal makes no progress until it is back as near as its mark; give it its goals again
    /// ([`Crowd::set_goals`]) after such a jump to start the count afresh.
    pub fn set_position(&mut self, id: AgentId, position: DVec2) -> Result<(), SteerError> {
        for (what, value) in [("position.x", position.x), ("position.y", position.y)] {
            if !value.is_finite() {
                return Err(FieldError::NonFinite { what, value }.into());
            }
        }
        if position.cmplt(self.settings.min).any() || position.cmpgt(self.settings.max).any() {
            return Err(SteerError::OutOfBounds {
                x: position.x,
                y: position.y,
            });
        }
        let slot = self.slot_of(id).ok_or(SteerError::UnknownAgent(id))?;
        let agent = self.agents[slot]
            .as_mut()
            .ok_or(SteerError::UnknownAgent(id))?;
        agent.position = position;
        self.spawn_index = None;
        // Moved after this step's snapshot: the commit checks the others against where it is
        // now, and looks as much further through the snapshot's index.
        if let Some(flight) = self.in_flight.as_mut()
            && let Some(Some((at, _))) = flight.snapshot.get_mut(slot)
        {
            flight.drift += (position - *at).length();
            *at = position;
        }
        Ok(())
    }

    /// Gives an agent a new goal queue, starting with its first goal (an empty queue stops it,
    /// as arrived). Sub-goals stacked for the old goal are dropped; the time limits of
    /// [`AgentParams::time_limits`] apply to the new queue by index, each starting afresh.
    pub fn set_goals(&mut self, id: AgentId, goals: Vec<GoalId>) -> Result<(), SteerError> {
        if let Some(g) = goals.iter().find(|g| self.goal(**g).is_none()) {
            return Err(SteerError::UnknownGoal(*g));
        }
        let agent = self
            .slot_of(id)
            .and_then(|slot| self.agents[slot].as_mut())
            .ok_or(SteerError::UnknownAgent(id))?;
        agent.state = if goals.is_empty() {
            AgentState::Arrived
        } else {
            AgentState::Moving
        };
        agent.params.goals = goals;
        agent.goal_index = 0;
        agent.steps_on_goal = 0;
        agent.subgoals.clear();
        agent.stalled = 0;
        agent.progress_mark = agent.position;
        agent.level_mark = None;
        agent.settling = false;
        Ok(())
    }

    /// Adds an agent after validating everything about it.
    pub fn spawn(&mut self, mut params: AgentParams) -> Result<AgentId, SteerError> {
        params.local_map = params.local_map.resolved(self.settings.preset);
        let p = params.position;
        for (what, v) in [
            ("initial heading x", params.initial_heading.x),
            ("initial heading y", params.initial_heading.y),
            ("position.x", p.x),
            ("position.y", p.y),
            ("radius", params.radius),
            ("max step", params.max_step),
            ("arrival radius", params.arrival_radius),
        ] {
            if !v.is_finite() {
                return Err(crowdfield_field::FieldError::NonFinite { what, value: v }.into());
            }
        }
        for (value, ok) in [
            (params.radius, params.radius > 0.0),
            (params.max_step, params.max_step >= 0.0),
            (params.arrival_radius, params.arrival_radius >= 0.0),
        ] {
            if !ok {
                return Err(crowdfield_field::FieldError::BadExtent(value).into());
            }
        }
        if p.x < self.settings.min.x
            || p.y < self.settings.min.y
            || p.x > self.settings.max.x
            || p.y > self.settings.max.y
        {
            return Err(SteerError::OutOfBounds { x: p.x, y: p.y });
        }
        params.local_map.validate()?;
        params.behaviour.validate()?;
        if params.max_step > params.local_map.cell_size {
            return Err(SteerError::StepTooLong {
                max_step: params.max_step,
                cell_size: params.local_map.cell_size,
            });
        }
        for g in &params.goals {
            if self.goal(*g).is_none() {
                return Err(SteerError::UnknownGoal(*g));
            }
        }
        if self.statics.iter().any(|s| {
            s.distance(p)
                .map_or(true, |d| overlaps_beyond_contact(d, params.radius))
        }) {
            return Err(SteerError::InsideObstacle { x: p.x, y: p.y });
        }
        if self.spawn_index.is_none() {
            let points: Vec<Option<(DVec2, f64)>> = self
                .agents
                .iter()
                .map(|a| a.as_ref().map(|a| (a.position, a.params.radius)))
                .collect();
            self.spawn_index = Some(SpatialHash::build(&points, SPAWN_CELL));
        }
        let index = self.spawn_index.as_mut().expect("built above");
        let mut overlap = None;
        index.for_each_near(p, params.radius + self.largest_radius, |i| {
            if overlap.is_none()
                && let Some(o) = &self.agents[i]
                && overlaps_beyond_contact(
                    (o.position - p).length(),
                    o.params.radius + params.radius,
                )
            {
                overlap = Some(i);
            }
        });
        if let Some(i) = overlap {
            return Err(SteerError::OverlapsAgent {
                x: p.x,
                y: p.y,
                other: AgentId(self.ids[i]),
            });
        }
        let local = LocalMap::new(params.local_map, p)?;
        let state = if params.goals.is_empty() {
            AgentState::Arrived
        } else {
            AgentState::Moving
        };
        let agent = Agent {
            behaviour_state: BehaviourState::seeded(params.seed),
            position: p,
            heading: params
                .initial_heading
                .try_normalize()
                .unwrap_or(DVec2::ZERO),
            state,
            goal_index: 0,
            local,
            subgoals: SubgoalStack::new(),
            bias: Bias::HARMONIC,
            speed_factor: 0.0,
            stalled: 0,
            progress_mark: p,
            level_mark: None,
            steps_on_goal: 0,
            settling: false,
            way: DVec2::ZERO,
            handed: None,
            params,
        };
        let slot = self.agents.len();
        let id = self.next_id;
        self.next_id = self
            .next_id
            .checked_add(1)
            .ok_or(SteerError::TooManyAgents)?;
        self.largest_radius = self.largest_radius.max(agent.params.radius);
        if let Some(index) = &mut self.spawn_index {
            index.insert(slot, p);
        }
        self.agents.push(Some(agent));
        self.ids.push(id);
        Ok(AgentId(id))
    }

    /// An agent by id (`None` once removed).
    pub fn agent(&self, id: AgentId) -> Option<&Agent> {
        self.slot_of(id).and_then(|slot| self.agents[slot].as_ref())
    }

    /// Live agents with their ids, in id order.
    pub fn agents(&self) -> impl Iterator<Item = (AgentId, &Agent)> {
        self.agents
            .iter()
            .zip(&self.ids)
            .filter_map(|(a, &id)| a.as_ref().map(|a| (AgentId(id), a)))
    }

    /// The slot holding agent `id`'s state (ids increase with slots), `None` for an id never
    /// given or whose slot was dropped.
    fn slot_of(&self, id: AgentId) -> Option<usize> {
        self.ids.binary_search(&id.0).ok()
    }

    /// Drops removed agents' slots once they outnumber the live agents (and are more than
    /// [`DEAD_SLOTS`]), between steps: every step walks all slots several times, so a host
    /// that keeps spawning and removing agents would otherwise slow down without end (100 live
    /// walkers stepped 5 times slower beside 10,000 removed ones, 70 times beside 100,000).
    /// The live agents keep their order and their ids; only slot indices, which nothing
    /// outside the crowd sees, change.
    fn compact_slots(&mut self) {
        let live = self.agents.iter().flatten().count();
        let dead = self.agents.len() - live;
        if dead <= DEAD_SLOTS || dead <= live || self.in_flight.is_some() {
            return;
        }
        let slots = std::mem::take(&mut self.agents).into_iter();
        (self.agents, self.ids) = slots
            .zip(std::mem::take(&mut self.ids))
            .filter(|(agent, _)| agent.is_some())
            .unzip();
        self.spawn_index = None;
        // Counted from slots that have moved.
        self.ahead = None;
    }

    /// Hands over the step an agent with [`Steering::External`] takes at the next planning
    /// (its displacement goes through the collision guard in id order, as every agent's
    /// does). A step handed while a step is under way and past sensing waits for the next
    /// one; a second hand-over before planning replaces the first. Errors: an unknown agent,
    /// an agent that steers itself, a displacement or heading that is not finite, a
    /// displacement longer than the agent's `max_step` (by more than rounding), or a speed
    /// factor outside 0 to 1.
    pub fn hand_over_step(&mut self, id: AgentId, step: HandedStep) -> Result<(), SteerError> {
        let agent = self
            .slot_of(id)
            .and_then(|slot| self.agents[slot].as_mut())
            .ok_or(SteerError::UnknownAgent(id))?;
        if !agent.is_external() {
            return Err(SteerError::NotSteeredFromOutside(id));
        }
        let d = step.displacement;
        let finite = d.is_finite()
            && step.heading.is_finite()
            && step.speed_factor.is_finite()
            && (0.0..=1.0).contains(&step.speed_factor);
        if !finite || d.length() > agent.params.max_step * (1.0 + 1e-9) + 1e-12 {
            return Err(SteerError::BadHandedStep {
                agent: id,
                x: d.x,
                y: d.y,
            });
        }
        agent.handed = Some(step);
        Ok(())
    }

    /// Switches who decides an agent's steps ([`Steering`]) from its next planning on: a
    /// walker joining a group is handed over to it, and walks on its own local map again when
    /// it leaves (towards its goals, from a fresh start of its stall count). A step handed
    /// over and not yet taken is dropped.
    pub fn set_steering(&mut self, id: AgentId, steering: Steering) -> Result<(), SteerError> {
        let agent = self
            .slot_of(id)
            .and_then(|slot| self.agents[slot].as_mut())
            .ok_or(SteerError::UnknownAgent(id))?;
        if agent.params.steering == steering {
            return Ok(());
        }
        agent.params.steering = steering;
        agent.handed = None;
        agent.stalled = 0;
        agent.progress_mark = agent.position;
        agent.level_mark = None;
        agent.subgoals.clear();
        agent.state =
            if steering == Steering::External || agent.goal_index < agent.params.goals.len() {
                AgentState::Moving
            } else {
                AgentState::Arrived
            };
        Ok(())
    }

    /// Replaces an agent's behaviour slots at run time.
    pub fn set_behaviour(&mut self, id: AgentId, slots: BehaviourSlots) -> Result<(), SteerError> {
        slots.validate()?;
        let agent = self
            .slot_of(id)
            .and_then(|slot| self.agents[slot].as_mut())
            .ok_or(SteerError::UnknownAgent(id))?;
        agent.params.behaviour = slots;
        Ok(())
    }

    /// Removes an agent.
    pub fn remove(&mut self, id: AgentId) -> Result<(), SteerError> {
        let slot = self
            .slot_of(id)
            .map(|slot| &mut self.agents[slot])
            .ok_or(SteerError::UnknownAgent(id))?;
        self.spawn_index = None;
        slot.take().map(|_| ()).ok_or(SteerError::UnknownAgent(id))
    }

    /// One planner step for every agent: all of [`StepPhase`] in order.
    ///
    /// Sensing, stamping and decisions run in parallel over agents and the local maps are
    /// relaxed [`BATCH_LANES_F32`](crowdfield_field::BATCH_LANES_F32) at a time
    /// ([`FieldBatchF32`](crowdfield_field::FieldBatchF32), or
    /// [`BATCH_LANES`](crowdfield_field::BATCH_LANES) with
    /// [`FieldBatch`](crowdfield_field::FieldBatch) for
    /// [`LocalPrecision::F64`](crate::LocalPrecision::F64)); every agent's plan depends only on the
    /// snapshot and its own state, and the commit runs in id order, so the results are the same
    /// with any number of threads.
    pub fn step(&mut self) -> StepReport {
        self.advance_to(StepPhase::Motion)
            .expect("the motion phase ends the step")
    }

    /// Runs the phases of the current step up to and including `phase`, starting a step if none
    /// is under way; phases already run are not repeated. Returns the step's report once
    /// [`StepPhase::Motion`] has run (the step is then over), `None` before.
    ///
    /// A host that schedules its own work between phases (the Bevy plugin's system sets) calls
    /// this once per phase; `advance_to(StepPhase::Motion)` alone is a whole [`Crowd::step`].
    /// Agents may be spawned, removed or re-routed while a step is under way: a new agent has no
    /// plan until the next step, a removed one's plan is dropped, and a re-routed one commits
    /// its planned move and is checked against its new goals (an emptied queue stops it).
    ///
    /// Asked from outside any rayon pool for the rest of a step whose planning has not begun
    /// (`advance_to(StepPhase::Motion)` before sensing), a crowd of more than 64 planners runs
    /// it on a thread of rayon's global pool, where it commits while it plans; the caller waits
    /// for it. Results never depend on where a step runs.
    pub fn advance_to(&mut self, phase: StepPhase) -> Option<StepReport> {
        if self.hops_into_pool(phase) {
            return rayon::scope(|_| self.advance_to(phase));
        }
        loop {
            let next = match &self.in_flight {
                None => StepPhase::Guidance,
                Some(f) if f.done >= phase => return None,
                Some(f) => f
                    .done
                    .next()
                    .expect("Motion is the last phase and ends the step"),
            };
            if next == StepPhase::Motion {
                return Some(self.commit());
            }
            if next == StepPhase::Sensing && phase == StepPhase::Motion && self.pipelines() {
                // Nobody looks between sensing and motion: commit while planning (see
                // `pipeline`; the same computations).
                return Some(self.plan_and_commit());
            }
            if next == StepPhase::Sensing && phase >= StepPhase::Decision {
                // Nobody looks between sensing and decision: run the three together, a job of
                // agents at a time (the same computations, see `sense_relax_decide`).
                self.sense_relax_decide();
                continue;
            }
            match next {
                StepPhase::Guidance => {
                    self.compact_slots();
                    let share = self.wake_pool();
                    self.spawn_index = None;
                    let maps_solved = self.solve_pending();
                    self.take_guidance();
                    self.explore();
                    self.in_flight = Some(Box::new(InFlight {
                        done: StepPhase::Guidance,
                        maps_solved,
                        snapshot: Vec::new(),
                        hash: None,
                        prepared: Vec::new(),
                        plans: Vec::new(),
                        drift: 0.0,
                        share,
                        disc_keys: Vec::new(),
                    }));
                }
                StepPhase::Sensing => self.sense(),
                StepPhase::Relaxation => self.relax(),
                StepPhase::Decision => self.plan(),
                StepPhase::Motion => unreachable!("handled above"),
            }
        }
    }

    /// Decides whether the step's planning will be shared between threads ([`ShareTuner`]: more
    /// than one job, see [`job_sizes`], and, for small crowds, measured to pay) and if so wakes
    /// a pool thread at once, by queueing an empty task: a sleeping
    /// thread takes about as long to wake as the step's serial start (snapshot, rasters), so it
    /// is awake, looking for work, when the jobs are queued, instead of being woken by them.
    /// Changes no result. A small gain, near this machine's noise: through the plugin, four
    /// alternating pairs of `crowdfield bench` runs of the bottleneck, crossing and hallway on two
    /// threads put ORCA's lead over crowdfield at a median of 1.86×, 4.10× and 1.35× with it
    /// against 1.91×, 4.43× and 1.38× without (docs/performance.md, *Two threads*).
    ///
    /// Returns the planners counted and whether their planning will be shared (`None` on one
    /// thread).
    fn wake_pool(&mut self) -> Option<(usize, bool)> {
        let threads = rayon::current_num_threads();
        if threads < 2 {
            return None;
        }
        let planners = self.agents.iter().flatten().filter(|a| a.plans()).count();
        let share = self
            .sharing
            .choose(planners, threads, &job_sizes(planners, threads));
        if share {
            rayon::spawn(|| {});
        }
        Some((planners, share))
    }

    /// The phase the current step has completed, `None` between steps.
    pub fn phase(&self) -> Option<StepPhase> {
        self.in_flight.as_ref().map(|f| f.done)
    }

    /// Sensing: snapshot, spatial index, rasters; per agent (in parallel) sense, choose (v, ε),
    /// stamp the local map and project the intermediate goal.
    fn sense(&mut self) {
        let (snapshot, hash, discs) = self.sensing_start();
        let world = world_of!(self, &discs);
        self.warm.release();
        let prepared: Vec<Prepared> = self
            .agents
            .par_iter_mut()
            .enumerate()
            .map_init(Neighbours::default, |scratch, (i, slot)| match slot {
                Some(agent) if agent.plans() => world.prepare(i, agent, &hash, scratch),
                _ => Prepared::Idle,
            })
            .collect();
        let flight = self.in_flight.as_mut().expect("guidance ran");
        flight.snapshot = snapshot;
        flight.hash = Some(hash);
        flight.prepared = prepared;
        flight.disc_keys = disc_keys(&discs);
        flight.done = StepPhase::Sensing;
    }

    /// What every sensing starts from: searches explored, the snapshot and its spatial index,
    /// the static rasters planning agents need, and the step's disc rasters.
    fn sensing_start(&mut self) -> (Snapshot, AgentGrid, Vec<(RasterKey, DiscRaster)>) {
        let (snapshot, hash) = self.snapshot();
        self.note_ways();
        self.update_rasters();
        self.ensure_shape_grid();
        let ahead = self
            .ahead
            .take()
            .filter(|a| a.generation == self.raster_generation && a.counted(&snapshot))
            .map_or_else(Vec::new, |a| a.rasters);
        let discs = self.disc_rasters(&snapshot, ahead);
        (snapshot, hash, discs)
    }

    /// Sensing, relaxation and decision fused: the planning agents (in id order, the others
    /// skipped) in jobs of at most [`BATCH_LANES_F32`](crowdfield_field::BATCH_LANES_F32) (see
    /// [`job_sizes`]), each job prepared, relaxed and decided while its local maps are still in
    /// cache. Every agent gets exactly what the three phases one after the other give it:
    /// preparing reads only the snapshot and the agent, and each batch lane is relaxed as if
    /// alone (lanes are grouped by side, sweeps and precision within a job), so how agents fall
    /// into jobs changes no result. The jobs are shared between the pool's threads, or run one
    /// after the other on the stepping thread where [`ShareTuner`] found that faster for a crowd
    /// this small; the phase is timed for it.
    fn sense_relax_decide(&mut self) {
        let (snapshot, hash, discs) = self.sensing_start();
        let world = world_of!(self, &discs);
        let work = |scratch: &mut ChunkScratch, job: &mut [(usize, &mut Agent)]| {
            plan_job(&world, &hash, scratch, job)
        };
        let count = self.agents.len();
        let mut planners: Vec<(usize, &mut Agent)> = self
            .agents
            .iter_mut()
            .enumerate()
            .filter_map(|(i, slot)| slot.as_mut().filter(|a| a.plans()).map(|a| (i, a)))
            .collect();
        let threads = rayon::current_num_threads();
        let count_planners = planners.len();
        let shared_sizes = job_sizes(count_planners, threads);
        // Shared as decided when the step started, or, if agents came or left since, now.
        let share = match self.in_flight.as_ref().and_then(|f| f.share) {
            Some((n, share)) if n == count_planners => share,
            _ => self.sharing.choose(count_planners, threads, &shared_sizes),
        };
        let alone_sizes;
        let sizes = if share {
            &shared_sizes
        } else {
            alone_sizes = job_sizes(count_planners, 1);
            &alone_sizes
        };
        let jobs = split_into(&mut planners, sizes);
        // Threads kept awake since the last step take these jobs.
        self.warm.release();
        let started = Instant::now();
        let done: Vec<Vec<(usize, Option<Plan>)>> = if !share || jobs.len() <= 1 {
            // One thread: no thread pool round trip (hosts step small crowds from threads that
            // are not the pool's).
            let mut pooled = self.scratch.take();
            jobs.into_iter()
                .map(|job| work(&mut pooled.scratch, job))
                .collect()
        } else {
            let pool = &self.scratch;
            let count = jobs.len();
            let done = jobs
                .into_par_iter()
                .map_init(|| pool.take(), |pooled, job| work(&mut pooled.scratch, job))
                .collect();
            self.warm.keep(count - 1);
            done
        };
        self.sharing.record(
            count_planners,
            threads,
            &shared_sizes,
            share,
            started.elapsed(),
        );
        let mut plans: Vec<Option<Plan>> = vec![None; count];
        for (i, plan) in done.into_iter().flatten() {
            plans[i] = plan;
        }
        let flight = self.in_flight.as_mut().expect("guidance ran");
        flight.snapshot = snapshot;
        flight.hash = Some(hash);
        flight.plans = plans;
        flight.disc_keys = disc_keys(&discs);
        flight.done = StepPhase::Decision;
    }

    /// Relaxation: the stamped local maps in batches of agents with the same side and sweeps.
    fn relax(&mut self) {
        let flight = self.in_flight.as_mut().expect("sensing ran");
        let mut relaxing = to_relax(
            self.agents
                .iter_mut()
                .zip(&flight.prepared)
                .filter_map(|(slot, p)| slot.as_mut().map(|agent| (agent, p))),
        );
        let pool = &self.scratch;
        for group in relaxing.chunk_by_mut(|a, b| a.0 == b.0) {
            let sizes = job_sizes(group.len(), rayon::current_num_threads());
            split_into(group, &sizes)
                .into_par_iter()
                .for_each_init(|| pool.take(), |pooled, lanes| pooled.scratch.relax(lanes));
        }
        flight.done = StepPhase::Relaxation;
    }

    /// Decision: headings and speeds from the relaxed maps.
    fn plan(&mut self) {
        let flight = self.in_flight.as_mut().expect("relaxation ran");
        let prepared = std::mem::take(&mut flight.prepared);
        flight.plans = self
            .agents
            .par_iter()
            .zip(prepared)
            .map(|(slot, p)| match (slot, p) {
                (_, Prepared::Idle) => None,
                (_, Prepared::Done(plan)) => Some(plan),
                (
                    Some(agent),
                    Prepared::Relax {
                        bias,
                        recovered,
                        queue,
                    },
                ) => Some(agent.decide(bias, recovered, queue)),
                (None, Prepared::Relax { .. }) => None,
            })
            .collect();
        flight.done = StepPhase::Decision;
        self.warm.keep(usize::MAX);
    }

    /// Agent slot `i` as a snapshot reads it.
    fn snapshot_slot(&self, i: usize) -> Option<(DVec2, f64)> {
        self.agents[i]
            .as_ref()
            .map(|a| (a.position, a.params.radius))
    }

    /// Notes every planning agent's [`Way`] as the step starts, for its neighbours to read.
    fn note_ways(&mut self) {
        self.ways.clear();
        let goals = &self.goals;
        let first_ways = self.settings.preset.reads_first_ways();
        self.ways.extend(self.agents.iter().map(|a| {
            a.as_ref().filter(|a| a.plans()).map(|a| {
                let (mut heading, mut way) = (a.heading, a.way);
                // `Preset::reads_first_ways`: an agent that has not planned yet is read as
                // heading down its goal's guidance (a copy of its sub-goal stack is used).
                if first_ways
                    && heading == DVec2::ZERO
                    && way == DVec2::ZERO
                    && let Some(goal) = a
                        .params
                        .goals
                        .get(a.goal_index)
                        .and_then(|g| goals.get(g.0 as usize))
                        .and_then(Option::as_ref)
                {
                    let mut stack = a.subgoals.clone();
                    way = goal
                        .guidance_at(a.position, &mut stack)
                        .try_normalize()
                        .unwrap_or(DVec2::ZERO);
                    heading = way;
                }
                Way {
                    heading,
                    way,
                    pace: a.params.max_step,
                    stalled: a.stalled,
                }
            })
        }));
    }

    /// Every agent's position and radius as the step starts, and a spatial index over them.
    fn snapshot(&self) -> (Snapshot, AgentGrid) {
        let snapshot: Snapshot = (0..self.agents.len())
            .map(|i| self.snapshot_slot(i))
            .collect();
        // Cells of half the widest sensing reach: a window's query covers about 3×3 to 4×4
        // of them, fewer far-away candidates than 3×3 cells of the whole reach (the answers
        // do not depend on the cell size; callgrind: 2 % fewer instructions per step).
        let hash = AgentGrid::build(&snapshot, self.max_reach() * 0.5);
        (snapshot, hash)
    }

    /// Builds the static rasters planning agents need and do not have yet.
    fn update_rasters(&mut self) {
        let reach = self.max_reach() + 2.0;
        if reach > self.raster_reach {
            // A larger window than the rasters were built for: cells past their edge would
            // read as free even where a static shape lies, so build them again, wider.
            self.rasters.clear();
            self.raster_generation += 1;
            self.raster_reach = reach;
        }
        let reach = self.raster_reach;
        let (min, max) = (
            self.settings.min - DVec2::splat(reach),
            self.settings.max + DVec2::splat(reach),
        );
        // Nothing to build while every agent's key has its raster (the usual step), or no
        // raster is left to give.
        let missing = |a: &Agent| {
            let key = raster_key(&a.params.local_map, a.params.radius);
            !a.is_external() && !self.rasters.iter().any(|(k, _)| *k == key)
        };
        if self.rasters.len() >= MAX_STATIC_RASTERS || !self.agents.iter().flatten().any(missing) {
            return;
        }
        for KeyCount {
            key, cell, radius, ..
        } in keys_by_population(self.agents.iter().flatten().filter(|a| !a.is_external()))
        {
            if self.rasters.len() >= MAX_STATIC_RASTERS {
                break;
            }
            if self.rasters.iter().any(|(k, _)| *k == key) {
                continue;
            }
            if let Some(r) = StaticRaster::build(&self.statics, cell, radius, key.2, min, max) {
                self.rasters.push((key, r));
                self.raster_generation += 1;
            }
        }
    }

    /// The snapshot's discs counted on the lattice of each raster key (local cell size, radius,
    /// obstacle coverage) of the planning agents (up to [`MAX_STATIC_RASTERS`] keys; agents with
    /// further keys stamp their neighbours' discs one by one), with the key's static raster
    /// counted in where [`DiscRaster::build`] can lay the counts over it. Keys differing only in
    /// coverage count the same discs over different static rasters.
    ///
    /// `ahead` holds rasters already counted from this same snapshot (see [`ahead`]): each is
    /// taken for its key instead of counting it again.
    fn disc_rasters(
        &self,
        snapshot: &[Option<(DVec2, f64)>],
        mut ahead: Vec<(RasterKey, DiscRaster)>,
    ) -> Vec<(RasterKey, DiscRaster)> {
        let mut rasters: Vec<(RasterKey, DiscRaster)> = Vec::new();
        let keys = keys_by_population(self.agents.iter().flatten().filter(|a| a.relaxes()));
        let planners: usize = keys.iter().map(|k| k.count).sum();
        for &KeyCount {
            key,
            cell,
            radius,
            count,
        } in keys.iter().take(MAX_STATIC_RASTERS)
        {
            // Counting every disc for a few agents costs more than their stamping their
            // neighbours one by one (which stamps the same cells).
            if count * DISC_RASTER_SHARE < planners {
                break;
            }
            if let Some(k) = ahead.iter().position(|(k, _)| *k == key) {
                rasters.push(ahead.swap_remove(k));
                continue;
            }
            let statics = self.rasters.iter().find(|(k, _)| *k == key).map(|(_, r)| r);
            if let Some(r) = DiscRaster::build(snapshot, cell, radius, statics, self.raster_reach) {
                rasters.push((key, r));
            }
        }
        rasters
    }

    fn max_reach(&self) -> f64 {
        self.agents
            .iter()
            .flatten()
            .filter(|a| !a.is_external())
            .map(|a| a.params.local_map.width() * 0.5 * std::f64::consts::SQRT_2)
            .fold(1.0, f64::max)
    }
}

/// Prepares, relaxes and decides one job's agents (see [`Crowd::sense_relax_decide`]): each
/// agent's index and plan, in the job's order.
fn plan_job(
    world: &World<'_>,
    hash: &AgentGrid,
    scratch: &mut ChunkScratch,
    job: &mut [(usize, &mut Agent)],
) -> Vec<(usize, Option<Plan>)> {
    let prepared: Vec<Prepared> = job
        .iter_mut()
        .map(|(i, agent)| world.prepare(*i, agent, hash, &mut scratch.neighbours))
        .collect();
    let mut relaxing = to_relax(job.iter_mut().map(|(_, agent)| &mut **agent).zip(&prepared));
    for group in relaxing.chunk_by_mut(|a, b| a.0 == b.0) {
        scratch.relax(group);
    }
    drop(relaxing);
    job.iter()
        .zip(prepared)
        .map(|((i, agent), p)| {
            let plan = match p {
                Prepared::Idle => None,
                Prepared::Done(plan) => Some(plan),
                Prepared::Relax {
                    bias,
                    recovered,
                    queue,
                } => Some(agent.decide(bias, recovered, queue)),
            };
            (*i, plan)
        })
        .collect()
}

/// Goal `id` of `goals`, which an agent's queue holds: goals are removed only once no agent
/// holds them ([`Crowd::remove_goal`]).
fn live_goal(goals: &[Option<Goal>], id: GoalId) -> &Goal {
    goals[id.0 as usize]
        .as_ref()
        .expect("agents hold only goals that exist")
}

/// Four boxes, one metre thick, just outside the world rectangle: the closed border every local
/// map and the collision guard see.
fn bounding_walls(min: DVec2, max: DVec2) -> [Shape; 4] {
    let t = 1.0;
    [
        Shape::Aabb {
            min: DVec2::new(min.x - t, min.y - t),
            max: DVec2::new(max.x + t, min.y),
        },
        Shape::Aabb {
            min: DVec2::new(min.x - t, max.y),
            max: DVec2::new(max.x + t, max.y + t),
        },
        Shape::Aabb {
            min: DVec2::new(min.x - t, min.y),
            max: DVec2::new(min.x, max.y),
        },
        Shape::Aabb {
            min: DVec2::new(max.x, min.y),
            max: DVec2::new(max.x + t, max.y),
        },
    ]
}

/// What a static raster depends on: the local cell size, the agent radius and the obstacle
/// coverage.
type RasterKey = (u64, u64, Coverage);

/// A raster key with its cell size and radius, and how many of the agents asked for share it.
#[derive(Debug, Clone, Copy)]
struct KeyCount {
    key: RasterKey,
    cell: f64,
    radius: f64,
    count: usize,
}

/// A step's disc raster is counted for a key only where at least this share of the planning
/// agents (one in `DISC_RASTER_SHARE`) have it: counting every disc of the crowd for a handful of
/// agents costs more than their stamping their neighbours one by one, which stamps the same
/// cells; crowds of many radii stepped far faster with this rule than with a raster for the
/// first keys in id order (docs/performance.md, *Measurements behind tuning constants*).
const DISC_RASTER_SHARE: usize = 32;

/// The raster keys of `agents`, the most shared first (ties in order of first appearance), so
/// that the rasters the crowd can afford go to the keys most agents read.
fn keys_by_population<'a>(agents: impl Iterator<Item = &'a Agent>) -> Vec<KeyCount> {
    // Crowds usually have a key or a few: found by a scan, with a hash index only once there
    // are more (every step asks this, and a hash map costs small crowds an allocation).
    const SCANNED: usize = 8;
    let mut keys: Vec<KeyCount> = Vec::new();
    let mut index: std::collections::HashMap<RasterKey, usize> = std::collections::HashMap::new();
    for agent in agents {
        let (cell, radius) = (agent.params.local_map.cell_size, agent.params.radius);
        let key = raster_key(&agent.params.local_map, radius);
        let found = if keys.len() <= SCANNED {
            keys.iter().position(|k| k.key == key)
        } else {
            if index.is_empty() {
                index.extend(keys.iter().enumerate().map(|(k, c)| (c.key, k)));
            }
            index.get(&key).copied()
        };
        let k = found.unwrap_or_else(|| {
            keys.push(KeyCount {
                key,
                cell,
                radius,
                count: 0,
            });
            if !index.is_empty() {
                index.insert(key, keys.len() - 1);
            }
            keys.len() - 1
        });
        keys[k].count += 1;
    }
    // Stable: equal counts keep their first appearance's order.
    keys.sort_by_key(|k| std::cmp::Reverse(k.count));
    keys
}

/// A disc raster's key with its cell size, radius and windows' reach: what counting it ahead
/// needs to count it as [`DiscRaster::build`] would.
type DiscKey = (RasterKey, f64, f64, f64);

/// The keys of `discs` laid over static rasters, with their cell size, radius and windows'
/// reach.
fn disc_keys(discs: &[(RasterKey, DiscRaster)]) -> Vec<DiscKey> {
    discs
        .iter()
        .filter(|(_, r)| r.has_statics())
        .map(|(k, r)| (*k, r.cell(), r.inflation(), r.window()))
        .collect()
}

fn raster_key(map: &LocalMapSettings, radius: f64) -> RasterKey {
    (
        map.cell_size.to_bits(),
        radius.to_bits(),
        map.obstacle_coverage
            .unwrap_or(crowdfield_field::Coverage::Touch),
    )
}

fn shape_near(shape: &Shape, lo: DVec2, hi: DVec2, inflation: f64) -> bool {
    let centre = (lo + hi) * 0.5;
    let reach = (hi - lo).length() * 0.5 + inflation;
    shape.distance(centre).is_ok_and(|d| d <= reach)
}

#[cfg(test)]
mod tests;
