//! The motion phase of a step (seed 000 §3.5 and §4.4): every plan committed in agent-id order
//! through the collision guard, which shortens a displacement so that the agent keeps the sum
//! of radii from every agent's committed position and its radius from every static shape, then
//! progress, stalls and goals.

use glam::DVec2;

use crowdfield_field::CellKind;

use super::ahead::{Closer, DiscFeed};
use super::guard::{GuardScratch, Obstacles, SHAPE_GRID_MIN, ShapeGrid, guard_step};
use super::{
    AHEAD_PLANNERS, Agent, AgentGrid, AgentId, AgentState, ArrivalAction, Crowd, Goal, InFlight,
    Plan, StepReport,
};

impl Crowd {
    /// Motion: commit every plan through the collision guard in id order, then goals.
    ///
    /// For crowds of more than [`AHEAD_PLANNERS`] planners stepped from a pool thread with
    /// another thread in the pool, where the step's disc rasters were laid over static
    /// rasters, that other thread counts the next step's disc rasters meanwhile, each agent as
    /// soon as the commit has passed it ([`ahead`](super::ahead)); the next step takes them if
    /// nothing changed in between. Changes no result: the rasters are the ones the next step
    /// would count.
    pub(super) fn commit(&mut self) -> StepReport {
        let flight = *self.in_flight.take().expect("decision ran");
        self.ahead = None;
        let ahead = !flight.disc_keys.is_empty()
            && rayon::current_thread_index().is_some()
            && rayon::current_num_threads() > 1
            && flight.plans.iter().flatten().count() > AHEAD_PLANNERS;
        if !ahead {
            return self.commit_moves(flight, None);
        }
        let keys = flight.disc_keys.clone();
        let feed = DiscFeed::new(self.agents.len());
        let statics = std::mem::take(&mut self.rasters);
        let generation = self.raster_generation;
        let (report, counted) = rayon::join(
            || {
                let _closer = Closer(&feed);
                self.commit_moves(flight, Some(&feed))
            },
            || feed.count(&keys, &statics, generation),
        );
        self.rasters = statics;
        self.ahead = counted;
        report
    }

    /// Many static shapes: the collision guard finds those near a step through a grid of their
    /// boxes, built when a commit first needs it.
    pub(super) fn ensure_shape_grid(&mut self) {
        if self.shape_grid.is_none() && self.static_bounds.len() >= SHAPE_GRID_MIN {
            self.shape_grid = Some(ShapeGrid::new(
                &self.static_bounds,
                self.settings.min,
                self.settings.max,
            ));
        }
    }

    /// The commit proper; with `feed`, each agent slot is handed over in id order once final.
    fn commit_moves(&mut self, flight: InFlight, feed: Option<&DiscFeed>) -> StepReport {
        let hash = flight.hash.expect("sensing ran");
        let plans_len = flight.plans.len();
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
        self.ensure_shape_grid();
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
        let world = commit_world_of!(self, &hash, others, &late);
        // `Preset::Flow`: every move is guarded first, and those the guard shortened try
        // again once everyone has moved (a walker behind one that moves on is no longer held
        // by where that one stood); then each agent's state and goals, in id order.
        let moves = world.slides.then(|| {
            guard_twice(
                &world,
                &flight.plans,
                &self.agents,
                &mut committed,
                &mut guard,
            )
        });
        for (i, plan) in flight.plans.into_iter().enumerate() {
            commit_agent(
                &world,
                i,
                plan,
                moves.as_ref().and_then(|m| m[i]),
                &mut self.agents[i],
                &mut committed,
                &mut guard,
                &mut report,
            );
            if let Some(feed) = feed {
                feed.publish(i, self.snapshot_slot(i));
            }
        }
        if let Some(feed) = feed {
            for i in plans_len..feed.len() {
                feed.publish(i, self.snapshot_slot(i));
            }
            feed.finish();
        }
        self.step += 1;
        report
    }
}

/// What committing an agent's plan reads besides the agent (see [`commit_agent`]).
pub(super) struct CommitWorld<'a> {
    /// The snapshot's index.
    pub(super) hash: &'a AgentGrid,
    /// How far beyond where `hash` indexed it a committed disc may reach.
    pub(super) others: f64,
    /// Agents spawned during the step (not in `hash`).
    pub(super) late: &'a [usize],
    pub(super) obstacles: Obstacles<'a>,
    pub(super) goals: &'a [Option<Goal>],
    pub(super) stuck_after: u32,
    /// Whether the guard slides (`Preset::slides`).
    pub(super) slides: bool,
    /// Each slot's agent id.
    pub(super) ids: &'a [u32],
}

/// Every planning agent's guarded move ([`Preset::slides`](crate::Preset::slides)): first in
/// id order against the discs committed so far, as [`commit_agent`] guards them, then, for
/// each agent the guard shortened, the rest of its displacement from where it stopped, in id
/// order again, against everyone's committed disc. `committed` ends with every disc where it
/// moved; an agent removed during the step has none.
fn guard_twice(
    w: &CommitWorld<'_>,
    plans: &[Option<Plan>],
    agents: &[Option<Agent>],
    committed: &mut [Option<(DVec2, f64)>],
    guard: &mut GuardScratch,
) -> Vec<Option<DVec2>> {
    let mut moves: Vec<Option<DVec2>> = vec![None; plans.len()];
    let guarded =
        |i: usize, from: DVec2, by: DVec2, radius: f64, committed: &mut [_], guard: &mut _| {
            guard_step(
                from,
                by,
                radius,
                i,
                committed,
                w.hash,
                w.others,
                w.late,
                w.obstacles,
                true,
                guard,
            )
        };
    for (i, plan) in plans.iter().enumerate() {
        let Some(plan) = plan else { continue };
        let Some(agent) = &agents[i] else {
            committed[i] = None;
            continue;
        };
        if plan.unreachable {
            continue;
        }
        let radius = agent.params.radius;
        let moved = guarded(
            i,
            agent.position,
            plan.displacement,
            radius,
            committed,
            guard,
        );
        committed[i] = Some((agent.position + moved, radius));
        moves[i] = Some(moved);
    }
    for (i, plan) in plans.iter().enumerate() {
        let (Some(plan), Some(agent), Some(moved)) = (plan, &agents[i], moves[i]) else {
            continue;
        };
        let rest = plan.displacement - moved;
        if rest.length_squared() < 1e-18 {
            continue;
        }
        let radius = agent.params.radius;
        let from = agent.position + moved;
        let more = guarded(i, from, rest, radius, committed, guard);
        if more != DVec2::ZERO {
            committed[i] = Some((from + more, radius));
            moves[i] = Some(moved + more);
        }
    }
    moves
}

/// Commits agent `i`'s plan (none: nothing to do) through the collision guard against the
/// discs `committed` so far (the snapshot's for agents not yet committed), or by `moved` where
/// the guard already ran ([`guard_twice`]), then its progress and goals; records it in
/// `committed` and `report`. `slot` may be emptied (the agent leaves).
#[allow(clippy::too_many_arguments)]
pub(super) fn commit_agent(
    w: &CommitWorld<'_>,
    i: usize,
    plan: Option<Plan>,
    moved: Option<DVec2>,
    slot: &mut Option<Agent>,
    committed: &mut [Option<(DVec2, f64)>],
    guard: &mut GuardScratch,
    report: &mut StepReport,
) {
    let Some(plan) = plan else { return };
    let id = AgentId(w.ids[i]);
    // Removed while the step was under way: its plan is dropped.
    let Some(agent) = slot.as_mut() else {
        committed[i] = None;
        return;
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
            next_goal(slot, id, false, report);
        }
        return;
    }
    let start = agent.position;
    let moved = moved.unwrap_or_else(|| {
        guard_step(
            start,
            plan.displacement,
            agent.params.radius,
            i,
            committed,
            w.hash,
            w.others,
            w.late,
            w.obstacles,
            w.slides,
            guard,
        )
    });
    agent.position = start + moved;
    committed[i] = Some((agent.position, agent.params.radius));
    agent.heading = plan.heading;
    agent.speed_factor = plan.speed_factor;
    agent.bias = plan.bias;
    if agent.settling {
        settle(agent, w);
        return;
    }
    let before = agent.state;
    agent.state = if moved.length() < 1e-9 {
        AgentState::Waiting
    } else {
        AgentState::Moving
    };
    if agent.is_external() {
        // Steered from outside: whoever steers it judges its progress; only its goals, if it
        // has any, are the crowd's to advance.
        if agent.goal_index >= agent.params.goals.len() {
            return;
        }
    } else {
        if plan.recovered {
            report.recovered.push(id);
        }
        count_progress(agent, before, id, w.stuck_after, report);
    }
    // Goals.
    let Some(&goal_id) = agent.params.goals.get(agent.goal_index) else {
        // Its goals were emptied while the step was under way: it stops there.
        agent.state = AgentState::Arrived;
        return;
    };
    let goal = super::live_goal(w.goals, goal_id);
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
        next_goal(slot, id, !out_of_time, report);
    }
}

/// Counts a committed step towards the agent being stuck, or marks its progress (see
/// `CrowdSettings::stuck_after`): planning counted it down the followed field; otherwise it is
/// a net displacement of at least one local cell. `before` is its state before the step.
fn count_progress(
    agent: &mut Agent,
    before: AgentState,
    id: AgentId,
    stuck_after: u32,
    report: &mut StepReport,
) {
    if agent.level_mark.is_none() {
        if (agent.position - agent.progress_mark).length() >= agent.params.local_map.cell_size {
            agent.progress_mark = agent.position;
            agent.stalled = 0;
        } else {
            agent.stalled = agent.stalled.saturating_add(1);
        }
    }
    // (A step that progressed is never stuck, even with `stuck_after` at 0.)
    if agent.stalled > 0 && agent.stalled >= stuck_after {
        if before != AgentState::Stuck {
            report.stuck.push(id);
        }
        agent.state = AgentState::Stuck;
    }
}

/// Ends the agent's current goal, reached (`reached`) or given up: it takes the next goal, or
/// after the last stops as arrived or leaves the crowd. Only a reached last goal is reported
/// as arrived. An agent that leaves keeps its committed position for the rest of the step.
fn next_goal(slot: &mut Option<Agent>, id: AgentId, reached: bool, report: &mut StepReport) {
    let Some(agent) = slot.as_mut() else {
        return;
    };
    agent.subgoals.clear();
    // Progress starts afresh on the next goal (a mark on the last one measures nothing there).
    agent.stalled = 0;
    agent.progress_mark = agent.position;
    agent.level_mark = None;
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
        if agent.params.on_arrival == ArrivalAction::Settle {
            agent.settling = true;
            agent.progress_mark = agent.position;
        }
    }
    if agent.params.on_arrival == ArrivalAction::Despawn {
        report.removed.push((id, agent.position));
        *slot = None;
    }
}

/// A settling agent's step after the guard ([`ArrivalAction::Settle`]): it stays arrived, and
/// stops walking in on one of its local map's goal cells (the open cells of the goal nearest
/// its centre) or after `stuck_after` steps without coming a local cell nearer the centre
/// (walking round those settled there is no progress).
fn settle(agent: &mut Agent, w: &CommitWorld<'_>) {
    agent.state = AgentState::Arrived;
    let Some(centre) = agent
        .params
        .goals
        .get(agent.goal_index)
        .and_then(|g| w.goals.get(g.0 as usize).and_then(Option::as_ref))
        .map(|g| g.centre)
    else {
        agent.settling = false;
        return;
    };
    // `progress_mark` holds the nearest point to the centre so far.
    let distance = (centre - agent.position).length();
    if distance <= (centre - agent.progress_mark).length() - agent.params.local_map.cell_size {
        agent.progress_mark = agent.position;
        agent.stalled = 0;
    } else {
        agent.stalled += 1;
    }
    let done = agent.local.is_goal_at(agent.position);
    if done || agent.stalled >= w.stuck_after {
        agent.settling = false;
        agent.speed_factor = 0.0;
        agent.stalled = 0;
    }
}
