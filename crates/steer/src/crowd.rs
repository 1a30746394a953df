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
//!    descent → heading rule and speed law → a proposed displacement.
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

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use glam::DVec2;

use crowdfield_field::{
    BATCH_LANES, BATCH_LANES_F32, Bias, CellKind, Coverage, Field, FieldBatch, FieldBatchF32,
    FieldError, GridGeometry, MultigridSolver, MultigridWorkspace, SKEWED_MAX_MAPS, Shape,
    SubgoalCache, SubgoalStack, raster,
};
use rayon::prelude::*;

use crate::SteerError;
use crate::behaviour::{Behaviour, BehaviourInput, BehaviourSlots, BehaviourState};
use crate::disc_raster::DiscRaster;
use crate::local_map::{LocalMap, LocalMapSettings, LocalPrecision};
use crate::motion::{HeadingRule, SpeedLaw, decide};
use crate::search::{Search, SearchSettings};
use crate::static_raster::{CellRegion, StaticRaster, boxes_overlap};

/// The read-only [`World`] of crowd `$crowd` for its next step: a macro, not a method, so that
/// the crowd's agents stay free to be borrowed mutably beside it.
macro_rules! world_of {
    ($crowd:expr, $discs:expr) => {
        World {
            discs: $discs,
            statics: &$crowd.statics,
            static_bounds: &$crowd.static_bounds,
            sight: $crowd.settings.line_of_sight,
            moving: &$crowd.moving,
            goals: &$crowd.goals,
            step: $crowd.step,
            rasters: &$crowd.rasters,
            max_radius: $crowd.largest_radius,
            #[cfg(test)]
            sense_whole_box: $crowd.sense_whole_box,
        }
    };
}

/// How far (m) a sensing agent first looks for the nearest agent, before the whole sensing box.
const NEAREST_FIRST: f64 = 2.0;

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
    /// Planner steps without progress before an agent is reported stuck.
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
        }
    }
}

/// A goal: its region and its converged harmonic global map.
#[derive(Debug, Clone)]
pub struct Goal {
    shape: Shape,
    centre: DVec2,
    /// Bounding box of the shape, to skip stamping it into windows far away.
    bounds: (DVec2, DVec2),
    map: Field<f64>,
    /// The map edited for the current obstacles, waiting for its solve.
    pending: Option<Field<f64>>,
    /// Changes whenever `map` is replaced; unique within the process.
    revision: u64,
    /// Sub-goal fields over `map`, shared by the agents heading here (cleared with `revision`).
    subgoals: SubgoalCache,
    /// For a search ([`Crowd::add_search`]): what has been sensed of the unknown world.
    search: Option<Box<Search>>,
}

/// Source of [`Goal::revision`] numbers, shared by every crowd in the process so that a number
/// never names two different maps.
static NEXT_MAP_REVISION: AtomicU64 = AtomicU64::new(1);

fn next_map_revision() -> u64 {
    NEXT_MAP_REVISION.fetch_add(1, Ordering::Relaxed)
}

impl Goal {
    /// Sub-goal fields over the map, shared by every agent heading here
    /// ([`SubgoalStack::descent_shared`]); cleared whenever the map is replaced.
    pub fn subgoal_cache(&self) -> &SubgoalCache {
        &self.subgoals
    }

    /// The goal region.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The harmonic global map towards this goal.
    pub fn map(&self) -> &Field<f64> {
        &self.map
    }

    /// Whether obstacles changed since the map was solved and a new solve is waiting.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Whether this goal is a search ([`Crowd::add_search`]).
    pub fn is_search(&self) -> bool {
        self.search.is_some()
    }

    /// For a search: whether the target has been found (`None` for an ordinary goal).
    pub fn found(&self) -> Option<bool> {
        self.search.as_ref().map(|s| s.found_at.is_some())
    }

    /// For a search: the planner step at which the target was first sensed.
    pub fn found_at(&self) -> Option<u64> {
        self.search.as_ref().and_then(|s| s.found_at)
    }

    /// For a search: how many global cells the searchers have sensed so far.
    pub fn sensed_cells(&self) -> Option<usize> {
        self.search.as_ref().map(|s| s.sensed_count)
    }

    /// Whether the goal's region is known to agents: always for an ordinary goal, once found
    /// for a search.
    fn known(&self) -> bool {
        self.search.as_ref().is_none_or(|s| s.found_at.is_some())
    }

    /// A number that changes whenever [`Goal::map`] is replaced by a new solve. No two maps in
    /// the process share one, even across crowds, so a viewer can cache what it drew from a
    /// map under this key.
    pub fn revision(&self) -> u64 {
        self.revision
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
    progress_mark: DVec2,
    /// Planner steps spent on the current goal.
    steps_on_goal: u32,
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

    /// Whether the agent takes part in planning (everything but arrived).
    fn plans(&self) -> bool {
        matches!(
            self.state,
            AgentState::Moving | AgentState::Waiting | AgentState::Stuck | AgentState::Unreachable
        ) && self.goal_index < self.params.goals.len()
    }

    /// Heading and speed from the relaxed local map.
    fn decide(&self, bias: Bias, recovered: bool) -> Plan {
        let descent = self.local.descent_at(self.position);
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
    /// Agents removed after arriving.
    pub removed: Vec<AgentId>,
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
    goals: Vec<Goal>,
    agents: Vec<Option<Agent>>,
    step: u64,
    /// Static shapes on the local-map lattices, keyed by the bits of (cell size, radius) and
    /// the obstacle coverage.
    rasters: Vec<(RasterKey, StaticRaster)>,
    /// How far beyond the world bounds the rasters reach.
    raster_reach: f64,
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
    /// The step under way, between phases.
    in_flight: Option<Box<InFlight>>,
    /// Tests: sensing programs search the whole sensing box at once (the reference the
    /// near-first search is compared with).
    #[cfg(test)]
    sense_whole_box: bool,
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

/// A step under way: what each phase hands to the next.
#[derive(Debug, Clone)]
struct InFlight {
    done: StepPhase,
    maps_solved: Vec<GoalId>,
    snapshot: Vec<Option<(DVec2, f64)>>,
    hash: Option<AgentGrid>,
    prepared: Vec<Prepared>,
    plans: Vec<Option<Plan>>,
    /// How far agents were moved by the host since `hash` indexed them (summed over moves, a
    /// bound): the collision guard looks that much further.
    drift: f64,
    /// The planners counted as the step started and whether their planning is shared between
    /// threads (see [`ShareTuner`]).
    share: Option<(usize, bool)>,
}

/// An agent's step after sensing and stamping.
#[derive(Debug, Clone)]
enum Prepared {
    /// Not planning (arrived or removed).
    Idle,
    /// Planned without relaxation (no route).
    Done(Plan),
    /// Local map stamped; relax it with `bias`, then decide.
    Relax { bias: Bias, recovered: bool },
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
            static_bounds,
            shape_grid: None,
            spawn_index: None,
            largest_radius: 0.0,
            scratch: ScratchPool::default(),
            warm: WarmWorkers::default(),
            sharing: ShareTuner::default(),
            moving: Vec::new(),
            in_flight: None,
            #[cfg(test)]
            sense_whole_box: false,
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
    /// again (20–60 µs on the 2-vCPU VM of the README), while the serial part of a step (the
    /// commit, the caller's work between steps, the snapshot and rasters of the next) lasts
    /// about that long, so every parallel part starts with one thread. With 1 ms, crowds of 24
    /// to 500 agents stepped back to back on two threads made 4–12 % more agent-steps a second
    /// (docs/performance.md, *Two threads*). In a game, whose steps are far apart, it only costs: up to
    /// `spin` of a core's time per kept thread and step. On that VM it also slowed other
    /// parallel work run in the same process afterwards (the same section).
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

    /// A global map with every static obstacle, grown by the global inflation, and free
    /// cells at 1.
    fn static_map(&self) -> Result<Field<f64>, SteerError> {
        let mut map = Field::<f64>::new(self.geometry, 1.0);
        for s in &self.statics {
            raster::rasterise_obstacle(
                &mut map,
                s,
                self.settings.global_inflation,
                Coverage::Touch,
            )?;
        }
        Ok(map)
    }

    /// Adds a goal region and solves its global map (harmonic, static obstacles only).
    pub fn add_goal(&mut self, shape: Shape) -> Result<GoalId, SteerError> {
        shape.validate()?;
        let mut map = self.static_map()?;
        let cells = shape.cells(&self.geometry, 0.0, Coverage::Touch)?;
        let mut any = false;
        for (x, y) in cells {
            if map.kind(x, y) == Some(CellKind::Free) {
                map.set_goal(x, y)?;
                any = true;
            }
        }
        if !any {
            return Err(SteerError::GoalBlocked);
        }
        MultigridSolver::new().solve_with(
            &mut self.workspace,
            &mut map,
            &Bias::HARMONIC,
            self.settings.global_tolerance,
        )?;
        let centre = shape_centre(&shape);
        let bounds = shape.bounds()?;
        self.goals.push(Goal {
            shape,
            centre,
            bounds,
            map,
            pending: None,
            revision: next_map_revision(),
            subgoals: SubgoalCache::new(),
            search: None,
        });
        Ok(GoalId(self.goals.len() as u32 - 1))
    }

    /// Adds a search for a hidden `target` in a world the searchers do not know (seed 000
    /// §6.11, seed 001 A3; see [`crate::search`]). Agents given this goal explore: unsensed
    /// space attracts them until one of them senses the target, which then becomes an ordinary
    /// goal. Searchers of one target share what they sense.
    pub fn add_search(
        &mut self,
        target: Shape,
        settings: SearchSettings,
    ) -> Result<GoalId, SteerError> {
        target.validate()?;
        settings.validate()?;
        let truth: Vec<bool> = self
            .static_map()?
            .kinds()
            .iter()
            .map(|k| *k == CellKind::Obstacle)
            .collect();
        let cells: Vec<(usize, usize)> = target
            .cells(&self.geometry, 0.0, Coverage::Touch)?
            .into_iter()
            .filter(|&(x, y)| !truth[self.geometry.index(x, y)])
            .collect();
        if cells.is_empty() {
            return Err(SteerError::GoalBlocked);
        }
        let search = Search::new(settings, truth, cells);
        let mut map = Field::<f64>::new(self.geometry, settings.unknown_value);
        search.initial_map(&mut map);
        let centre = shape_centre(&target);
        let bounds = target.bounds()?;
        self.goals.push(Goal {
            shape: target,
            centre,
            bounds,
            map,
            pending: None,
            revision: next_map_revision(),
            subgoals: SubgoalCache::new(),
            search: Some(Box::new(search)),
        });
        Ok(GoalId(self.goals.len() as u32 - 1))
    }

    /// Searches: every agent heading for one senses and relaxes around itself, in id order; a
    /// search whose target was sensed concludes and is solved once.
    fn explore(&mut self) {
        let step = self.step;
        for (g, goal) in self.goals.iter_mut().enumerate() {
            let Some(search) = goal.search.as_mut() else {
                continue;
            };
            if search.found_at.is_some() {
                continue;
            }
            let searchers: Vec<(DVec2, f64)> = self
                .agents
                .iter()
                .flatten()
                .filter(|a| a.plans() && a.params.goals[a.goal_index] == GoalId(g as u32))
                .map(|a| (a.position, a.params.local_map.width() * 0.5))
                .collect();
            if searchers.is_empty() {
                continue;
            }
            for &(p, _) in &searchers {
                search.sense(&mut goal.map, p);
            }
            if search.target_sensed(&goal.map) {
                search.conclude(&mut goal.map, step);
                let _ = MultigridSolver::new().solve_with(
                    &mut self.workspace,
                    &mut goal.map,
                    &Bias::HARMONIC,
                    self.settings.global_tolerance,
                );
            } else {
                for &(p, half) in &searchers {
                    let reach =
                        half.max(search.settings.sensor_range) + goal.map.geometry().cell_size();
                    search.relax_around(&mut goal.map, p, reach);
                }
            }
            goal.revision = next_map_revision();
            goal.subgoals.clear();
        }
    }

    /// A goal by id.
    pub fn goal(&self, id: GoalId) -> Option<&Goal> {
        self.goals.get(id.0 as usize)
    }

    /// Adds a static obstacle. Local maps see it from the next step; each goal's global map is
    /// edited around it at once and re-solved (warm-started from the previous solution) within
    /// the next steps, [`CrowdSettings::map_solves_per_step`] maps per step.
    pub fn add_obstacle(&mut self, shape: Shape) -> Result<ObstacleId, SteerError> {
        let bounds = shape.bounds()?;
        let id = ObstacleId(self.next_obstacle);
        self.next_obstacle += 1;
        let at = self.statics.len() - 4;
        self.statics.insert(at, shape);
        self.static_bounds.insert(at, bounds);
        self.static_ids.insert(at, Some(id));
        self.obstacles_changed(bounds);
        Ok(id)
    }

    /// Removes a static obstacle added earlier (or given to [`Crowd::new`]); maps are updated
    /// as for [`Crowd::add_obstacle`].
    pub fn remove_obstacle(&mut self, id: ObstacleId) -> Result<(), SteerError> {
        let at = self
            .static_ids
            .iter()
            .position(|i| *i == Some(id))
            .ok_or(SteerError::UnknownObstacle(id.0))?;
        self.statics.remove(at);
        let bounds = self.static_bounds.remove(at);
        self.static_ids.remove(at);
        self.obstacles_changed(bounds);
        Ok(())
    }

    /// Replaces the moving obstacles (doors, vehicles, physics bodies…): shapes at their
    /// current pose, stamped into local maps and respected by the collision guard from the next
    /// sensing phase on, but never written into global maps. Validated as a whole: on error the
    /// previous set stays.
    pub fn set_moving_obstacles(&mut self, shapes: Vec<Shape>) -> Result<(), SteerError> {
        let moving = shapes
            .into_iter()
            .map(|s| s.bounds().map(|b| (s, b)))
            .collect::<Result<Vec<_>, _>>()?;
        self.moving = moving;
        Ok(())
    }

    /// The moving obstacles set last.
    pub fn moving_obstacles(&self) -> impl Iterator<Item = &Shape> {
        self.moving.iter().map(|(s, _)| s)
    }

    /// Moves an agent to `position` (a host whose physics or animation owns motion reports
    /// where the agent really is before each step). The position must be finite and inside the
    /// world bounds; overlaps are not checked here (the guard keeps later steps from deepening
    /// them). During a step (between [`Crowd::advance_to`] phases) the agent keeps the plan it
    /// sensed for, steps from the new position, and the others' steps are guarded against it
    /// there.
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
        let agent = self
            .agents
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(SteerError::UnknownAgent(id.0))?;
        agent.position = position;
        self.spawn_index = None;
        // Moved after this step's snapshot: the commit checks the others against where it is
        // now, and looks as much further through the snapshot's index.
        if let Some(flight) = self.in_flight.as_mut()
            && let Some(Some((at, _))) = flight.snapshot.get_mut(id.0 as usize)
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
            return Err(SteerError::UnknownGoal(g.0));
        }
        let agent = self
            .agents
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(SteerError::UnknownAgent(id.0))?;
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
        Ok(())
    }

    /// Global maps edited but not yet re-solved.
    pub fn pending_map_solves(&self) -> usize {
        self.goals.iter().filter(|g| g.pending.is_some()).count()
    }

    /// Brings the static rasters and the (pending) global maps up to date inside `region`.
    fn obstacles_changed(&mut self, (lo, hi): (DVec2, DVec2)) {
        self.shape_grid = None;
        for (_, raster) in &mut self.rasters {
            raster.refresh(lo, hi, &self.statics, &self.static_bounds);
        }
        let grow = DVec2::splat(self.settings.global_inflation + self.geometry.cell_size());
        let (lo, hi) = (lo - grow, hi + grow);
        for goal in &mut self.goals {
            if let Some(search) = goal.search.as_mut() {
                refresh_search(
                    search,
                    &mut goal.map,
                    lo,
                    hi,
                    &self.statics,
                    self.settings.global_inflation,
                );
                goal.revision = next_map_revision();
                goal.subgoals.clear();
                if search.found_at.is_some() {
                    // A concluded search is an ordinary map now: solve it again like one.
                    goal.pending = Some(goal.map.clone());
                }
                continue;
            }
            let map = goal.pending.get_or_insert_with(|| goal.map.clone());
            refresh_global(
                map,
                lo,
                hi,
                &self.statics,
                &self.static_bounds,
                self.settings.global_inflation,
                &goal.shape,
            );
        }
    }

    /// Solves up to `map_solves_per_step` pending global maps and swaps them in.
    fn solve_pending(&mut self) -> Vec<GoalId> {
        let mut solved = Vec::new();
        for (g, goal) in self.goals.iter_mut().enumerate() {
            // 0 would leave edited maps unsolved for ever: at least one per step.
            if solved.len() >= self.settings.map_solves_per_step.max(1) {
                break;
            }
            let Some(mut map) = goal.pending.take() else {
                continue;
            };
            let solved_map = MultigridSolver::new().solve_with(
                &mut self.workspace,
                &mut map,
                &Bias::HARMONIC,
                self.settings.global_tolerance,
            );
            if let Err(FieldError::NoGoal) = solved_map {
                // The goal is walled in: a flat map, every agent heading there is unreachable
                // until an edit opens it again.
                map.reset_free(1.0);
            }
            goal.map = map;
            goal.revision = next_map_revision();
            goal.subgoals.clear();
            solved.push(GoalId(g as u32));
        }
        // Sub-goals were stacked on the old maps.
        for agent in self.agents.iter_mut().flatten() {
            if let Some(goal) = agent.params.goals.get(agent.goal_index)
                && solved.contains(goal)
            {
                agent.subgoals.clear();
            }
        }
        solved
    }

    /// Adds an agent after validating everything about it.
    pub fn spawn(&mut self, params: AgentParams) -> Result<AgentId, SteerError> {
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
                return Err(SteerError::UnknownGoal(g.0));
            }
        }
        if self
            .statics
            .iter()
            .any(|s| s.distance(p).map_or(true, |d| d < params.radius))
        {
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
                && (o.position - p).length() < o.params.radius + params.radius
            {
                overlap = Some(i);
            }
        });
        if let Some(i) = overlap {
            return Err(SteerError::OverlapsAgent {
                x: p.x,
                y: p.y,
                other: i as u32,
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
            steps_on_goal: 0,
            params,
        };
        let id = self.agents.len();
        self.largest_radius = self.largest_radius.max(agent.params.radius);
        if let Some(index) = &mut self.spawn_index {
            index.insert(id, p);
        }
        self.agents.push(Some(agent));
        Ok(AgentId(id as u32))
    }

    /// An agent by id (`None` once removed).
    pub fn agent(&self, id: AgentId) -> Option<&Agent> {
        self.agents.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// Live agents with their ids, in id order.
    pub fn agents(&self) -> impl Iterator<Item = (AgentId, &Agent)> {
        self.agents
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.as_ref().map(|a| (AgentId(i as u32), a)))
    }

    /// Replaces an agent's behaviour slots at run time.
    pub fn set_behaviour(&mut self, id: AgentId, slots: BehaviourSlots) -> Result<(), SteerError> {
        slots.validate()?;
        let agent = self
            .agents
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(SteerError::UnknownAgent(id.0))?;
        agent.params.behaviour = slots;
        Ok(())
    }

    /// Removes an agent.
    pub fn remove(&mut self, id: AgentId) -> Result<(), SteerError> {
        let slot = self
            .agents
            .get_mut(id.0 as usize)
            .ok_or(SteerError::UnknownAgent(id.0))?;
        self.spawn_index = None;
        slot.take()
            .map(|_| ())
            .ok_or(SteerError::UnknownAgent(id.0))
    }

    /// One planner step for every agent: all of [`StepPhase`] in order.
    ///
    /// Sensing, stamping and decisions run in parallel over agents and the local maps are
    /// relaxed [`BATCH_LANES_F32`] at a time ([`FieldBatchF32`], or [`BATCH_LANES`] with
    /// [`FieldBatch`] for [`LocalPrecision::F64`]); every agent's plan depends only on the
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
    pub fn advance_to(&mut self, phase: StepPhase) -> Option<StepReport> {
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
            if next == StepPhase::Sensing && phase >= StepPhase::Decision {
                // Nobody looks between sensing and decision: run the three together, a job of
                // agents at a time (the same computations, see `sense_relax_decide`).
                self.sense_relax_decide();
                continue;
            }
            match next {
                StepPhase::Guidance => {
                    let share = self.wake_pool();
                    self.spawn_index = None;
                    let maps_solved = self.solve_pending();
                    self.in_flight = Some(Box::new(InFlight {
                        done: StepPhase::Guidance,
                        maps_solved,
                        snapshot: Vec::new(),
                        hash: None,
                        prepared: Vec::new(),
                        plans: Vec::new(),
                        drift: 0.0,
                        share,
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
        self.explore();
        let (snapshot, hash) = self.snapshot();
        self.update_rasters();
        let discs = self.disc_rasters(&snapshot);
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
        flight.done = StepPhase::Sensing;
    }

    /// Sensing, relaxation and decision fused: the planning agents (in id order, the others
    /// skipped) in jobs of at most [`BATCH_LANES_F32`] (see [`job_sizes`]), each job prepared,
    /// relaxed and decided while its local maps are still in cache. Every agent gets exactly
    /// what the three phases one after the other give it: preparing reads only the snapshot and
    /// the agent, and each batch lane is relaxed as if alone (lanes are grouped by side, sweeps
    /// and precision within a job), so how agents fall into jobs changes no result. The jobs
    /// are shared between the pool's threads, or run one after the other on the stepping thread
    /// where [`ShareTuner`] found that faster for a crowd this small; the phase is timed for it.
    fn sense_relax_decide(&mut self) {
        self.explore();
        let (snapshot, hash) = self.snapshot();
        self.update_rasters();
        let discs = self.disc_rasters(&snapshot);
        let world = world_of!(self, &discs);
        let work = |scratch: &mut ChunkScratch, job: &mut [(usize, &mut Agent)]| {
            let prepared: Vec<Prepared> = job
                .iter_mut()
                .map(|(i, agent)| world.prepare(*i, agent, &hash, &mut scratch.neighbours))
                .collect();
            let mut relaxing =
                to_relax(job.iter_mut().map(|(_, agent)| &mut **agent).zip(&prepared));
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
                        Prepared::Relax { bias, recovered } => Some(agent.decide(bias, recovered)),
                    };
                    (*i, plan)
                })
                .collect::<Vec<_>>()
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
                (Some(agent), Prepared::Relax { bias, recovered }) => {
                    Some(agent.decide(bias, recovered))
                }
                (None, Prepared::Relax { .. }) => None,
            })
            .collect();
        flight.done = StepPhase::Decision;
        self.warm.keep(usize::MAX);
    }

    /// Motion: commit every plan through the collision guard in id order, then goals.
    fn commit(&mut self) -> StepReport {
        let flight = *self.in_flight.take().expect("decision ran");
        let hash = flight.hash.expect("sensing ran");
        let mut report = StepReport {
            maps_solved: flight.maps_solved,
            ..Default::default()
        };
        let mut committed = flight.snapshot;
        // Agents spawned during the step are not in the snapshot; they count from their spawn
        // position (the index reaches them through the wide walk only if near, so check them
        // all, they are few).
        let late: Vec<usize> = (committed.len()..self.agents.len()).collect();
        committed.resize(self.agents.len(), None);
        for &i in &late {
            committed[i] = self.agents[i]
                .as_ref()
                .map(|a| (a.position, a.params.radius));
        }
        let mut guard = GuardScratch::default();
        // Many static shapes: the guard finds those near a step through a grid of their boxes.
        if self.shape_grid.is_none() && self.static_bounds.len() >= SHAPE_GRID_MIN {
            self.shape_grid = Some(ShapeGrid::new(
                &self.static_bounds,
                self.settings.min,
                self.settings.max,
            ));
        }
        // How far beyond where `hash` indexed it a committed disc may reach: the step's longest
        // displacement, plus the host's moves since the snapshot, plus the widest radius.
        let others = flight
            .plans
            .iter()
            .flatten()
            .filter(|p| !p.unreachable)
            .map(|p| p.displacement.length())
            .fold(0.0, f64::max)
            + flight.drift
            + self.largest_radius;
        for (i, plan) in flight.plans.into_iter().enumerate() {
            let Some(plan) = plan else { continue };
            let id = AgentId(i as u32);
            // Removed while the step was under way: its plan is dropped.
            let Some(agent) = self.agents[i].as_mut() else {
                committed[i] = None;
                continue;
            };
            if plan.unreachable {
                // Reported and skipped: it holds its position and re-checks every step. Its
                // goal's time limit still runs: a timed goal is how a host gives up on one.
                if agent.state != AgentState::Unreachable {
                    report.unreachable.push(id);
                }
                agent.state = AgentState::Unreachable;
                agent.speed_factor = 0.0;
                if agent.tick_goal_clock() {
                    report.timed_out.push((id, agent.goal_index));
                    next_goal(&mut self.agents[i], id, false, &mut report);
                }
                continue;
            }
            let start = agent.position;
            let moved = guard_step(
                start,
                plan.displacement,
                agent.params.radius,
                i,
                &committed,
                &hash,
                others,
                &late,
                Obstacles {
                    statics: &self.statics,
                    static_bounds: &self.static_bounds,
                    moving: &self.moving,
                    grid: self.shape_grid.as_ref(),
                },
                &mut guard,
            );
            agent.position = start + moved;
            committed[i] = Some((agent.position, agent.params.radius));
            agent.heading = plan.heading;
            agent.speed_factor = plan.speed_factor;
            agent.bias = plan.bias;
            if plan.recovered {
                report.recovered.push(id);
            }
            let before = agent.state;
            agent.state = if moved.length() < 1e-9 {
                AgentState::Waiting
            } else {
                AgentState::Moving
            };
            // Progress: a net displacement of at least one local cell per `stuck_after` steps.
            if (agent.position - agent.progress_mark).length() >= agent.params.local_map.cell_size {
                agent.progress_mark = agent.position;
                agent.stalled = 0;
            } else {
                agent.stalled += 1;
                if agent.stalled >= self.settings.stuck_after {
                    if before != AgentState::Stuck {
                        report.stuck.push(id);
                    }
                    agent.state = AgentState::Stuck;
                }
            }
            // Goals.
            let Some(&goal_id) = agent.params.goals.get(agent.goal_index) else {
                // Its goals were emptied while the step was under way: it stops there.
                agent.state = AgentState::Arrived;
                continue;
            };
            let goal = &self.goals[goal_id.0 as usize];
            let cell = goal.map.geometry().world_to_cell(agent.position);
            // Unsensed cells of a search are fixed low, not goals; its target counts once found.
            let on_goal = goal.known()
                && goal.map.geometry().contains_cell(cell)
                && goal.map.kind(cell.x as usize, cell.y as usize) == Some(CellKind::Goal);
            let near = goal
                .shape
                .distance(agent.position)
                .is_ok_and(|d| d <= agent.params.arrival_radius)
                || (goal.centre - agent.position).length() <= agent.params.arrival_radius;
            let out_of_time = agent.tick_goal_clock() && !(on_goal || near);
            if out_of_time {
                report.timed_out.push((id, agent.goal_index));
            }
            if on_goal || near || out_of_time {
                next_goal(&mut self.agents[i], id, !out_of_time, &mut report);
            }
        }
        self.step += 1;
        report
    }

    /// Every agent's position and radius as the step starts, and a spatial index over them.
    fn snapshot(&self) -> (Vec<Option<(DVec2, f64)>>, AgentGrid) {
        let snapshot: Vec<Option<(DVec2, f64)>> = self
            .agents
            .iter()
            .map(|a| a.as_ref().map(|a| (a.position, a.params.radius)))
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
            self.raster_reach = reach;
        }
        let reach = self.raster_reach;
        let (min, max) = (
            self.settings.min - DVec2::splat(reach),
            self.settings.max + DVec2::splat(reach),
        );
        for agent in self.agents.iter().flatten() {
            let key = raster_key(&agent.params.local_map, agent.params.radius);
            if self.rasters.len() >= MAX_STATIC_RASTERS
                || self.rasters.iter().any(|(k, _)| *k == key)
            {
                continue;
            }
            if let Some(r) = StaticRaster::build(
                &self.statics,
                agent.params.local_map.cell_size,
                agent.params.radius,
                agent.params.local_map.obstacle_coverage,
                min,
                max,
            ) {
                self.rasters.push((key, r));
            }
        }
    }

    /// The snapshot's discs counted on the lattice of each raster key (local cell size, radius,
    /// obstacle coverage) of the planning agents (up to [`MAX_STATIC_RASTERS`] keys; agents with
    /// further keys stamp their neighbours' discs one by one), with the key's static raster
    /// counted in where [`DiscRaster::build`] can lay the counts over it. Keys differing only in
    /// coverage count the same discs over different static rasters.
    fn disc_rasters(&self, snapshot: &[Option<(DVec2, f64)>]) -> Vec<(RasterKey, DiscRaster)> {
        let mut rasters: Vec<(RasterKey, DiscRaster)> = Vec::new();
        for agent in self.agents.iter().flatten().filter(|a| a.plans()) {
            let (cell, radius) = (agent.params.local_map.cell_size, agent.params.radius);
            let key = raster_key(&agent.params.local_map, radius);
            if rasters.len() >= MAX_STATIC_RASTERS || rasters.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let statics = self.rasters.iter().find(|(k, _)| *k == key).map(|(_, r)| r);
            if let Some(r) = DiscRaster::build(snapshot, cell, radius, statics) {
                rasters.push((key, r));
            }
        }
        rasters
    }

    fn max_reach(&self) -> f64 {
        self.agents
            .iter()
            .flatten()
            .map(|a| a.params.local_map.width() * 0.5 * std::f64::consts::SQRT_2)
            .fold(1.0, f64::max)
    }
}

/// What planning reads besides the snapshot: shared by all agents, never written during a step.
struct World<'a> {
    statics: &'a [Shape],
    /// Bounding boxes of `statics`.
    static_bounds: &'a [(DVec2, DVec2)],
    /// Whether behaviours see only neighbours in line of sight.
    sight: bool,
    moving: &'a [(Shape, (DVec2, DVec2))],
    goals: &'a [Goal],
    step: u64,
    rasters: &'a [(RasterKey, StaticRaster)],
    /// Every agent's disc of the snapshot, per raster key of the planning agents.
    discs: &'a [(RasterKey, DiscRaster)],
    /// Largest radius of any agent spawned (radii never change): how far beyond a window a
    /// stamped disc may lie.
    max_radius: f64,
    #[cfg(test)]
    sense_whole_box: bool,
}

impl World<'_> {
    /// Whether `to` is in sight from `from`: always with sight off, otherwise when the segment
    /// between them touches no static shape.
    fn in_sight(&self, from: DVec2, to: DVec2) -> bool {
        if !self.sight {
            return true;
        }
        let (lo, hi) = (from.min(to), from.max(to));
        self.statics
            .iter()
            .zip(self.static_bounds)
            .all(|(shape, (slo, shi))| {
                !boxes_overlap(lo, hi, *slo, *shi)
                    || shape.segment_distance(from, to).is_ok_and(|d| d > 0.0)
            })
    }

    /// Prepares one agent's step from the snapshot (as `hash` indexed it): everything up to
    /// relaxation.
    fn prepare(
        &self,
        index: usize,
        agent: &mut Agent,
        hash: &AgentGrid,
        scratch: &mut Neighbours,
    ) -> Prepared {
        let pos = agent.position;
        let goal_id = agent.params.goals[agent.goal_index];
        let goal = &self.goals[goal_id.0 as usize];
        let depth_before = agent.subgoals.len();
        let flow = if goal.search.is_some() {
            // A search map changes every step: no sub-goals on it.
            goal.map.descent_at(pos)
        } else {
            agent
                .subgoals
                .descent_shared(&goal.map, pos, &goal.subgoals)
                .unwrap_or(DVec2::ZERO)
        };
        let recovered = agent.subgoals.len() > depth_before;
        let unreachable = flow == DVec2::ZERO
            && goal.known()
            && goal
                .shape
                .distance(pos)
                .map_or(true, |d| d > agent.params.arrival_radius);
        let flow_dir = flow.try_normalize().unwrap_or(DVec2::ZERO);
        // A hidden target is not where programs or the local map may look.
        let goal_centre = if goal.known() {
            goal.centre
        } else {
            pos + flow_dir
        };
        if unreachable {
            // No route: skip sensing and relaxation altogether.
            return Prepared::Done(Plan {
                displacement: DVec2::ZERO,
                heading: agent.heading,
                speed_factor: 0.0,
                bias: agent.bias,
                unreachable,
                recovered,
            });
        }

        // Neighbours. Stamping needs every agent whose disc reaches into the window; the
        // nearest agent and the look ahead search the wider sensing box, so only agents whose
        // programs use them pay for it.
        let half = agent.params.local_map.width() * 0.5;
        let slots = &agent.params.behaviour;
        let senses = slots.ahead.is_some() || slots.clear.uses_nearest();
        // (Cell centres of the window lie within `half` of the agent; a local cell of margin.)
        let stamp_reach =
            half + self.max_radius + agent.params.radius + agent.params.local_map.cell_size;
        let reach = if senses {
            stamp_reach.max(half * std::f64::consts::SQRT_2 + 2.0)
        } else {
            stamp_reach
        };
        let key = raster_key(&agent.params.local_map, agent.params.radius);
        let disc_raster = self.discs.iter().find(|(k, _)| *k == key).map(|(_, r)| r);
        let Neighbours {
            discs: neighbours,
            ids: indices,
        } = scratch;
        neighbours.clear();
        indices.clear();
        // The index returns whole cells: without sensing, keep only the discs that can reach
        // the window (the box `stamp_disc` would test them against anyway).
        let within = |q: DVec2, r: f64| {
            let d = (q - pos).abs();
            let limit = half + r + agent.params.radius + agent.params.local_map.cell_size;
            senses || (d.x <= limit && d.y <= limit)
        };
        let gather = |radius: f64, neighbours: &mut Vec<(DVec2, f64)>, indices: &mut Vec<usize>| {
            neighbours.clear();
            indices.clear();
            hash.for_each_point_near(pos, radius, |j, q, r| {
                if j != index && within(q, r) {
                    neighbours.push((q, r));
                    // Ids only break ties for the nearest agent, which only sensing programs read.
                    if senses {
                        indices.push(j);
                    }
                }
            });
        };
        // With the discs counted on the lattice, only programs that sense need neighbours, and
        // only for the look ahead (agents within dvis plus the widest radius) and the nearest
        // agent: the index is asked that near first, and for the whole sensing box only when
        // no agent turns up within that first reach (the nearest there is the box's nearest).
        #[cfg(test)]
        let near_first = !self.sense_whole_box;
        #[cfg(not(test))]
        let near_first = true;
        let first_reach = if senses && disc_raster.is_some() && near_first {
            let ahead = if slots.ahead.is_some() {
                slots.dvis
            } else {
                0.0
            };
            (ahead + self.max_radius + 1e-6)
                .max(NEAREST_FIRST)
                .min(reach)
        } else {
            reach
        };
        if senses || disc_raster.is_none() {
            gather(first_reach, neighbours, indices);
        }

        // Behaviour slot: is anything within dvis ahead?
        let facing = if agent.heading != DVec2::ZERO {
            agent.heading
        } else {
            flow_dir
        };
        let program: &Behaviour = match &slots.ahead {
            Some(ahead)
                if something_ahead(
                    pos,
                    facing,
                    slots.dvis,
                    agent.params.radius,
                    neighbours,
                    self.statics,
                    self.static_bounds,
                    self.moving,
                    |q| self.in_sight(pos, q),
                ) =>
            {
                ahead
            }
            _ => &slots.clear,
        };
        // The nearest neighbour in sight (every neighbour is in sight with sight off); ties go
        // to the lower agent id.
        let nearest_of = |neighbours: &[(DVec2, f64)], indices: &[usize]| {
            let key = |k: usize| ((neighbours[k].0 - pos).length_squared(), indices[k]);
            let order = |a: &usize, b: &usize| {
                let (ka, kb) = (key(*a), key(*b));
                ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1))
            };
            let k = if self.sight {
                let mut sorted: Vec<usize> = (0..neighbours.len()).collect();
                sorted.sort_unstable_by(order);
                sorted
                    .into_iter()
                    .find(|k| self.in_sight(pos, neighbours[*k].0))
            } else {
                (0..neighbours.len()).min_by(order)
            };
            k.map(|k| (neighbours[k].0, key(k).0))
        };
        let nearest = if !program.uses_nearest() {
            None
        } else {
            match nearest_of(neighbours, indices) {
                Some((q, d2)) if first_reach >= reach || d2 <= first_reach * first_reach => Some(q),
                _ if first_reach < reach => {
                    gather(reach, neighbours, indices);
                    nearest_of(neighbours, indices).map(|(q, _)| q)
                }
                _ => None,
            }
        };
        let input = BehaviourInput {
            step: self.step,
            flow: flow_dir,
            position: pos,
            goal: goal_centre,
            nearest,
        };
        let bias = program.bias(&input, &mut agent.behaviour_state);

        // Local map.
        let radius = agent.params.radius;
        let coverage = agent.params.local_map.obstacle_coverage;
        let local = &mut agent.local;
        local.recentre(pos);
        let (lo, hi) = local.field().geometry().world_bounds();
        match self.rasters.iter().find(|(k, _)| *k == key) {
            // Counted into the disc raster: stamped with the discs below.
            Some(_) if disc_raster.is_some_and(DiscRaster::has_statics) => {}
            Some((_, raster)) => {
                local.stamp_lattice(raster);
            }
            None => {
                for shape in self.statics {
                    if shape_near(shape, lo, hi, radius) {
                        local.stamp_obstacle(shape, radius, coverage);
                    }
                }
            }
        }
        for (shape, (slo, shi)) in self.moving {
            let grow = DVec2::splat(radius);
            if boxes_overlap(*slo - grow, *shi + grow, lo, hi) {
                local.stamp_obstacle(shape, radius, coverage);
            }
        }
        match disc_raster {
            Some(discs) => {
                local.stamp_raster_discs(discs, (pos, radius));
            }
            None => {
                for (q, r) in neighbours.iter() {
                    local.stamp_disc(*q, *r, radius);
                }
            }
        }
        local.clear_outside_view(facing);
        let (glo, ghi) = goal.bounds;
        if goal.known() && glo.x <= hi.x && glo.y <= hi.y && ghi.x >= lo.x && ghi.y >= lo.y {
            local.stamp_goal(&goal.shape);
        }
        local.project_goal(if flow_dir != DVec2::ZERO {
            flow_dir
        } else if goal.known() {
            goal.centre - pos
        } else {
            facing
        });
        Prepared::Relax { bias, recovered }
    }
}

/// Chunk buffers kept from step to step: each job of a step takes one (or starts a new one) and
/// gives it back when it ends, so the batches are not allocated, nor their pages first touched,
/// anew for every job of every step. What a job finds in a buffer never changes its results:
/// a batch is loaded, and its lanes beyond the chunk cleared, before it is swept.
#[derive(Debug, Default)]
struct ScratchPool(std::sync::Mutex<Vec<ChunkScratch>>);

impl Clone for ScratchPool {
    /// A clone starts with no buffers (they hold nothing a step reads).
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl ScratchPool {
    /// A buffer from the pool, or a new one, that goes back to the pool when dropped.
    fn take(&self) -> Pooled<'_> {
        let scratch = self
            .0
            .lock()
            .ok()
            .and_then(|mut free| free.pop())
            .unwrap_or_default();
        Pooled {
            scratch,
            pool: self,
        }
    }

    /// Buffers waiting in the pool.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().map_or(0, |free| free.len())
    }
}

/// A [`ChunkScratch`] taken from a [`ScratchPool`].
struct Pooled<'a> {
    scratch: ChunkScratch,
    pool: &'a ScratchPool,
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Ok(mut free) = self.pool.0.lock() {
            free.push(std::mem::take(&mut self.scratch));
        }
    }
}

/// Planner counts up to which [`ShareTuner`] measures whether sharing a step's planning between
/// threads pays; larger crowds always share.
const TUNED_PLANNERS: usize = 64;

/// Tuned steps after which [`ShareTuner`] times the way it does not prefer again.
const TUNED_RECHECK: u32 = 64;

/// Steps in a row [`ShareTuner`] times a way for, so that most of them see the pool as that way
/// leaves it (a thread that was not used for a while sleeps, and the first shared step pays its
/// wake-up).
const TUNED_BURST: u32 = 4;

/// Steps of each way [`ShareTuner`] keeps (the lower median of them decides).
const TUNED_SAMPLES: usize = 8;

/// Decides, for crowds of up to [`TUNED_PLANNERS`] planners, whether a step's planning is shared
/// between the pool's threads or run on the stepping thread alone, by timing both.
///
/// Sharing costs a pool thread's wake-up and hand-over, which the work it takes may or may not
/// repay: that depends on the machine and on what the host does between steps (a thread that
/// slept through the host's frame wakes slower than one that just finished the last step). The
/// crowd times its fused sensing, relaxation and decision phase both ways and keeps a simple
/// model: alone, a step costs `c` per planner; shared, its largest job's share `f` of that plus
/// a hand-over cost `o`. `c` is the lower median of the last [`TUNED_SAMPLES`] steps alone (per
/// planner), `o` the same of the shared steps' time less `f·P·c`. A step of P planners is shared
/// when `P·c·(1 − f) > o`. Both ways are timed for [`TUNED_BURST`] steps first, and the way not
/// taken again for as many every [`TUNED_RECHECK`] tuned steps; the first step of each burst,
/// which pays for the switch (a pool thread that slept, caches the other thread filled), is not
/// kept. How agents fall into jobs changes no result (see [`Crowd::sense_relax_decide`]), so
/// neither does this choice: only the speed depends on it.
#[derive(Debug, Clone, Default)]
struct ShareTuner {
    /// Seconds per planner of the last steps alone.
    alone: Recent<f64>,
    /// The last shared steps: seconds, and the largest job's planners.
    shared: Recent<(f64, f64)>,
    /// Tuned steps so far.
    steps: u32,
    /// Steps left of a burst of the way not preferred.
    burst: u32,
    /// The way the last tuned step went (a step that switched ways is not kept).
    last: Option<bool>,
    /// Tests: always share (`Some(true)`) or never.
    #[cfg(test)]
    forced: Option<bool>,
}

/// The last [`TUNED_SAMPLES`] values of something timed, oldest overwritten first.
#[derive(Debug, Clone, Copy, Default)]
struct Recent<T> {
    values: [T; TUNED_SAMPLES],
    /// Where the next value goes.
    next: usize,
    len: usize,
}

impl<T: Copy> Recent<T> {
    fn push(&mut self, v: T) {
        self.values[self.next] = v;
        self.next = (self.next + 1) % TUNED_SAMPLES;
        self.len = (self.len + 1).min(TUNED_SAMPLES);
    }

    fn kept(&self) -> &[T] {
        &self.values[..self.len]
    }
}

/// The lower median of the first [`TUNED_SAMPLES`] of `values` (a slow outlier, such as a
/// wake-up, moves it least), `None` for none.
fn lower_median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut sorted = [0.0; TUNED_SAMPLES];
    let mut n = 0;
    for (slot, v) in sorted.iter_mut().zip(values) {
        *slot = v;
        n += 1;
    }
    let sorted = &mut sorted[..n];
    sorted.sort_unstable_by(f64::total_cmp);
    (n > 0).then(|| sorted[(n - 1) / 2])
}

impl ShareTuner {
    /// Whether `planners` planners share the step on `threads` threads, `sizes` being their
    /// jobs when shared ([`job_sizes`]): always where there is more than one job and more than
    /// [`TUNED_PLANNERS`] planners, never with one job or one thread, and as measured between.
    fn choose(&mut self, planners: usize, threads: usize, sizes: &[usize]) -> bool {
        if threads < 2 || sizes.len() < 2 {
            return false;
        }
        if planners > TUNED_PLANNERS {
            return true;
        }
        #[cfg(test)]
        if let Some(share) = self.forced {
            return share;
        }
        self.steps = self.steps.wrapping_add(1);
        // A burst's first step switched ways and is not kept.
        let timed = |n: usize| n + 1 >= TUNED_BURST as usize;
        if !timed(self.shared.len) {
            return true;
        }
        if !timed(self.alone.len) {
            return false;
        }
        let prefer = self.prefers_sharing(planners, sizes);
        if self.burst > 0 {
            self.burst -= 1;
            !prefer
        } else if self.steps.is_multiple_of(TUNED_RECHECK) {
            self.burst = TUNED_BURST - 1;
            !prefer
        } else {
            prefer
        }
    }

    /// The model's answer (see the type's doc).
    fn prefers_sharing(&self, planners: usize, sizes: &[usize]) -> bool {
        let Some(c) = lower_median(self.alone.kept().iter().copied()) else {
            return true;
        };
        let overheads = self
            .shared
            .kept()
            .iter()
            .map(|&(t, largest)| t - largest * c);
        let o = lower_median(overheads).unwrap_or(0.0);
        let largest = sizes.iter().copied().max().unwrap_or(planners) as f64;
        (planners as f64 - largest) * c > o
    }

    /// Records a step of `planners` planners (`sizes` their jobs when shared) that took `took`,
    /// shared or not; steps [`Self::choose`] does not tune are left out.
    fn record(
        &mut self,
        planners: usize,
        threads: usize,
        sizes: &[usize],
        shared: bool,
        took: Duration,
    ) {
        if threads < 2 || planners > TUNED_PLANNERS || sizes.len() < 2 {
            return;
        }
        // The first step of a way after the other pays for the switch (a pool thread that slept,
        // or caches the other thread filled): not what that way costs in a run of steps.
        if self.last.replace(shared) != Some(shared) {
            return;
        }
        let t = took.as_secs_f64();
        if shared {
            let largest = sizes.iter().copied().max().unwrap_or(planners) as f64;
            self.shared.push((t, largest));
        } else {
            self.alone.push(t / planners as f64);
        }
    }
}

/// Pool threads kept busy-waiting between steps (see [`Crowd::set_worker_spin`]).
#[derive(Debug, Default)]
struct WarmWorkers {
    spin: Duration,
    /// Bumped as a step hands out its jobs: the waits begun before it end.
    generation: Arc<AtomicU64>,
    /// Threads waiting now (read by tests).
    waiting: Arc<AtomicU64>,
}

impl Clone for WarmWorkers {
    /// A clone keeps the duration; threads kept awake for the original wait for it alone.
    fn clone(&self) -> Self {
        Self {
            spin: self.spin,
            generation: Arc::default(),
            waiting: Arc::default(),
        }
    }
}

impl Drop for WarmWorkers {
    /// A crowd dropped between steps has no next step: its waiting threads stop now, whatever
    /// the spin (with `Duration::MAX` they would wait for ever).
    fn drop(&mut self) {
        self.release();
    }
}

impl WarmWorkers {
    /// Ends the waits of earlier steps.
    fn release(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Keeps up to `count` threads of the current pool, other than this one, awake until the
    /// next [`Self::release`] or for `spin`, whichever comes first.
    fn keep(&self, count: usize) {
        let threads = rayon::current_num_threads();
        if self.spin.is_zero() || count == 0 || threads < 2 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        let deadline = Instant::now().checked_add(self.spin);
        let spawner = rayon::current_thread_index();
        for _ in 0..count.min(threads - 1) {
            let current = Arc::clone(&self.generation);
            let waiting = Arc::clone(&self.waiting);
            rayon::spawn(move || {
                // Taken back by the thread that queued it: that thread is the next step's.
                if spawner.is_some() && rayon::current_thread_index() == spawner {
                    return;
                }
                waiting.fetch_add(1, Ordering::AcqRel);
                while current.load(Ordering::Acquire) == generation
                    && deadline.is_none_or(|d| Instant::now() < d)
                {
                    // Whatever else the pool has queued runs here meanwhile.
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        std::hint::spin_loop();
                    }
                }
                waiting.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }
}

/// One fused job's buffers: neighbour lists and the batches it last relaxed with.
#[derive(Default, Debug, Clone)]
struct ChunkScratch {
    neighbours: Neighbours,
    f32_batch: Option<FieldBatchF32>,
    f64_batch: Option<FieldBatch>,
}

impl ChunkScratch {
    /// Relaxes `group` (one key, at most [`BATCH_LANES_F32`] agents; f64 maps go
    /// [`BATCH_LANES`] at a time) in place.
    fn relax(&mut self, group: &mut [(RelaxKey, &mut Agent, Bias)]) {
        let Some(&((side, sweeps, precision), _, _)) = group.first() else {
            return;
        };
        match precision {
            LocalPrecision::F32Complement => {
                let batch = match &mut self.f32_batch {
                    Some(b) if b.size() == (side, side) => b,
                    slot => slot.insert(FieldBatchF32::new(side, side)),
                };
                // A local map's fixed cells are obstacles (1) and goals (0), whose complements
                // are exact: storing whole maps gives the masked store's bits. A few maps skip
                // the lanes (the time-skewed kernel reads and writes them directly).
                let mut maps: Vec<(&mut Field<f64>, &Bias)> = group
                    .iter_mut()
                    .map(|(_, agent, bias)| (agent.local.field_mut(), &*bias))
                    .collect();
                batch.relax_whole(&mut maps, sweeps);
            }
            LocalPrecision::F64 => {
                let batch = match &mut self.f64_batch {
                    Some(b) if b.size() == (side, side) => b,
                    slot => slot.insert(FieldBatch::new(side, side)),
                };
                for lanes in group.chunks_mut(BATCH_LANES) {
                    batch.clear();
                    for (lane, (_, agent, bias)) in lanes.iter().enumerate() {
                        batch.load(lane, agent.local.field(), bias);
                    }
                    batch.relax(sweeps);
                    for (lane, (_, agent, _)) in lanes.iter_mut().enumerate() {
                        batch.store(lane, agent.local.field_mut());
                    }
                }
            }
        }
    }
}

/// Lanes of each parallel job for `count` agents on `threads` threads, in order, at most
/// [`BATCH_LANES_F32`] a job. Where there are full batches for every thread (and at least two),
/// the jobs are full batches and the rest one job, or two shared in pairs where it holds more
/// than [`SKEWED_MAX_MAPS`] agents (200 agents go 32 × 6 + 8, 250 go 32 × 7 + 14 + 12): a full
/// batch sweeps a map for about half what the time-skewed kernel takes, and on AVX-512 17–24
/// maps cost a full batch's sweep. Otherwise at least one job per thread while there are 8-lane vectors'
/// worth of agents to share, and, while jobs are few, a multiple of the thread count; where
/// every job then holds at most [`SKEWED_MAX_MAPS`] (16) agents, the jobs the time-skewed
/// kernel sweeps two maps at a time, the agents are shared out in pairs as evenly as possible
/// (24 agents on two threads go 12 + 12, 30 go 16 + 14), otherwise in whole 8-lane vectors,
/// the last job taking the remainder (40 go 24 + 16); even shares never put more vectors in
/// the largest job than whole vectors would. Results never depend on it: every lane is
/// relaxed as if alone.
fn job_sizes(count: usize, threads: usize) -> Vec<usize> {
    const VECTOR: usize = 8;
    let vectors = count.div_ceil(VECTOR);
    if vectors == 0 {
        return Vec::new();
    }
    let threads = threads.max(1);
    let full = count / BATCH_LANES_F32;
    if full >= threads.max(2) {
        let rest = count % BATCH_LANES_F32;
        let mut sizes = vec![BATCH_LANES_F32; full];
        if rest > SKEWED_MAX_MAPS {
            let first = rest.div_ceil(2).next_multiple_of(2);
            sizes.extend([first, rest - first]);
        } else if rest > 0 {
            sizes.push(rest);
        }
        return sizes;
    }
    let mut jobs = vectors
        .div_ceil(BATCH_LANES_F32 / VECTOR)
        .max(threads.min(vectors));
    if jobs < 2 * threads {
        jobs = jobs.next_multiple_of(threads).min(vectors);
    }
    // Jobs small enough for the time-skewed kernel (which sweeps maps in pairs, not whole
    // vectors) share the agents evenly in pairs.
    let pairs = count.div_ceil(2);
    if jobs > 1 && pairs.div_ceil(jobs) * 2 <= SKEWED_MAX_MAPS {
        let mut left = count;
        return (0..jobs)
            .map(|j| {
                let take = ((pairs / jobs + usize::from(j < pairs % jobs)) * 2).min(left);
                left -= take;
                take
            })
            .filter(|&n| n > 0)
            .collect();
    }
    let mut left = count;
    (0..jobs)
        .map(|j| {
            let lanes = (vectors / jobs + usize::from(j < vectors % jobs)) * VECTOR;
            let take = lanes.min(left);
            left -= take;
            take
        })
        .collect()
}

/// `items` cut into consecutive slices of `sizes` (which must not sum past its length).
fn split_into<'a, T>(mut items: &'a mut [T], sizes: &[usize]) -> Vec<&'a mut [T]> {
    sizes
        .iter()
        .map(|&n| {
            let (head, tail) = std::mem::take(&mut items).split_at_mut(n);
            items = tail;
            head
        })
        .collect()
}

/// Agents whose local maps relax in one batch: side, sweeps and precision.
type RelaxKey = (usize, usize, LocalPrecision);

/// The agents prepared for relaxation, with their keys and biases, sorted by key (agents of
/// one key keep their order).
fn to_relax<'a, 'b>(
    agents: impl Iterator<Item = (&'a mut Agent, &'b Prepared)>,
) -> Vec<(RelaxKey, &'a mut Agent, Bias)> {
    let mut relaxing: Vec<(RelaxKey, &mut Agent, Bias)> = agents
        .filter_map(|(agent, p)| match p {
            Prepared::Relax { bias, .. } => {
                let s = agent.params.local_map;
                Some(((s.side, s.sweeps, s.precision), agent, *bias))
            }
            _ => None,
        })
        .collect();
    // Usually one key for all: nothing to sort.
    if !relaxing.is_sorted_by_key(|(key, _, _)| *key) {
        relaxing.sort_by_key(|(key, _, _)| *key);
    }
    relaxing
}

/// A planning job's neighbour buffers, reused from agent to agent (no allocation per agent).
#[derive(Default, Debug, Clone)]
struct Neighbours {
    /// Position and radius of each neighbour found.
    discs: Vec<(DVec2, f64)>,
    /// Its agent index, parallel to `discs`.
    ids: Vec<usize>,
}

/// Ends the agent's current goal, reached (`reached`) or given up: it takes the next goal, or
/// after the last stops as arrived or leaves the crowd. Only a reached last goal is reported
/// as arrived. An agent that leaves keeps its committed position for the rest of the step.
fn next_goal(slot: &mut Option<Agent>, id: AgentId, reached: bool, report: &mut StepReport) {
    let Some(agent) = slot.as_mut() else {
        return;
    };
    agent.subgoals.clear();
    agent.stalled = 0;
    agent.steps_on_goal = 0;
    if agent.goal_index + 1 < agent.params.goals.len() {
        agent.goal_index += 1;
        agent.state = AgentState::Moving;
        report.advanced.push(id);
        return;
    }
    agent.state = AgentState::Arrived;
    agent.speed_factor = 0.0;
    if reached {
        report.arrived.push(id);
    }
    if agent.params.on_arrival == ArrivalAction::Despawn {
        *slot = None;
        report.removed.push(id);
    }
}

/// Whether any neighbour in sight or any obstacle lies within `dvis` ahead (a 120° cone).
#[allow(clippy::too_many_arguments)]
fn something_ahead(
    pos: DVec2,
    facing: DVec2,
    dvis: f64,
    radius: f64,
    neighbours: &[(DVec2, f64)],
    statics: &[Shape],
    static_bounds: &[(DVec2, DVec2)],
    moving: &[(Shape, (DVec2, DVec2))],
    in_sight: impl Fn(DVec2) -> bool,
) -> bool {
    let Some(f) = facing.try_normalize() else {
        return false;
    };
    let cos_half = 0.5;
    let agents = neighbours.iter().any(|(q, r)| {
        let d = *q - pos;
        let len = d.length();
        len - r <= dvis && len > 0.0 && d.dot(f) / len >= cos_half && in_sight(*q)
    });
    if agents {
        return true;
    }
    // Only shapes whose box, grown by the radius, meets the probed segment's box can be
    // within the radius of a probe (a millimetre of margin for rounding).
    let end = pos + f * dvis;
    let grow = DVec2::splat(radius + 1e-3);
    let (lo, hi) = (pos.min(end) - grow, pos.max(end) + grow);
    let near: Vec<&Shape> = statics
        .iter()
        .zip(static_bounds)
        .chain(moving.iter().map(|(s, b)| (s, b)))
        .filter(|(_, (slo, shi))| boxes_overlap(*slo, *shi, lo, hi))
        .map(|(s, _)| s)
        .collect();
    if near.is_empty() {
        return false;
    }
    let probes = (dvis / 0.25).ceil() as usize;
    (1..=probes).any(|k| {
        let p = pos + f * (dvis * k as f64 / probes as f64);
        near.iter()
            .any(|s| s.distance(p).is_ok_and(|d| d <= radius))
    })
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

/// Re-derives the cell kinds of a global map inside `[lo, hi]` from the static shapes and the
/// goal region after an edit there. Cells that become free start at 1; others keep their
/// potential as the warm start.
fn refresh_global(
    map: &mut Field<f64>,
    lo: DVec2,
    hi: DVec2,
    statics: &[Shape],
    bounds: &[(DVec2, DVec2)],
    inflation: f64,
    goal: &Shape,
) {
    let g = *map.geometry();
    // Interior cells only: the border ring stays closed.
    let last = glam::IVec2::new(g.width() as i32 - 2, g.height() as i32 - 2);
    let Some(region) = CellRegion::new(&g, lo, hi, glam::IVec2::ONE, last) else {
        return;
    };
    let inside = |x: usize, y: usize| region.contains(x, y);
    for (x, y) in region.cells() {
        if map.kind(x, y) != Some(CellKind::Free) {
            let _ = map.set_free(x, y, 1.0);
        }
    }
    let grow = DVec2::splat(inflation + g.cell_size());
    for (shape, (slo, shi)) in statics.iter().zip(bounds) {
        if !boxes_overlap(*slo - grow, *shi + grow, lo, hi) {
            continue;
        }
        if let Ok(cells) = shape.cells(&g, inflation, Coverage::Touch) {
            for (x, y) in cells.into_iter().filter(|&(x, y)| inside(x, y)) {
                let _ = map.set_obstacle(x, y);
            }
        }
    }
    if let Ok(cells) = goal.cells(&g, 0.0, Coverage::Touch) {
        for (x, y) in cells.into_iter().filter(|&(x, y)| inside(x, y)) {
            if map.kind(x, y) == Some(CellKind::Free) {
                let _ = map.set_goal(x, y);
            }
        }
    }
}

/// After an edit inside `[lo, hi]`: re-derives what sensing finds there and updates the cells
/// already sensed (an unsensed cell is learned when it is sensed).
fn refresh_search(
    search: &mut Search,
    map: &mut Field<f64>,
    lo: DVec2,
    hi: DVec2,
    statics: &[Shape],
    inflation: f64,
) {
    let g = *map.geometry();
    let last = glam::IVec2::new(g.width() as i32 - 2, g.height() as i32 - 2);
    let Some(region) = CellRegion::new(&g, lo, hi, glam::IVec2::ONE, last) else {
        return;
    };
    for (x, y) in region.cells() {
        search.truth[g.index(x, y)] = false;
    }
    for shape in statics {
        if let Ok(cells) = shape.cells(&g, inflation, Coverage::Touch) {
            for (x, y) in cells.into_iter().filter(|&(x, y)| region.contains(x, y)) {
                search.truth[g.index(x, y)] = true;
            }
        }
    }
    for (x, y) in region.cells() {
        let i = g.index(x, y);
        if !search.sensed[i] {
            continue;
        }
        let blocked = map.kind(x, y) == Some(CellKind::Obstacle);
        if search.truth[i] && !blocked {
            let _ = map.set_obstacle(x, y);
        } else if !search.truth[i] && blocked {
            let _ = map.set_free(x, y, 1.0);
        }
    }
}

/// What a static raster depends on: the local cell size, the agent radius and the obstacle
/// coverage.
type RasterKey = (u64, u64, Coverage);

fn raster_key(map: &LocalMapSettings, radius: f64) -> RasterKey {
    (
        map.cell_size.to_bits(),
        radius.to_bits(),
        map.obstacle_coverage,
    )
}

fn shape_near(shape: &Shape, lo: DVec2, hi: DVec2, inflation: f64) -> bool {
    let centre = (lo + hi) * 0.5;
    let reach = (hi - lo).length() * 0.5 + inflation;
    shape.distance(centre).is_ok_and(|d| d <= reach)
}

fn shape_centre(shape: &Shape) -> DVec2 {
    match shape {
        Shape::Disc { centre, .. } | Shape::RotatedBox { centre, .. } => *centre,
        Shape::Aabb { min, max } => (*min + *max) * 0.5,
        Shape::Polygon(p) | Shape::Polyline { points: p, .. } => {
            p.iter().copied().sum::<DVec2>() / p.len().max(1) as f64
        }
        Shape::Segment { a, b, .. } => (*a + *b) * 0.5,
    }
}

/// The shapes the collision guard keeps agents out of.
#[derive(Clone, Copy)]
struct Obstacles<'a> {
    statics: &'a [Shape],
    static_bounds: &'a [(DVec2, DVec2)],
    moving: &'a [(Shape, (DVec2, DVec2))],
    /// The static boxes on a grid, where there are many.
    grid: Option<&'a ShapeGrid>,
}

/// Static shapes from which on the collision guard looks them up on a [`ShapeGrid`] instead of
/// scanning them all.
const SHAPE_GRID_MIN: usize = 24;

/// Static shapes' boxes bucketed on a uniform grid over the world (a counting sort: each cell's
/// shapes are one slice, in increasing index order); boxes beyond the world count in its
/// border cells, and queries are clamped the same way, so a box that meets a query's box is
/// always among the cells the query visits.
#[derive(Debug, Clone)]
struct ShapeGrid {
    origin: DVec2,
    inv_cell: f64,
    cols: usize,
    rows: usize,
    /// Cell `c`'s shapes are `items[starts[c]..starts[c + 1]]`.
    starts: Vec<u32>,
    items: Vec<u32>,
}

impl ShapeGrid {
    fn new(bounds: &[(DVec2, DVec2)], min: DVec2, max: DVec2) -> Self {
        let extent = (max - min).max(DVec2::splat(1e-9));
        // About 4 m cells, at most 128 a side.
        let cell = (extent.x.max(extent.y) / 128.0).max(4.0);
        let cols = ((extent.x / cell).ceil() as usize).clamp(1, 128);
        let rows = ((extent.y / cell).ceil() as usize).clamp(1, 128);
        let mut grid = Self {
            origin: min,
            inv_cell: 1.0 / cell,
            cols,
            rows,
            starts: vec![0; cols * rows + 1],
            items: Vec::new(),
        };
        for pass in 0..2 {
            let mut fill = grid.starts.clone();
            for (k, (lo, hi)) in bounds.iter().enumerate() {
                let ((x0, y0), (x1, y1)) = (grid.cell(*lo), grid.cell(*hi));
                for y in y0..=y1 {
                    for x in x0..=x1 {
                        let c = y * cols + x;
                        if pass == 0 {
                            grid.starts[c + 1] += 1;
                        } else {
                            grid.items[fill[c] as usize] = k as u32;
                            fill[c] += 1;
                        }
                    }
                }
            }
            if pass == 0 {
                for c in 0..cols * rows {
                    grid.starts[c + 1] += grid.starts[c];
                }
                grid.items = vec![0; grid.starts[cols * rows] as usize];
            }
        }
        grid
    }

    /// The grid cell holding `p`, clamped to the grid (NaN to the first cell).
    fn cell(&self, p: DVec2) -> (usize, usize) {
        let g = (p - self.origin) * self.inv_cell;
        let clamp = |v: f64, n: usize| (floor_i64(v).max(0) as usize).min(n - 1);
        (clamp(g.x, self.cols), clamp(g.y, self.rows))
    }

    /// Every shape whose box may meet the box `lo..hi`, in increasing order, into `out`.
    fn near(&self, lo: DVec2, hi: DVec2, out: &mut Vec<u32>) {
        out.clear();
        let ((x0, y0), (x1, y1)) = (self.cell(lo), self.cell(hi));
        for y in y0..=y1 {
            for x in x0..=x1 {
                let c = y * self.cols + x;
                out.extend_from_slice(
                    &self.items[self.starts[c] as usize..self.starts[c + 1] as usize],
                );
            }
        }
        out.sort_unstable();
        out.dedup();
    }
}

/// The collision guard's buffers, reused from agent to agent through a commit.
#[derive(Default)]
struct GuardScratch {
    /// Committed agents (position, radius) that could touch the agent's step.
    near: Vec<(DVec2, f64)>,
    /// Index (statics, then moving) and clearance at the start of shapes within reach.
    close: Vec<(usize, f64)>,
    /// Static shapes a [`ShapeGrid`] offers.
    offered: Vec<u32>,
}

/// Shortens `displacement` so the agent keeps clear of committed agents, static shapes and
/// moving obstacles. `hash` indexes the snapshot; `others` bounds how far beyond its indexed
/// centre another agent's committed disc reaches. `late` lists agents spawned during the step
/// (not in `hash`).
#[allow(clippy::too_many_arguments)]
fn guard_step(
    start: DVec2,
    displacement: DVec2,
    radius: f64,
    me: usize,
    committed: &[Option<(DVec2, f64)>],
    hash: &AgentGrid,
    others: f64,
    late: &[usize],
    obstacles: Obstacles<'_>,
    scratch: &mut GuardScratch,
) -> DVec2 {
    let len = displacement.length();
    if len == 0.0 {
        return DVec2::ZERO;
    }
    // Every tried position lies within `len` of the start, so an agent further than
    // `len + radius + r` (plus a margin for rounding) clears it from all of them: keep only
    // the others.
    let could_touch = |(q, r): (DVec2, f64)| {
        let reach = len + radius + r + 1e-6;
        (q - start).length_squared() <= reach * reach
    };
    let near = &mut scratch.near;
    near.clear();
    // The hash indexes the snapshot, and a committed disc reaches at most `others` beyond its
    // indexed centre: agents indexed further away cannot touch.
    hash.for_each_near(start, len + radius + others + 1e-6, |j| {
        if j != me
            && let Some(c) = committed[j]
            && could_touch(c)
        {
            near.push(c);
        }
    });
    near.extend(
        late.iter()
            .filter(|&&j| j != me)
            .filter_map(|&j| committed[j]),
    );
    // Static shapes whose bounding box comes within reach (the others stay at least `radius`
    // away from every tried position), with their clearance at the start.
    let reach = len + radius;
    // Boxes clearly beyond reach are dropped on squared distances (no square root; the margin
    // far exceeds rounding), the rest by the exact test.
    let clearly_beyond = reach * reach * (1.0 + 1e-9);
    let within = |(lo, hi): &(DVec2, DVec2)| {
        let gap = start - start.clamp(*lo, *hi);
        gap.length_squared() <= clearly_beyond && gap.length() <= reach
    };
    let close = &mut scratch.close;
    close.clear();
    match obstacles.grid {
        // The same shapes in the same order as the scan below: the grid offers a superset of
        // the statics within reach, in increasing index order, and the same test picks them.
        Some(grid) => {
            let r = DVec2::splat(reach * (1.0 + 1e-9) + 1e-9);
            grid.near(start - r, start + r, &mut scratch.offered);
            close.extend(
                scratch
                    .offered
                    .iter()
                    .map(|&k| k as usize)
                    .filter(|&k| within(&obstacles.static_bounds[k]))
                    .map(|k| (k, obstacles.statics[k].distance(start).unwrap_or(0.0))),
            );
        }
        None => close.extend(
            obstacles
                .statics
                .iter()
                .zip(obstacles.static_bounds)
                .enumerate()
                .filter(|(_, (_, b))| within(b))
                .map(|(k, (s, _))| (k, s.distance(start).unwrap_or(0.0))),
        ),
    }
    let statics = obstacles.statics.len();
    close.extend(
        obstacles
            .moving
            .iter()
            .enumerate()
            .filter(|(_, (_, b))| within(b))
            .map(|(k, (s, _))| (statics + k, s.distance(start).unwrap_or(0.0))),
    );
    let shape = |k: usize| {
        obstacles
            .statics
            .get(k)
            .unwrap_or_else(|| &obstacles.moving[k - obstacles.statics.len()].0)
    };
    let (near, close) = (&*near, &*close);
    let ok = |p: DVec2| {
        near.iter().all(|(q, r)| {
            let need = radius + r;
            let now = (p - *q).length();
            now >= need || now >= (start - *q).length()
        }) && close.iter().all(|(k, before)| {
            shape(*k)
                .distance(p)
                .is_ok_and(|d| d >= radius || d >= *before)
        })
    };
    let mut t = 1.0;
    for _ in 0..8 {
        if ok(start + displacement * t) {
            return displacement * t;
        }
        t *= 0.5;
    }
    DVec2::ZERO
}

/// Points (agents of one step) bucketed on a uniform grid over their bounding box: a counting
/// sort by cell, so each cell's points are one slice, in increasing index order. The crowd
/// indexes its snapshot with it; hosts and benchmarks may use it for their own neighbour
/// queries.
#[derive(Debug, Clone)]
pub struct AgentGrid {
    origin: DVec2,
    inv_cell: f64,
    cols: i64,
    rows: i64,
    /// `starts[c]..starts[c + 1]` indexes `items` for cell `c`.
    starts: Vec<u32>,
    items: Vec<u32>,
    /// Position and radius of each item, in the same order: a query reads them in sequence
    /// rather than gathering them by index.
    points: Vec<(DVec2, f64)>,
}

impl AgentGrid {
    /// Buckets the present points (`Some((position, radius))`; the radius is not used) on cells
    /// of about `cell` (larger where that would give more than about four cells per point, so a
    /// lone far-away agent cannot blow the grid up). Positions must be finite.
    pub fn build(points: &[Option<(DVec2, f64)>], cell: f64) -> Self {
        let (mut lo, mut hi, mut n) = (DVec2::INFINITY, DVec2::NEG_INFINITY, 0usize);
        for (p, _) in points.iter().flatten() {
            lo = lo.min(*p);
            hi = hi.max(*p);
            n += 1;
        }
        if n == 0 {
            return Self {
                origin: DVec2::ZERO,
                inv_cell: 1.0,
                cols: 0,
                rows: 0,
                starts: vec![0],
                items: Vec::new(),
                points: Vec::new(),
            };
        }
        let extent = hi - lo;
        let mut cell = cell.max(1e-3);
        let budget = (4 * n + 1024) as f64;
        let cells = |c: f64| ((extent.x / c).floor() + 1.0) * ((extent.y / c).floor() + 1.0);
        if cells(cell) > budget {
            cell *= (cells(cell) / budget).sqrt();
            while cells(cell) > budget {
                cell *= 1.25;
            }
        }
        let inv_cell = 1.0 / cell;
        let cols = (extent.x * inv_cell).floor() as i64 + 1;
        let rows = (extent.y * inv_cell).floor() as i64 + 1;
        let key = |p: DVec2| {
            let x = (((p.x - lo.x) * inv_cell) as i64).clamp(0, cols - 1);
            let y = (((p.y - lo.y) * inv_cell) as i64).clamp(0, rows - 1);
            (y * cols + x) as usize
        };
        let mut starts = vec![0u32; (cols * rows) as usize + 1];
        for (p, _) in points.iter().flatten() {
            starts[key(*p) + 1] += 1;
        }
        for c in 1..starts.len() {
            starts[c] += starts[c - 1];
        }
        let mut fill = starts.clone();
        let mut items = vec![0u32; n];
        let mut sorted = vec![(DVec2::ZERO, 0.0); n];
        for (i, p) in points.iter().enumerate() {
            if let Some((p, r)) = p {
                let c = key(*p);
                items[fill[c] as usize] = i as u32;
                sorted[fill[c] as usize] = (*p, *r);
                fill[c] += 1;
            }
        }
        Self {
            origin: lo,
            inv_cell,
            cols,
            rows,
            starts,
            items,
            points: sorted,
        }
    }

    /// Calls `f` with the index of every point within `radius` of `p` (and possibly a few
    /// more), cell by cell. Callers must not depend on the order.
    pub fn for_each_near(&self, p: DVec2, radius: f64, mut f: impl FnMut(usize)) {
        self.for_each_point_near(p, radius, |i, _, _| f(i));
    }

    /// [`Self::for_each_near`] with each point's position and radius as they were indexed.
    pub fn for_each_point_near(&self, p: DVec2, radius: f64, mut f: impl FnMut(usize, DVec2, f64)) {
        let cell = |v: f64, o: f64| floor_i64((v - o) * self.inv_cell);
        let (x0, x1) = (
            cell(p.x - radius, self.origin.x).max(0),
            cell(p.x + radius, self.origin.x).min(self.cols - 1),
        );
        let (y0, y1) = (
            cell(p.y - radius, self.origin.y).max(0),
            cell(p.y + radius, self.origin.y).min(self.rows - 1),
        );
        for y in y0..=y1 {
            let row = (y * self.cols) as usize;
            if x0 > x1 {
                break;
            }
            let (a, b) = (
                self.starts[row + x0 as usize] as usize,
                self.starts[row + x1 as usize + 1] as usize,
            );
            for (&i, &(q, r)) in self.items[a..b].iter().zip(&self.points[a..b]) {
                f(i as usize, q, r);
            }
        }
    }
}

/// `v.floor() as i64` without the libm call the baseline x86-64 target makes for `floor`.
fn floor_i64(v: f64) -> i64 {
    let t = v as i64;
    t.saturating_sub(i64::from((t as f64) > v))
}

/// Cell size of the spawn-time agent index.
const SPAWN_CELL: f64 = 2.0;

/// A uniform grid over agent positions.
#[derive(Debug, Clone)]
struct SpatialHash {
    cell: f64,
    buckets: std::collections::HashMap<(i64, i64), Vec<usize>>,
}

impl SpatialHash {
    fn build(points: &[Option<(DVec2, f64)>], cell: f64) -> Self {
        let mut buckets: std::collections::HashMap<(i64, i64), Vec<usize>> =
            std::collections::HashMap::new();
        for (i, p) in points.iter().enumerate() {
            if let Some((p, _)) = p {
                buckets.entry(Self::key(*p, cell)).or_default().push(i);
            }
        }
        Self { cell, buckets }
    }

    /// Adds point `i` at `p`.
    fn insert(&mut self, i: usize, p: DVec2) {
        self.buckets
            .entry(Self::key(p, self.cell))
            .or_default()
            .push(i);
    }

    fn key(p: DVec2, cell: f64) -> (i64, i64) {
        (floor_i64(p.x / cell), floor_i64(p.y / cell))
    }

    /// Calls `f` for every indexed point within `radius` of `p` (and possibly a few more), in
    /// increasing index order.
    fn for_each_near(&self, p: DVec2, radius: f64, mut f: impl FnMut(usize)) {
        let lo = Self::key(p - DVec2::splat(radius), self.cell);
        let hi = Self::key(p + DVec2::splat(radius), self.cell);
        let mut found = Vec::new();
        let span = (hi.0 - lo.0 + 1).saturating_mul(hi.1 - lo.1 + 1);
        if span > self.buckets.len() as i64 {
            // A query wider than the occupied cells (a huge agent, a coarse world): walk the
            // buckets instead of the empty cells.
            for (key, v) in &self.buckets {
                if (lo.0..=hi.0).contains(&key.0) && (lo.1..=hi.1).contains(&key.1) {
                    found.extend_from_slice(v);
                }
            }
        } else {
            for x in lo.0..=hi.0 {
                for y in lo.1..=hi.1 {
                    if let Some(v) = self.buckets.get(&(x, y)) {
                        found.extend_from_slice(v);
                    }
                }
            }
        }
        found.sort_unstable();
        for i in found {
            f(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Jobs cover every agent once, in order, at most a full batch each, one per thread
        /// at least while vectors last. With full batches for every thread (two at least),
        /// every job but the last one or two is a full batch, and those share the rest, each
        /// within reach of the time-skewed kernel (the first even, the two within three).
        /// Otherwise: jobs of at most `SKEWED_MAX_MAPS` agents go in pairs (all but the last
        /// even, sizes within two of each other); larger ones in whole vectors whose counts
        /// differ by one at most; and the largest job holds no more vectors than the
        /// whole-vector share would give it.
        #[test]
        fn jobs_share_the_agents_evenly(count in 0usize..2_000, threads in 1usize..9) {
            let sizes = job_sizes(count, threads);
            let vectors = count.div_ceil(8);
            proptest::prop_assert_eq!(sizes.iter().sum::<usize>(), count);
            proptest::prop_assert!(sizes.len() >= threads.min(vectors));
            proptest::prop_assert!(sizes.iter().all(|&n| n > 0 && n <= BATCH_LANES_F32));
            let full = count / BATCH_LANES_F32;
            if full >= threads.max(2) {
                let (batches, rest) = sizes.split_at(full);
                proptest::prop_assert!(batches.iter().all(|&n| n == BATCH_LANES_F32), "{:?}", sizes);
                proptest::prop_assert!(rest.len() <= 2, "{:?}", sizes);
                proptest::prop_assert!(rest.iter().all(|&n| n <= SKEWED_MAX_MAPS), "{:?}", sizes);
                if let [a, b] = rest {
                    proptest::prop_assert!(a % 2 == 0 && a >= b && a - b <= 3, "{:?}", sizes);
                }
                return Ok(());
            }
            let (lo, hi) = (sizes.iter().min().copied(), sizes.iter().max().copied());
            let paired = sizes.len() > 1 && hi.is_some_and(|hi| hi <= SKEWED_MAX_MAPS);
            if let Some((_, most)) = sizes.split_last() {
                let unit = if paired { 2 } else { 8 };
                proptest::prop_assert!(most.iter().all(|n| n % unit == 0), "{:?}", sizes);
            }
            if paired {
                let most = &sizes[..sizes.len() - 1];
                let (mlo, mhi) = (most.iter().min(), most.iter().max());
                if let (Some(mlo), Some(mhi)) = (mlo, mhi) {
                    proptest::prop_assert!(mhi - mlo <= 2, "{:?}", sizes);
                }
            } else {
                let jobs_vectors: Vec<usize> = sizes.iter().map(|n| n.div_ceil(8)).collect();
                let (lo, hi) = (jobs_vectors.iter().min(), jobs_vectors.iter().max());
                if let (Some(lo), Some(hi)) = (lo, hi) {
                    proptest::prop_assert!(hi - lo <= 1, "{:?}", sizes);
                }
            }
            if let (Some(_), Some(hi)) = (lo, hi) {
                // Whole vectors over the same number of jobs, as evenly as they go.
                let whole = vectors.div_ceil(sizes.len());
                proptest::prop_assert!(hi.div_ceil(8) <= whole, "{:?}", sizes);
            }
        }
    }

    #[test]
    fn small_crowds_are_split_between_threads() {
        assert_eq!(job_sizes(2, 2), vec![2]);
        assert_eq!(job_sizes(24, 2), vec![12, 12]);
        assert_eq!(job_sizes(30, 2), vec![16, 14]);
        assert_eq!(job_sizes(40, 2), vec![24, 16]);
        assert_eq!(job_sizes(70, 2), vec![32, 32, 6]);
        assert_eq!(job_sizes(90, 4), vec![24, 24, 24, 18]);
        assert_eq!(job_sizes(13, 2), vec![8, 5]);
        assert_eq!(job_sizes(200, 2), vec![32, 32, 32, 32, 32, 32, 8]);
        assert_eq!(job_sizes(250, 2), vec![32, 32, 32, 32, 32, 32, 32, 14, 12]);
        assert_eq!(job_sizes(24, 1), vec![24]);
        assert_eq!(job_sizes(40, 1), vec![24, 16]);
        assert_eq!(job_sizes(0, 4), Vec::<usize>::new());
    }

    /// The share tuner times both ways first (a burst each, shared first), then shares where
    /// sharing measured faster and keeps the step on one thread where the hand-over cost more
    /// than it saved, timing the other way again in bursts; its model carries over to other
    /// crowd sizes; crowds above its range always share, and one job or one thread never.
    #[test]
    fn the_share_tuner_follows_the_times() {
        let us = Duration::from_micros;
        let sizes = job_sizes;
        let steps = 400u32;
        let run = |alone_us: u64, shared_us: u64| -> (Vec<bool>, ShareTuner) {
            let mut tuner = ShareTuner::default();
            let ways = (0..steps)
                .map(|_| {
                    let share = tuner.choose(24, 2, &sizes(24, 2));
                    let took = us(if share { shared_us } else { alone_us });
                    tuner.record(24, 2, &sizes(24, 2), share, took);
                    share
                })
                .collect();
            (ways, tuner)
        };
        let burst = TUNED_BURST as usize;
        let first: Vec<bool> = (0..2 * burst).map(|k| k < burst).collect();
        // 24 planners go 12 + 12: 1 µs a planner alone; shared, 12 µs and a 2 or 20 µs hand-over.
        let (cheap, tuner) = run(24, 14);
        let (costly, _) = run(24, 32);
        assert_eq!(&cheap[..2 * burst], &first[..]);
        assert_eq!(&costly[..2 * burst], &first[..]);
        // Bursts of the other way start at every multiple of the recheck period.
        let rechecked = (steps / TUNED_RECHECK) as usize * burst;
        let shared = |ways: &[bool]| ways.iter().filter(|&&s| s).count();
        let learnt = steps as usize - 2 * burst;
        assert_eq!(shared(&cheap[2 * burst..]), learnt - rechecked);
        assert_eq!(shared(&costly[2 * burst..]), rechecked);
        for k in (TUNED_RECHECK as usize..steps as usize).step_by(TUNED_RECHECK as usize) {
            assert!(
                cheap[k - 1..k - 1 + burst].iter().all(|&s| !s),
                "a burst alone from step {k}"
            );
        }
        // With the 2 µs hand-over, 16 planners (8 + 8: 8 µs saved) and 40 (24 + 16: 16 µs
        // saved) share too; a 10 µs one keeps 16 alone and still shares 24 and 40.
        assert!(tuner.prefers_sharing(16, &sizes(16, 2)));
        assert!(tuner.prefers_sharing(40, &sizes(40, 2)));
        let mut slower = ShareTuner::default();
        for shared in [false, true] {
            for _ in 0..TUNED_SAMPLES {
                slower.record(
                    24,
                    2,
                    &sizes(24, 2),
                    shared,
                    us(if shared { 22 } else { 24 }),
                );
            }
        }
        assert!(!slower.prefers_sharing(16, &sizes(16, 2)));
        assert!(slower.prefers_sharing(24, &sizes(24, 2)));
        assert!(slower.prefers_sharing(40, &sizes(40, 2)));
        // A step that switched ways is not kept, so alternating steps teach nothing.
        let mut switching = ShareTuner::default();
        for k in 0..2 * TUNED_SAMPLES {
            switching.record(24, 2, &sizes(24, 2), k % 2 == 1, us(24));
        }
        assert_eq!((switching.alone.len, switching.shared.len), (0, 0));
        // Outside its range, and nothing learnt on one thread or above the range.
        let mut tuner = ShareTuner::default();
        for _ in 0..2 * TUNED_SAMPLES {
            tuner.record(40, 1, &sizes(40, 1), false, us(40));
            tuner.record(100, 2, &sizes(100, 2), false, us(100));
        }
        assert_eq!(tuner.alone.len, 0);
        let above = TUNED_PLANNERS + 1;
        assert!(tuner.choose(above, 2, &sizes(above, 2)));
        assert!(!tuner.choose(2, 2, &sizes(2, 2)), "one job");
        assert!(!tuner.choose(24, 1, &sizes(24, 1)), "one thread");
    }

    /// The tuner keeps the last [`TUNED_SAMPLES`] times of a way, and its lower median is the
    /// middle one, or the lower of the two middle ones.
    #[test]
    fn recent_times_keep_the_last_ones_and_their_lower_median() {
        let mut recent = Recent::<f64>::default();
        assert_eq!(lower_median(recent.kept().iter().copied()), None);
        for v in 1..=3 {
            recent.push(f64::from(v));
        }
        assert_eq!(lower_median(recent.kept().iter().copied()), Some(2.0));
        for v in 4..=20 {
            recent.push(f64::from(v));
        }
        let mut kept = recent.kept().to_vec();
        kept.sort_by(f64::total_cmp);
        let last: Vec<f64> = (13..=20).map(f64::from).collect();
        assert_eq!(kept, last);
        assert_eq!(lower_median(recent.kept().iter().copied()), Some(16.0));
    }

    /// Sharing a small crowd's step between threads or keeping it on the stepping thread changes
    /// no bit: two copies of a crowd of 30, one made to share (two jobs, 16 + 14, swept by the
    /// time-skewed kernel) and one to stay alone (one job of 30, swept by the lanes), stepped on
    /// two threads, stand at the same bits after every step while they walk.
    #[test]
    fn sharing_a_small_crowd_or_not_changes_nothing() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut crowd = busy_plaza(Vec::new(), LocalPrecision::F32Complement);
        for id in 30..120 {
            crowd.remove(AgentId(id)).unwrap();
        }
        assert_eq!(
            (job_sizes(30, 2), job_sizes(30, 1)),
            (vec![16, 14], vec![30])
        );
        let mut shared = crowd.clone();
        shared.sharing.forced = Some(true);
        let mut alone = crowd;
        alone.sharing.forced = Some(false);
        let bits = |c: &Crowd| -> Vec<[u64; 2]> {
            c.agents()
                .map(|(_, a)| a.position().to_array().map(f64::to_bits))
                .collect()
        };
        let start = bits(&alone);
        pool.install(|| {
            for step in 0..60 {
                shared.step();
                alone.step();
                assert_eq!(bits(&shared), bits(&alone), "step {step}");
            }
        });
        let moved = start
            .iter()
            .zip(bits(&alone))
            .filter(|(a, b)| *a != b)
            .count();
        assert!(moved >= 25, "{moved} of 30 agents moved");
    }

    /// Waits up to `limit` for `done`; whether it came.
    fn eventually(limit: Duration, done: impl Fn() -> bool) -> bool {
        let start = Instant::now();
        while !done() {
            if start.elapsed() > limit {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }

    /// Steps `crowd` until the pool's other thread is kept waiting after a step (the spawning
    /// thread may take the wait back itself, which then returns at once); whether it came.
    fn step_until_kept(crowd: &mut Crowd) -> bool {
        let waiting = Arc::clone(&crowd.warm.waiting);
        (0..50).any(|_| {
            crowd.step();
            eventually(Duration::from_secs(1), || {
                waiting.load(Ordering::Acquire) > 0
            })
        })
    }

    /// A thread kept awake after a step (for far longer than the test) still runs other work
    /// queued in the pool, and the next step's jobs end its wait, as does dropping the crowd
    /// (even with an endless spin); with no spin none waits.
    #[test]
    fn threads_kept_awake_run_other_work_and_stop_at_the_next_step() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let eventually = |done: &dyn Fn() -> bool| eventually(Duration::from_secs(20), done);
        pool.install(|| {
            let mut crowd = busy_plaza(Vec::new(), LocalPrecision::F32Complement);
            crowd.set_worker_spin(Duration::from_secs(600));
            let waiting = Arc::clone(&crowd.warm.waiting);
            assert!(step_until_kept(&mut crowd), "no thread was kept awake");
            // Work that needs the other thread while this one waits for it.
            let ran = std::sync::atomic::AtomicBool::new(false);
            rayon::join(
                || {
                    assert!(
                        eventually(&|| ran.load(Ordering::Acquire)),
                        "queued work never ran"
                    )
                },
                || ran.store(true, Ordering::Release),
            );
            crowd.set_worker_spin(Duration::ZERO);
            crowd.step();
            assert!(
                eventually(&|| waiting.load(Ordering::Acquire) == 0),
                "the next step did not end the wait"
            );
            crowd.step();
            assert_eq!(waiting.load(Ordering::Acquire), 0);
            // Dropped while a thread waits without end.
            crowd.set_worker_spin(Duration::MAX);
            assert!(step_until_kept(&mut crowd), "no thread was kept awake");
            drop(crowd);
            assert!(
                eventually(&|| waiting.load(Ordering::Acquire) == 0),
                "dropping the crowd did not end the wait"
            );
        });
    }

    /// A window larger than any before widens the static rasters: a shape just beyond the
    /// old rasters' edge is still stamped.
    #[test]
    fn a_larger_window_rebuilds_the_static_rasters_wider() {
        let settings = CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::splat(20.0),
            ..Default::default()
        };
        // Outside the world, 8 m east of its edge.
        let far = Shape::Disc {
            centre: DVec2::new(28.0, 10.0),
            radius: 1.0,
        };
        let mut crowd = Crowd::new(settings, vec![far]).unwrap();
        let goal = crowd
            .add_goal(Shape::Disc {
                centre: DVec2::new(2.0, 10.0),
                radius: 0.5,
            })
            .unwrap();
        crowd
            .spawn(AgentParams {
                position: DVec2::new(5.0, 5.0),
                goals: vec![goal],
                ..Default::default()
            })
            .unwrap();
        crowd.step();
        let narrow = crowd.raster_reach;
        assert!(narrow < 8.0, "{narrow}");
        let big = crowd
            .spawn(AgentParams {
                position: DVec2::new(19.0, 10.0),
                goals: vec![goal],
                local_map: LocalMapSettings {
                    side: 41,
                    ..Default::default()
                },
                ..Default::default()
            })
            .unwrap();
        crowd.step();
        assert!(crowd.raster_reach > narrow);
        let map = crowd.agent(big).unwrap().local_map().field();
        let cell = map.geometry().world_to_cell(DVec2::new(28.0, 10.0));
        assert_eq!(
            map.kind(cell.x as usize, cell.y as usize),
            Some(CellKind::Obstacle)
        );
    }

    /// Agents that differ only in obstacle coverage get a static raster each: before a 1.6 m
    /// door (0.5 m radius, 0.5 m cells) the door's cells are free in the `Centre` agent's map
    /// and closed in the `Touch` agent's, each as its own coverage stamps them.
    #[test]
    fn each_obstacle_coverage_reads_its_own_static_raster() {
        let settings = CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::new(30.0, 20.0),
            ..Default::default()
        };
        // A wall along x = 10 with doors between y = 4.7 and 6.3 and between 14.7 and 16.3.
        let wall = |y0: f64, y1: f64| Shape::Aabb {
            min: DVec2::new(9.8, y0),
            max: DVec2::new(10.0, y1),
        };
        let statics = vec![wall(0.0, 4.7), wall(6.3, 14.7), wall(16.3, 20.0)];
        let mut crowd = Crowd::new(settings, statics).unwrap();
        let goal = crowd
            .add_goal(Shape::Disc {
                centre: DVec2::new(25.0, 10.0),
                radius: 0.5,
            })
            .unwrap();
        let spawn = |crowd: &mut Crowd, y: f64, coverage: Coverage| {
            crowd
                .spawn(AgentParams {
                    position: DVec2::new(8.25, y),
                    radius: 0.5,
                    goals: vec![goal],
                    local_map: LocalMapSettings {
                        obstacle_coverage: coverage,
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .unwrap()
        };
        let centre = spawn(&mut crowd, 5.25, Coverage::Centre);
        let touch = spawn(&mut crowd, 15.25, Coverage::Touch);
        crowd.step();
        assert_eq!(crowd.rasters.len(), 2);
        let door_cell = |id, y: f64| {
            let map = crowd.agent(id).unwrap().local_map().field();
            let c = map.geometry().world_to_cell(DVec2::new(9.75, y));
            map.kind(c.x as usize, c.y as usize)
        };
        assert_eq!(door_cell(centre, 5.25), Some(CellKind::Free));
        assert_eq!(door_cell(touch, 15.25), Some(CellKind::Obstacle));
    }

    /// Both ways of answering a query (walking cells, walking buckets) find the same points,
    /// in increasing index order.
    #[test]
    fn spatial_hash_queries_agree_whichever_way_they_walk() {
        let points: Vec<Option<(DVec2, f64)>> = (0..300)
            .map(|i| {
                let t = i as f64 * 0.7;
                (i % 7 != 3).then_some((
                    DVec2::new(50.0 + 40.0 * t.sin(), 50.0 + 30.0 * (1.3 * t).cos()),
                    0.3,
                ))
            })
            .collect();
        let hash = SpatialHash::build(&points, 2.0);
        for (centre, radius) in [
            (DVec2::new(50.0, 50.0), 3.0),
            (DVec2::new(20.0, 70.0), 9.0),
            (DVec2::new(50.0, 50.0), 1e4),
        ] {
            let mut found = Vec::new();
            hash.for_each_near(centre, radius, |i| found.push(i));
            let expected: Vec<usize> = points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let (q, _) = (*p)?;
                    let (lo, hi) = (
                        SpatialHash::key(centre - DVec2::splat(radius), 2.0),
                        SpatialHash::key(centre + DVec2::splat(radius), 2.0),
                    );
                    let k = SpatialHash::key(q, 2.0);
                    ((lo.0..=hi.0).contains(&k.0) && (lo.1..=hi.1).contains(&k.1)).then_some(i)
                })
                .collect();
            assert_eq!(found, expected, "query {centre} radius {radius}");
            assert!(!found.is_empty());
        }
    }
    /// The step grid reports every point within the query radius (and each at most once),
    /// whatever the query, including ones reaching past the occupied area and a lone far point
    /// that forces coarser cells.
    #[test]
    fn agent_grid_finds_every_point_within_the_radius() {
        let mut points: Vec<Option<(DVec2, f64)>> = (0..500)
            .map(|i| {
                let t = i as f64 * 0.37;
                (i % 9 != 4).then_some((
                    DVec2::new(50.0 + 40.0 * t.sin(), 50.0 + 30.0 * (1.3 * t).cos()),
                    0.3,
                ))
            })
            .collect();
        for far in [None, Some(DVec2::new(5_000.0, -3_000.0))] {
            if let Some(p) = far {
                points.push(Some((p, 0.3)));
            }
            let grid = AgentGrid::build(&points, 2.0);
            for (centre, radius) in [
                (DVec2::new(50.0, 50.0), 3.0),
                (DVec2::new(20.0, 70.0), 9.0),
                (DVec2::new(-40.0, 50.0), 95.0),
                (DVec2::new(50.0, 50.0), 1e4),
                (DVec2::new(1e5, 1e5), 1.0),
            ] {
                let mut found = Vec::new();
                grid.for_each_near(centre, radius, |i| found.push(i));
                let mut sorted = found.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), found.len(), "a point reported twice");
                for (i, p) in points.iter().enumerate() {
                    if let Some((q, _)) = p
                        && (*q - centre).length() <= radius
                    {
                        assert!(found.contains(&i), "missed {i} for {centre} r {radius}");
                    }
                }
            }
        }
        assert_eq!(floor_i64(-0.5), -1);
        assert_eq!(floor_i64(-1e300), i64::MIN);
        assert_eq!(floor_i64(f64::NAN), 0);
        assert_eq!(floor_i64(-1.0), -1);
        assert_eq!(floor_i64(2.7), 2);
    }

    /// A neighbour far wider than the window's sensing box still lands in the local map
    /// wherever its disc reaches into the update zone: the neighbour query grows with the
    /// largest radius in the crowd.
    #[test]
    fn a_wide_neighbour_beyond_the_sensing_box_is_still_stamped() {
        let settings = CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::splat(60.0),
            ..Default::default()
        };
        let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
        let goal = crowd
            .add_goal(Shape::Disc {
                centre: DVec2::new(5.0, 50.0),
                radius: 1.0,
            })
            .unwrap();
        let walker = crowd
            .spawn(AgentParams {
                position: DVec2::new(10.1, 10.1),
                goals: vec![goal],
                ..Default::default()
            })
            .unwrap();
        // 12.8 m east: beyond the 7.3 m sensing box (and the index cells it touches), but its
        // 10 m disc grown by the walker's 0.25 m covers the update zone's east column (cell
        // centres at x = 12.75, 10.15 m from it).
        crowd
            .spawn(AgentParams {
                position: DVec2::new(22.9, 10.1),
                radius: 10.0,
                goals: vec![goal],
                ..Default::default()
            })
            .unwrap();
        // Enough agents elsewhere that the index has cells of the sensing size.
        for k in 0..100 {
            let _ = crowd.spawn(AgentParams {
                position: DVec2::new(1.0 + 0.58 * k as f64, 40.0 + (k % 2) as f64),
                goals: vec![goal],
                ..Default::default()
            });
        }
        crowd.advance_to(StepPhase::Sensing);
        let map = crowd.agent(walker).unwrap().local_map().field();
        let east = (2..map.height() - 2)
            .filter(|&y| map.kind(map.width() - 3, y) == Some(CellKind::Obstacle))
            .count();
        assert!(east > 0, "the wide neighbour was not stamped");
    }

    use crate::behaviour::Behaviour;
    use crowdfield_field::{Relaxation, Tolerance, relax, relax_until};

    /// Four 1 m pillars 8 m apart, for [`busy_plaza`].
    fn four_pillars() -> Vec<Shape> {
        (0..4)
            .map(|k| Shape::Disc {
                centre: DVec2::new(8.0 + 8.0 * (k % 2) as f64, 8.0 + 8.0 * (k / 2) as f64),
                radius: 1.0,
            })
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// The guard shortens a step by the same bits whether it finds the static shapes near
        /// the step on their grid or by scanning them all: shapes inside the world, across its
        /// edge and beyond it, steps from anywhere near them.
        #[test]
        fn the_guard_step_is_the_same_on_the_shape_grid(
            shapes in proptest::collection::vec(
                (-5.0f64..35.0, -5.0f64..35.0, 0.1f64..3.0, proptest::bool::ANY),
                SHAPE_GRID_MIN..60,
            ),
            steps in proptest::collection::vec(
                (0usize..1000, 0.0f64..std::f64::consts::TAU, 0.0f64..1.0, 0.05f64..1.5),
                40,
            ),
        ) {
            let statics: Vec<Shape> = shapes
                .iter()
                .map(|&(x, y, r, disc)| {
                    let c = DVec2::new(x, y);
                    if disc {
                        Shape::Disc { centre: c, radius: r }
                    } else {
                        Shape::Aabb { min: c - DVec2::new(r, 0.2), max: c + DVec2::new(0.2, r) }
                    }
                })
                .collect();
            let bounds: Vec<(DVec2, DVec2)> = statics.iter().map(|s| s.bounds().unwrap()).collect();
            let grid = ShapeGrid::new(&bounds, DVec2::ZERO, DVec2::splat(30.0));
            let hash = AgentGrid::build(&[], 1.0);
            let mut shortened = 0;
            for &(pick, angle, gap, len) in &steps {
                // From just outside a shape (beyond its size plus the radius), towards it.
                let (x, y, r, _) = shapes[pick % shapes.len()];
                let out = DVec2::from_angle(angle);
                let start = DVec2::new(x, y) + out * (r + 0.3 + gap);
                let step = -out * len;
                let mut scratch = GuardScratch::default();
                let mut guarded = |grid: Option<&ShapeGrid>| {
                    let obstacles = Obstacles { statics: &statics, static_bounds: &bounds, moving: &[], grid };
                    guard_step(start, step, 0.3, 0, &[], &hash, 0.0, &[], obstacles, &mut scratch)
                };
                let (on_grid, scanned) = (guarded(Some(&grid)), guarded(None));
                proptest::prop_assert_eq!(on_grid, scanned, "from {} by {}", start, step);
                shortened += usize::from(scanned != step);
            }
            // Some steps must have met a shape, or nothing was compared.
            proptest::prop_assert!(shortened > 0);
        }
    }

    /// The guard's shape grid is built at the first commit, dropped when a static obstacle is
    /// added or removed (its indices shift), and rebuilt holding every static box.
    #[test]
    fn the_shape_grid_follows_the_static_obstacles() {
        let pillars: Vec<Shape> = (0..30)
            .map(|k| Shape::Disc {
                centre: DVec2::new(3.0 + 3.0 * (k % 6) as f64, 3.0 + 3.0 * (k / 6) as f64),
                radius: 0.4,
            })
            .collect();
        let mut crowd = busy_plaza(pillars, LocalPrecision::F32Complement);
        let every = |crowd: &Crowd| {
            let grid = crowd.shape_grid.as_ref().expect("built at the commit");
            let mut all = Vec::new();
            grid.near(DVec2::splat(-1e9), DVec2::splat(1e9), &mut all);
            all
        };
        crowd.step();
        let n = crowd.static_bounds.len();
        assert_eq!(every(&crowd), (0..n as u32).collect::<Vec<_>>());
        let id = crowd
            .add_obstacle(Shape::Disc {
                centre: DVec2::new(12.0, 22.0),
                radius: 0.5,
            })
            .unwrap();
        assert!(crowd.shape_grid.is_none());
        crowd.step();
        assert_eq!(every(&crowd), (0..n as u32 + 1).collect::<Vec<_>>());
        crowd.remove_obstacle(id).unwrap();
        assert!(crowd.shape_grid.is_none());
        crowd.step();
        assert_eq!(every(&crowd), (0..n as u32).collect::<Vec<_>>());
    }

    /// A 24 m square with `statics`, 120 random-held walkers in two files crossing it east and
    /// west (places that fall on an obstacle are skipped), local maps of `precision`.
    fn busy_plaza(statics: Vec<Shape>, precision: LocalPrecision) -> Crowd {
        let side = 24.0;
        let settings = CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::splat(side),
            ..Default::default()
        };
        let mut crowd = Crowd::new(settings, statics).unwrap();
        let east = crowd
            .add_goal(Shape::Aabb {
                min: DVec2::new(side - 1.5, 1.0),
                max: DVec2::new(side - 0.5, side - 1.0),
            })
            .unwrap();
        let west = crowd
            .add_goal(Shape::Aabb {
                min: DVec2::new(0.5, 1.0),
                max: DVec2::new(1.5, side - 1.0),
            })
            .unwrap();
        for k in 0..120 {
            let (row, col) = (k / 10, k % 10);
            let x = if col < 5 {
                2.0 + 1.2 * col as f64
            } else {
                side - 2.0 - 1.2 * (col - 5) as f64
            };
            let params = AgentParams {
                position: DVec2::new(x, 1.5 + 1.8 * row as f64),
                goals: vec![if col < 5 { east } else { west }],
                behaviour: BehaviourSlots::single(Behaviour::RandomHeld {
                    epsilon: 0.5,
                    min_hold: 5,
                    max_hold: 15,
                }),
                local_map: LocalMapSettings {
                    precision,
                    ..Default::default()
                },
                seed: k as u64,
                ..Default::default()
            };
            let _ = crowd.spawn(params);
        }
        crowd
    }

    /// Chunk buffers kept from step to step change nothing: a crowd that keeps them and a clone
    /// that starts every step without any (a clone's pool is empty) move every agent to the same
    /// bits, stepping fused and phase by phase in turn, in f32 and in f64, with agents of two
    /// window sizes (a kept batch of the other size must be replaced) and some reading their
    /// nearest neighbour (kept neighbour lists); the buffers are kept.
    #[test]
    fn kept_chunk_buffers_change_nothing() {
        let bits = |c: &Crowd| -> Vec<[u64; 2]> {
            c.agents()
                .map(|(_, a)| a.position().to_array().map(f64::to_bits))
                .collect()
        };
        let by_phases = |c: &mut Crowd| {
            for phase in [
                StepPhase::Guidance,
                StepPhase::Sensing,
                StepPhase::Relaxation,
                StepPhase::Decision,
                StepPhase::Motion,
            ] {
                c.advance_to(phase);
            }
        };
        for precision in [LocalPrecision::F32Complement, LocalPrecision::F64] {
            let mut kept = busy_plaza(four_pillars(), precision);
            let goal = kept.agents().next().unwrap().1.params().goals[0];
            for k in 0..40 {
                let params = AgentParams {
                    position: DVec2::new(6.0 + 0.9 * (k % 10) as f64, 20.0 + 0.9 * (k / 10) as f64),
                    goals: vec![goal],
                    behaviour: BehaviourSlots::single(Behaviour::AroundNearest {
                        epsilon: 0.6,
                        right: k % 2 == 0,
                    }),
                    local_map: LocalMapSettings {
                        side: 11,
                        precision,
                        ..Default::default()
                    },
                    seed: 1000 + k,
                    ..Default::default()
                };
                let _ = kept.spawn(params);
            }
            let sides = |c: &Crowd| -> Vec<usize> {
                c.agents().map(|(_, a)| a.params().local_map.side).collect()
            };
            assert!(sides(&kept).iter().filter(|&&s| s == 11).count() > BATCH_LANES_F32);
            assert!(kept.agents().count() > 3 * BATCH_LANES_F32);
            let mut fresh = kept.clone();
            for step in 0..12 {
                fresh = fresh.clone();
                assert_eq!(fresh.scratch.len(), 0);
                if step % 2 == 0 {
                    kept.step();
                    by_phases(&mut fresh);
                } else {
                    by_phases(&mut kept);
                    fresh.step();
                }
                assert!(kept.scratch.len() > 0, "buffers kept after step {step}");
                assert_eq!(bits(&kept), bits(&fresh), "step {step}, {precision:?}");
            }
        }
    }

    /// Sensing programs that look near first (the look ahead's reach, then the whole box only
    /// when no agent is that near) move every agent as searching the whole sensing box does,
    /// bit for bit: with the nearest agent read every step, and with a look-ahead slot.
    #[test]
    fn the_near_first_search_finds_what_the_whole_box_finds() {
        for slots in [
            BehaviourSlots::single(Behaviour::AroundNearest {
                epsilon: 0.6,
                right: true,
            }),
            BehaviourSlots::switching(Behaviour::Harmonic, Behaviour::SWERVE_RIGHT, 2.0),
            BehaviourSlots::single(Behaviour::TowardsNearest { epsilon: 0.4 }),
        ] {
            let mut near_first = busy_plaza(four_pillars(), LocalPrecision::F32Complement);
            let ids: Vec<AgentId> = near_first.agents().map(|(id, _)| id).collect();
            for id in ids {
                near_first.set_behaviour(id, slots.clone()).unwrap();
            }
            let mut whole = near_first.clone();
            whole.sense_whole_box = true;
            let mut moved = 0.0;
            for step in 0..30 {
                let before: Vec<DVec2> = near_first.agents().map(|(_, a)| a.position()).collect();
                assert_eq!(near_first.step(), whole.step(), "step {step}");
                for ((id, a), (_, b)) in near_first.agents().zip(whole.agents()) {
                    assert_eq!(a.position(), b.position(), "{slots:?}, step {step}, {id:?}");
                }
                moved += near_first
                    .agents()
                    .zip(&before)
                    .map(|((_, a), p)| (a.position() - *p).length())
                    .sum::<f64>();
            }
            assert!(moved > 100.0, "the crowd moved {moved} m");
        }
    }

    /// An agent the host moves during a step, after sensing, next to another's path: the
    /// other's step is guarded against where it now stands, though the snapshot's index has it
    /// fifteen metres away.
    #[test]
    fn an_agent_moved_during_a_step_is_guarded_against_where_it_stands() {
        let settings = CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::new(30.0, 10.0),
            ..Default::default()
        };
        let mut crowd = Crowd::new(settings, Vec::new()).unwrap();
        let east = crowd
            .add_goal(Shape::Aabb {
                min: DVec2::new(28.0, 1.0),
                max: DVec2::new(29.0, 9.0),
            })
            .unwrap();
        let west = crowd
            .add_goal(Shape::Aabb {
                min: DVec2::new(1.0, 1.0),
                max: DVec2::new(2.0, 9.0),
            })
            .unwrap();
        let spawn = |crowd: &mut Crowd, x: f64, goal| {
            crowd
                .spawn(AgentParams {
                    position: DVec2::new(x, 5.0),
                    goals: vec![goal],
                    ..Default::default()
                })
                .unwrap()
        };
        let a = spawn(&mut crowd, 5.0, east);
        let b = spawn(&mut crowd, 20.0, west);
        crowd.advance_to(StepPhase::Decision);
        crowd.set_position(b, DVec2::new(5.7, 5.0)).unwrap();
        crowd.advance_to(StepPhase::Motion).unwrap();
        let at = |id| crowd.agent(id).unwrap().position();
        assert!(at(a).x > 5.0, "A still steps east, up to B");
        assert!(
            (at(a) - at(b)).length() >= 0.5 - 1e-9,
            "A at {}, B at {}",
            at(a),
            at(b)
        );
    }

    /// Prepares every planning agent of a copy of `crowd` for its next step (sensing and
    /// stamping, as a step would) and hands each one with its bias to `f`.
    fn for_each_prepared(crowd: &Crowd, mut f: impl FnMut(&mut Agent, Bias)) {
        let mut probe = crowd.clone();
        let (snapshot, hash) = probe.snapshot();
        let discs = probe.disc_rasters(&snapshot);
        probe.update_rasters();
        let world = world_of!(probe, &discs);
        let mut scratch = Neighbours::default();
        for (i, slot) in probe.agents.iter_mut().enumerate() {
            let Some(agent) = slot else { continue };
            if !agent.plans() {
                continue;
            }
            if let Prepared::Relax { bias, .. } = world.prepare(i, agent, &hash, &mut scratch) {
                f(agent, bias);
            }
        }
    }

    /// Issue 3 allows f32 local maps where a test shows the decisions f64 makes: at every
    /// other step of two busy plazas (pillars; long walls with gaps, whose lee goes flat), each
    /// planning agent's stamped map is relaxed by `FieldBatch` (f64) and by `FieldBatchF32`
    /// (f32 on the complement), and the heading and speed decided from each are compared.
    /// `cargo test -p crowdfield_steer --release --lib f32_complement -- --nocapture` prints
    /// the counts.
    #[test]
    fn f32_complement_sweeps_make_the_f64_decisions() {
        let walls: Vec<Shape> = [(7.0, 2.0, 10.0), (12.0, 12.0, 21.0), (17.0, 4.0, 13.0)]
            .into_iter()
            .map(|(x, y0, y1)| Shape::Aabb {
                min: DVec2::new(x, y0),
                max: DVec2::new(x + 0.4, y1),
            })
            .collect();
        let (mut total, mut same, mut within_half_degree, mut worst) = (0, 0, 0, 0f64);
        let (mut at_floor, mut speed_differs) = (0, 0);
        for statics in [four_pillars(), walls] {
            let mut crowd = busy_plaza(statics, LocalPrecision::F32Complement);
            for step in 0..60 {
                if step >= 4 && step % 2 == 0 {
                    for_each_prepared(&crowd, |agent, bias| {
                        let side = agent.params.local_map.side;
                        let sweeps = agent.params.local_map.sweeps;
                        let mut wide = FieldBatch::new(side, side);
                        wide.load(0, agent.local.field(), &bias);
                        wide.relax(sweeps);
                        let mut narrow = FieldBatchF32::new(side, side);
                        narrow.load(0, agent.local.field(), &bias);
                        narrow.relax(sweeps);
                        let start = agent.clone();
                        wide.store(0, agent.local.field_mut());
                        let a = agent.decide(bias, false);
                        let flat = agent.local.descent_at(agent.position).length() < 1e-14;
                        *agent = start.clone();
                        narrow.store(0, agent.local.field_mut());
                        let b = agent.decide(bias, false);
                        total += 1;
                        same += usize::from(a.heading == b.heading);
                        let turn = if a.heading == b.heading {
                            0.0
                        } else {
                            a.heading.angle_to(b.heading).abs().to_degrees()
                        };
                        if flat {
                            // f64 is at its own floor near p = 1: its direction is rounding
                            // noise, no reference.
                            at_floor += 1;
                            return;
                        }
                        within_half_degree += usize::from(turn <= 0.1);
                        worst = worst.max(turn);
                        speed_differs += usize::from(a.speed_factor != b.speed_factor);
                    });
                }
                crowd.step();
            }
        }
        println!(
            "{total} decisions: {at_floor} with the f64 descent below 1e-14 (its floor); of the \
             rest {same} identical headings, {within_half_degree} within 0.1°, worst {worst:.4}°; \
             {speed_differs} different speed factors"
        );
        assert!(total > 3000, "{total} decisions compared");
        assert!(at_floor * 100 <= total, "{at_floor} flat maps");
        assert_eq!(within_half_degree + at_floor, total, "worst {worst}°");
        assert!(
            speed_differs * 1000 <= total,
            "{speed_differs} speed factors differ"
        );
    }

    /// How many warm-started sweeps give the decisions of 30 sweeps from a cold start (issue 3):
    /// at several steps of a busy plaza, every planning agent's stamped local map is relaxed
    /// (a) cold: free cells reset to the initial value, 30 sweeps, and (b) warm: as carried
    /// from the previous step, k sweeps; the headings chosen from both are compared.
    /// `cargo test -p crowdfield_steer --release --lib warm_started -- --nocapture` prints the
    /// table.
    #[test]
    fn warm_started_sweeps_against_thirty_cold_ones() {
        let mut crowd = busy_plaza(four_pillars(), LocalPrecision::F64);
        let ks = [1usize, 2, 3, 5, 8, 12, 20, 30];
        let mut agree = [0usize; 8];
        let mut agree_converged = [0usize; 8];
        let mut cold_converged = 0usize;
        let mut total = 0usize;
        let tolerance = 5f64.to_radians();
        for step in 0..45 {
            if step >= 10 && step % 5 == 0 {
                for_each_prepared(&crowd, |agent, bias| {
                    let choose = |field: &Field<f64>| {
                        decide(
                            agent.heading,
                            field.descent_at(agent.position),
                            agent.params.heading,
                            agent.params.speed,
                        )
                        .0
                    };
                    let mut cold = agent.local.field().clone();
                    cold.reset_free(agent.params.local_map.initial_value);
                    relax(&mut cold, &bias, &Relaxation::GAUSS_SEIDEL, 30);
                    let reference = choose(&cold);
                    let mut exact = agent.local.field().clone();
                    let _ = relax_until(
                        &mut exact,
                        &bias,
                        &Relaxation::GAUSS_SEIDEL,
                        &Tolerance::new(1e-12, 200_000),
                    );
                    let converged = choose(&exact);
                    let close = |a: DVec2, b: DVec2| a == b || a.angle_to(b).abs() <= tolerance;
                    cold_converged += usize::from(close(reference, converged));
                    for (j, k) in ks.iter().enumerate() {
                        let mut warm = agent.local.field().clone();
                        relax(&mut warm, &bias, &Relaxation::GAUSS_SEIDEL, *k);
                        let heading = choose(&warm);
                        agree[j] += usize::from(close(reference, heading));
                        agree_converged[j] += usize::from(close(converged, heading));
                    }
                    total += 1;
                });
            }
            crowd.step();
        }
        let pct = |a: usize| 100.0 * a as f64 / total as f64;
        println!(
            "{} agents, {total} decisions; headings within 5°:",
            crowd.agents.iter().flatten().count()
        );
        println!("warm sweeps | of 30 cold sweeps | of the converged map");
        for ((k, a), c) in ks.iter().zip(agree).zip(agree_converged) {
            println!("{k:>11} | {:>16.1} % | {:>18.1} %", pct(a), pct(c));
        }
        println!(
            " 30 cold    |                   | {:>18.1} %",
            pct(cold_converged)
        );
        assert!(total > 500, "{total} decisions compared");
        // More warm sweeps move every decision towards the converged map's (within 1 %), and
        // 30 warm-started sweeps reach it more often than 30 from a cold start.
        assert!(
            agree_converged
                .windows(2)
                .all(|w| w[1] + total / 100 >= w[0]),
            "{agree_converged:?}"
        );
        assert!(
            agree_converged[7] > cold_converged,
            "{agree_converged:?} {cold_converged}"
        );
    }
}
