//! Crowd measurements taken after every planner step: arrivals and time to goal, path length
//! and its ratio to the shortest obstacle-free path, SteerSuite's PLE effort, agent–agent and
//! agent–wall overlaps with their deepest penetration, planner time, and the quality of the
//! global maps (residual, interior local minima).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;
use bevy_crowdfield::field::{Bias, CellKind, Field, GridGeometry};
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::steer::{AgentId, Crowd, GoalId, SteerError};
use rayon::prelude::*;
use serde::Serialize;

use crate::measure::{AreaReport, LineReport, Measurer, Observed};
use crate::{RowState, Sample};

/// SteerSuite's PLE effort rate per kilogram: e_s + e_w·|v|² with e_s = 2.23 J/(kg·s) and
/// e_w = 1.26 J·s/(kg·m²) (SteerSuite's values; docs/references.md), for an agent of mass 1.
pub const PLE_STANDING: f64 = 2.23;
/// See [`PLE_STANDING`].
pub const PLE_WALKING: f64 = 1.26;

/// Penetration (metres) below which touching discs do not count as an overlap: the collision
/// guard keeps agents at contact, and contact in floating point can read as a few nanometres.
/// The crowd's own [`CONTACT_TOLERANCE`](bevy_crowdfield::steer::CONTACT_TOLERANCE), which spawning
/// uses too.
pub const OVERLAP_TOLERANCE: f64 = bevy_crowdfield::steer::CONTACT_TOLERANCE;

/// Most rejected agents a report names one by one (the run's standard error, the bench's
/// Markdown); the rest are counted, and metrics.json and bench.json list them all.
pub const REJECTIONS_LISTED: usize = 10;

/// What a run measured. Times in seconds, lengths in metres.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// The scenario's name.
    pub scenario: String,
    /// Planner steps run.
    pub steps: u64,
    /// Seconds per planner step.
    pub planner_period_s: f64,
    /// Agents the scenario asked for.
    pub agents: usize,
    /// Agents a region could not place (too full).
    pub not_placed: usize,
    /// Agents the plugin rejected (bad style or start), with a target or without;
    /// [`Metrics::rejections`] says why.
    pub rejected: usize,
    /// Agents with no route to their goal when the run ended (state `Unreachable`: they hold
    /// their place and check again every step). An `--until-arrived` run does not wait for those
    /// with no goal time limit, which nothing in a headless run can free.
    pub unreachable: usize,
    /// Agents still on their way when the run ended that had made no progress for the crowd's
    /// `stuck_after` steps (state `Stuck`: towards their goal, so a walker circling
    /// round a goal it cannot get into is stuck however far it walks; see
    /// [`CrowdSettings::stuck_after`](bevy_crowdfield::steer::CrowdSettings::stuck_after)).
    pub stuck: usize,
    /// Agents with no target at all that the plugin took: they stand where they were placed,
    /// obstacles for the others (the ambush's pocket of people), and take no part in the
    /// arrival, time, path and effort figures below. One it rejected counts as rejected. Group
    /// members count here too: their group walks, and its figures are in `groups`.
    pub standing: usize,
    /// Agents that reached their last goal.
    pub arrived: usize,
    /// Agents that gave up their last goal when its time limit ran out (not arrived).
    pub timed_out: usize,
    /// `arrived` over [`Metrics::walkers`].
    pub arrival_fraction: f64,
    /// Mean time to reach the last goal over the agents that did.
    pub time_to_goal_mean_s: Option<f64>,
    /// Longest time to reach the last goal.
    pub time_to_goal_max_s: Option<f64>,
    /// Mean length walked per agent with a target and not rejected.
    pub path_length_mean_m: f64,
    /// Mean over arrived agents of the length walked divided by the shortest obstacle-free
    /// path through the same goals (geodesic on the global grid, 8-connected, no corner
    /// cutting); 1 is optimal.
    pub path_length_ratio_mean: Option<f64>,
    /// Mean over agents with a target and not rejected of SteerSuite's PLE effort
    /// Σ (e_s + e_w·|v|²)·Δt until arrival (joules per kilogram).
    pub effort_mean: f64,
    /// Agent pairs whose discs overlapped, summed over steps.
    pub agent_overlaps: usize,
    /// Deepest agent–agent penetration.
    pub agent_overlap_max_m: f64,
    /// Agents whose disc reached into a static obstacle, summed over steps.
    pub wall_overlaps: usize,
    /// Deepest agent–obstacle penetration.
    pub wall_overlap_max_m: f64,
    /// Mean planner time per step (wall clock, this machine), over the steps after the first
    /// (all of them in a one-step run): the first registers the scenario's agents and solves
    /// their goals' global maps, which would swamp a small crowd's steps (`planner_first_ms`).
    pub planner_ms_mean: f64,
    /// The first planner step's time: registering the agents and solving their goals' global
    /// maps (and any sub-goal fields their starts need) besides planning the step.
    pub planner_first_ms: f64,
    /// Longest planner step, the first included.
    pub planner_ms_max: f64,
    /// Agents planning per second of planner time, steps after the first (whose time goes
    /// mostly to solving the global maps).
    pub agent_steps_per_s: Option<f64>,
    /// Largest residual of a global map at the end (the largest change a Jacobi update would
    /// make to a free cell).
    pub field_residual_max: f64,
    /// Interior local minima summed over the global maps at the end, counting only those
    /// deeper than their map's residual (0 for a correct solve: in regions where p is within
    /// round-off of 1, cells a few ulps below their neighbours are solver noise, not minima).
    pub field_local_minima: usize,
    /// Why each rejected agent was rejected, in the scenario's agent order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejections: Vec<Rejection>,
    /// The fundamental diagram in each of the scenario's measurement areas.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub areas: Vec<AreaReport>,
    /// The flow through each of the scenario's measurement lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineReport>,
    /// Each of the scenario's groups, over the run (`groups.csv` has every step).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupSummary>,
}

/// One group over a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    /// The group's index in the scenario's `groups`.
    pub group: usize,
    /// The first step its map stood in its goal, if it did.
    pub arrived_step: Option<u64>,
    /// Mean and largest formation error over the steps it was formed.
    pub formation_error_mean: f64,
    /// Largest formation error.
    pub formation_error_max: f64,
    /// Formation error after the last step.
    pub formation_error_last: f64,
    /// Largest cohesion (the farthest member from the centroid over the map's half size).
    pub cohesion_max: f64,
    /// Most connected parts at once (1: it never split).
    pub parts_max: usize,
    /// Connected parts after the last step.
    pub parts_last: usize,
}

/// Each group's [`GroupSummary`] from the run's samples (`groups` groups in the scenario; a
/// group never formed is left out).
pub fn group_summaries(samples: &[crate::GroupSample], groups: usize) -> Vec<GroupSummary> {
    (0..groups)
        .filter_map(|g| {
            let mine: Vec<&crate::GroupSample> = samples.iter().filter(|s| s.group == g).collect();
            let last = mine.last()?;
            let n = mine.len() as f64;
            Some(GroupSummary {
                group: g,
                arrived_step: mine.iter().find(|s| s.arrived).map(|s| s.step),
                formation_error_mean: mine.iter().map(|s| s.formation_error).sum::<f64>() / n,
                formation_error_max: mine.iter().map(|s| s.formation_error).fold(0.0, f64::max),
                formation_error_last: last.formation_error,
                cohesion_max: mine.iter().map(|s| s.cohesion).fold(0.0, f64::max),
                parts_max: mine.iter().map(|s| s.parts).max().unwrap_or(0),
                parts_last: last.parts,
            })
        })
        .collect()
}

impl Metrics {
    /// Agents placed with somewhere to go, or rejected: `agents − not_placed − standing` (the
    /// rejected ones count as not arrived, whether or not they had a target: the scenario asked
    /// for an agent the plugin refused).
    pub fn walkers(&self) -> usize {
        self.agents
            .saturating_sub(self.not_placed)
            .saturating_sub(self.standing)
    }
}

/// An agent the plugin rejected, and why (its `AgentRejected` message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejection {
    /// The agent's index in the scenario (single agents first, then each region's).
    pub agent: usize,
    /// The error the plugin gave.
    pub reason: String,
}

/// What a report says of `rejections`: `agent 3 was rejected: REASON` for each of the first
/// [`REJECTIONS_LISTED`], then `N more agents rejected (LISTED_IN lists them all)`.
pub fn rejection_lines(rejections: &[Rejection], listed_in: &str) -> Vec<String> {
    let mut lines: Vec<String> = rejections
        .iter()
        .take(REJECTIONS_LISTED)
        .map(|r| format!("agent {} was rejected: {}", r.agent, r.reason))
        .collect();
    if rejections.len() > REJECTIONS_LISTED {
        lines.push(format!(
            "{} rejected ({listed_in} lists them all)",
            crate::counted(rejections.len() - REJECTIONS_LISTED, "more agent")
        ));
    }
    lines
}

/// How an agent's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// Reached its last goal.
    Arrived,
    /// Gave up its last goal when the goal's time limit ran out.
    TimedOut,
    /// Had no route to its goal when the run ended.
    Unreachable,
    /// Still on its way when the run ended (the step cap, or `--steps`).
    Walking,
    /// Still on its way when the run ended, but with no progress for the crowd's `stuck_after`
    /// steps ([`Metrics::stuck`]).
    Stuck,
    /// Rejected by the plugin ([`Metrics::rejections`] says why).
    Rejected,
    /// Had no target: stood where it was placed.
    Standing,
}

/// One agent's own figures, a row of `agents.csv`; [`Metrics`] gives their means over the
/// walkers. Figures a metric leaves out for the agent (a standing or rejected agent's path and
/// effort, the time and path ratio of one that did not arrive) are `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentRecord {
    /// The agent's index in the scenario (single agents first, then each region's).
    pub agent: usize,
    /// How its run ended.
    pub outcome: Outcome,
    /// Time to reach its last goal, seconds.
    pub time_to_goal_s: Option<f64>,
    /// Length walked from its start, metres.
    pub path_length_m: Option<f64>,
    /// The shortest obstacle-free length through the same goals from the same leg starts (see
    /// [`Metrics::path_length_ratio_mean`]), metres, for an agent that arrived.
    pub shortest_path_m: Option<f64>,
    /// SteerSuite's PLE effort until arrival or the end, joules per kilogram.
    pub effort: Option<f64>,
}

impl AgentRecord {
    /// Walked over shortest length, for an agent that arrived where a shortest path exists.
    pub fn path_length_ratio(&self) -> Option<f64> {
        Some(self.path_length_m? / self.shortest_path_m?)
    }
}

/// The per-agent table as CSV: `agent,outcome,time_to_goal_s,path_length_m,shortest_path_m,
/// path_ratio,effort_j_per_kg`, an empty cell where a figure does not apply.
pub fn agents_csv(records: &[AgentRecord]) -> String {
    let cell = |v: Option<f64>, digits: usize| v.map_or(String::new(), |v| format!("{v:.digits$}"));
    let mut out = String::from(
        "agent,outcome,time_to_goal_s,path_length_m,shortest_path_m,path_ratio,effort_j_per_kg\n",
    );
    for r in records {
        out.push_str(&format!(
            "{},{:?},{},{},{},{},{}\n",
            r.agent,
            r.outcome,
            cell(r.time_to_goal_s, 4),
            cell(r.path_length_m, 4),
            cell(r.shortest_path_m, 4),
            cell(r.path_length_ratio(), 4),
            cell(r.effort, 3),
        ));
    }
    out
}

#[derive(Debug, Clone, Default)]
struct Track {
    /// Where the agent was spawned, read before the first step (`None` where it had no
    /// Transform).
    spawned_at: Option<Vec2>,
    /// The last position observed.
    last_exact: Option<DVec2>,
    /// Length walked since the start position (the first step included).
    walked: f64,
    arrived_at: Option<u64>,
    rejected: bool,
    /// Has no target: stands for the whole run.
    standing: bool,
    /// Has a goal time limit, which can move it on while it has no route.
    timed: bool,
    /// The first reason the plugin gave for rejecting the agent.
    rejection: Option<String>,
    /// In the `Unreachable` state at the last step observed.
    unreachable: bool,
    /// In the `Stuck` state at the last step observed.
    stuck: bool,
    effort: f64,
    /// The agent's crowd id and goal count, once seen in the crowd.
    id: Option<(AgentId, usize)>,
    /// Its radius, once seen in the crowd.
    radius: f64,
    /// Gave up its last goal (time limit).
    gave_up: bool,
    /// Where each leg (one goal of the queue) started and its goal.
    legs: Vec<(DVec2, GoalId)>,
    goal_index: Option<usize>,
}

/// Collects the measurements step by step.
pub(crate) struct Recorder {
    agents: Vec<Entity>,
    /// Each agent's index in `agents` (the scenario's order).
    index: EntityHashMap<usize>,
    tracks: Vec<Track>,
    period: f64,
    steps: u64,
    agent_overlaps: usize,
    agent_overlap_max: f64,
    wall_overlaps: usize,
    wall_overlap_max: f64,
    planner_ms: Vec<f64>,
    /// Agents still walking after each step.
    walking: Vec<usize>,
    /// Of the agents walking after the last step, those with no route to their goal and no
    /// goal time limit.
    stranded: usize,
    /// Shortest-path distance fields of the goals met so far, with their grids.
    geodesics: HashMap<GoalId, (GridGeometry, Vec<f64>)>,
    field_residual_max: f64,
    field_local_minima: usize,
    measurer: Measurer,
}

impl Recorder {
    /// A recorder of `agents`, spawned at `spawned_at`, those of them `standing` (with no
    /// target) left out of the walkers' figures, those `timed` with a goal time limit.
    pub(crate) fn new(
        agents: &[Entity],
        spawned_at: &[Option<Vec2>],
        standing: &[bool],
        timed: &[bool],
        period: f64,
        measurer: Measurer,
    ) -> Self {
        Self {
            agents: agents.to_vec(),
            index: agents.iter().enumerate().map(|(i, e)| (*e, i)).collect(),
            tracks: standing
                .iter()
                .zip(timed)
                .zip(spawned_at)
                .map(|((&standing, &timed), &spawned_at)| Track {
                    spawned_at,
                    standing,
                    timed,
                    ..Default::default()
                })
                .collect(),
            stranded: 0,
            period,
            steps: 0,
            agent_overlaps: 0,
            agent_overlap_max: 0.0,
            wall_overlaps: 0,
            wall_overlap_max: 0.0,
            planner_ms: Vec::new(),
            walking: Vec::new(),
            geodesics: HashMap::new(),
            field_residual_max: 0.0,
            field_local_minima: 0,
            measurer,
        }
    }

    /// Notes why the plugin rejected an agent (its first reason is kept). Where the error names
    /// another agent (by the crowd's id, which follows the plugin's registration order, not the
    /// file), the reason names that agent's index in the scenario instead, in the error's words.
    pub(crate) fn reject(&mut self, rejected: &AgentRejected) {
        let Some(&i) = self.index.get(&rejected.entity) else {
            return;
        };
        let other = rejected.other.and_then(|e| self.index.get(&e));
        let reason = match (&rejected.error, other) {
            (SteerError::OverlapsAgent { x, y, .. }, Some(index)) => {
                format!("agent at ({x}, {y}) overlaps agent {index}")
            }
            (error, _) => error.to_string(),
        };
        self.tracks[i].rejection.get_or_insert(reason);
    }

    /// Reads the crowd after a step, appends trajectory rows and returns how many agents are
    /// still on their way.
    pub(crate) fn observe(
        &mut self,
        world: &mut World,
        step: u64,
        trajectories: &mut Vec<Sample>,
    ) -> usize {
        self.steps = step;
        let states: EntityHashMap<AgentState> = world
            .query_filtered::<(Entity, &AgentState), With<CrowdAgent>>()
            .iter(world)
            .map(|(e, s)| (e, *s))
            .collect();
        let crowd_world = world.resource::<CrowdWorld>();
        self.planner_ms
            .push(crowd_world.last_step_time().as_secs_f64() * 1e3);
        let Some(crowd) = crowd_world.crowd() else {
            return self.agents.len();
        };
        let timed_out = &crowd_world.last_report().timed_out;
        let removed = &crowd_world.last_report().removed;
        let mut walking = 0;
        self.stranded = 0;
        let mut discs: Vec<(DVec2, f64)> = Vec::with_capacity(self.agents.len());
        let mut observed: Vec<Observed> = Vec::with_capacity(self.agents.len());
        // Where agents seen for the first time started, one step earlier: before this step's
        // samples, so that the table stays in step order.
        let mut starts: Vec<Sample> = Vec::new();
        let mut samples: Vec<Sample> = Vec::with_capacity(self.agents.len());
        for (index, entity) in self.agents.iter().enumerate() {
            let track = &mut self.tracks[index];
            let agent = crowd_world
                .agent_id(*entity)
                .and_then(|id| crowd.agent(id).map(|a| (id, a)));
            if track.arrived_at.is_some() || track.rejected || track.gave_up {
                // Done in an earlier step; one that stopped still stands in the crowd, and has
                // a row where it stands, as the measurements count it.
                if let Some((_, agent)) = agent {
                    // One settling into its goal (`ArrivalAction::Settle`) still moves.
                    let position = agent.position();
                    discs.push((position, agent.params().radius));
                    observed.push(Observed {
                        previous: track.last_exact.unwrap_or(position),
                        position,
                    });
                    track.last_exact = Some(position);
                    let state = if track.gave_up {
                        Some(RowState::TimedOut)
                    } else {
                        states.get(entity).copied().and_then(RowState::from_agent)
                    };
                    if let Some(state) = state {
                        samples.push(Sample {
                            step,
                            agent: index,
                            position: agent.position().as_vec2(),
                            state,
                        });
                    }
                }
                continue;
            }
            // A walker that left the crowd in this step (its goals ended and it asked to
            // leave): the plugin has despawned it, and the step's report says where it left.
            let state = states.get(entity).copied();
            let left = state
                .is_none()
                .then_some(track.id)
                .flatten()
                .and_then(|(id, _)| removed.iter().find(|(r, _)| *r == id))
                .map(|(_, p)| *p);
            let Some(state) = state.or(left.map(|_| AgentState::Arrived)) else {
                // Gone before it was ever seen: it left in the run's first step (agents leave
                // the world only by arriving with `then_despawn`), from inside its goal where
                // it was spawned. Its rows: the start, and where it left.
                track.arrived_at = Some(step);
                if let Some(position) = track.spawned_at {
                    let row = |step, state| Sample {
                        step,
                        agent: index,
                        position,
                        state,
                    };
                    starts.push(row(step.saturating_sub(1), RowState::Pending));
                    samples.push(row(step, RowState::Arrived));
                }
                continue;
            };
            let Some(mut row_state) = RowState::from_agent(state) else {
                // Rejected: it has no rows.
                track.rejected = true;
                continue;
            };
            track.unreachable = state == AgentState::Unreachable;
            track.stuck = state == AgentState::Stuck;
            let gave_up = track.id.is_some_and(|(id, goals)| {
                timed_out.iter().any(|(a, g)| *a == id && g + 1 >= goals)
            });
            if gave_up {
                // The plugin stops it as arrived; its row says why it stopped.
                track.gave_up = true;
                row_state = RowState::TimedOut;
            } else if state == AgentState::Arrived {
                track.arrived_at = Some(step);
            } else if !track.standing {
                // (A group member has no target of its own and is not a walker: its group's
                // arrival is counted in `groups`.)
                walking += 1;
                if track.unreachable && !track.timed {
                    self.stranded += 1;
                }
            }
            // Where it stands now, and where it stood before this step.
            let (p, previous) = match (agent, left) {
                (Some((id, agent)), _) => {
                    track.id = Some((id, agent.params().goals.len()));
                    track.radius = agent.params().radius;
                    let previous = track.last_exact.unwrap_or(agent.params().position);
                    if track.goal_index != Some(agent.goal_index()) {
                        let start = if track.goal_index.is_none() {
                            agent.params().position
                        } else {
                            previous
                        };
                        if let Some(goal) = agent.params().goals.get(agent.goal_index()) {
                            track.legs.push((start, *goal));
                        }
                        track.goal_index = Some(agent.goal_index());
                    }
                    (agent.position(), previous)
                }
                // `left` is found only through an id, set with the first position.
                (None, Some(left)) => (left, track.last_exact.unwrap_or(left)),
                (None, None) => continue,
            };
            let speed = (p - previous).length() / self.period;
            track.effort += (PLE_STANDING + PLE_WALKING * speed * speed) * self.period;
            track.walked += (p - previous).length();
            if track.last_exact.is_none() {
                starts.push(Sample {
                    step: step.saturating_sub(1),
                    agent: index,
                    position: previous.as_vec2(),
                    state: RowState::Pending,
                });
            }
            track.last_exact = Some(p);
            // One that left is out of the world after the step, as the bench's walkers are.
            if left.is_none() {
                discs.push((p, track.radius));
            }
            observed.push(Observed {
                previous,
                position: p,
            });
            samples.push(Sample {
                step,
                agent: index,
                position: p.as_vec2(),
                state: row_state,
            });
        }
        trajectories.append(&mut starts);
        trajectories.append(&mut samples);
        self.measure_overlaps(&discs, crowd.statics());
        self.measurer.observe(step, &observed);
        self.walking.push(walking);
        walking
    }

    fn measure_overlaps(&mut self, discs: &[(DVec2, f64)], statics: &[Shape]) {
        // Pairs through a uniform grid with cells as wide as the widest pair of discs.
        let widest = discs.iter().map(|(_, r)| *r).fold(0.0, f64::max) * 2.0;
        let cell = widest.max(0.1);
        let key = |p: DVec2| ((p.x / cell).floor() as i64, (p.y / cell).floor() as i64);
        let mut grid: HashMap<(i64, i64), Vec<usize>> = HashMap::new();
        for (i, (p, _)) in discs.iter().enumerate() {
            grid.entry(key(*p)).or_default().push(i);
        }
        for (i, (p, r)) in discs.iter().enumerate() {
            let (cx, cy) = key(*p);
            for dx in -1..=1 {
                for dy in -1..=1 {
                    let Some(cell) = grid.get(&(cx + dx, cy + dy)) else {
                        continue;
                    };
                    for &j in cell.iter().filter(|&&j| j > i) {
                        let (q, s) = discs[j];
                        let depth = r + s - p.distance(q);
                        if depth > OVERLAP_TOLERANCE {
                            self.agent_overlaps += 1;
                            self.agent_overlap_max = self.agent_overlap_max.max(depth);
                        }
                    }
                }
            }
            for shape in statics {
                if let Ok(d) = shape.distance(*p) {
                    let depth = r - d;
                    if depth > OVERLAP_TOLERANCE {
                        self.wall_overlaps += 1;
                        self.wall_overlap_max = self.wall_overlap_max.max(depth);
                    }
                }
            }
        }
    }

    /// Measures the global maps and the shortest paths once the run is over.
    pub(crate) fn survey(&mut self, crowd: &Crowd) {
        let mut goal = 0;
        while let Some(g) = crowd.goal(GoalId(goal)) {
            let map = g.map();
            let residual = map.residual(&Bias::HARMONIC);
            self.field_residual_max = self.field_residual_max.max(residual);
            self.field_local_minima += deep_minima(map, residual);
            goal += 1;
        }
        let legs = self
            .tracks
            .iter()
            .flat_map(|t| t.legs.iter().map(|(_, g)| *g));
        for (goal, distances) in geodesic_fields(crowd, legs) {
            if let Some(g) = crowd.goal(goal) {
                self.geodesics
                    .insert(goal, (*g.map().geometry(), distances));
            }
        }
    }

    /// The shortest obstacle-free length of `track`'s legs, if every leg's start is connected
    /// to its goal.
    fn shortest(&self, track: &Track) -> Option<f64> {
        let mut total = 0.0;
        for (start, goal) in &track.legs {
            let (geometry, distances) = self.geodesics.get(goal)?;
            let c = geometry.world_to_cell(*start);
            if !geometry.contains_cell(c) {
                return None;
            }
            total += distances[geometry.index(c.x as usize, c.y as usize)];
        }
        (total.is_finite() && total > 0.0).then_some(total)
    }

    /// Of the agents walking after the last step observed, those with no route to their goal
    /// and no goal time limit to move them on.
    pub(crate) fn stranded(&self) -> usize {
        self.stranded
    }

    /// Every agent's own figures, in the scenario's order, with the exclusions [`Metrics`]
    /// makes.
    fn records(&self) -> Vec<AgentRecord> {
        self.tracks
            .iter()
            .enumerate()
            .map(|(agent, t)| {
                // A rejected agent is counted as rejected whether or not it had a target.
                let outcome = if t.rejected {
                    Outcome::Rejected
                } else if t.standing {
                    Outcome::Standing
                } else if t.arrived_at.is_some() {
                    Outcome::Arrived
                } else if t.gave_up {
                    Outcome::TimedOut
                } else if t.unreachable {
                    Outcome::Unreachable
                } else if t.stuck {
                    Outcome::Stuck
                } else {
                    Outcome::Walking
                };
                let walker = !matches!(outcome, Outcome::Standing | Outcome::Rejected);
                let arrived = outcome == Outcome::Arrived;
                AgentRecord {
                    agent,
                    outcome,
                    time_to_goal_s: t
                        .arrived_at
                        .filter(|_| arrived)
                        .map(|s| s as f64 * self.period),
                    path_length_m: walker.then_some(t.walked),
                    shortest_path_m: if arrived { self.shortest(t) } else { None },
                    effort: walker.then_some(t.effort),
                }
            })
            .collect()
    }

    /// The run's measurements, and every agent's own figures ([`Self::records`]), from which
    /// the metrics' counts and means are taken.
    pub(crate) fn finish(
        self,
        scenario: &Scenario,
        not_placed: usize,
    ) -> (Metrics, Vec<AgentRecord>) {
        // Group members count as agents, standing ones (their group walks, not they: the
        // group's figures are in `groups`).
        let asked = scenario.agents.len()
            + scenario.regions.iter().map(|r| r.count).sum::<usize>()
            + scenario
                .groups
                .iter()
                .map(|g| g.members.len())
                .sum::<usize>();
        let records = self.records();
        let count = |o: Outcome| records.iter().filter(|r| r.outcome == o).count();
        let figures = |f: fn(&AgentRecord) -> Option<f64>| -> Vec<f64> {
            records.iter().filter_map(f).collect()
        };
        let times = figures(|r| r.time_to_goal_s);
        let walked = figures(|r| r.path_length_m);
        let ratios = figures(AgentRecord::path_length_ratio);
        let efforts = figures(|r| r.effort);
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let (areas, lines) = self.measurer.finish();
        // The first step registers the agents and solves their goals' global maps.
        let steady_steps = match self.planner_ms.as_slice() {
            [_, rest @ ..] if !rest.is_empty() => rest,
            all => all,
        };
        let mut metrics = Metrics {
            scenario: scenario.name.clone(),
            steps: self.steps,
            planner_period_s: self.period,
            agents: asked,
            not_placed,
            standing: count(Outcome::Standing),
            rejected: count(Outcome::Rejected),
            unreachable: count(Outcome::Unreachable),
            stuck: count(Outcome::Stuck),
            timed_out: count(Outcome::TimedOut),
            arrived: count(Outcome::Arrived),
            // Set below, over the walkers.
            arrival_fraction: 0.0,
            time_to_goal_mean_s: mean(&times),
            time_to_goal_max_s: times.iter().copied().reduce(f64::max),
            path_length_mean_m: mean(&walked).unwrap_or(0.0),
            path_length_ratio_mean: mean(&ratios),
            effort_mean: mean(&efforts).unwrap_or(0.0),
            agent_overlaps: self.agent_overlaps,
            agent_overlap_max_m: self.agent_overlap_max,
            wall_overlaps: self.wall_overlaps,
            wall_overlap_max_m: self.wall_overlap_max,
            planner_ms_mean: mean(steady_steps).unwrap_or(0.0),
            planner_first_ms: self.planner_ms.first().copied().unwrap_or(0.0),
            planner_ms_max: self.planner_ms.iter().copied().fold(0.0, f64::max),
            agent_steps_per_s: {
                // Agents that planned in step k are those walking after step k − 1.
                let planned: usize = self.walking.iter().rev().skip(1).sum();
                let seconds: f64 = self.planner_ms.iter().skip(1).sum::<f64>() * 1e-3;
                (seconds > 0.0 && planned > 0).then(|| planned as f64 / seconds)
            },
            field_residual_max: self.field_residual_max,
            field_local_minima: self.field_local_minima,
            rejections: self
                .tracks
                .iter()
                .enumerate()
                .filter(|(_, t)| t.rejected)
                .map(|(agent, t)| Rejection {
                    agent,
                    reason: t
                        .rejection
                        .clone()
                        .unwrap_or_else(|| "no reason given".into()),
                })
                .collect(),
            areas,
            lines,
            groups: Vec::new(),
        };
        let walkers = metrics.walkers();
        if walkers > 0 {
            metrics.arrival_fraction = metrics.arrived as f64 / walkers as f64;
        }
        (metrics, records)
    }
}

/// Shortest obstacle-free distance (metres) from every cell of `map` to its goal cells: Dijkstra
/// over free and goal cells, 8-connected, diagonal steps only where both side cells are open (no
/// corner cutting). Cells with no route get infinity.
///
/// Step costs are whole micrometres (a cell and a diagonal rounded once), so the sums are exact
/// integers and every cell's distance is the unique shortest one, whatever order ties are taken
/// in. Sums saturate: a route longer than `u64::MAX` micrometres (1.8 × 10¹³ m) reads as none. The
/// search runs over flat arrays indexed by cell rather than through a generic graph search: the
/// concentric circles of 500 ask for 500 fields of 33,124 cells each, which took 5.6 s through
/// `pathfinding`'s hashed `dijkstra_all` (a test compares the two).
pub fn geodesic_distances(map: &Field<f64>) -> Vec<f64> {
    let g = map.geometry();
    let (w, h) = (g.width(), g.height());
    let open: Vec<bool> = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .map(|(x, y)| matches!(map.kind(x, y), Some(CellKind::Free | CellKind::Goal)))
        .collect();
    // Costs in micrometres: exact integers for the search, metres in the result.
    let unit = (g.cell_size() * 1e6).round() as u64;
    let diagonal = (g.cell_size() * std::f64::consts::SQRT_2 * 1e6).round() as u64;
    let mut best = vec![u64::MAX; w * h];
    let mut queue = BinaryHeap::new();
    for (i, cell) in best.iter_mut().enumerate() {
        if map.kind(i % w, i / w) == Some(CellKind::Goal) {
            *cell = 0;
            queue.push(Reverse((0u64, i)));
        }
    }
    let is_open = |x: usize, dx: isize, y: usize, dy: isize| -> Option<usize> {
        let (nx, ny) = (x.checked_add_signed(dx)?, y.checked_add_signed(dy)?);
        (nx < w && ny < h && open[ny * w + nx]).then_some(ny * w + nx)
    };
    while let Some(Reverse((cost, i))) = queue.pop() {
        if cost > best[i] {
            continue;
        }
        let (x, y) = (i % w, i / w);
        let mut relax = |j: usize, step: u64| {
            let through = cost.saturating_add(step);
            if through < best[j] {
                best[j] = through;
                queue.push(Reverse((through, j)));
            }
        };
        for (dx, dy) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
            if let Some(j) = is_open(x, dx, y, dy) {
                relax(j, unit);
            }
        }
        for (dx, dy) in [(1, 1), (1, -1), (-1, 1), (-1, -1)] {
            if let (Some(j), Some(_), Some(_)) = (
                is_open(x, dx, y, dy),
                is_open(x, dx, y, 0),
                is_open(x, 0, y, dy),
            ) {
                relax(j, diagonal);
            }
        }
    }
    best.into_iter()
        .map(|c| {
            if c == u64::MAX {
                f64::INFINITY
            } else {
                c as f64 * 1e-6
            }
        })
        .collect()
}

/// [`geodesic_distances`] of each of `goals` known to `crowd` (each once, however often it is
/// named), computed in parallel on the current rayon pool.
pub(crate) fn geodesic_fields(
    crowd: &Crowd,
    goals: impl IntoIterator<Item = GoalId>,
) -> HashMap<GoalId, Vec<f64>> {
    let mut wanted: Vec<GoalId> = goals.into_iter().collect();
    wanted.sort_unstable();
    wanted.dedup();
    wanted
        .into_par_iter()
        .filter_map(|g| Some((g, geodesic_distances(crowd.goal(g)?.map()))))
        .collect()
}

/// Interior local minima of `map` lying more than `tolerance` below every 4-neighbour.
fn deep_minima(map: &Field<f64>, tolerance: f64) -> usize {
    map.interior_local_minima()
        .into_iter()
        .filter(|&(x, y)| {
            let p = map.potential(x, y).unwrap_or(1.0);
            [(1i64, 0i64), (-1, 0), (0, 1), (0, -1)]
                .into_iter()
                .filter_map(|(dx, dy)| {
                    map.potential((x as i64 + dx) as usize, (y as i64 + dy) as usize)
                })
                .all(|q| q - p > tolerance)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::math::DVec2;
    use proptest::prelude::*;

    /// The same search through `pathfinding`'s generic Dijkstra, over hashed nodes.
    fn reference(map: &Field<f64>) -> Vec<f64> {
        let g = map.geometry();
        let (w, h) = (g.width() as i64, g.height() as i64);
        let open = |x: i64, y: i64| {
            x >= 0
                && y >= 0
                && x < w
                && y < h
                && matches!(
                    map.kind(x as usize, y as usize),
                    Some(CellKind::Free | CellKind::Goal)
                )
        };
        let unit = (g.cell_size() * 1e6).round() as u64;
        let diagonal = (g.cell_size() * std::f64::consts::SQRT_2 * 1e6).round() as u64;
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        enum Node {
            Source,
            Cell(i64, i64),
        }
        let goals: Vec<Node> = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .filter(|&(x, y)| map.kind(x as usize, y as usize) == Some(CellKind::Goal))
            .map(|(x, y)| Node::Cell(x, y))
            .collect();
        let reached = pathfinding::prelude::dijkstra_all(&Node::Source, |node| match *node {
            Node::Source => goals.iter().map(|n| (*n, 0)).collect::<Vec<_>>(),
            Node::Cell(x, y) => {
                let mut next = Vec::new();
                for (dx, dy) in [(1, 0), (-1, 0), (0, 1), (0, -1)] {
                    if open(x + dx, y + dy) {
                        next.push((Node::Cell(x + dx, y + dy), unit));
                    }
                }
                for (dx, dy) in [(1, 1), (1, -1), (-1, 1), (-1, -1)] {
                    if open(x + dx, y + dy) && open(x + dx, y) && open(x, y + dy) {
                        next.push((Node::Cell(x + dx, y + dy), diagonal));
                    }
                }
                next
            }
        });
        let mut out = vec![f64::INFINITY; (w * h) as usize];
        for n in &goals {
            if let Node::Cell(x, y) = n {
                out[(y * w + x) as usize] = 0.0;
            }
        }
        for (node, (_, cost)) in reached {
            if let Node::Cell(x, y) = node {
                out[(y * w + x) as usize] = cost as f64 * 1e-6;
            }
        }
        out
    }

    /// A map of `w × h` cells of `cell` metres whose cells take `kinds` row by row (0 free,
    /// 1 obstacle, 2 goal; the border included, so goals may sit on it).
    fn map_of(w: usize, h: usize, cell: f64, kinds: &[u8]) -> Field<f64> {
        let geometry = GridGeometry::new(DVec2::ZERO, cell, w, h).expect("a valid grid");
        let mut map = Field::new(geometry, 1.0);
        for y in 0..h {
            for x in 0..w {
                let done = match kinds[(y * w + x) % kinds.len()] {
                    0 if !map.geometry().is_border(x, y) => map.set_free(x, y, 1.0),
                    1 => map.set_obstacle(x, y),
                    2 => map.set_goal(x, y),
                    _ => Ok(()),
                };
                done.expect("a cell of the map");
            }
        }
        map
    }

    #[test]
    fn distances_go_round_walls_without_cutting_corners() {
        // 7 × 5 cells of 0.5 m, the goal at (1, 1); a wall at x = 3 from the bottom border to
        // the top one leaves the right side unreachable.
        #[rustfmt::skip]
        let closed = [
            1, 1, 1, 1, 1, 1, 1,
            1, 2, 0, 1, 0, 0, 1,
            1, 0, 0, 1, 0, 0, 1,
            1, 0, 0, 1, 0, 0, 1,
            1, 1, 1, 1, 1, 1, 1,
        ];
        let d = geodesic_distances(&map_of(7, 5, 0.5, &closed));
        assert_eq!(d[7 + 1], 0.0);
        assert_eq!(d[7 + 2], 0.5);
        assert_eq!(
            d[2 * 7 + 2],
            (0.5 * std::f64::consts::SQRT_2 * 1e6).round() * 1e-6
        );
        assert!(d[7 + 4].is_infinite(), "walled off: {}", d[7 + 4]);
        // Open the wall's top cell: the way round passes through it, and no diagonal cuts
        // the wall's end (from (3, 1) to (4, 2) would make (4, 2) 1.0 + 0.707 m away).
        let mut open = closed;
        open[7 + 3] = 0;
        let d = geodesic_distances(&map_of(7, 5, 0.5, &open));
        assert_eq!(d[7 + 3], 1.0);
        assert_eq!(d[7 + 4], 1.5);
        assert_eq!(d[2 * 7 + 4], 2.0);
        assert_eq!(d[3 * 7 + 4], 2.5);
        assert_eq!(d, reference(&map_of(7, 5, 0.5, &open)));
    }

    /// Cells so large that a route's micrometres leave `u64`: the first step is exact, a longer
    /// route reads as none, and nothing overflows.
    #[test]
    fn routes_too_long_to_count_read_as_none() {
        let kinds = [
            1, 1, 1, 1, 1, 1, 2, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1,
        ];
        let d = geodesic_distances(&map_of(5, 5, 1e13, &kinds));
        assert_eq!(d[5 + 1], 0.0);
        assert_eq!(d[5 + 2], 1e13);
        assert!(d[2 * 5 + 3].is_infinite(), "{}", d[2 * 5 + 3]);
    }

    /// The mean planner time leaves out the first step, which solves the global maps, and the
    /// first step is given on its own; a run of one step has only that one to average.
    #[test]
    fn the_planner_mean_leaves_the_first_step_out() {
        let scenario = Scenario {
            name: "empty".into(),
            description: String::new(),
            bounds: bevy_crowdfield::scenario::Bounds {
                min: Vec2::ZERO,
                max: Vec2::splat(10.0),
            },
            settings: Default::default(),
            obstacles: Vec::new(),
            agents: Vec::new(),
            regions: Vec::new(),
            measurements: Vec::new(),
            groups: Vec::new(),
            markers: None,
            terrain: None,
        };
        let recorder = |times: &[f64]| {
            let measurer = Measurer::new(&[], (DVec2::ZERO, DVec2::splat(10.0)), &[], 0.5);
            let mut r = Recorder::new(&[], &[], &[], &[], 0.5, measurer);
            r.planner_ms = times.to_vec();
            r.finish(&scenario, 0).0
        };
        let m = recorder(&[400.0, 1.0, 3.0]);
        assert_eq!(m.planner_ms_mean, 2.0);
        assert_eq!(m.planner_first_ms, 400.0);
        assert_eq!(m.planner_ms_max, 400.0);
        let one = recorder(&[400.0]);
        assert_eq!((one.planner_ms_mean, one.planner_first_ms), (400.0, 400.0));
        let none = recorder(&[]);
        assert_eq!((none.planner_ms_mean, none.planner_first_ms), (0.0, 0.0));
    }

    proptest! {
        #[test]
        fn flat_search_gives_the_generic_searchs_distances(
            w in 3usize..24,
            h in 3usize..24,
            cell in prop::sample::select(vec![0.25, 0.4, 0.5, 0.7, 1.3]),
            kinds in prop::collection::vec(
                prop::sample::select(vec![0u8, 0, 0, 0, 1, 1, 2]),
                1..600,
            ),
        ) {
            let map = map_of(w, h, cell, &kinds);
            let fast = geodesic_distances(&map);
            let slow = reference(&map);
            prop_assert_eq!(fast, slow);
        }
    }
}
