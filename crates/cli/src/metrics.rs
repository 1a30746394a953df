//! Crowd measurements taken after every planner step: arrivals and time to goal, path length,
//! agent–agent and agent–wall overlaps with their deepest penetration, planner time.

use std::collections::HashMap;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use serde::Serialize;

use crate::Sample;

/// Penetration (metres) below which touching discs do not count as an overlap: the collision
/// guard keeps agents at contact, and contact in floating point can read as a few nanometres.
pub const OVERLAP_TOLERANCE: f64 = 1e-6;

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
    /// Agents the plugin rejected (bad style or start).
    pub rejected: usize,
    /// Agents that reached their last goal.
    pub arrived: usize,
    /// `arrived / (agents − not_placed)`.
    pub arrival_fraction: f64,
    /// Mean time to reach the last goal over the agents that did.
    pub time_to_goal_mean_s: Option<f64>,
    /// Longest time to reach the last goal.
    pub time_to_goal_max_s: Option<f64>,
    /// Mean length walked per agent.
    pub path_length_mean_m: f64,
    /// Agent pairs whose discs overlapped, summed over steps.
    pub agent_overlaps: usize,
    /// Deepest agent–agent penetration.
    pub agent_overlap_max_m: f64,
    /// Agents whose disc reached into a static obstacle, summed over steps.
    pub wall_overlaps: usize,
    /// Deepest agent–obstacle penetration.
    pub wall_overlap_max_m: f64,
    /// Mean planner time per step (wall clock, this machine).
    pub planner_ms_mean: f64,
    /// Longest planner step.
    pub planner_ms_max: f64,
}

#[derive(Debug, Clone, Default)]
struct Track {
    last: Option<Vec2>,
    walked: f64,
    arrived_at: Option<u64>,
    rejected: bool,
}

/// Collects the measurements step by step.
pub(crate) struct Recorder {
    agents: Vec<Entity>,
    tracks: Vec<Track>,
    period: f64,
    steps: u64,
    agent_overlaps: usize,
    agent_overlap_max: f64,
    wall_overlaps: usize,
    wall_overlap_max: f64,
    planner_ms: Vec<f64>,
}

impl Recorder {
    pub(crate) fn new(agents: &[Entity], period: f64) -> Self {
        Self {
            agents: agents.to_vec(),
            tracks: vec![Track::default(); agents.len()],
            period,
            steps: 0,
            agent_overlaps: 0,
            agent_overlap_max: 0.0,
            wall_overlaps: 0,
            wall_overlap_max: 0.0,
            planner_ms: Vec::new(),
        }
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
        let states: HashMap<Entity, AgentState> = world
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
        let mut walking = 0;
        let mut discs: Vec<(DVec2, f64)> = Vec::with_capacity(self.agents.len());
        for (index, entity) in self.agents.iter().enumerate() {
            let track = &mut self.tracks[index];
            if track.arrived_at.is_some() || track.rejected {
                if let Some(agent) = crowd_world.agent_id(*entity).and_then(|id| crowd.agent(id)) {
                    discs.push((agent.position(), agent.params().radius));
                }
                continue;
            }
            let Some(state) = states.get(entity).copied() else {
                // Gone: agents leave the world only by arriving with `then_despawn`.
                track.arrived_at = Some(step);
                continue;
            };
            match state {
                AgentState::Rejected => {
                    track.rejected = true;
                    continue;
                }
                AgentState::Arrived => track.arrived_at = Some(step),
                _ => walking += 1,
            }
            let Some(agent) = crowd_world.agent_id(*entity).and_then(|id| crowd.agent(id)) else {
                continue;
            };
            let p = agent.position();
            let at = p.as_vec2();
            if let Some(last) = track.last {
                track.walked += last.distance(at) as f64;
            }
            track.last = Some(at);
            discs.push((p, agent.params().radius));
            trajectories.push(Sample {
                step,
                agent: index,
                position: at,
                state,
            });
        }
        self.measure_overlaps(&discs, crowd.statics());
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

    pub(crate) fn finish(self, scenario: &Scenario, not_placed: usize) -> Metrics {
        let asked = scenario.agents.len() + scenario.regions.iter().map(|r| r.count).sum::<usize>();
        let times: Vec<f64> = self
            .tracks
            .iter()
            .filter_map(|t| t.arrived_at)
            .map(|s| s as f64 * self.period)
            .collect();
        let placed = asked.saturating_sub(not_placed);
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let walked: Vec<f64> = self.tracks.iter().map(|t| t.walked).collect();
        Metrics {
            scenario: scenario.name.clone(),
            steps: self.steps,
            planner_period_s: self.period,
            agents: asked,
            not_placed,
            rejected: self.tracks.iter().filter(|t| t.rejected).count(),
            arrived: times.len(),
            arrival_fraction: if placed == 0 {
                0.0
            } else {
                times.len() as f64 / placed as f64
            },
            time_to_goal_mean_s: mean(&times),
            time_to_goal_max_s: times.iter().copied().reduce(f64::max),
            path_length_mean_m: mean(&walked).unwrap_or(0.0),
            agent_overlaps: self.agent_overlaps,
            agent_overlap_max_m: self.agent_overlap_max,
            wall_overlaps: self.wall_overlaps,
            wall_overlap_max_m: self.wall_overlap_max,
            planner_ms_mean: mean(&self.planner_ms).unwrap_or(0.0),
            planner_ms_max: self.planner_ms.iter().copied().fold(0.0, f64::max),
        }
    }
}
