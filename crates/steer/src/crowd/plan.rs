//! Planning one agent from the step's snapshot (step 2 of the crowd's step, see the parent
//! module; seed 000 §3.5, seed 001 A2): global descent with sub-goals against flat regions,
//! the behaviour slot that picks (v, ε), the local map re-centred (warm start) and stamped with
//! static obstacles, moving shapes and neighbours, and the intermediate goal projected. What it
//! reads is [`World`], shared by all agents and never written during a step, so agents plan in
//! any order and on any thread.

use glam::DVec2;

use crowdfield_field::{CellKind, Shape};

use super::guard::ShapeGrid;
use super::{
    Agent, AgentGrid, Goal, HandedStep, LevelMark, Plan, Prepared, RasterKey, Way, live_goal,
    overlaps_beyond_contact, raster_key, shape_near,
};
use crate::behaviour::{Behaviour, BehaviourInput};
use crate::disc_raster::DiscRaster;
use crate::local_map::{LocalMap, NeighbourStamping, lattice_cell};
use crate::static_raster::{StaticRaster, boxes_overlap};

/// How far (m) a sensing agent first looks for the nearest agent, before the whole sensing box.
const NEAREST_FIRST: f64 = 2.0;

/// The farthest (in steps) [`World::escape`] looks for a way out of an obstacle: 22.4 m at the
/// default step of 0.35 m. An agent deeper inside holds, as it did before there was a way out,
/// and a host's huge obstacle costs at most 64 rings of 32 probes an agent a step.
const MAX_ESCAPE_STEPS: f64 = 64.0;

/// What planning reads besides the snapshot: shared by all agents, never written during a step.
pub(super) struct World<'a> {
    pub(super) statics: &'a [Shape],
    /// Bounding boxes of `statics`.
    pub(super) static_bounds: &'a [(DVec2, DVec2)],
    /// Whether behaviours see only neighbours in line of sight.
    pub(super) sight: bool,
    /// Planner steps without progress after which an agent stops queueing, or `None` where
    /// agents never queue (`Preset::queues`, `Preset::impatience`).
    pub(super) queues: Option<u32>,
    pub(super) moving: &'a [(Shape, (DVec2, DVec2))],
    pub(super) goals: &'a [Option<Goal>],
    pub(super) step: u64,
    pub(super) rasters: &'a [(RasterKey, StaticRaster)],
    /// Every agent's disc of the snapshot, per raster key of the planning agents.
    pub(super) discs: &'a [(RasterKey, DiscRaster)],
    /// Largest radius of any agent spawned (radii never change): how far beyond a window a
    /// stamped disc may lie.
    pub(super) max_radius: f64,
    /// Each planning agent's way as the step starts (`None` for the others): what
    /// [`NeighbourStamping`] reads of a neighbour.
    pub(super) ways: &'a [Option<Way>],
    /// The static shapes' boxes on a grid, where there are many (see `Crowd::shape_grid`).
    pub(super) shape_grid: Option<&'a ShapeGrid>,
    /// The moving shapes' boxes on a grid, where there are many (see `Crowd::moving_grid`).
    pub(super) moving_grid: Option<&'a ShapeGrid>,
    #[cfg(test)]
    pub(super) sense_whole_box: bool,
}

impl World<'_> {
    /// Whether `to` is in sight from `from`: always with sight off, otherwise when the segment
    /// between them touches no static shape.
    fn in_sight(&self, from: DVec2, to: DVec2) -> bool {
        if !self.sight {
            return true;
        }
        let (lo, hi) = (from.min(to), from.max(to));
        self.statics_meeting(lo, hi)
            .all(|shape| shape.segment_distance(from, to).is_ok_and(|d| d > 0.0))
    }

    /// The static shapes whose boxes meet the box `lo..hi`: looked up on the shape grid where
    /// the crowd has one (a shape may then come more than once), all of them scanned
    /// otherwise. Sensing asks this of every agent with a look ahead or sight, so a world of
    /// many static shapes must not cost each of them a pass over all the shapes.
    fn statics_meeting(&self, lo: DVec2, hi: DVec2) -> impl Iterator<Item = &Shape> + '_ {
        candidates(self.shape_grid, self.statics.len(), lo, hi).filter_map(move |k| {
            let (slo, shi) = self.static_bounds[k];
            boxes_overlap(lo, hi, slo, shi).then_some(&self.statics[k])
        })
    }

    /// The moving shapes whose boxes meet the box `lo..hi`, as [`Self::statics_meeting`]
    /// gives the static ones (from the moving grid where there is one, a shape then perhaps
    /// more than once).
    fn moving_meeting(
        &self,
        lo: DVec2,
        hi: DVec2,
    ) -> impl Iterator<Item = &(Shape, (DVec2, DVec2))> + '_ {
        candidates(self.moving_grid, self.moving.len(), lo, hi)
            .map(|k| &self.moving[k])
            .filter(move |(_, (slo, shi))| boxes_overlap(lo, hi, *slo, *shi))
    }

    /// Prepares one agent's step from the snapshot (as `hash` indexed it): everything up to
    /// relaxation.
    pub(super) fn prepare(
        &self,
        index: usize,
        agent: &mut Agent,
        hash: &AgentGrid,
        scratch: &mut Neighbours,
    ) -> Prepared {
        if agent.is_external() {
            return Prepared::Done(handed_plan(agent));
        }
        let pos = agent.position;
        let goal_id = agent.params.goals[agent.goal_index];
        let goal = live_goal(self.goals, goal_id);
        let depth_before = agent.subgoals.len();
        // Settling after arrival (`ArrivalAction::Settle`): inside the goal its map is flat,
        // so the way in is the straight line to the goal's centre.
        let settling = agent.settling;
        let flow = if settling {
            goal.centre - pos
        } else {
            goal.guidance_at(pos, &mut agent.subgoals)
        };
        let recovered = agent.subgoals.len() > depth_before;
        let unreachable = !settling
            && flow == DVec2::ZERO
            && goal.known()
            && goal
                .shape
                .distance(pos)
                .map_or(true, |d| d > agent.params.arrival_radius);
        if !settling && !unreachable {
            track_progress(agent, goal, flow);
        }
        let flow_dir = flow.try_normalize().unwrap_or(DVec2::ZERO);
        agent.way = flow_dir;
        // A hidden target is not where programs or the local map may look.
        let goal_centre = if goal.known() {
            goal.centre
        } else {
            pos + flow_dir
        };
        let key = raster_key(&agent.params.local_map, agent.params.radius);
        let static_raster = self.rasters.iter().find(|(k, _)| *k == key).map(|(_, r)| r);
        // Overlapped by an obstacle that moved onto it or was added over it: its own cells are
        // obstacle in both maps, so neither gives it a way. It walks out first.
        if let Some(step) = self.escape(agent, goal, static_raster, flow_dir, goal_centre) {
            return Prepared::Done(Plan {
                displacement: step,
                heading: step.normalize(),
                speed_factor: 1.0,
                bias: agent.bias,
                unreachable: false,
                recovered,
            });
        }
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
        let disc_raster = self.discs.iter().find(|(k, _)| *k == key).map(|(_, r)| r);
        let Neighbours {
            discs: neighbours,
            ids: indices,
            skipped,
            kept,
            shapes,
        } = scratch;
        neighbours.clear();
        indices.clear();
        skipped.clear();
        kept.clear();
        // Neighbours walking this agent's way are left out of its map (`NeighbourStamping`).
        let stamping = agent.params.local_map.neighbours.unwrap_or_default();
        let filters = stamping != NeighbourStamping::All && flow_dir != DVec2::ZERO;
        let own_pace = agent.params.max_step;
        let leaves_out = |j: usize| {
            self.ways.get(j).copied().flatten().is_some_and(|w| {
                stamping.leaves_out(flow_dir, own_pace, w.heading, w.way, w.pace, w.stalled)
            })
        };
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
                    // Ids break ties for the nearest agent, which only sensing programs read,
                    // and tell which neighbours a filtering agent leaves out.
                    if senses || filters {
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
                    |lo, hi| {
                        let moving = self.moving_meeting(lo, hi).map(|(s, _)| s);
                        self.statics_meeting(lo, hi).chain(moving)
                    },
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
        let coverage = agent
            .params
            .local_map
            .obstacle_coverage
            .unwrap_or(crowdfield_field::Coverage::Touch);
        let local = &mut agent.local;
        local.recentre(pos);
        let (lo, hi) = local.field().geometry().world_bounds();
        match static_raster {
            // Counted into the disc raster: stamped with the discs below.
            Some(_) if disc_raster.is_some_and(DiscRaster::has_statics) => {}
            Some(raster) => {
                local.stamp_lattice(raster);
            }
            // No raster for this agent's key (more keys than rasters): the shapes near the
            // window, each once, from the shape grid where there is one (its boxes within the
            // reach `shape_near` tests, a little wider), all of them otherwise.
            None => match self.shape_grid {
                Some(grid) => {
                    let centre = (lo + hi) * 0.5;
                    let reach = (hi - lo).length() * 0.5 + radius;
                    let wider = DVec2::splat(reach * (1.0 + 1e-9) + 1e-9);
                    grid.near(centre - wider, centre + wider, shapes);
                    for &k in shapes.iter() {
                        let shape = &self.statics[k as usize];
                        if shape_near(shape, lo, hi, radius) {
                            local.stamp_obstacle(shape, radius, coverage);
                        }
                    }
                }
                None => {
                    for shape in self.statics {
                        if shape_near(shape, lo, hi, radius) {
                            local.stamp_obstacle(shape, radius, coverage);
                        }
                    }
                }
            },
        }
        // Moving shapes whose boxes, grown by the radius, meet the window (looked up a little
        // wider on the moving grid, each once, in increasing order; the same test picks them).
        let grow = DVec2::splat(radius);
        let stamp_moving = |local: &mut LocalMap, (shape, (slo, shi)): &(Shape, (DVec2, DVec2))| {
            if boxes_overlap(*slo - grow, *shi + grow, lo, hi) {
                local.stamp_obstacle(shape, radius, coverage);
            }
        };
        match self.moving_grid {
            Some(grid) => {
                let wider = DVec2::splat(radius * (1.0 + 1e-9) + 1e-9);
                grid.near(lo - wider, hi + wider, shapes);
                for &k in shapes.iter() {
                    stamp_moving(local, &self.moving[k as usize]);
                }
            }
            None => {
                for moving in self.moving {
                    stamp_moving(local, moving);
                }
            }
        }
        match disc_raster {
            Some(discs) => {
                if filters {
                    // The discs that may reach a cell of the update zone (the zone's cell
                    // centres lie within `zone` of the agent's cell centre, which lies within
                    // half a cell of the agent; a cell of margin besides): those it leaves
                    // out, and those it stamps.
                    let map = &agent.params.local_map;
                    let zone = (map.side / 2 - 1 - map.free_zone) as f64 * map.cell_size;
                    let limit = |r: f64| zone + map.cell_size + r + radius;
                    // Sorted without a branch on each neighbour (as likely left out as not,
                    // a branch would mispredict about half the time): each is written to the
                    // end of both lists and counted in one of them at most. 4–9 % more
                    // agent-steps a second on two threads in the circles of 250 and the forest
                    // with the option (docs/steering.md, *Walkers going the same way*).
                    let (mut n_skipped, mut n_kept) = (0, 0);
                    hash.for_each_run_near(pos, limit(self.max_radius), |ids, points| {
                        let blank = (DVec2::ZERO, 0.0);
                        skipped.resize(skipped.len().max(n_skipped + ids.len()), blank);
                        kept.resize(kept.len().max(n_kept + ids.len()), blank);
                        for (&j, &(q, r)) in ids.iter().zip(points) {
                            let j = j as usize;
                            let d = (q - pos).abs();
                            let near = (j != index) & (d.x <= limit(r)) & (d.y <= limit(r));
                            let out = leaves_out(j);
                            skipped[n_skipped] = (q, r);
                            kept[n_kept] = (q, r);
                            n_skipped += usize::from(near & out);
                            n_kept += usize::from(near & !out);
                        }
                    });
                    skipped.truncate(n_skipped);
                    kept.truncate(n_kept);
                }
                if filters && kept.len() < skipped.len() {
                    // Fewer discs to stamp than to take back out of the raster's counts: stamp
                    // them one by one, over the statics the raster would have given.
                    if let Some(statics) = static_raster.filter(|_| discs.has_statics()) {
                        local.stamp_lattice(statics);
                    }
                    for (q, r) in kept.iter() {
                        local.stamp_disc(*q, *r, radius);
                    }
                } else {
                    local.stamp_raster_discs(discs, (pos, radius), skipped);
                }
            }
            None => {
                for (k, (q, r)) in neighbours.iter().enumerate() {
                    if !(filters && leaves_out(indices[k])) {
                        local.stamp_disc(*q, *r, radius);
                    }
                }
            }
        }
        local.clear_outside_view(facing);
        let (glo, ghi) = goal.bounds;
        // A settling agent's goal: the open cells of the goal nearest its centre once the
        // centre is inside the window (no border goal then, which would draw it past the centre and round
        // those standing there), the border towards the centre before.
        let cell = agent.params.local_map.cell_size;
        let centre_inside = settling
            && goal.centre.cmpge(lo + DVec2::splat(cell)).all()
            && goal.centre.cmple(hi - DVec2::splat(cell)).all();
        if settling {
            if centre_inside {
                // Only cells inside the goal's region: a crowd settled round the centre of a
                // small goal must not fill the margin where those after it arrive.
                local.stamp_nearest_free(goal.centre, |c| {
                    goal.shape.distance(c).is_ok_and(|d| d <= 0.0)
                });
            }
        } else if goal.known() && glo.x <= hi.x && glo.y <= hi.y && ghi.x >= lo.x && ghi.y >= lo.y {
            local.stamp_goal(&goal.shape);
        }
        local.project_goal(if centre_inside {
            DVec2::ZERO
        } else if flow_dir != DVec2::ZERO {
            flow_dir
        } else if goal.known() {
            goal.centre - pos
        } else {
            facing
        });
        // An impatient agent follows its local map, as the seeds do, until it progresses.
        let queue = if !settling && self.queues.is_some_and(|patience| agent.stalled < patience) {
            self.may_queue(index, pos, radius, flow_dir, hash)
        } else {
            Queue::No
        };
        Prepared::Relax {
            bias,
            recovered,
            queue,
        }
    }

    /// How an agent at `pos` walking `way` queues ([`Preset::queues`]) where its local descent
    /// turns back: it presses on ([`Queue::Press`]) where nothing within [`QUEUE_LOOK`] ahead
    /// along its way blocks it or the nearest there is a walker that plans, going its way or
    /// not (the guard slides it past one coming the other way; stepping aside to the right
    /// instead let 88 % of the counterflow benchmark's walkers at 0.5 /m² through in 3,000
    /// steps where pressing on let all through in 159); it follows its local descent as the
    /// seeds do ([`Queue::No`]) where a static or moving shape, or an agent that stands,
    /// arrived or is steered from outside, lies there.
    ///
    /// [`Preset::queues`]: crate::Preset::queues
    fn may_queue(
        &self,
        index: usize,
        pos: DVec2,
        radius: f64,
        way: DVec2,
        hash: &AgentGrid,
    ) -> Queue {
        if way == DVec2::ZERO {
            return Queue::No;
        }
        let end = pos + way * QUEUE_LOOK;
        let (lo, hi) = (
            pos.min(end) - DVec2::splat(radius),
            pos.max(end) + DVec2::splat(radius),
        );
        let clear = |shape: &Shape| shape.segment_distance(pos, end).is_ok_and(|d| d > radius);
        if !self.statics_meeting(lo, hi).all(clear)
            || !self.moving_meeting(lo, hi).all(|(shape, _)| clear(shape))
        {
            return Queue::No;
        }
        match self.nearest_ahead(index, pos, radius, way, hash, QUEUE_LOOK) {
            None => Queue::Press,
            Some((_, j)) if self.ways.get(j).copied().flatten().is_none() => Queue::No,
            Some(_) => Queue::Press,
        }
    }

    /// The nearest agent whose disc meets the segment from `pos` along `way` (unit) for
    /// `look`, grown by `radius`, with its distance along the way (the lowest index on a tie).
    fn nearest_ahead(
        &self,
        index: usize,
        pos: DVec2,
        radius: f64,
        way: DVec2,
        hash: &AgentGrid,
        look: f64,
    ) -> Option<(f64, usize)> {
        let mut nearest: Option<(f64, usize)> = None;
        let centre = pos + way * (look * 0.5);
        let reach = look * 0.5 + radius + self.max_radius;
        hash.for_each_point_near(centre, reach, |j, q, r| {
            if j == index {
                return;
            }
            let t = (q - pos).dot(way).clamp(0.0, look);
            if (pos + way * t).distance(q) < radius + r
                && nearest.is_none_or(|(tn, jn)| t < tn || (t == tn && j < jn))
            {
                nearest = Some((t, j));
            }
        });
        nearest
    }
}

/// What an agent whose local descent turns back from its way does ([`World::may_queue`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Queue {
    /// Follows its local descent (the seeds).
    No,
    /// Walks its way, held by the collision guard behind whoever is in front.
    Press,
}

/// How far ahead (m) [`World::may_queue`] looks for what blocks an agent's way.
const QUEUE_LOOK: f64 = 1.0;

impl World<'_> {
    /// The step out of any obstacle that overlaps the agent (reaches more than
    /// [`CONTACT_TOLERANCE`](super::CONTACT_TOLERANCE) into its disc, or covers its centre),
    /// or `None` when none does. Agents never walk into obstacles (the commit's
    /// guard), so this happens only when a moving obstacle runs onto one or a static obstacle
    /// is added over one; the seeds' maps then hold the agent's own cells fixed at 1 and give
    /// no descent, and it would stand inside for good.
    ///
    /// Our rule (the seeds have none): probe 32 directions, at one step's length, two steps'
    /// and so on up to the overlapping obstacles' extent (at most [`MAX_ESCAPE_STEPS`]), for a
    /// point inside the goal's map where the agent's disc is clear of every obstacle; take the
    /// fewest steps and, among those directions, the one nearest the global map's descent (or
    /// the direction to `goal_centre`, or the heading, where that is zero), and walk one full
    /// step that way. The
    /// guard lets through a step that brings the agent closer to nothing. Where no probe is
    /// clear, it holds.
    fn escape(
        &self,
        agent: &Agent,
        goal: &Goal,
        static_raster: Option<&StaticRaster>,
        flow_dir: DVec2,
        goal_centre: DVec2,
    ) -> Option<DVec2> {
        const DIRECTIONS: usize = 32;
        let pos = agent.position;
        let radius = agent.params.radius;
        let overlaps = |shape: &Shape, (lo, hi): &(DVec2, DVec2)| {
            let gap = pos - pos.clamp(*lo, *hi);
            gap.length_squared() < radius * radius
                && shape
                    .distance(pos)
                    .is_ok_and(|d| overlaps_beyond_contact(d, radius))
        };
        // Statics are only looked at where the agent's static raster (statics grown by its
        // radius, patched as soon as a static obstacle is added; a crowd of many radii or cell
        // sizes may have none) or the goal's map (grown by the global inflation, updated when
        // its turn to be solved comes) has an obstacle cell: an agent overlapped by a static
        // shape stands on one, and the lookups keep the check off every other agent's step.
        // A raster that marks every cell a grown shape touches answers alone, which spares a
        // read of the goal's map (a cache miss where walkers have maps of their own).
        let geometry = goal.map.geometry();
        let lattice = lattice_cell(pos, agent.params.local_map.cell_size);
        let on_obstacle = match static_raster {
            Some(raster) if raster.marks_every_overlap(lattice) => raster.blocked(lattice),
            _ => {
                let cell = geometry.world_to_cell(pos);
                static_raster.is_some_and(|raster| raster.blocked(lattice))
                    || geometry.contains_cell(cell)
                        && goal.map.kind(cell.x as usize, cell.y as usize)
                            == Some(CellKind::Obstacle)
            }
        };
        let mut extent: f64 = 0.0;
        // (Moving shapes whose boxes meet the disc's box, a little wider: the test below
        // picks among them as among all.)
        let disc = DVec2::splat(radius * (1.0 + 1e-9) + 1e-9);
        for (shape, bounds) in self
            .moving_meeting(pos - disc, pos + disc)
            .map(|(s, b)| (s, b))
            .chain(
                on_obstacle
                    .then_some(self.statics.iter().zip(self.static_bounds))
                    .into_iter()
                    .flatten(),
            )
        {
            if overlaps(shape, bounds) {
                extent = extent.max((bounds.1 - bounds.0).length());
            }
        }
        if extent == 0.0 {
            return None;
        }
        // Whether the disc at `q` is inside the map and clear of the shapes `near` lists.
        let (wlo, whi) = geometry.world_bounds();
        let clear = |q: DVec2, near: &[&Shape]| {
            q.cmpge(wlo).all()
                && q.cmple(whi).all()
                && near
                    .iter()
                    .all(|s| s.distance(q).is_ok_and(|d| d >= radius))
        };
        // (`goal_centre` is where the agent may look: a search's hidden target is not.)
        let preferred = [flow_dir, goal_centre - pos, agent.heading, DVec2::X]
            .into_iter()
            .find_map(|d| d.try_normalize())
            .unwrap_or(DVec2::X);
        // Nearest the preferred direction first: 0, +1, -1, +2, -2, … of 32 around.
        let turn = std::f64::consts::TAU / DIRECTIONS as f64;
        let order = (0..DIRECTIONS).map(|k| {
            let half = (k as f64 / 2.0).ceil();
            let angle = if k % 2 == 1 {
                half * turn
            } else {
                -half * turn
            };
            DVec2::from_angle(angle).rotate(preferred)
        });
        let step = agent.params.max_step;
        let steps = ((extent + radius) / step).ceil().min(MAX_ESCAPE_STEPS) as usize;
        let mut near: Vec<&Shape> = Vec::new();
        (1..=steps.max(1)).find_map(|k| {
            let length = k as f64 * step;
            // The shapes whose boxes reach the ring of probes at this length.
            let reach = DVec2::splat(length + radius);
            near.clear();
            near.extend(
                self.moving
                    .iter()
                    .map(|(s, b)| (s, b))
                    .chain(self.statics.iter().zip(self.static_bounds))
                    .filter(|(_, (lo, hi))| boxes_overlap(pos - reach, pos + reach, *lo, *hi))
                    .map(|(s, _)| s),
            );
            order
                .clone()
                .find(|d| clear(pos + *d * length, &near))
                .map(|d| d * step)
        })
    }
}

/// The plan of an agent steered from outside: the step handed over for it (taken, so it is
/// used once), or standing where none was.
fn handed_plan(agent: &mut Agent) -> Plan {
    let step = agent.handed.take().unwrap_or(HandedStep {
        displacement: DVec2::ZERO,
        heading: DVec2::ZERO,
        speed_factor: 0.0,
    });
    let heading = step
        .heading
        .try_normalize()
        .or_else(|| step.displacement.try_normalize())
        .unwrap_or(agent.heading);
    Plan {
        displacement: step.displacement,
        heading,
        speed_factor: step.speed_factor,
        bias: agent.bias,
        unreachable: false,
        recovered: false,
    }
}

/// Counts the agent's step towards being stuck, or marks its progress, by the level of the
/// field it follows where it stands and its distance from the goal's region (see
/// [`CrowdSettings::stuck_after`](super::CrowdSettings)): `flow` is that field's descent there.
/// The distance counts too because a harmonic map rises towards every wall: a walker keeping to
/// a hallway's side to pass a stream stands higher than one in the middle level with it.
///
/// Read at the start of a step, before the agent moves, so the count runs one step behind the
/// commit, and on the planning threads rather than in the commit. Agents towards a search's
/// target, or outside the grid, are left to the commit's count of net displacement
/// (`level_mark` empty).
fn track_progress(agent: &mut Agent, goal: &Goal, flow: DVec2) {
    let field = agent.subgoals.active_field(&goal.map);
    let level = if goal.follows_map() {
        field.potential_at(agent.position)
    } else {
        None
    };
    let Some(level) = level else {
        agent.level_mark = None;
        return;
    };
    let depth = agent.subgoals.len();
    let half_cell = 0.5 * agent.params.local_map.cell_size;
    let gap = goal.shape.distance(agent.position).unwrap_or(f64::INFINITY);
    let progressed = match &mut agent.level_mark {
        Some(mark) if mark.depth == depth => {
            if mark.revision != goal.revision {
                // The map was solved again: the mark's level on it.
                let at_mark = field.potential_at(agent.progress_mark);
                let fall = field.descent_at(agent.progress_mark).length();
                match at_mark {
                    Some(at_mark) => {
                        mark.level = at_mark;
                        mark.drop = half_cell_fall(agent.params.local_map.cell_size, goal, fall);
                        mark.revision = goal.revision;
                    }
                    None => mark.level = f64::INFINITY,
                }
            }
            level <= mark.level - mark.drop || gap <= mark.gap - half_cell
        }
        // A new goal (`next_goal` clears the mark), a sub-goal stacked or reached, or the
        // first step.
        _ => true,
    };
    if progressed {
        agent.level_mark = Some(LevelMark {
            level,
            drop: half_cell_fall(agent.params.local_map.cell_size, goal, flow.length()),
            gap,
            revision: goal.revision,
            depth,
        });
        agent.progress_mark = agent.position;
        agent.stalled = 0;
    } else {
        agent.stalled = agent.stalled.saturating_add(1);
    }
}

/// The fall of a field over half a local cell of `local_cell` metres, where it falls by `fall`
/// per cell of the goal's map.
fn half_cell_fall(local_cell: f64, goal: &Goal, fall: f64) -> f64 {
    0.5 * fall * local_cell / goal.map.geometry().cell_size()
}

/// A planning job's neighbour buffers, reused from agent to agent (no allocation per agent).
#[derive(Default, Debug, Clone)]
pub(super) struct Neighbours {
    /// Position and radius of each neighbour found.
    pub(super) discs: Vec<(DVec2, f64)>,
    /// Its agent index, parallel to `discs` (filled for programs that sense and for agents
    /// that leave some neighbours out).
    pub(super) ids: Vec<usize>,
    /// Discs the agent leaves out of its map ([`NeighbourStamping`]), read from the raster.
    pub(super) skipped: Vec<(DVec2, f64)>,
    /// The other discs that may reach its map's update zone, when it leaves some out.
    pub(super) kept: Vec<(DVec2, f64)>,
    /// Shapes (static or moving) a shape grid offers near its window.
    pub(super) shapes: Vec<u32>,
}

/// Indices of shapes whose boxes may meet the box `lo..hi`: the candidates `grid` offers where
/// there is one (a shape may come more than once), all `0..count` otherwise.
fn candidates(
    grid: Option<&ShapeGrid>,
    count: usize,
    lo: DVec2,
    hi: DVec2,
) -> impl Iterator<Item = usize> + '_ {
    let all = grid.is_none().then_some(0..count).into_iter().flatten();
    let near = grid.into_iter().flat_map(move |g| g.candidates(lo, hi));
    all.chain(near)
}

/// Whether any neighbour in sight or any obstacle lies within `dvis` ahead (a 120° cone).
#[allow(clippy::too_many_arguments)]
fn something_ahead<'s, I: Iterator<Item = &'s Shape>>(
    pos: DVec2,
    facing: DVec2,
    dvis: f64,
    radius: f64,
    neighbours: &[(DVec2, f64)],
    shapes_meeting: impl Fn(DVec2, DVec2) -> I,
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
    let near: Vec<&Shape> = shapes_meeting(lo, hi).collect();
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
