//! # crowdfield_cli
//!
//! Runs scenario files headless through the real plugin (`MinimalPlugins` and
//! `CrowdfieldPlugins`, one planner step per app update) and measures the crowd: trajectories,
//! arrivals, overlaps, path lengths and planner time, and, where the scenario names measurement
//! areas and lines, fundamental diagrams and flows ([`measure`]). The `crowdfield` binary wraps
//! it (`crowdfield run`, `validate`, `bench` and `convert`, the last through [`steersuite`] and [`menge`]);
//! tests call [`run_scenario`] directly. Runs can be handed to PedPy for its own measurements
//! ([`trajectories_pedpy`], [`geometry_wkt`]).
//!
//! Metrics follow SteerSuite's crowd-evaluation practice (docs/references.md cites SteerBench): an overlap is a pair of agents whose discs intersect by more than
//! [`OVERLAP_TOLERANCE`], or an agent whose disc reaches into a static obstacle by more than it;
//! the penetration depth is reported as its maximum over the run.

pub mod bench;
pub mod flow;
pub mod fuzz;
pub mod measure;
pub mod menge;
mod metrics;
pub mod plot;
pub mod steersuite;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_crowdfield::ScenarioError;
use bevy_crowdfield::prelude::*;

pub use measure::{
    AreaReport, AreaSample, DensityBin, LineReport, measurements_csv, weidmann_speed,
};
pub use metrics::{
    AgentRecord, Metrics, OVERLAP_TOLERANCE, Outcome, PLE_STANDING, PLE_WALKING, REJECTIONS_LISTED,
    Rejection, agents_csv, geodesic_distances, rejection_lines,
};
pub use plot::{SceneView, plot_field, plot_fundamental_diagram, plot_trajectories};

/// App updates allowed beyond the planner steps asked for: building the crowd and registering
/// agents take the first updates.
const START_UP_UPDATES: u64 = 10;

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Exactly this many planner steps.
    Steps(u64),
    /// Until every agent has arrived (or left), at most this many planner steps. Agents that
    /// were rejected, and agents with no route to their goal and no goal time limit, are not
    /// waited for: nothing in a headless run changes the obstacles that cut them off.
    UntilArrived {
        /// The cap.
        max_steps: u64,
    },
}

/// Options of [`run_scenario`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// When to stop.
    pub stop: Stop,
    /// Mixed into every region's seed, so one file gives different draws; `None` keeps the
    /// file's seeds.
    pub seed: Option<u64>,
    /// How long the thread pool's other threads stay awake between planner steps
    /// ([`CrowdfieldSettings::worker_spin`]); zero by default.
    pub worker_spin: Duration,
    /// How many goals' global maps the output keeps for plots ([`RunOutput::fields`]), in the
    /// crowd's goal order; one by default.
    pub field_plots: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            stop: Stop::UntilArrived { max_steps: 5_000 },
            seed: None,
            worker_spin: Duration::ZERO,
            field_plots: 1,
        }
    }
}

/// One row of the trajectory table: where an agent stood after a planner step, or, in its
/// first row, where it started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Planner step (1 = after the first step). An agent's first row is its start, at the step
    /// before the first one it took part in (0 for the agents a scenario places).
    pub step: u64,
    /// The agent's index in the scenario (single agents first, then each region's).
    pub agent: usize,
    /// Position, metres.
    pub position: Vec2,
    /// State after the step; [`RowState::Pending`] in the start row.
    pub state: RowState,
}

/// An agent's state in a row of the trajectory table: the plugin's [`AgentState`] after the
/// step, except for a walker that gave its last target up. The plugin stops such a walker as
/// [`AgentState::Arrived`] (and says so in an [`AgentTimedOut`] message); its rows read
/// [`RowState::TimedOut`] from that step on, as its outcome in `agents.csv` does. Rejected
/// agents have no rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RowState {
    /// The start row, before the agent's first step.
    Pending,
    /// Walking ([`AgentState::Moving`]).
    Moving,
    /// Stopped this step, to turn or held by the collision guard ([`AgentState::Waiting`]).
    Waiting,
    /// At its last goal, or, for one that leaves on arrival, where it left.
    Arrived,
    /// Gave its last target up when the target's time limit ran out (that step and after).
    TimedOut,
    /// No progress for a while ([`AgentState::Stuck`]).
    Stuck,
    /// No route to its goal ([`AgentState::Unreachable`]).
    Unreachable,
}

impl RowState {
    /// The row state of an agent the plugin reports in `state`; `None` for
    /// [`AgentState::Rejected`], which has no row.
    pub fn from_agent(state: AgentState) -> Option<Self> {
        Some(match state {
            AgentState::Pending => Self::Pending,
            AgentState::Moving => Self::Moving,
            AgentState::Waiting => Self::Waiting,
            AgentState::Arrived => Self::Arrived,
            AgentState::Stuck => Self::Stuck,
            AgentState::Unreachable => Self::Unreachable,
            AgentState::Rejected => return None,
        })
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Every agent's start and its position after every step while it was in the crowd, in
    /// step order.
    pub trajectories: Vec<Sample>,
    /// Every agent's own figures, in the scenario's order (`agents.csv`).
    pub agents: Vec<AgentRecord>,
    /// The run's measurements.
    pub metrics: Metrics,
    /// The world, its obstacles and goals, for plots.
    pub scene: SceneView,
    /// The global maps of the first [`RunOptions::field_plots`] goals at the end of the run, in
    /// the crowd's goal order, for the field plots.
    pub fields: Vec<bevy_crowdfield::field::Field<f64>>,
    /// Every group's measures after every step (`groups.csv`, `groups.png`), in step order.
    pub groups: Vec<GroupSample>,
}

/// One group's measures after one planner step ([`bevy_crowdfield::groups::measure`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GroupSample {
    /// Planner step.
    pub step: u64,
    /// The group's index in the scenario's `groups`.
    pub group: usize,
    /// RMS member-to-slot distance over the formation's radius (0 for a free group).
    pub formation_error: f64,
    /// RMS member-to-slot distance, metres.
    pub slot_distance_m: f64,
    /// The farthest member from the centroid over the map's half size.
    pub cohesion: f64,
    /// Connected parts of the group.
    pub parts: usize,
    /// Whether its map stands in its goal.
    pub arrived: bool,
}

/// Every group's samples as CSV:
/// `step,time_s,group,formation_error,slot_distance_m,cohesion,parts,arrived`.
pub fn groups_csv(samples: &[GroupSample], period: f64) -> String {
    let mut out =
        String::from("step,time_s,group,formation_error,slot_distance_m,cohesion,parts,arrived\n");
    for s in samples {
        out.push_str(&format!(
            "{},{:.3},{},{:.6},{:.6},{:.6},{},{}\n",
            s.step,
            s.step as f64 * period,
            s.group,
            s.formation_error,
            s.slot_distance_m,
            s.cohesion,
            s.parts,
            u8::from(s.arrived)
        ));
    }
    out
}

/// The groups' measures after the step just run, in the scenario's group order (group entities
/// are spawned in it).
fn sample_groups(app: &mut App, step: u64, out: &mut Vec<GroupSample>) {
    let mut groups: Vec<(Entity, GroupStatus)> = app
        .world_mut()
        .query::<(Entity, &GroupStatus)>()
        .iter(app.world())
        .map(|(e, s)| (e, s.clone()))
        .collect();
    groups.sort_by_key(|(e, _)| e.index());
    for (k, (_, status)) in groups.into_iter().enumerate() {
        if !status.formed {
            continue;
        }
        out.push(GroupSample {
            step,
            group: k,
            formation_error: status.measures.formation_error,
            slot_distance_m: status.measures.slot_distance,
            cohesion: status.measures.cohesion,
            parts: status.measures.parts,
            arrived: status.arrived,
        });
    }
}

/// A scenario file read and validated, or the reason it could not be. A file with no `name`
/// takes its file's (`crossing` for `crossing.scenario.ron`), so that bench rows and metrics
/// say which run they are.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let mut scenario = Scenario::from_path(path)?;
    if scenario.name.is_empty() {
        scenario.name = file_name(path);
    }
    Ok(scenario)
}

/// The name of a scenario file without its extensions.
fn file_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    [".scenario.ron", ".scenario.json", ".ron", ".json"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(&name)
        .to_string()
}

/// `n` things for a message, the noun in the plural unless there is one: `"1 agent"`,
/// `"0 agents"`.
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Mixes `seed` into every region's seed (a region keeps a distinct draw from the others).
pub fn reseed(scenario: &mut Scenario, seed: u64) {
    for region in &mut scenario.regions {
        region.seed ^= seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Settings that `run` and `bench` put in place of a scenario file's own, for every agent and
/// region (`--local-cell-size`, `--local-side`, `--planner-hz`): one file tried at another
/// resolution of the walkers' local maps, or another planner rate, without editing it. The
/// plugin still checks each agent: a step of `max_speed / planner_hz` longer than one local
/// cell is refused, so finer cells need a higher rate (docs/runner.md, *Finer local maps*).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tuning {
    /// Every walker's local-map cell size, metres (`style.local_map.cell_size`).
    pub local_cell_size: Option<f64>,
    /// Every walker's local-map side, cells (`style.local_map.side`).
    pub local_side: Option<usize>,
    /// Planner steps a second (`settings.planner_hz`).
    pub planner_hz: Option<f64>,
    /// Which neighbours every walker stamps into its local map
    /// (`style.local_map.neighbours`).
    pub neighbours: Option<NeighbourStamping>,
    /// The steering preset (`settings.preset`).
    pub preset: Option<Preset>,
}

impl Tuning {
    /// Whether nothing is put in place.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Puts the set values into `scenario`.
    pub fn apply(&self, scenario: &mut Scenario) {
        let styles = scenario
            .agents
            .iter_mut()
            .map(|a| &mut a.style)
            .chain(scenario.regions.iter_mut().map(|r| &mut r.style));
        for style in styles {
            if let Some(cell) = self.local_cell_size {
                style.local_map.cell_size = cell;
            }
            if let Some(side) = self.local_side {
                style.local_map.side = side;
            }
            if let Some(neighbours) = self.neighbours {
                style.local_map.neighbours = Some(neighbours);
            }
        }
        if let Some(hz) = self.planner_hz {
            scenario.settings.planner_hz = Some(hz);
        }
        if let Some(preset) = self.preset {
            scenario.settings.preset = Some(preset);
        }
    }

    /// What is put in place, for a report ("local cells 0.25 m, 7 planner steps/s"); empty
    /// when nothing is.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(cell) = self.local_cell_size {
            parts.push(format!("local cells {cell} m"));
        }
        if let Some(side) = self.local_side {
            parts.push(format!("local maps {side}×{side} cells"));
        }
        if let Some(hz) = self.planner_hz {
            parts.push(format!("{hz} planner steps/s"));
        }
        match self.neighbours {
            Some(NeighbourStamping::All) => parts.push("every neighbour stamped".into()),
            Some(NeighbourStamping::ExceptSameWay) => {
                parts.push("neighbours walking the same way left out".into())
            }
            None => {}
        }
        match self.preset {
            Some(Preset::Seeds) => parts.push("the seeds' preset".into()),
            Some(Preset::Flow) => parts.push("the flow preset".into()),
            None => {}
        }
        parts.join(", ")
    }
}

/// The app of a headless run: `MinimalPlugins`, the crowdfield plugins, one planner step per
/// update, and the scenario spawned. Returns the app, the planner period and how many agents
/// regions could not place.
fn headless_app(
    scenario: &Scenario,
    worker_spin: Duration,
) -> (App, f64, usize, CrowdfieldSettings) {
    // Nothing of the runner's is ordered between the plugin's sets: its steps commit while
    // they plan where the crowd can (`fuse_motion`).
    let mut settings = CrowdfieldSettings {
        worker_spin,
        fuse_motion: true,
        ..Default::default()
    };
    scenario.apply_settings(&mut settings);
    let period = settings.planner_period();
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, CrowdfieldPlugins))
        .insert_resource(Time::<Fixed>::from_seconds(period))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            period,
        )))
        .insert_resource(settings.clone());
    let missing = {
        let mut commands = app.world_mut().commands();
        scenario.spawn(&mut commands, None)
    };
    app.world_mut().flush();
    (app, period, missing.iter().sum(), settings)
}

/// The crowd as the plugin built it from `scenario` after its first planner step (agents
/// registered, global maps solved), with the planner period: the common start of the
/// side-by-side benchmark. `None` if the plugin never built it.
pub fn initial_crowd(scenario: &Scenario) -> Option<(bevy_crowdfield::steer::Crowd, f64)> {
    let (mut app, period, _, _) = headless_app(scenario, Duration::ZERO);
    for _ in 0..START_UP_UPDATES {
        app.update();
        if let Some(crowd) = app.world().resource::<CrowdWorld>().crowd()
            && crowd.step_count() >= 1
        {
            return Some((crowd.clone(), period));
        }
    }
    None
}

/// Runs a scenario headless and measures it: the plugin in an app of `MinimalPlugins`, with
/// [`CrowdfieldSettings::fuse_motion`] on (nothing of the runner's runs between the plugin's
/// sets).
///
/// The app runs on the calling thread. Called from a thread of a rayon pool (inside
/// `ThreadPool::install`, as `crowdfield run` and `bench` call it), the crowd steps on that
/// pool, and crowds of more than 64 walkers commit while they plan and count the next step's
/// discs meanwhile. Called from elsewhere, the crowd's work goes to rayon's global pool: each
/// whole step of such a crowd moves onto one of its threads and does the same, at the cost of a
/// hand-over a step ([`Crowd::advance_to`]). The walk is the same either way.
///
/// [`Crowd::advance_to`]: bevy_crowdfield::steer::Crowd::advance_to
pub fn run_scenario(scenario: &Scenario, options: RunOptions) -> RunOutput {
    run_scenario_with_progress(scenario, options, |_, _| {})
}

/// The global cell sizes (metres) that `convert` tries, in this order, where the default cells
/// leave walkers without a way ([`narrow_passage_settings`]); it stops at the first that leaves
/// none.
///
/// With obstacles grown by the walkers' radius `r` and every cell they touch closed, a gap of
/// width `w` keeps a whole cell of size `c` open only where `w − 2r ≥ c` and the lattice falls
/// right; `w − 2r ≥ 2c` keeps one open wherever it falls. SteerSuite's
/// `bottleneck-evacuation-2` has a 1.4 m door for walkers of 0.5 m: its 0.4 m falls between
/// two 0.25 m cells, and 0.125 m cells keep two of them open.
pub const NARROW_GLOBAL_CELLS: [f64; 2] = [0.25, 0.125];

/// How many of `scenario`'s agents one planner step through the plugin leaves without a way:
/// refused at placement (a goal with no free cell, a start inside a wall grown by the maps'
/// cells) or with no route to their goal.
pub fn blocked_at_start(scenario: &Scenario) -> usize {
    let m = run_scenario(
        scenario,
        RunOptions {
            stop: Stop::Steps(1),
            field_plots: 0,
            ..Default::default()
        },
    )
    .metrics;
    m.rejected + m.unreachable
}

/// The most global-map cells, summed over a scenario's goals, that [`narrow_passage_settings`]
/// lets finer cells give it: 2²⁷, about 1.2 GB of potentials and cell kinds. Every goal has a
/// map over the whole world, so halving the cells quadruples them: SteerSuite's circles of 500
/// (500 goals over 90 m × 90 m) need 65 M cells at 0.25 m and 259 M at 0.125 m.
pub const NARROW_CELL_BUDGET: usize = 1 << 27;

/// The local cell size (metres) that [`narrow_passage_settings`] gives walkers with coarser
/// local maps where the global cells must be finer than the first of [`NARROW_GLOBAL_CELLS`].
///
/// Global cells that close a passage at 0.25 m and open it at 0.125 m mean that its band for
/// walkers' centres (`w − 2r`) is under 0.5 m: `Centre` coverage keeps such a band open in a
/// walker's local map only where a cell centre falls in it, which one of 0.5 m cells may miss and
/// one of 0.25 m cells cannot miss from 0.25 m up. SteerSuite's `bottleneck-evacuation-2` (a
/// 0.4 m band): none of its 100 walkers through the door in 2,000 steps with 0.5 m local
/// cells, all of them with 0.25 m ones.
pub const NARROW_LOCAL_CELL: f64 = 0.25;

/// `scenario` (converted with every agent's `obstacle_coverage: Centre`) set for narrow
/// passages: global cells of `cell_size` metres (one of [`NARROW_GLOBAL_CELLS`]), obstacles
/// grown by the widest walker's radius (rounded up to the centimetre). With cells finer than
/// the first of [`NARROW_GLOBAL_CELLS`], walkers' local cells of more than [`NARROW_LOCAL_CELL`]
/// become that, and the planner runs at least 7 steps a second (fast enough that no walker's
/// step is longer than a local cell). `None` when it has no walker, the finer grid would be too
/// large for its world, that rate would leave `PLANNER_HZ_RANGE`, or its goals' maps together
/// would hold more than
/// [`NARROW_CELL_BUDGET`] cells (distinct targets counted as goals, as the plugin shares a goal
/// between walkers with the same target).
pub fn narrow_passage_settings(mut scenario: Scenario, cell_size: f64) -> Option<Scenario> {
    let widest = scenario
        .agents
        .iter()
        .filter(|a| !a.goals.targets.is_empty())
        .map(|a| a.style.radius)
        .chain(
            scenario
                .regions
                .iter()
                .filter(|r| !r.goals.targets.is_empty())
                .map(|r| r.style.radius),
        )
        .reduce(f64::max)?;
    let targets: std::collections::HashSet<String> = scenario
        .agents
        .iter()
        .flat_map(|a| &a.goals.targets)
        .chain(scenario.regions.iter().flat_map(|r| &r.goals.targets))
        .map(|t| format!("{t:?}"))
        .collect();
    let extent = (scenario.bounds.max - scenario.bounds.min).as_dvec2();
    let cells = (extent.x / cell_size).ceil() * (extent.y / cell_size).ceil();
    // (Bounds are finite: `Scenario` refuses others.)
    if cells * targets.len() as f64 > NARROW_CELL_BUDGET as f64 {
        return None;
    }
    scenario.settings.global_cell_size = Some(cell_size);
    // (Less a nanometre, so that a radius of 0.57, stored as 56.99999999999999 hundredths or
    // 57.00000000000001, stays 0.57.)
    scenario.settings.global_inflation = Some((widest * 100.0 - 1e-9).ceil() / 100.0);
    if cell_size < NARROW_GLOBAL_CELLS[0] {
        let styles = scenario
            .agents
            .iter_mut()
            .map(|a| &mut a.style)
            .chain(scenario.regions.iter_mut().map(|r| &mut r.style));
        let mut fastest: Option<f64> = None;
        for style in styles {
            if style.local_map.cell_size > NARROW_LOCAL_CELL {
                style.local_map.cell_size = NARROW_LOCAL_CELL;
                fastest = Some(fastest.unwrap_or(0.0).max(style.max_speed));
            }
        }
        if let Some(fastest) = fastest {
            let hz = scenario
                .settings
                .planner_hz
                .unwrap_or(CrowdfieldSettings::default().planner_hz);
            let hz = hz.max(7.0).max(fastest / NARROW_LOCAL_CELL);
            // A walker too fast for any rate a scenario may hold (or not a number) gets none.
            if !bevy_crowdfield::scenario::PLANNER_HZ_RANGE.contains(&hz) {
                return None;
            }
            scenario.settings.planner_hz = Some(hz);
        }
    }
    scenario.check_world().ok()?;
    Some(scenario)
}

/// [`run_scenario`], calling `progress(step, agents still walking)` after every step.
pub fn run_scenario_with_progress(
    scenario: &Scenario,
    options: RunOptions,
    mut progress: impl FnMut(u64, usize),
) -> RunOutput {
    let mut scenario = scenario.clone();
    if let Some(seed) = options.seed {
        reseed(&mut scenario, seed);
    }
    let (mut app, period, missing, settings) = headless_app(&scenario, options.worker_spin);
    let mut agents: Vec<Entity> = app
        .world_mut()
        .query_filtered::<Entity, With<CrowdAgent>>()
        .iter(app.world())
        .collect();
    // Spawned in the scenario's order, so entity indices follow it.
    agents.sort_by_key(|e| e.index());

    let standing: Vec<bool> = agents
        .iter()
        .map(|e| {
            app.world()
                .get::<AgentGoals>(*e)
                .is_none_or(|g| g.targets.is_empty())
        })
        .collect();
    // Agents a goal time limit can move on while they have no route.
    let timed: Vec<bool> = agents
        .iter()
        .map(|e| {
            app.world()
                .get::<AgentGoals>(*e)
                .is_some_and(|g| g.time_limits.iter().any(Option::is_some))
        })
        .collect();
    let measurer = measure::Measurer::for_scenario(&scenario, period);
    // Where each agent was spawned, for those that leave in the first step before the
    // recorder sees them in the crowd.
    let spawned_at: Vec<Option<Vec2>> = agents
        .iter()
        .map(|e| {
            app.world()
                .get::<Transform>(*e)
                .map(|t| settings.plane.to_ground(t.translation))
        })
        .collect();
    let mut recorder =
        metrics::Recorder::new(&agents, &spawned_at, &standing, &timed, period, measurer);
    let max_steps = match options.stop {
        Stop::Steps(n) => n,
        Stop::UntilArrived { max_steps } => max_steps,
    };
    let mut trajectories = Vec::new();
    let mut group_samples = Vec::new();
    // Every rejection message is read after the update that wrote it, before it can expire.
    let mut rejections = app
        .world()
        .resource::<Messages<AgentRejected>>()
        .get_cursor();
    // Updates until the crowd has run `max_steps` planner steps; the first updates build the
    // crowd and register the agents before it steps.
    let mut last_step = 0;
    // A fixed tick can fall either side of an update, so allow twice the updates.
    for _ in 0..2 * max_steps + START_UP_UPDATES {
        app.update();
        let messages = app.world().resource::<Messages<AgentRejected>>();
        for rejected in rejections.read(messages) {
            recorder.reject(rejected);
        }
        let step = app
            .world()
            .resource::<CrowdWorld>()
            .crowd()
            .map_or(0, |c| c.step_count());
        if step == last_step {
            continue;
        }
        last_step = step;
        let walking = recorder.observe(app.world_mut(), step, &mut trajectories);
        sample_groups(&mut app, step, &mut group_samples);
        progress(step, walking);
        // Nothing in a headless run changes the static obstacles that cut an unreachable agent
        // off, so one with no time limit to move it on would wait for the cap.
        // Groups are done once each has arrived (or never formed).
        let groups_done = app
            .world_mut()
            .query::<&GroupStatus>()
            .iter(app.world())
            .all(|s| !s.formed || s.arrived);
        let done = walking == recorder.stranded() && groups_done;
        if step >= max_steps || (matches!(options.stop, Stop::UntilArrived { .. }) && done) {
            break;
        }
    }
    let mut scene = SceneView {
        min: settings.world_min.as_dvec2(),
        max: settings.world_max.as_dvec2(),
        measurements: scenario.measurements.clone(),
        ..Default::default()
    };
    let mut fields = Vec::new();
    if let Some(crowd) = app.world().resource::<CrowdWorld>().crowd() {
        recorder.survey(crowd);
        // The last four statics are the world's bounding walls.
        let statics = crowd.statics();
        scene.statics = statics[..statics.len().saturating_sub(4)].to_vec();
        for (g, id) in crowd.goal_ids().enumerate() {
            let Some(goal) = crowd.goal(id) else { continue };
            scene.goals.push(goal.shape().clone());
            if g < options.field_plots {
                fields.push(goal.map().clone());
            }
        }
    }
    let (mut metrics, agents) = recorder.finish(&scenario, missing);
    metrics.groups = metrics::group_summaries(&group_samples, scenario.groups.len());
    RunOutput {
        trajectories,
        agents,
        metrics,
        scene,
        fields,
        groups: group_samples,
    }
}

/// The trajectory table as CSV: `step,time_s,agent,x,y,state`.
pub fn trajectories_csv(samples: &[Sample], period: f64) -> String {
    in_memory(|w| write_trajectories_csv(w, samples, period))
}

/// What `write` writes, as a string (our tables are ASCII, and writing to memory cannot fail).
fn in_memory(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("the table is ASCII")
}

/// Writes [`trajectories_csv`]'s table to `w` row by row, without holding it in memory.
pub fn write_trajectories_csv(
    w: &mut dyn Write,
    samples: &[Sample],
    period: f64,
) -> std::io::Result<()> {
    w.write_all(b"step,time_s,agent,x,y,state\n")?;
    for s in samples {
        writeln!(
            w,
            "{},{:.4},{},{:.4},{:.4},{:?}",
            s.step,
            s.step as f64 * period,
            s.agent,
            s.position.x,
            s.position.y,
            s.state
        )?;
    }
    Ok(())
}

/// The trajectory table in the whitespace-separated text that PedPy's `load_trajectory` reads
/// (columns `ID frame x/m y/m z/m`, one frame per planner step, the frame rate and unit in the
/// `#` header): the same rows as [`trajectories_csv`], z = 0. PedPy then measures densities,
/// speeds and flows from our runs with its own methods.
pub fn trajectories_pedpy(samples: &[Sample], period: f64) -> String {
    in_memory(|w| write_trajectories_pedpy(w, samples, period))
}

/// Writes [`trajectories_pedpy`]'s text to `w` row by row, without holding it in memory.
pub fn write_trajectories_pedpy(
    w: &mut dyn Write,
    samples: &[Sample],
    period: f64,
) -> std::io::Result<()> {
    write!(
        w,
        "# crowdfield trajectories: each agent after each planner step, frame = step\n\
         # framerate: {:.6} fps\n\
         # ID frame x/m y/m z/m\n",
        1.0 / period
    )?;
    for s in samples {
        writeln!(
            w,
            "{} {} {:.4} {:.4} 0",
            s.agent, s.step, s.position.x, s.position.y
        )?;
    }
    Ok(())
}

/// The run's geometry as two lines of WKT, for PedPy's `WalkableArea`: the world's bounds as a
/// `POLYGON`, then its static obstacles as a `GEOMETRYCOLLECTION` of polygons (discs as
/// 48-gons, segments and polylines as thin boxes, as the plots draw them), which may overlap.
/// The walkable area is the first minus the union of the second.
pub fn geometry_wkt(scene: &SceneView) -> String {
    let ring = |points: &[bevy::math::DVec2]| {
        let mut text: Vec<String> = points.iter().map(|p| format!("{} {}", p.x, p.y)).collect();
        if let Some(first) = points.first() {
            text.push(format!("{} {}", first.x, first.y));
        }
        format!("(({}))", text.join(", "))
    };
    let (min, max) = (scene.min, scene.max);
    let bounds = ring(&[
        min,
        bevy::math::DVec2::new(max.x, min.y),
        max,
        bevy::math::DVec2::new(min.x, max.y),
    ]);
    let obstacles: Vec<String> = scene
        .statics
        .iter()
        .flat_map(plot::outlines)
        .filter(|o| o.len() >= 3)
        .map(|o| format!("POLYGON {}", ring(&o)))
        .collect();
    let obstacles = if obstacles.is_empty() {
        "GEOMETRYCOLLECTION EMPTY".to_string()
    } else {
        format!("GEOMETRYCOLLECTION ({})", obstacles.join(", "))
    };
    format!("POLYGON {bounds}\n{obstacles}\n")
}

/// What [`write_outputs`] writes besides the files every run has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputOptions {
    /// Also write `trajectories.txt` and `geometry.wkt`, the trajectories and the walkable
    /// area for PedPy ([`trajectories_pedpy`], [`geometry_wkt`]).
    pub pedpy: bool,
}

/// The file of the field plot of the `k`-th goal (from 0): `field.png` for the first,
/// `field-1.png`, `field-2.png`, … for the others.
pub fn field_plot_name(k: usize) -> String {
    if k == 0 {
        "field.png".to_string()
    } else {
        format!("field-{k}.png")
    }
}

/// Writes `trajectories.csv`, `agents.csv`, `metrics.json`, `trajectories.png`, a field plot
/// for each of [`RunOutput::fields`] ([`field_plot_name`]) and, when the scenario has
/// measurement areas, `measurements.csv` and `fundamental_diagram.png` into `dir` (created if
/// missing). Each file is written under a temporary name and renamed once all are complete, so
/// a failed run never leaves a half-written file behind; then the files of these kinds an
/// earlier run left in `dir` and this one did not write (more field plots, a diagram) are
/// removed, so that every output in `dir` is this run's. `options` adds the files for PedPy.
pub fn write_outputs(
    dir: &Path,
    output: &RunOutput,
    options: OutputOptions,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut plots = vec![(
        "trajectories.png".to_string(),
        dir.join(".trajectories.partial.png"),
    )];
    let mut drawn = plot_trajectories(&plots[0].1, &output.scene, &output.trajectories);
    for (k, map) in output.fields.iter().enumerate() {
        let name = field_plot_name(k);
        let tmp = dir.join(format!(".partial-{name}"));
        drawn = drawn.and_then(|()| plot_field(&tmp, map, &output.scene));
        plots.push((name, tmp));
    }
    let drawn = drawn.and_then(|()| {
        if output.groups.is_empty() {
            return Ok(());
        }
        let tmp = dir.join(".groups.partial.png");
        let r = plot::plot_groups(&tmp, &output.groups, output.metrics.planner_period_s);
        plots.push(("groups.png".to_string(), tmp));
        r
    });
    let drawn = drawn.and_then(|()| {
        if output.metrics.areas.is_empty() {
            return Ok(());
        }
        let tmp = dir.join(".fundamental_diagram.partial.png");
        let r = plot_fundamental_diagram(&tmp, &output.metrics.areas);
        plots.push(("fundamental_diagram.png".to_string(), tmp));
        r
    });
    if let Err(e) = drawn {
        for (_, tmp) in &plots {
            let _ = std::fs::remove_file(tmp);
        }
        return Err(std::io::Error::other(e));
    }
    // Each file is written through a buffer straight from the run's data: the trajectory
    // tables of a long run are larger than the memory they would take as text.
    type Contents<'a> = Box<dyn Fn(&mut dyn Write) -> std::io::Result<()> + 'a>;
    let period = output.metrics.planner_period_s;
    let mut files: Vec<(&str, Contents)> = vec![
        (
            "trajectories.csv",
            Box::new(|w| write_trajectories_csv(w, &output.trajectories, period)),
        ),
        (
            "agents.csv",
            Box::new(|w| w.write_all(agents_csv(&output.agents).as_bytes())),
        ),
        (
            "metrics.json",
            Box::new(|w| {
                serde_json::to_writer_pretty(&mut *w, &output.metrics)
                    .map_err(std::io::Error::other)?;
                w.write_all(b"\n")
            }),
        ),
    ];
    if !output.groups.is_empty() {
        files.push((
            "groups.csv",
            Box::new(|w| w.write_all(groups_csv(&output.groups, period).as_bytes())),
        ));
    }
    if !output.metrics.areas.is_empty() {
        files.push((
            "measurements.csv",
            Box::new(|w| w.write_all(measurements_csv(&output.metrics.areas).as_bytes())),
        ));
    }
    if options.pedpy {
        files.push((
            "trajectories.txt",
            Box::new(|w| write_trajectories_pedpy(w, &output.trajectories, period)),
        ));
        files.push((
            "geometry.wkt",
            Box::new(|w| w.write_all(geometry_wkt(&output.scene).as_bytes())),
        ));
    }
    let mut written = Vec::new();
    for (name, contents) in &files {
        let tmp = dir.join(format!(".{name}.partial"));
        let result = std::fs::File::create(&tmp).and_then(|file| {
            let mut w = std::io::BufWriter::new(file);
            contents(&mut w)?;
            w.flush()
        });
        if let Err(e) = result {
            for t in written {
                let _ = std::fs::remove_file(t);
            }
            for (_, t) in &plots {
                let _ = std::fs::remove_file(t);
            }
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        written.push(tmp);
    }
    for ((name, _), tmp) in files.iter().zip(&written) {
        std::fs::rename(tmp, dir.join(name))?;
    }
    for (name, tmp) in &plots {
        std::fs::rename(tmp, dir.join(name))?;
    }
    let written: Vec<&str> = files
        .iter()
        .map(|(n, _)| *n)
        .chain(plots.iter().map(|(n, _)| n.as_str()))
        .collect();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if is_run_output(&name) && !written.contains(&name.as_ref()) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Whether `name` is a file [`write_outputs`] may write, though not every run does.
fn is_run_output(name: &str) -> bool {
    let field_plot = name
        .strip_prefix("field-")
        .and_then(|n| n.strip_suffix(".png"));
    matches!(
        name,
        "field.png"
            | "fundamental_diagram.png"
            | "groups.png"
            | "groups.csv"
            | "measurements.csv"
            | "trajectories.txt"
            | "geometry.wkt"
    ) || field_plot.is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::math::DVec2;
    use bevy_crowdfield::field::Shape;

    /// The narrow-passage settings grow obstacles by the widest walker's radius to the
    /// centimetre above (a radius stored a hair above or below its hundredths stays as written),
    /// leave standing agents out, and are none without a walker.
    #[test]
    fn narrow_passage_settings_take_the_widest_walkers_radius() {
        let with = |agents: &str| {
            let text = format!("(bounds: (min: (0, 0), max: (20, 20)), agents: [{agents}])");
            narrow_passage_settings(Scenario::from_ron(&text).unwrap(), 0.125)
                .map(|s| (s.settings.global_cell_size, s.settings.global_inflation))
        };
        let walker = |r: &str| {
            format!("(position: (5, 5), goals: (targets: [Point((15, 5))]), style: (radius: {r})),")
        };
        let standing = "(position: (5, 9), style: (radius: 0.9)),";
        for (r, grown) in [("0.57", 0.57), ("1.1", 1.1), ("0.191", 0.2), ("0.2", 0.2)] {
            let agents = format!("{}{}{standing}", walker("0.1"), walker(r));
            assert_eq!(with(&agents), Some((Some(0.125), Some(grown))), "{r}");
        }
        assert_eq!(with(standing), None);
    }

    /// With global cells finer than 0.25 m, walkers' coarser local cells become 0.25 m and the
    /// planner runs at 7 steps a second, or faster where a walker's step would pass a cell; with
    /// 0.25 m global cells both stay as written.
    #[test]
    fn narrow_passage_settings_refine_local_maps_with_the_finest_global_cells() {
        let text = |speed: f64, hz: &str| {
            format!(
                "(bounds: (min: (0, 0), max: (20, 20)), settings: (planner_hz: {hz}), agents: [\
                 (position: (5, 5), goals: (targets: [Point((15, 5))]), style: (max_speed: {speed})),\
                 (position: (5, 9), goals: (targets: [Point((15, 9))]), style: (local_map: (cell_size: 0.2)))])"
            )
        };
        let fit = |speed: f64, hz: &str, cell: f64| {
            let s = narrow_passage_settings(Scenario::from_ron(&text(speed, hz)).unwrap(), cell)
                .unwrap();
            let cells: Vec<f64> = s
                .agents
                .iter()
                .map(|a| a.style.local_map.cell_size)
                .collect();
            (s.settings.planner_hz, cells)
        };
        assert_eq!(fit(1.2, "None", 0.25), (None, vec![0.5, 0.2]));
        assert_eq!(fit(1.2, "None", 0.125), (Some(7.0), vec![0.25, 0.2]));
        assert_eq!(fit(1.2, "Some(10.0)", 0.125), (Some(10.0), vec![0.25, 0.2]));
        assert_eq!(fit(2.5, "None", 0.125), (Some(10.0), vec![0.25, 0.2]));
        // A rate past the scenario's range: no such settings.
        let fast = Scenario::from_ron(&text(300.0, "None")).unwrap();
        assert!(narrow_passage_settings(fast, 0.125).is_none());
    }

    /// Finer cells are not tried where every goal's map over the world would together pass
    /// the budget: 600 walkers with goals of their own on a 60 m square fit in 0.25 m cells
    /// (34.6 M cells) and not in 0.125 m ones (138 M); walkers that share one target count once.
    #[test]
    fn narrow_passage_settings_keep_to_the_cell_budget() {
        let scenario = |shared: bool| {
            let agents: String = (0..600)
                .map(|k| {
                    let to = if shared { 0 } else { k };
                    format!(
                        "(position: ({}, 5), goals: (targets: [Point((55, {}))])),",
                        1 + k % 50,
                        5.0 + to as f64 * 0.08
                    )
                })
                .collect();
            let text = format!("(bounds: (min: (0, 0), max: (60, 60)), agents: [{agents}])");
            Scenario::from_ron(&text).unwrap()
        };
        assert!(narrow_passage_settings(scenario(false), 0.25).is_some());
        assert!(narrow_passage_settings(scenario(false), 0.125).is_none());
        assert!(narrow_passage_settings(scenario(true), 0.125).is_some());
    }

    /// The geometry for PedPy: closed rings, the bounds first, the obstacles as a collection
    /// (an empty one without obstacles).
    #[test]
    fn geometry_is_written_as_closed_wkt_rings() {
        let mut scene = SceneView {
            min: DVec2::ZERO,
            max: DVec2::new(4.0, 2.0),
            statics: Vec::new(),
            goals: Vec::new(),
            measurements: Vec::new(),
        };
        assert_eq!(
            geometry_wkt(&scene),
            "POLYGON ((0 0, 4 0, 4 2, 0 2, 0 0))\nGEOMETRYCOLLECTION EMPTY\n"
        );
        scene.statics = vec![
            Shape::Aabb {
                min: DVec2::new(1.0, 0.5),
                max: DVec2::new(1.5, 1.0),
            },
            Shape::Disc {
                centre: DVec2::new(3.0, 1.0),
                radius: 0.5,
            },
        ];
        let text = geometry_wkt(&scene);
        let obstacles = text.lines().nth(1).unwrap();
        assert!(
            obstacles.starts_with(
                "GEOMETRYCOLLECTION (POLYGON ((1 0.5, 1.5 0.5, 1.5 1, 1 1, 1 0.5)), POLYGON ((3.5 1, "
            ),
            "{obstacles}"
        );
        // The disc's ring: 48 corners and the first again.
        let disc = obstacles.split("POLYGON").nth(2).unwrap();
        assert_eq!(disc.matches(',').count(), 48, "{disc}");
        assert!(disc.ends_with("3.5 1)))"), "{disc}");
    }

    /// Counts take the plural except for one.
    #[test]
    fn counts_of_one_are_singular() {
        assert_eq!(counted(1, "agent"), "1 agent");
        assert_eq!(counted(0, "agent"), "0 agents");
        assert_eq!(counted(2, "step"), "2 steps");
    }
}
