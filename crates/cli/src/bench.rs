//! Side-by-side benchmark (docs/benchmarks.md): the same scenarios steered by crowdfield (through the real
//! plugin), by ORCA (the `dodgy_2d` crate, RVO2's algorithm) and by a plain seek-the-gradient
//! baseline, on the same thread pool; and by crowdfield's crowd once more, stepped by
//! [`Crowd::step`] in the bench's own loop as ORCA and seek are ([`Steering::CrowdStep`]), so
//! that the steering libraries are compared in the same host and the plugin's cost is seen apart.
//!
//! All of them start from the agents the plugin registered (positions, radii, speeds, goal
//! queues) and take their preferred direction from the same harmonic global maps (with the same
//! sub-goal stacks against flat regions), so the comparison is about local steering: ORCA turns
//! the preferred velocity into a collision-avoiding one (neighbours within 5 m, at most 10,
//! time horizons 3 s for agents and 1 s for obstacles, obstacle margin the agent's radius);
//! the seek baseline walks the preferred velocity as it is. They step at the planner rate of
//! the scenario (one footstep per agent per step) and arrive by the same rule (within the
//! arrival radius of the goal region or on one of its cells).
//!
//! Speed is agent-steps per second of steering work: for crowdfield the plugin's planner step
//! (all phases; the runner's app turns on `fuse_motion`, so large crowds commit while they
//! plan), for [`Steering::CrowdStep`] `Crowd::step` and copying the positions out, for
//! ORCA and seek the preferred velocity, the neighbour query, the velocity computation and the
//! move. The first step (global maps solved) is left out. ORCA and seek ignore goal time limits
//! (no shipped scenario has any); `CrowdStep` keeps them, as the plugin does.
//!
//! A scenario's measurement areas and lines ([`crate::measure`]) are measured for every
//! steering alike, outside the timed work: [`markdown`] lists them under the main table.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use bevy::math::DVec2;
use bevy_crowdfield::field::{CellKind, SubgoalStack};
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::steer::{
    AgentGrid, AgentId, AgentState as SteerAgentState, ArrivalAction, Crowd, GoalId, StepReport,
};
use rayon::prelude::*;
use serde::Serialize;

use crate::measure::{AreaReport, LineReport, Measurer, Observed};
use crate::metrics::geodesic_fields;
use crate::plot::{SceneView, outlines};
use crate::{OVERLAP_TOLERANCE, RowState, RunOptions, Sample, Stop, run_scenario};
use crate::{Rejection, rejection_lines};

/// Who steers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Steering {
    /// This project: per-agent BVP local maps through the plugin.
    Crowdfield,
    /// The same crowd stepped by [`Crowd::step`] in the bench's loop, as ORCA and seek are:
    /// crowdfield's steering without the Bevy app around it. Starts from the crowd the plugin
    /// built after its first step, and walks every agent as the plugin does.
    CrowdStep,
    /// ORCA (`dodgy_2d`).
    Orca,
    /// Walk the global map's descent, no avoidance.
    Seek,
}

/// One scenario steered one way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchRow {
    /// Scenario name (its `name` field; two files may share one).
    pub scenario: String,
    /// The file the scenario was read from, where it was read from one (`crowdfield bench`
    /// sets it; `None` for scenarios built in code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The scenario's place among those benched together (0 for the first): with
    /// [`BenchRow::file`], what reports key rows by, so that two scenarios with the same name
    /// keep rows, diagrams and speed ratios of their own.
    pub index: usize,
    /// Who steered.
    pub steering: Steering,
    /// Agents placed with somewhere to go (standing ones, with no goal, are left out). The
    /// agents the plugin rejected count too, as not arrived (see [`BenchRow::rejections`]), in
    /// every row: the other steerings start from the agents it registered, and their rows
    /// count the rejected as crowdfield's does.
    pub agents: usize,
    /// Steps run.
    pub steps: u64,
    /// Agent-steps of steering per second of wall time (first step excluded): the median of
    /// the runs.
    pub agent_steps_per_s: f64,
    /// Each run's agent-steps per second, in the order they ran.
    pub runs_agent_steps_per_s: Vec<f64>,
    /// Whether every run gave the same steps, arrivals, overlaps and path ratio (the row shows
    /// the first run's); the Markdown table marks a row whose runs differed.
    pub runs_agree: bool,
    /// Fraction of agents that reached their last goal.
    pub arrival_fraction: f64,
    /// Agent pairs overlapping by more than [`OVERLAP_TOLERANCE`], summed over steps.
    pub agent_overlaps: usize,
    /// Deepest agent–agent penetration, metres.
    pub agent_overlap_max_m: f64,
    /// Agents reaching into a static obstacle, summed over steps.
    pub wall_overlaps: usize,
    /// Mean walked length over the shortest obstacle-free path, over arrived agents.
    pub path_length_ratio: Option<f64>,
    /// The fundamental diagram in each of the scenario's measurement areas (first run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub areas: Vec<AreaReport>,
    /// The flow through each of the scenario's measurement lines (first run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineReport>,
    /// Agents the scenario's regions could not place (crowdfield's row; the other steerings
    /// start from the agents the plugin registered, so they never have any).
    #[serde(skip_serializing_if = "is_zero")]
    pub not_placed: usize,
    /// Agents the plugin rejected, and why (crowdfield's row; not among the other steerings'
    /// agents either).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejections: Vec<Rejection>,
    /// The first run's trajectories, when [`BenchOptions::keep_trajectories`] asks for them
    /// (not in `bench.json`).
    #[serde(skip)]
    pub recording: Option<Box<Recording>>,
}

/// A bench run's trajectories and geometry, for PedPy ([`crate::write_trajectories_pedpy`],
/// [`crate::geometry_wkt`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Every agent in the world after every step, its start at step 0. Crowdfield's rows
    /// number the agents by their index in the scenario, the other steerings' by their order
    /// in the crowd the plugin registered.
    pub trajectories: Vec<Sample>,
    /// Seconds per planner step.
    pub planner_period_s: f64,
    /// The world, its static obstacles and goals.
    pub scene: SceneView,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How [`bench_scenario`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchOptions {
    /// Planner steps at most per run.
    pub max_steps: u64,
    /// Threads of the pool every steering runs on.
    pub threads: usize,
    /// Runs of each steering (at least one), taken in turn (crowdfield, its crowd alone, ORCA,
    /// seek, crowdfield, …) so that a slow spell of the machine falls on all of them; the row's
    /// speed is their median.
    pub repeats: usize,
    /// Crowdfield's [`RunOptions::worker_spin`] (zero by default; docs/performance.md, *Two
    /// threads*, says what it did to ORCA's runs after it on our VM).
    pub worker_spin: Duration,
    /// Keep each steering's first run's trajectories in [`BenchRow::recording`].
    pub keep_trajectories: bool,
    /// Run [`Steering::CrowdStep`] and [`Steering::Seek`] as well (the default); without them
    /// only the plugin and ORCA run (`crowdfield flow`).
    pub all_steerings: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            max_steps: 2_000,
            threads: 2,
            repeats: 3,
            worker_spin: Duration::ZERO,
            keep_trajectories: false,
            all_steerings: true,
        }
    }
}

/// Runs `scenario` four ways (the plugin, [`Steering::CrowdStep`], ORCA, seek),
/// `options.repeats` times each. Every steering is deterministic, so every run of one should
/// move the agents the same way: a row shows its first run's measurements, the median speed,
/// and whether the runs agreed. Errors only if the pool of `options.threads` threads cannot
/// start.
pub fn bench_scenario(
    scenario: &Scenario,
    options: BenchOptions,
) -> Result<Vec<BenchRow>, rayon::ThreadPoolBuildError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads.max(1))
        .build()?;
    Ok(pool.install(|| {
        let start = crate::initial_crowd(scenario);
        // The shortest paths to every goal the agents head for, for the path ratios of every
        // baseline run (they all start from this crowd).
        let geodesics = start.as_ref().map(|(crowd, _)| {
            let goals = crowd.agents().flat_map(|(_, a)| a.params().goals.clone());
            geodesic_fields(crowd, goals.collect::<Vec<_>>())
        });
        let mut runs: Vec<Vec<BenchRow>> = Vec::new();
        for repeat in 0..options.repeats.max(1) {
            let keep = options.keep_trajectories && repeat == 0;
            let mut round = vec![crowdfield_row(
                scenario,
                options.max_steps,
                options.worker_spin,
                keep,
            )];
            if let (Some((crowd, period)), Some(geodesics)) = (&start, &geodesics) {
                let steerings: &[Steering] = if options.all_steerings {
                    &[Steering::CrowdStep, Steering::Orca, Steering::Seek]
                } else {
                    &[Steering::Orca]
                };
                for &steering in steerings {
                    let mut sim = Baseline::new(crowd, geodesics, *period, steering);
                    let mut row = sim.run(scenario, options.max_steps, keep, round[0].agents);
                    // The same world as the plugin's run.
                    if let (Some(recording), Some(first)) =
                        (row.recording.as_mut(), round[0].recording.as_ref())
                    {
                        recording.scene = first.scene.clone();
                    }
                    round.push(row);
                }
            }
            for (k, row) in round.into_iter().enumerate() {
                match runs.get_mut(k) {
                    Some(rows) => rows.push(row),
                    None => runs.push(vec![row]),
                }
            }
        }
        runs.into_iter()
            .map(|rows| {
                let mut speeds: Vec<f64> = rows.iter().map(|r| r.agent_steps_per_s).collect();
                let runs_agree = rows.iter().all(|r| r.same_walk(&rows[0]));
                let mut row = rows.into_iter().next().expect("one run at least");
                row.runs_agent_steps_per_s = speeds.clone();
                row.runs_agree = runs_agree;
                speeds.sort_by(f64::total_cmp);
                row.agent_steps_per_s = median(&speeds);
                row
            })
            .collect()
    }))
}

impl BenchRow {
    /// The scenario as reports name it: its name, and the file it was read from where known.
    pub fn label(&self) -> String {
        match &self.file {
            Some(file) => format!("{} ({file})", self.scenario),
            None => self.scenario.clone(),
        }
    }

    /// What reports group rows by: the scenario's place in the bench, then its name.
    fn key(&self) -> (usize, &str) {
        (self.index, self.scenario.as_str())
    }

    /// Whether `other` walked the agents as this row did: everything but the speeds.
    pub fn same_walk(&self, other: &BenchRow) -> bool {
        self.areas == other.areas
            && self.lines == other.lines
            && self.rejections == other.rejections
            && (
                &self.scenario,
                self.steering,
                self.agents,
                self.steps,
                self.arrival_fraction,
                self.agent_overlaps,
                self.agent_overlap_max_m,
                self.wall_overlaps,
                self.path_length_ratio,
                self.not_placed,
            ) == (
                &other.scenario,
                other.steering,
                other.agents,
                other.steps,
                other.arrival_fraction,
                other.agent_overlaps,
                other.agent_overlap_max_m,
                other.wall_overlaps,
                other.path_length_ratio,
                other.not_placed,
            )
    }
}

/// Writes, for every scenario of `rows` with measurement areas, `<scenario>-<area>.png` into
/// `dir` (characters other than ASCII letters, digits and `-` become `-`; an unnamed area is
/// `area<index>`; a name already written gets `-<index>` until it is new): the area's
/// fundamental diagram for each steering, in the order of the rows (crowdfield dark blue, ORCA
/// orange, seek green; see [`crate::plot_fundamental_diagram`]), [`Steering::CrowdStep`] left out
/// (it walks as the plugin does).
/// Returns the files written.
pub fn write_fundamental_diagrams(
    dir: &std::path::Path,
    rows: &[BenchRow],
) -> Result<Vec<std::path::PathBuf>, crate::plot::PlotError> {
    let mut written: Vec<std::path::PathBuf> = Vec::new();
    let mut scenarios: Vec<(usize, &str)> = rows.iter().map(BenchRow::key).collect();
    scenarios.dedup();
    for key in scenarios {
        let scenario = key.1;
        // `CrowdStep` walks as the plugin's row does: drawn once.
        let of: Vec<&BenchRow> = rows
            .iter()
            .filter(|r| r.key() == key && r.steering != Steering::CrowdStep)
            .collect();
        let Some(first) = of.first() else { continue };
        for (k, area) in first.areas.iter().enumerate() {
            let areas: Vec<AreaReport> =
                of.iter().filter_map(|r| r.areas.get(k).cloned()).collect();
            let label = if area.name.is_empty() {
                format!("area{k}")
            } else {
                area.name.clone()
            };
            let name = file_stem(&format!("{scenario}-{label}"));
            // Names that differ only in characters a file name cannot hold get the area's
            // index as well (again, until the name is new), so that no diagram overwrites
            // another.
            let mut path = dir.join(format!("{name}.png"));
            let mut suffix = format!("{k}");
            while written.contains(&path) {
                path = dir.join(format!("{name}-{suffix}.png"));
                suffix.push('-');
                suffix.push_str(&k.to_string());
            }
            crate::plot_fundamental_diagram(&path, &areas)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// `text` as one Markdown table cell: a `|` (a scenario's name, its file, a measurement's
/// name) does not split it.
fn table_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// `name` with every character other than ASCII letters, digits and `-` replaced by `-`.
fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Writes each row's [`Recording`] for PedPy into `dir/<scenario>-<steering>/` (the scenario's
/// name as [`write_fundamental_diagrams`] spells it, the steering as in the table):
/// `trajectories.txt`, `geometry.wkt` and `row.json` (the row as in `bench.json`, whose areas
/// and lines `scripts/pedpy_check.py` reads as it reads a run's `metrics.json`). Rows without a
/// recording are skipped; a folder name already written in this call (a scenario benched
/// twice) gets `-2`, `-3`, … so that no run overwrites another. Returns the folders written.
pub fn write_recordings(
    dir: &std::path::Path,
    rows: &[BenchRow],
) -> std::io::Result<Vec<std::path::PathBuf>> {
    use std::io::Write;
    let mut written = Vec::new();
    for row in rows {
        let Some(recording) = &row.recording else {
            continue;
        };
        let stem = file_stem(&format!("{}-{:?}", row.scenario, row.steering));
        let mut folder = dir.join(&stem);
        let mut k = 1;
        while written.contains(&folder) {
            k += 1;
            folder = dir.join(format!("{stem}-{k}"));
        }
        std::fs::create_dir_all(&folder)?;
        let mut w =
            std::io::BufWriter::new(std::fs::File::create(folder.join("trajectories.txt"))?);
        crate::write_trajectories_pedpy(
            &mut w,
            &recording.trajectories,
            recording.planner_period_s,
        )?;
        w.flush()?;
        std::fs::write(
            folder.join("geometry.wkt"),
            crate::geometry_wkt(&recording.scene),
        )?;
        let json = serde_json::to_string_pretty(row).map_err(std::io::Error::other)?;
        std::fs::write(folder.join("row.json"), json + "\n")?;
        written.push(folder);
    }
    Ok(written)
}

/// The middle of sorted `values` (the mean of the two middle ones for an even count).
fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]),
    }
}

/// One crowdfield run through the plugin.
fn crowdfield_row(
    scenario: &Scenario,
    max_steps: u64,
    worker_spin: Duration,
    keep: bool,
) -> BenchRow {
    let mut output = run_scenario(
        scenario,
        RunOptions {
            stop: Stop::UntilArrived { max_steps },
            seed: None,
            worker_spin,
            // The bench draws no fields.
            field_plots: 0,
        },
    );
    let m = &output.metrics;
    BenchRow {
        scenario: scenario.name.clone(),
        file: None,
        index: 0,
        steering: Steering::Crowdfield,
        agents: m.walkers(),
        steps: m.steps,
        agent_steps_per_s: m.agent_steps_per_s.unwrap_or(0.0),
        runs_agent_steps_per_s: Vec::new(),
        runs_agree: true,
        arrival_fraction: m.arrival_fraction,
        agent_overlaps: m.agent_overlaps,
        agent_overlap_max_m: m.agent_overlap_max_m,
        wall_overlaps: m.wall_overlaps,
        path_length_ratio: m.path_length_ratio_mean,
        areas: m.areas.clone(),
        lines: m.lines.clone(),
        not_placed: m.not_placed,
        rejections: m.rejections.clone(),
        recording: keep.then(|| {
            Box::new(Recording {
                trajectories: std::mem::take(&mut output.trajectories),
                planner_period_s: m.planner_period_s,
                scene: output.scene.clone(),
            })
        }),
    }
}

/// One agent of a baseline run.
#[derive(Clone)]
struct Walker {
    position: DVec2,
    velocity: DVec2,
    radius: f64,
    max_speed: f64,
    goals: Vec<GoalId>,
    goal_index: usize,
    arrival_radius: f64,
    leaves: bool,
    /// `None` while walking; the step it arrived at after.
    arrived: Option<u64>,
    /// Gave up its last goal when the goal's time limit ran out ([`Steering::CrowdStep`] only:
    /// ORCA and seek ignore time limits).
    gave_up: bool,
    gone: bool,
    subgoals: SubgoalStack,
    walked: f64,
    /// Start of each leg and its goal, for the path-length ratio.
    legs: Vec<(DVec2, GoalId)>,
}

/// ORCA, seek or [`Steering::CrowdStep`] over the crowd's agents and maps.
struct Baseline<'a> {
    crowd: &'a Crowd,
    steering: Steering,
    walkers: Vec<Walker>,
    /// Each walker's agent in `crowd`.
    ids: Vec<AgentId>,
    /// The crowd [`Steering::CrowdStep`] steps (a copy of `crowd`); `None` for the others.
    stepping: Option<Crowd>,
    /// Shortest-path distance fields of the walkers' goals, by goal.
    geodesics: &'a HashMap<GoalId, Vec<f64>>,
    obstacles: Vec<(dodgy_2d::Obstacle, (DVec2, DVec2))>,
    period: f64,
}

fn v2(p: DVec2) -> dodgy_2d::Vec2 {
    dodgy_2d::Vec2::new(p.x as f32, p.y as f32)
}

impl<'a> Baseline<'a> {
    fn new(
        crowd: &'a Crowd,
        geodesics: &'a HashMap<GoalId, Vec<f64>>,
        period: f64,
        steering: Steering,
    ) -> Self {
        let ids = crowd.agents().map(|(id, _)| id).collect();
        let walkers = crowd
            .agents()
            .map(|(_, a)| {
                let p = a.params();
                Walker {
                    position: p.position,
                    velocity: DVec2::ZERO,
                    radius: p.radius,
                    max_speed: p.max_step / period,
                    goals: p.goals.clone(),
                    goal_index: 0,
                    arrival_radius: p.arrival_radius,
                    leaves: p.on_arrival == ArrivalAction::Despawn,
                    arrived: p.goals.is_empty().then_some(0),
                    gave_up: false,
                    gone: false,
                    subgoals: SubgoalStack::new(),
                    walked: 0.0,
                    legs: p
                        .goals
                        .first()
                        .map(|g| (p.position, *g))
                        .into_iter()
                        .collect(),
                }
            })
            .collect();
        let obstacles = crowd
            .statics()
            .iter()
            .flat_map(outlines)
            .filter(|o| o.len() >= 3)
            .map(|mut o| {
                // Counter-clockwise keeps agents out (dodgy's convention).
                let area: f64 = (0..o.len())
                    .map(|i| o[i].perp_dot(o[(i + 1) % o.len()]))
                    .sum();
                if area < 0.0 {
                    o.reverse();
                }
                let lo = o.iter().copied().fold(DVec2::INFINITY, DVec2::min);
                let hi = o.iter().copied().fold(DVec2::NEG_INFINITY, DVec2::max);
                (
                    dodgy_2d::Obstacle::Closed {
                        vertices: o.into_iter().map(v2).collect(),
                    },
                    (lo, hi),
                )
            })
            .collect();
        Self {
            crowd,
            steering,
            walkers,
            ids,
            stepping: (steering == Steering::CrowdStep).then(|| crowd.clone()),
            geodesics,
            obstacles,
            period,
        }
    }

    /// Steps the walkers until they arrive or `max_steps`. The row counts at least `counted`
    /// walkers,
    /// as crowdfield's row does: the baseline starts from the agents the plugin registered,
    /// and those it rejected count as not arrived here too, so that every row of a scenario
    /// has the same walkers.
    fn run(&mut self, scenario: &Scenario, max_steps: u64, keep: bool, counted: usize) -> BenchRow {
        let mut measurer = Measurer::for_scenario(scenario, self.period);
        // With `keep`, every walker in the world after every step, from its start.
        let mut trajectories: Vec<Sample> = Vec::new();
        if keep {
            trajectories.extend(
                self.walkers
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| !w.gone)
                    .map(|(agent, w)| Sample {
                        step: 0,
                        agent,
                        position: w.position.as_vec2(),
                        state: RowState::Pending,
                    }),
            );
        }
        let mut seconds = 0.0;
        let mut agent_steps = 0u64;
        let (mut overlaps, mut overlap_max, mut wall_overlaps) = (0usize, 0.0f64, 0usize);
        let mut steps = 0;
        for step in 1..=max_steps {
            let walking = self
                .walkers
                .iter()
                .filter(|w| w.arrived.is_none() && !w.gave_up)
                .count();
            // As the plugin's runs end (`Stop::UntilArrived`): walkers that nothing can free
            // are not waited for.
            if walking == self.stranded() {
                break;
            }
            // Where every walker still in the world stood before the step (one that arrives and
            // leaves in it is measured to where it left, as the plugin's runs measure it).
            let before: Vec<Option<DVec2>> = self
                .walkers
                .iter()
                .map(|w| (!w.gone).then_some(w.position))
                .collect();
            let start = Instant::now();
            self.step(step);
            if step > 1 {
                seconds += start.elapsed().as_secs_f64();
                agent_steps += walking as u64;
            }
            steps = step;
            let observed: Vec<Observed> = self
                .walkers
                .iter()
                .zip(&before)
                .filter_map(|(w, b)| {
                    b.map(|previous| Observed {
                        previous,
                        position: w.position,
                    })
                })
                .collect();
            measurer.observe(step, &observed);
            if keep {
                for (agent, (w, b)) in self.walkers.iter().zip(&before).enumerate() {
                    if b.is_some() {
                        trajectories.push(Sample {
                            step,
                            agent,
                            position: w.position.as_vec2(),
                            state: if w.gave_up {
                                RowState::TimedOut
                            } else if w.arrived.is_some() {
                                RowState::Arrived
                            } else {
                                RowState::Moving
                            },
                        });
                    }
                }
            }
            let (n, deepest, walls) = self.overlaps();
            overlaps += n;
            overlap_max = overlap_max.max(deepest);
            wall_overlaps += walls;
        }
        // Walkers with no goal stand all along: obstacles, not walkers, as in the plugin's runs.
        let walkers = self.walkers.iter().filter(|w| !w.goals.is_empty());
        let placed = walkers.clone().count().max(counted);
        let arrived = walkers.filter(|w| w.arrived.is_some()).count();
        let ratios: Vec<f64> = self.path_ratios();
        let (areas, lines) = measurer.finish();
        BenchRow {
            scenario: scenario.name.clone(),
            file: None,
            index: 0,
            steering: self.steering,
            agents: placed,
            steps,
            agent_steps_per_s: if seconds > 0.0 {
                agent_steps as f64 / seconds
            } else {
                0.0
            },
            runs_agent_steps_per_s: Vec::new(),
            runs_agree: true,
            arrival_fraction: arrived as f64 / placed.max(1) as f64,
            agent_overlaps: overlaps,
            agent_overlap_max_m: overlap_max,
            wall_overlaps,
            path_length_ratio: (!ratios.is_empty())
                .then(|| ratios.iter().sum::<f64>() / ratios.len() as f64),
            areas,
            lines,
            not_placed: 0,
            rejections: Vec::new(),
            recording: keep.then(|| {
                Box::new(Recording {
                    trajectories,
                    planner_period_s: self.period,
                    // The bench puts the plugin's scene here.
                    scene: SceneView::default(),
                })
            }),
        }
    }

    /// One step for every walker from the same snapshot, then arrivals.
    fn step(&mut self, step: u64) {
        if let Some(stepping) = self.stepping.as_mut() {
            // The plugin ran the crowd's first step: the bench's first step only takes its
            // result over.
            let report = (step > 1).then(|| stepping.step());
            follow(
                &mut self.walkers,
                &self.ids,
                stepping,
                report.as_ref(),
                step,
                self.period,
            );
            return;
        }
        let crowd = self.crowd;
        let snapshot: Vec<(DVec2, DVec2, f64, bool)> = self
            .walkers
            .iter()
            .map(|w| (w.position, w.velocity, w.radius, w.gone))
            .collect();
        let grid = index(&snapshot, 5.0);
        let period = self.period;
        let steering = self.steering;
        let obstacles = &self.obstacles;
        self.walkers.par_iter_mut().enumerate().for_each(|(i, w)| {
            if w.arrived.is_some() {
                w.velocity = DVec2::ZERO;
                return;
            }
            let goal = crowd.goal(w.goals[w.goal_index]).expect("known goal");
            let dir = w
                .subgoals
                .descent_shared(goal.map(), w.position, goal.subgoal_cache())
                .ok()
                .and_then(|d| d.try_normalize())
                .unwrap_or(DVec2::ZERO);
            let preferred = dir * w.max_speed;
            w.velocity = if steering == Steering::Orca {
                orca(i, w, preferred, &snapshot, &grid, obstacles, period)
            } else {
                preferred
            };
        });
        for w in &mut self.walkers {
            if w.arrived.is_some() {
                continue;
            }
            let next = w.position + w.velocity * period;
            w.walked += (next - w.position).length();
            w.position = next;
            let goal = crowd.goal(w.goals[w.goal_index]).expect("known goal");
            let map = goal.map();
            let cell = map.geometry().world_to_cell(w.position);
            let on_goal = map.geometry().contains_cell(cell)
                && map.kind(cell.x as usize, cell.y as usize) == Some(CellKind::Goal);
            let near = goal
                .shape()
                .distance(w.position)
                .is_ok_and(|d| d <= w.arrival_radius);
            if on_goal || near {
                w.subgoals.clear();
                if w.goal_index + 1 < w.goals.len() {
                    w.goal_index += 1;
                    w.legs.push((w.position, w.goals[w.goal_index]));
                } else {
                    w.arrived = Some(step);
                    w.velocity = DVec2::ZERO;
                    w.gone = w.leaves;
                }
            }
        }
    }

    /// Walkers still walking with no route to their goal and nothing to move them on: for
    /// [`Steering::CrowdStep`], agents the crowd finds unreachable with no goal time limit, as
    /// the plugin's runs count them; for ORCA and seek, which ignore time limits and take their
    /// way from the same global maps, the agents the crowd found unreachable when the bench
    /// took it over. Nothing in a bench run changes the static obstacles, so none of them can
    /// ever arrive.
    fn stranded(&self) -> usize {
        let crowd = self.stepping.as_ref().unwrap_or(self.crowd);
        let timed_frees = self.stepping.is_some();
        self.walkers
            .iter()
            .zip(&self.ids)
            .filter(|(w, _)| w.arrived.is_none() && !w.gave_up)
            .filter(|(_, id)| {
                crowd.agent(**id).is_some_and(|a| {
                    a.state() == bevy_crowdfield::steer::AgentState::Unreachable
                        && !(timed_frees && a.params().time_limits.iter().any(Option::is_some))
                })
            })
            .count()
    }

    /// Pairs overlapping, the deepest overlap, walkers reaching into walls.
    fn overlaps(&self) -> (usize, f64, usize) {
        let present: Vec<(DVec2, DVec2, f64, bool)> = self
            .walkers
            .iter()
            .map(|w| (w.position, w.velocity, w.radius, w.gone))
            .collect();
        let grid = index(&present, 1.0);
        let (mut n, mut deepest, mut walls) = (0, 0.0f64, 0);
        for (i, (p, _, r, gone)) in present.iter().enumerate() {
            if *gone {
                continue;
            }
            grid.for_each_near(*p, 2.0 * r + 0.5, |j| {
                let (q, _, s, _) = present[j];
                if j > i {
                    let depth = r + s - (*p - q).length();
                    if depth > OVERLAP_TOLERANCE {
                        n += 1;
                        deepest = deepest.max(depth);
                    }
                }
            });
            if self
                .crowd
                .statics()
                .iter()
                .any(|s| s.distance(*p).is_ok_and(|d| r - d > OVERLAP_TOLERANCE))
            {
                walls += 1;
            }
        }
        (n, deepest, walls)
    }

    fn path_ratios(&self) -> Vec<f64> {
        self.walkers
            .iter()
            .filter(|w| w.arrived.is_some() && !w.legs.is_empty())
            .filter_map(|w| {
                let mut shortest = 0.0;
                for (start, goal) in &w.legs {
                    let map = self.crowd.goal(*goal)?.map();
                    let d = self.geodesics.get(goal)?;
                    let g = map.geometry();
                    let c = g.world_to_cell(*start);
                    if !g.contains_cell(c) {
                        return None;
                    }
                    shortest += d[g.index(c.x as usize, c.y as usize)];
                }
                (shortest.is_finite() && shortest > 0.0).then(|| w.walked / shortest)
            })
            .collect()
    }
}

/// Moves the walkers where the crowd's agents now stand after `step` (`report` its report;
/// `None` for the plugin's first step), with a new leg for each goal taken. A walker whose agent
/// ended its last goal (and stopped, or left the crowd) arrived if the report says it reached
/// it, and otherwise gave up (its time limit ran out); after the plugin's first step, whose
/// report the bench does not see, an ended goal counts as reached.
fn follow(
    walkers: &mut [Walker],
    ids: &[AgentId],
    crowd: &Crowd,
    report: Option<&StepReport>,
    step: u64,
    period: f64,
) {
    for (w, id) in walkers.iter_mut().zip(ids) {
        if w.gave_up {
            continue;
        }
        let agent = crowd.agent(*id);
        if w.arrived.is_some() {
            // One settling into its goal (`ArrivalAction::Settle`) still moves; its walk was
            // measured to its arrival.
            if let Some(next) = agent.map(|a| a.position()) {
                w.velocity = (next - w.position) / period;
                w.position = next;
            }
            continue;
        }
        // One that left the crowd in this step is found in the report, where it left.
        let left = || {
            let removed = &report?.removed;
            removed.iter().find(|(r, _)| r == id).map(|(_, p)| *p)
        };
        if let Some(next) = agent.map(|a| a.position()).or_else(left) {
            w.walked += (next - w.position).length();
            w.velocity = (next - w.position) / period;
            w.position = next;
        }
        if let Some(agent) = agent {
            while w.goal_index < agent.goal_index() && w.goal_index + 1 < w.goals.len() {
                w.goal_index += 1;
                w.legs.push((agent.position(), w.goals[w.goal_index]));
            }
        }
        // Agents leave the crowd only when their last goal ends.
        if agent.is_none_or(|a| a.state() == SteerAgentState::Arrived) {
            if report.is_none_or(|r| r.arrived.contains(id)) {
                w.arrived = Some(step);
            } else {
                w.gave_up = true;
            }
            w.gone = agent.is_none();
            w.velocity = DVec2::ZERO;
        }
    }
}

/// ORCA's velocity for walker `i`: its 10 nearest neighbours within 5 m and the obstacles
/// within reach of one obstacle horizon.
fn orca(
    i: usize,
    w: &Walker,
    preferred: DVec2,
    snapshot: &[(DVec2, DVec2, f64, bool)],
    grid: &AgentGrid,
    obstacles: &[(dodgy_2d::Obstacle, (DVec2, DVec2))],
    period: f64,
) -> DVec2 {
    const NEIGHBOUR_DIST: f64 = 5.0;
    const MAX_NEIGHBOURS: usize = 10;
    const TIME_HORIZON: f32 = 3.0;
    const OBSTACLE_HORIZON: f32 = 1.0;
    let mut near: Vec<(f64, usize)> = Vec::new();
    grid.for_each_near(w.position, NEIGHBOUR_DIST, |j| {
        let (q, _, _, gone) = snapshot[j];
        let d = (q - w.position).length_squared();
        if j != i && !gone && d <= NEIGHBOUR_DIST * NEIGHBOUR_DIST {
            near.push((d, j));
        }
    });
    near.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    near.truncate(MAX_NEIGHBOURS);
    let agent = |(p, v, r, _): (DVec2, DVec2, f64, bool)| dodgy_2d::Agent {
        position: v2(p),
        velocity: v2(v),
        radius: r as f32,
        avoidance_responsibility: 1.0,
    };
    let me = agent(snapshot[i]);
    let neighbours: Vec<Cow<'_, dodgy_2d::Agent>> = near
        .iter()
        .map(|(_, j)| Cow::Owned(agent(snapshot[*j])))
        .collect();
    let reach = w.max_speed * OBSTACLE_HORIZON as f64 + w.radius + 1.0;
    let close: Vec<Cow<'_, dodgy_2d::Obstacle>> = obstacles
        .iter()
        .filter(|(_, (lo, hi))| (w.position - w.position.clamp(*lo, *hi)).length() <= reach)
        .map(|(o, _)| Cow::Borrowed(o))
        .collect();
    let v = me.compute_avoiding_velocity(
        &neighbours,
        &close,
        v2(preferred),
        w.max_speed as f32,
        period as f32,
        &dodgy_2d::AvoidanceOptions {
            obstacle_margin: w.radius as f32,
            time_horizon: TIME_HORIZON,
            obstacle_time_horizon: OBSTACLE_HORIZON,
        },
    );
    DVec2::new(v.x as f64, v.y as f64)
}

/// The walkers still present, indexed for neighbour queries.
fn index(walkers: &[(DVec2, DVec2, f64, bool)], cell: f64) -> AgentGrid {
    let points: Vec<Option<(DVec2, f64)>> = walkers
        .iter()
        .map(|(p, _, r, gone)| (!gone).then_some((*p, *r)))
        .collect();
    AgentGrid::build(&points, cell)
}

/// The rows as a Markdown table; the speed is the median of the runs, with their range when
/// there were several, and the steps say when the runs did not walk alike. Then, for every
/// scenario with ORCA and crowdfield rows, ORCA's speed over crowdfield's ([`speed_ratios`]),
/// and the measurement areas and lines.
pub fn markdown(rows: &[BenchRow]) -> String {
    let mut out = String::from(
        "| scenario | steering | agents | steps | agent-steps/s (range) | arrived | agent overlaps (max m) | wall overlaps | path ratio |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let runs = &r.runs_agent_steps_per_s;
        let range = if runs.len() > 1 {
            let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!(" ({lo:.0}–{hi:.0})")
        } else {
            String::new()
        };
        let differ = if r.runs_agree { "" } else { " (runs differ)" };
        out.push_str(&format!(
            "| {} | {:?} | {} | {}{} | {:.0}{} | {} | {} ({:.3}) | {} | {} |\n",
            table_cell(&r.label()),
            r.steering,
            r.agents,
            r.steps,
            differ,
            r.agent_steps_per_s,
            range,
            // A fraction of no agents is no figure.
            if r.agents == 0 {
                "–".to_string()
            } else {
                format!("{:.0} %", 100.0 * r.arrival_fraction)
            },
            r.agent_overlaps,
            r.agent_overlap_max_m,
            r.wall_overlaps,
            r.path_length_ratio
                .map_or("–".to_string(), |v| format!("{v:.2}")),
        ));
    }
    let ratios = speed_ratios(rows);
    if !ratios.is_empty() {
        out.push_str(
            "\n| scenario | ORCA over crowdfield (rounds) | ORCA over CrowdStep (rounds) | crowdfield at least ORCA's speed |\n|---|---|---|---|\n",
        );
        let cell = |r: Option<SpeedRatio>| {
            r.map_or("–".to_string(), |r| {
                if r.rounds.0 == r.rounds.1 {
                    format!("{:.2}", r.median)
                } else {
                    format!("{:.2} ({:.2}–{:.2})", r.median, r.rounds.0, r.rounds.1)
                }
            })
        };
        for (scenario, plugin, crowd) in ratios {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                table_cell(&scenario),
                cell(plugin),
                cell(crowd),
                match plugin {
                    Some(r) if r.median <= 1.0 => "yes",
                    Some(_) => "no",
                    None => "–",
                }
            ));
        }
    }
    out.push_str(&not_registered(rows));
    if rows
        .iter()
        .any(|r| !(r.areas.is_empty() && r.lines.is_empty()))
    {
        out.push_str("\n| scenario | steering | measured at | result |\n|---|---|---|---|\n");
        for r in rows {
            for a in &r.areas {
                out.push_str(&format!(
                    "| {} | {:?} | {} (area) | Voronoi density mean {:.2}, max {:.2} per m²; speed mean {:.2} m/s |\n",
                    table_cell(&r.label()),
                    r.steering,
                    table_cell(&a.name),
                    a.voronoi_density_mean,
                    a.voronoi_density_max,
                    a.voronoi_speed_mean_m_s
                ));
            }
            for l in &r.lines {
                out.push_str(&format!(
                    "| {} | {:?} | {} (line) | {} forward, {} backward; flow {} per s, {} per s and m |\n",
                    table_cell(&r.label()),
                    r.steering,
                    table_cell(&l.name),
                    l.forward,
                    l.backward,
                    l.flow_per_s.map_or("–".to_string(), |j| format!("{j:.2}")),
                    l.specific_flow
                        .map_or("–".to_string(), |j| format!("{j:.2}"))
                ));
            }
        }
    }
    out
}

/// The agents of each scenario that crowdfield's plugin did not register, as a Markdown list
/// after a blank line (empty when it registered them all): regions too full to place them, and
/// each rejected agent by its index in the file with the plugin's reason (the first
/// [`REJECTIONS_LISTED`](crate::REJECTIONS_LISTED), then a count). The other steerings start from the agents the plugin
/// registered, and count the rejected ones as not arrived, as crowdfield's row does: the list
/// says why they did not move.
pub fn not_registered(rows: &[BenchRow]) -> String {
    let mut lines = Vec::new();
    for r in rows.iter().filter(|r| r.steering == Steering::Crowdfield) {
        if r.not_placed > 0 {
            lines.push(format!(
                "- {}: {} could not be placed (their region is full)",
                r.label(),
                crate::counted(r.not_placed, "agent")
            ));
        }
        lines.extend(
            rejection_lines(&r.rejections, "bench.json")
                .into_iter()
                .map(|line| format!("- {}: {line}", r.label())),
        );
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nAgents crowdfield's plugin did not register (the other steerings start from the ones it did; every row counts the rejected as not arrived):\n\n{}\n",
        lines.join("\n")
    )
}

/// ORCA's agent-steps per second over another steering's in one scenario: the ratio of the
/// medians, and the lowest and highest ratio of one round's runs (the k-th run of each).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedRatio {
    /// ORCA's median over the other's: at most 1 where the other is at least as fast.
    pub median: f64,
    /// The lowest and the highest ratio over the rounds (the median's, where the rows keep no
    /// runs).
    pub rounds: (f64, f64),
}

/// For every scenario of `rows` with an ORCA row, in their order: ORCA's speed over
/// crowdfield's through the plugin and over [`Steering::CrowdStep`]'s (`None` where that row is
/// missing or either speed is zero or not finite; rounds with such a speed are left out of the
/// range). Crowdfield meets its speed goal (ORCA's agent-steps per second or
/// more, docs/benchmarks.md) in a scenario where the first is at most 1.
pub fn speed_ratios(rows: &[BenchRow]) -> Vec<(String, Option<SpeedRatio>, Option<SpeedRatio>)> {
    let mut scenarios: Vec<(usize, &str)> = rows.iter().map(BenchRow::key).collect();
    scenarios.dedup();
    let find = |key: (usize, &str), steering: Steering| {
        rows.iter()
            .find(|r| r.key() == key && r.steering == steering)
    };
    scenarios
        .into_iter()
        .filter_map(|scenario| {
            let orca = find(scenario, Steering::Orca)?;
            // A speed of zero (a run that timed no step: everyone arrived in the first) or one
            // not finite compares with nothing.
            let ratio = |o: f64, c: f64| {
                let r = o / c;
                (r.is_finite() && r > 0.0).then_some(r)
            };
            let over = |steering: Steering| {
                let other = find(scenario, steering)?;
                let median = ratio(orca.agent_steps_per_s, other.agent_steps_per_s)?;
                let per_round: Vec<f64> = orca
                    .runs_agent_steps_per_s
                    .iter()
                    .zip(&other.runs_agent_steps_per_s)
                    .filter_map(|(o, c)| ratio(*o, *c))
                    .collect();
                let (lo, hi) = if per_round.is_empty() {
                    (median, median)
                } else {
                    (
                        per_round.iter().copied().fold(f64::INFINITY, f64::min),
                        per_round.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    )
                };
                Some(SpeedRatio {
                    median,
                    rounds: (lo, hi),
                })
            };
            Some((
                orca.label(),
                over(Steering::Crowdfield),
                over(Steering::CrowdStep),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of `steering` at `speed` agent-steps a second for the scenario named `name`, read
    /// from `file` as the `index`-th of a bench.
    fn row_of(name: &str, file: &str, index: usize, steering: Steering, speed: f64) -> BenchRow {
        BenchRow {
            scenario: name.into(),
            file: Some(file.into()),
            index,
            steering,
            agents: 2,
            steps: 10,
            agent_steps_per_s: speed,
            runs_agent_steps_per_s: vec![speed],
            runs_agree: true,
            arrival_fraction: 1.0,
            agent_overlaps: 0,
            agent_overlap_max_m: 0.0,
            wall_overlaps: 0,
            path_length_ratio: None,
            areas: Vec::new(),
            lines: Vec::new(),
            not_placed: 0,
            rejections: Vec::new(),
            recording: None,
        }
    }

    /// Two files whose scenarios carry the same name (SteerSuite's
    /// `4-way-oncomming-circle-obstacle` calls itself `simple-1`) keep their own rows and speed
    /// ratios, each named with its file.
    #[test]
    fn scenarios_sharing_a_name_are_reported_by_file() {
        let rows = vec![
            row_of("simple-1", "a.ron", 0, Steering::Crowdfield, 100.0),
            row_of("simple-1", "a.ron", 0, Steering::Orca, 50.0),
            row_of("simple-1", "b.ron", 1, Steering::Crowdfield, 100.0),
            row_of("simple-1", "b.ron", 1, Steering::Orca, 200.0),
        ];
        let ratios = speed_ratios(&rows);
        let named: Vec<(&str, f64)> = ratios
            .iter()
            .map(|(n, plugin, _)| (n.as_str(), plugin.unwrap().median))
            .collect();
        assert_eq!(
            named,
            vec![("simple-1 (a.ron)", 0.5), ("simple-1 (b.ron)", 2.0)]
        );
        let table = markdown(&rows);
        assert_eq!(table.matches("| simple-1 (a.ron) |").count(), 3, "{table}");
        assert_eq!(table.matches("| simple-1 (b.ron) |").count(), 3, "{table}");
    }

    /// Two runs walk alike whatever their speeds, and not when any measurement differs.
    #[test]
    fn runs_walk_alike_only_when_every_measurement_agrees() {
        let row = BenchRow {
            file: None,
            agents: 4,
            steps: 30,
            agent_overlaps: 2,
            agent_overlap_max_m: 0.1,
            path_length_ratio: Some(1.1),
            ..row_of("s", "", 0, Steering::Orca, 1.0)
        };
        let faster = BenchRow {
            agent_steps_per_s: 2.0,
            runs_agent_steps_per_s: vec![2.0, 3.0],
            ..row.clone()
        };
        assert!(row.same_walk(&faster));
        for other in [
            BenchRow {
                steps: 31,
                ..row.clone()
            },
            BenchRow {
                agent_overlaps: 3,
                ..row.clone()
            },
            BenchRow {
                agent_overlap_max_m: 0.2,
                ..row.clone()
            },
            BenchRow {
                wall_overlaps: 1,
                ..row.clone()
            },
            BenchRow {
                arrival_fraction: 0.5,
                ..row.clone()
            },
            BenchRow {
                path_length_ratio: None,
                ..row.clone()
            },
            BenchRow {
                lines: vec![LineReport {
                    name: "door".into(),
                    a: [0.0, 0.0],
                    b: [0.0, 1.0],
                    width_m: 1.0,
                    forward: 1,
                    backward: 0,
                    first_crossing_s: Some(1.0),
                    last_crossing_s: Some(1.0),
                    flow_per_s: None,
                    specific_flow: None,
                    crossing_times_s: vec![1.0],
                }],
                ..row.clone()
            },
        ] {
            assert!(!row.same_walk(&other), "{other:?}");
        }
    }

    /// A one-agent row of scenario `s` measured in `areas`.
    fn row_with_areas(steering: Steering, areas: Vec<AreaReport>) -> BenchRow {
        BenchRow {
            file: None,
            agents: 1,
            steps: 1,
            areas,
            ..row_of("s", "", 0, steering, 1.0)
        }
    }

    /// Agents the plugin did not register are listed under the tables, the first ten rejected
    /// ones by name and the rest counted; a bench where it registered everyone lists nothing.
    #[test]
    fn agents_the_plugin_did_not_register_are_listed() {
        let plain = row_with_areas(Steering::Crowdfield, Vec::new());
        assert_eq!(not_registered(std::slice::from_ref(&plain)), "");
        // A row of no agents has no arrival percentage.
        let nobody = BenchRow {
            agents: 0,
            arrival_fraction: 0.0,
            ..plain.clone()
        };
        assert!(markdown(&[nobody]).contains("| s | Crowdfield | 0 | 1 | 1 | – |"));
        assert!(
            markdown(std::slice::from_ref(&plain))
                .contains("| s | Crowdfield | 1 | 1 | 1 | 100 % |")
        );
        assert!(!markdown(std::slice::from_ref(&plain)).contains("did not register"));
        let crowded = BenchRow {
            not_placed: 4,
            rejections: (0..12)
                .map(|agent| Rejection {
                    agent,
                    reason: format!("reason {agent}"),
                })
                .collect(),
            ..plain.clone()
        };
        // Only crowdfield's rows carry them.
        let orca = BenchRow {
            steering: Steering::Orca,
            ..crowded.clone()
        };
        let text = markdown(&[crowded, orca]);
        assert!(
            text.contains("\n- s: 4 agents could not be placed"),
            "{text}"
        );
        assert!(
            text.contains("\n- s: agent 9 was rejected: reason 9\n"),
            "{text}"
        );
        assert!(!text.contains("agent 10 was"), "{text}");
        assert!(text.contains("\n- s: 2 more agents rejected"), "{text}");
        assert_eq!(text.matches("agent 0 was rejected").count(), 1, "{text}");
        let one = BenchRow {
            not_placed: 1,
            rejections: (0..11)
                .map(|agent| Rejection {
                    agent,
                    reason: String::new(),
                })
                .collect(),
            ..plain.clone()
        };
        let text = not_registered(&[one]);
        assert!(text.contains("- s: 1 agent could not be placed"), "{text}");
        assert!(text.contains("- s: 1 more agent rejected"), "{text}");
    }

    /// ORCA's speed over the others' per scenario; a zero or non-finite speed (a run that timed
    /// no step) gives no ratio and no verdict, instead of "met".
    #[test]
    fn speed_ratios_leave_out_speeds_that_compare_with_nothing() {
        let row = |scenario: &str, steering: Steering, runs: Vec<f64>| BenchRow {
            scenario: scenario.into(),
            agent_steps_per_s: runs[runs.len() / 2],
            runs_agent_steps_per_s: runs,
            ..row_with_areas(steering, Vec::new())
        };
        let rows = [
            row("a", Steering::Crowdfield, vec![100.0, 200.0, 400.0]),
            // A round that timed nothing is left out of the range.
            row("a", Steering::CrowdStep, vec![0.0, 150.0, 400.0]),
            row("a", Steering::Orca, vec![300.0, 300.0, 300.0]),
            // ORCA timed no step here: no ratio, whatever crowdfield did.
            row("b", Steering::Crowdfield, vec![100.0]),
            row("b", Steering::Orca, vec![0.0]),
            // No ORCA row: no line.
            row("c", Steering::Crowdfield, vec![f64::NAN]),
        ];
        let ratios = speed_ratios(&rows);
        assert_eq!(ratios.len(), 2);
        let (name, plugin, crowd) = &ratios[0];
        assert_eq!(name, "a");
        assert_eq!(
            *plugin,
            Some(SpeedRatio {
                median: 1.5,
                rounds: (0.75, 3.0)
            })
        );
        assert_eq!(
            *crowd,
            Some(SpeedRatio {
                median: 2.0,
                rounds: (0.75, 2.0)
            })
        );
        assert_eq!(ratios[1], ("b".to_string(), None, None));
        let table = markdown(&rows);
        assert!(
            table.contains("| a | 1.50 (0.75–3.00) | 2.00 (0.75–2.00) | no |"),
            "{table}"
        );
        assert!(table.contains("| b | – | – | – |"), "{table}");
    }

    /// A `|` in a measurement's name does not split the Markdown table's cell.
    #[test]
    fn measurement_names_stay_in_their_cell() {
        let row = row_with_areas(Steering::Seek, vec![crate::measure::empty_area("in|out")]);
        let table = markdown(&[row]);
        let line = table.lines().last().unwrap();
        // Four cells: five bars that are not escaped.
        let bars = line
            .char_indices()
            .filter(|&(i, c)| c == '|' && !line[..i].ends_with('\\'))
            .count();
        assert_eq!(bars, 5, "{table}");
    }

    /// One diagram per area and scenario; names a file cannot hold become `-`, an unnamed
    /// area is numbered, and two names that come out alike do not overwrite each other.
    #[test]
    fn diagrams_get_a_file_each() {
        let area = crate::measure::empty_area;
        let row = row_with_areas(
            Steering::Crowdfield,
            vec![area("a b"), area("a/b"), area("a-b-1"), area("")],
        );
        let dir = std::env::temp_dir().join(format!("crowdfield-diagrams-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let written = write_fundamental_diagrams(&dir, &[row.clone(), row]).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["s-a-b.png", "s-a-b-1.png", "s-a-b-1-2.png", "s-area3.png"]
        );
        assert!(written.iter().all(|p| p.exists()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_median_is_the_middle_run() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0]), 3.0);
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), 3.0);
    }
}
