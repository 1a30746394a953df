//! Goals and static obstacles of the crowd's world: goal regions with their harmonic global
//! maps (seed 000 §3.1: ∇²p = 0, goals at 0 and obstacles at 1, digest 000 §2.1 and §2.3),
//! static obstacle edits, whose global maps are patched at once and re-solved a few per step
//! (see the crowd's module doc, *Obstacle edits*), and guidance from outside.
//!
//! # Where a goal's guidance comes from
//!
//! Every goal has a region (what counts as reached) and a guidance: what direction an agent
//! heading there wants at its position (digest 004 §11: "global guidance pluggable behind a
//! collision-free direction interface"). It comes from one of three sources, and is swapped
//! in at the guidance phase of a step, never in the middle of one:
//!
//! - **solved**: the goal's own harmonic global map, solved by the crowd
//!   ([`Crowd::add_goal`]) and solved again after obstacle edits;
//! - **search**: a map of what the searchers have sensed so far, relaxed around them every
//!   step until the target is found (seed 000 §6.11, [`Crowd::add_search`]);
//! - **from outside** ([`Guidance`], [`Crowd::add_guided_goal`], [`Crowd::set_guidance`]): a
//!   map the host made (a stroke field, a marker field), a point to head for (a leader), or a
//!   direction.
//!
//! A goal no agent walks to any more can be removed ([`Crowd::remove_goal`]), which frees its
//! map: a game that gives thousands of move orders keeps only the maps of live orders.

use std::sync::atomic::{AtomicU64, Ordering};

use glam::DVec2;

use crowdfield_field::{
    Bias, CellKind, Coverage, Field, FieldError, MultigridSolver, MultigridWorkspace, Shape,
    SubgoalCache, SubgoalStack, raster,
};
use rayon::prelude::*;

use super::guard::{SHAPE_GRID_MIN, ShapeGrid};
use super::{Crowd, GoalId, ObstacleId};

use crate::SteerError;
use crate::search::{Search, SearchSettings};
use crate::static_raster::{CellRegion, boxes_overlap};

/// Guidance for a goal, supplied from outside the crowd ([`Crowd::add_guided_goal`],
/// [`Crowd::set_guidance`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Guidance {
    /// A map whose descent leads into the goal's region (a stroke field, a marker field, a map
    /// the host solved itself), with obstacles at 1 and goal cells at 0. Its cells may cover
    /// any part of the world at any size; outside them it gives no descent. Agents stack
    /// sub-goals on its flat regions as on a solved map's. The crowd never edits it: after
    /// obstacle edits the host hands over a new one.
    Map(Field<f64>),
    /// Straight towards a point (a leader's position, a target that moves).
    Towards(DVec2),
    /// Along a direction.
    Along(DVec2),
}

impl Guidance {
    fn validate(&self) -> Result<(), SteerError> {
        let finite = |what: &'static str, v: DVec2| {
            for value in [v.x, v.y] {
                if !value.is_finite() {
                    return Err(SteerError::from(FieldError::NonFinite { what, value }));
                }
            }
            Ok(())
        };
        match self {
            Guidance::Map(map) => {
                if let Some(value) = map
                    .potentials()
                    .iter()
                    .copied()
                    .find(|p| !(p.is_finite() && (0.0..=1.0).contains(p)))
                {
                    return Err(FieldError::NonFinite {
                        what: "guidance map potential in [0, 1]",
                        value,
                    }
                    .into());
                }
                if !map.has_goal() {
                    return Err(FieldError::NoGoal.into());
                }
                Ok(())
            }
            Guidance::Towards(p) => finite("guidance point", *p),
            Guidance::Along(d) => {
                finite("guidance direction", *d)?;
                if *d == DVec2::ZERO {
                    return Err(FieldError::BadExtent(0.0).into());
                }
                Ok(())
            }
        }
    }
}

/// Where a goal's guidance comes from (see the module doc).
#[derive(Debug, Clone)]
pub(super) enum Source {
    /// The goal's own harmonic map, solved by the crowd.
    Solved,
    /// A search for a hidden target.
    Search(Box<Search>),
    /// From outside: the guidance in use (a map lives in [`Goal::map`]) and one waiting for
    /// the next guidance phase.
    Outside {
        /// `None` for a map (then in `Goal::map`), else the point or direction.
        steer: Option<Guidance>,
        next: Option<Guidance>,
    },
}

/// A goal: its region and its guidance (see the module doc).
#[derive(Debug, Clone)]
pub struct Goal {
    pub(super) shape: Shape,
    pub(super) centre: DVec2,
    /// Bounding box of the shape, to skip stamping it into windows far away.
    pub(super) bounds: (DVec2, DVec2),
    pub(super) map: Field<f64>,
    /// The map edited for the current obstacles, waiting for its solve.
    pub(super) pending: Option<Field<f64>>,
    /// Changes whenever `map` is replaced; unique within the process.
    pub(super) revision: u64,
    /// Sub-goal fields over `map`, shared by the agents heading here (cleared with `revision`).
    pub(super) subgoals: SubgoalCache,
    /// Where its guidance comes from.
    pub(super) source: Source,
}

/// Source of [`Goal::revision`] numbers, shared by every crowd in the process so that a number
/// never names two different maps.
static NEXT_MAP_REVISION: AtomicU64 = AtomicU64::new(1);

/// Solves a goal's global map: harmonic, to `tolerance`.
fn solve_goal_map(
    workspace: &mut MultigridWorkspace,
    map: &mut Field<f64>,
    tolerance: f64,
) -> Result<(), SteerError> {
    MultigridSolver::new().solve_with(workspace, map, &Bias::HARMONIC, tolerance)?;
    Ok(())
}

fn next_map_revision() -> u64 {
    NEXT_MAP_REVISION.fetch_add(1, Ordering::Relaxed)
}

impl Goal {
    /// For a search ([`Crowd::add_search`]): what has been sensed of the unknown world.
    pub(super) fn search(&self) -> Option<&Search> {
        match &self.source {
            Source::Search(s) => Some(s),
            _ => None,
        }
    }

    /// The point or direction guiding agents here, for guidance from outside that is not a
    /// map.
    pub(super) fn steer(&self) -> Option<&Guidance> {
        match &self.source {
            Source::Outside { steer, .. } => steer.as_ref(),
            _ => None,
        }
    }

    /// Whether agents follow [`Goal::map`]'s descent (a solved map or a map from outside),
    /// with sub-goals on its flat regions.
    pub(super) fn follows_map(&self) -> bool {
        match &self.source {
            Source::Solved => true,
            Source::Search(_) => false,
            Source::Outside { steer, .. } => steer.is_none(),
        }
    }

    /// The direction guidance gives at `position` before sub-goals: towards the point, along
    /// the direction; `None` where the goal follows a map.
    pub(super) fn steer_at(&self, position: DVec2) -> Option<DVec2> {
        match self.steer()? {
            Guidance::Towards(p) => Some(*p - position),
            Guidance::Along(d) => Some(*d),
            Guidance::Map(_) => None,
        }
    }

    /// The direction (not normalised; zero where there is none) the goal's guidance gives at
    /// `position`: towards the point or along the direction of guidance from outside, the
    /// descent of a search's map, or the descent of its map with `subgoals` stacked on its
    /// flat regions (shared with every other walker of the goal through
    /// [`Goal::subgoal_cache`]). What every agent heading here reads as its global direction,
    /// and what a group's map follows (seed 004 §5.3.2: "any path planner that returns a
    /// collision-free direction").
    pub fn guidance_at(&self, position: DVec2, subgoals: &mut SubgoalStack) -> DVec2 {
        if let Some(flow) = self.steer_at(position) {
            return flow;
        }
        if self.search().is_some() {
            // A search map changes every step: no sub-goals on it.
            return self.map.descent_at(position);
        }
        subgoals
            .descent_shared(&self.map, position, &self.subgoals)
            .unwrap_or(DVec2::ZERO)
    }

    /// Whether its guidance comes from outside ([`Crowd::add_guided_goal`]).
    pub fn is_guided_from_outside(&self) -> bool {
        matches!(self.source, Source::Outside { .. })
    }

    /// Sub-goal fields over the map, shared by every agent heading here
    /// ([`SubgoalStack::descent_shared`](crowdfield_field::SubgoalStack::descent_shared));
    /// cleared whenever the map is replaced.
    pub fn subgoal_cache(&self) -> &SubgoalCache {
        &self.subgoals
    }

    /// The goal region.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The goal region's centre (where an agent of the marker back end heads, and where
    /// arrival is measured from).
    pub fn centre(&self) -> DVec2 {
        self.centre
    }

    /// The map towards this goal: its harmonic global map, a search's map, or a map handed
    /// over from outside. For a point or a direction from outside, the static obstacles with
    /// the region's cells as goals, unsolved (every free cell at 1).
    pub fn map(&self) -> &Field<f64> {
        &self.map
    }

    /// Whether obstacles changed since the map was solved and a new solve is waiting.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Whether this goal is a search ([`Crowd::add_search`]).
    pub fn is_search(&self) -> bool {
        self.search().is_some()
    }

    /// For a search: whether the target has been found (`None` for an ordinary goal).
    pub fn found(&self) -> Option<bool> {
        self.search().map(|s| s.found_at.is_some())
    }

    /// For a search: the planner step at which the target was first sensed.
    pub fn found_at(&self) -> Option<u64> {
        self.search().and_then(|s| s.found_at)
    }

    /// For a search: how many global cells the searchers have sensed so far.
    pub fn sensed_cells(&self) -> Option<usize> {
        self.search().map(|s| s.sensed_count)
    }

    /// Whether the goal's region is known to agents: always for an ordinary goal, once found
    /// for a search.
    pub(super) fn known(&self) -> bool {
        self.search().is_none_or(|s| s.found_at.is_some())
    }

    /// A number that changes whenever [`Goal::map`] is replaced by a new solve. No two maps in
    /// the process share one, even across crowds, so a viewer can cache what it drew from a
    /// map under this key.
    pub fn revision(&self) -> u64 {
        self.revision
    }
}

impl Crowd {
    /// A global map with every static obstacle, grown by the global inflation, and free
    /// cells at 1.
    pub(super) fn static_map(&self) -> Result<Field<f64>, SteerError> {
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
        let mut map = self.goal_map(&shape, &self.static_map())?;
        solve_goal_map(
            &mut self.workspace,
            &mut map,
            self.settings.global_tolerance,
        )?;
        self.push_goal(shape, map, Source::Solved)
    }

    /// Adds goal regions as [`Crowd::add_goal`] does one by one, in order (the same ids, maps
    /// and errors: a shape that fails takes no id), but solves their global maps in parallel
    /// on the current rayon pool, each with work memory of its own. For a host that meets many
    /// new goals at once: the concentric circles of 500 (500 goals of 182 × 182 cells) took
    /// 2.7–3.0 s to build one goal at a time on this project's machine, 1.3–1.5 s this way on
    /// two threads.
    pub fn add_goals(
        &mut self,
        shapes: impl IntoIterator<Item = Shape>,
    ) -> Vec<Result<GoalId, SteerError>> {
        let shapes: Vec<Shape> = shapes.into_iter().collect();
        if shapes.is_empty() {
            return Vec::new();
        }
        let statics = self.static_map();
        let tolerance = self.settings.global_tolerance;
        let prepared: Vec<Result<(Shape, Field<f64>), SteerError>> = shapes
            .into_iter()
            .map(|shape| {
                let map = self.goal_map(&shape, &statics)?;
                Ok((shape, map))
            })
            .collect();
        let solved: Vec<Result<(Shape, Field<f64>), SteerError>> = prepared
            .into_par_iter()
            .map_init(MultigridWorkspace::new, |workspace, prepared| {
                let (shape, mut map) = prepared?;
                solve_goal_map(workspace, &mut map, tolerance)?;
                Ok((shape, map))
            })
            .collect();
        solved
            .into_iter()
            .map(|r| r.and_then(|(shape, map)| self.push_goal(shape, map, Source::Solved)))
            .collect()
    }

    /// The static map with `shape`'s free cells made goals, unsolved; a region wholly inside
    /// obstacles is allowed (guidance from outside leads there, not the map).
    fn goal_map_unchecked(&self, shape: &Shape) -> Result<Field<f64>, SteerError> {
        let mut map = self.static_map()?;
        mark_goal_cells(&mut map, shape);
        Ok(map)
    }

    /// `statics` (the static map, or why it could not be made) with `shape`'s free cells made
    /// goals, unsolved.
    fn goal_map(
        &self,
        shape: &Shape,
        statics: &Result<Field<f64>, SteerError>,
    ) -> Result<Field<f64>, SteerError> {
        shape.validate()?;
        let mut map = statics.clone()?;
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
        Ok(map)
    }

    /// Adds a goal over `shape` with its `map` and where its guidance comes from.
    pub(super) fn push_goal(
        &mut self,
        shape: Shape,
        map: Field<f64>,
        source: Source,
    ) -> Result<GoalId, SteerError> {
        let centre = shape_centre(&shape);
        let bounds = shape.bounds()?;
        let id = u32::try_from(self.goals.len()).map_err(|_| SteerError::TooManyGoals)?;
        self.goals.push(Some(Goal {
            shape,
            centre,
            bounds,
            map,
            pending: None,
            revision: next_map_revision(),
            subgoals: SubgoalCache::new(),
            source,
        }));
        Ok(GoalId(id))
    }

    /// Adds a goal over the region `shape` whose guidance comes from outside the crowd
    /// ([`Guidance`]: a map, a point, a direction); agents reach it on entering `shape` or
    /// coming within their arrival radius of it, as for any goal. The guidance can be replaced
    /// at any time with [`Crowd::set_guidance`]. For a point or a direction the goal keeps a
    /// map of the static obstacles (never solved), for the goal-cell test and an overlapped
    /// agent's way out.
    pub fn add_guided_goal(
        &mut self,
        shape: Shape,
        guidance: Guidance,
    ) -> Result<GoalId, SteerError> {
        shape.validate()?;
        guidance.validate()?;
        let (map, steer) = match guidance {
            Guidance::Map(map) => (map, None),
            other => (self.goal_map_unchecked(&shape)?, Some(other)),
        };
        self.push_goal(shape, map, Source::Outside { steer, next: None })
    }

    /// A live goal, or [`SteerError::UnknownGoal`].
    fn goal_mut(&mut self, goal: GoalId) -> Result<&mut Goal, SteerError> {
        self.goals
            .get_mut(goal.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(SteerError::UnknownGoal(goal))
    }

    /// Replaces the guidance of a goal added with [`Crowd::add_guided_goal`]. It is taken at
    /// the guidance phase of the next step (a step under way keeps the old one to its end);
    /// a second call before then replaces the first. Sub-goals stacked on an old map are
    /// dropped when the new guidance is taken.
    pub fn set_guidance(&mut self, goal: GoalId, guidance: Guidance) -> Result<(), SteerError> {
        guidance.validate()?;
        let slot = self.goal_mut(goal)?;
        let Source::Outside { next, .. } = &mut slot.source else {
            return Err(SteerError::NotGuidedFromOutside(goal));
        };
        *next = Some(guidance);
        Ok(())
    }

    /// Hands a goal the crowd solves itself over to guidance from outside: a host that solves
    /// a map of its own for it (over painted terrain, with other weights) takes it over. From
    /// the next guidance phase on it is guided as a goal added with [`Crowd::add_guided_goal`]
    /// is (until then it keeps its solved map, without further edits or solves); agents keep
    /// it in their queues. For a goal already guided from outside this is
    /// [`Crowd::set_guidance`]. Searches are refused ([`SteerError::NotGuidedFromOutside`]).
    pub fn guide_from_outside(
        &mut self,
        goal: GoalId,
        guidance: Guidance,
    ) -> Result<(), SteerError> {
        guidance.validate()?;
        let slot = self.goal_mut(goal)?;
        match &mut slot.source {
            Source::Solved => {
                slot.pending = None;
                slot.source = Source::Outside {
                    steer: None,
                    next: Some(guidance),
                };
                Ok(())
            }
            Source::Outside { next, .. } => {
                *next = Some(guidance);
                Ok(())
            }
            Source::Search(_) => Err(SteerError::NotGuidedFromOutside(goal)),
        }
    }

    /// Removes a goal and frees its map. Refused while any agent's goal queue still holds it
    /// ([`SteerError::GoalInUse`]): give those agents other goals first. Its id is never given
    /// again.
    pub fn remove_goal(&mut self, goal: GoalId) -> Result<(), SteerError> {
        if self.goal(goal).is_none() {
            return Err(SteerError::UnknownGoal(goal));
        }
        if let Some((agent, _)) = self.agents().find(|(_, a)| a.params.goals.contains(&goal)) {
            return Err(SteerError::GoalInUse { goal, agent });
        }
        self.goals[goal.0 as usize] = None;
        Ok(())
    }

    /// Goals alive (added and not removed).
    pub fn goal_count(&self) -> usize {
        self.goals.iter().flatten().count()
    }

    /// The ids of the goals alive, in increasing order (ids of removed goals are skipped, so
    /// they are not dense).
    pub fn goal_ids(&self) -> impl Iterator<Item = GoalId> + '_ {
        self.goals
            .iter()
            .enumerate()
            .filter(|(_, g)| g.is_some())
            .map(|(i, _)| GoalId(i as u32))
    }

    /// Guidance from outside handed over since the last step is taken (see
    /// [`Crowd::set_guidance`]).
    pub(super) fn take_guidance(&mut self) {
        let mut swapped = Vec::new();
        for (g, goal) in self.goals.iter_mut().enumerate() {
            let Some(goal) = goal.as_mut() else { continue };
            let Source::Outside { steer, next } = &mut goal.source else {
                continue;
            };
            let Some(guidance) = next.take() else {
                continue;
            };
            match guidance {
                Guidance::Map(map) => {
                    goal.map = map;
                    *steer = None;
                }
                other => {
                    if steer.is_none() {
                        // From a map to a point or a direction: the static map again.
                        let geometry = self.geometry;
                        let mut map = Field::<f64>::new(geometry, 1.0);
                        for shape in &self.statics {
                            let _ = raster::rasterise_obstacle(
                                &mut map,
                                shape,
                                self.settings.global_inflation,
                                Coverage::Touch,
                            );
                        }
                        mark_goal_cells(&mut map, &goal.shape);
                        goal.map = map;
                    }
                    *steer = Some(other);
                }
            }
            goal.revision = next_map_revision();
            goal.subgoals.clear();
            swapped.push(GoalId(g as u32));
        }
        if swapped.is_empty() {
            return;
        }
        for agent in self.agents.iter_mut().flatten() {
            if let Some(goal) = agent.params.goals.get(agent.goal_index)
                && swapped.contains(goal)
            {
                agent.subgoals.clear();
            }
        }
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
        self.push_goal(target, map, Source::Search(Box::new(search)))
    }

    /// Searches: every agent heading for one senses and relaxes around itself, in id order; a
    /// search whose target was sensed concludes and is solved once.
    pub(super) fn explore(&mut self) {
        let step = self.step;
        for (g, goal) in self.goals.iter_mut().enumerate() {
            let Some(goal) = goal.as_mut() else { continue };
            let Source::Search(search) = &mut goal.source else {
                continue;
            };
            if search.found_at.is_some() {
                continue;
            }
            let searchers: Vec<(DVec2, f64)> = self
                .agents
                .iter()
                .flatten()
                .filter(|a| a.relaxes() && a.params.goals[a.goal_index] == GoalId(g as u32))
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
        self.goals.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// Adds a static obstacle. Local maps see it from the next step; each goal's global map is
    /// edited around it at once and re-solved (warm-started from the previous solution) within
    /// the next steps,
    /// [`CrowdSettings::map_solves_per_step`](super::CrowdSettings::map_solves_per_step) maps
    /// per step.
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
            .ok_or(SteerError::UnknownObstacle(id))?;
        self.statics.remove(at);
        let bounds = self.static_bounds.remove(at);
        self.static_ids.remove(at);
        self.obstacles_changed(bounds);
        Ok(())
    }

    /// A static obstacle's shape, if `id` is one of the crowd's.
    pub fn obstacle(&self, id: ObstacleId) -> Option<&Shape> {
        let at = self.static_ids.iter().position(|i| *i == Some(id))?;
        self.statics.get(at)
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
        self.moving_grid = (self.moving.len() >= SHAPE_GRID_MIN).then(|| {
            let bounds: Vec<(DVec2, DVec2)> = self.moving.iter().map(|(_, b)| *b).collect();
            ShapeGrid::new(&bounds, self.settings.min, self.settings.max)
        });
        Ok(())
    }

    /// The moving obstacles set last.
    pub fn moving_obstacles(&self) -> impl Iterator<Item = &Shape> {
        self.moving.iter().map(|(s, _)| s)
    }

    /// Global maps edited but not yet re-solved.
    pub fn pending_map_solves(&self) -> usize {
        self.goals
            .iter()
            .flatten()
            .filter(|g| g.pending.is_some())
            .count()
    }

    /// Brings the static rasters and the (pending) global maps up to date inside `region`.
    pub(super) fn obstacles_changed(&mut self, (lo, hi): (DVec2, DVec2)) {
        self.shape_grid = None;
        self.raster_generation += 1;
        for (_, raster) in &mut self.rasters {
            raster.refresh(lo, hi, &self.statics, &self.static_bounds);
        }
        let grow = DVec2::splat(self.settings.global_inflation + self.geometry.cell_size());
        let (lo, hi) = (lo - grow, hi + grow);
        for goal in self.goals.iter_mut().flatten() {
            if let Source::Outside { steer, .. } = &goal.source {
                if steer.is_some() {
                    // A point or a direction: only the obstacle cells of its map change.
                    refresh_global(
                        &mut goal.map,
                        lo,
                        hi,
                        &self.statics,
                        &self.static_bounds,
                        self.settings.global_inflation,
                        &goal.shape,
                    );
                }
                // A map from outside is the host's to remake.
                continue;
            }
            if let Source::Search(search) = &mut goal.source {
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
    pub(super) fn solve_pending(&mut self) -> Vec<GoalId> {
        let mut solved = Vec::new();
        for (g, goal) in self.goals.iter_mut().enumerate() {
            let Some(goal) = goal.as_mut() else { continue };
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

/// Makes the free cells `shape` touches goals.
fn mark_goal_cells(map: &mut Field<f64>, shape: &Shape) {
    let geometry = *map.geometry();
    if let Ok(cells) = shape.cells(&geometry, 0.0, Coverage::Touch) {
        for (x, y) in cells {
            if map.kind(x, y) == Some(CellKind::Free) {
                let _ = map.set_goal(x, y);
            }
        }
    }
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
