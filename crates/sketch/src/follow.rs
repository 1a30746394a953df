//! Orders that send agents and groups along strokes: Mode A (stroke samples as successive
//! intermediate goals, digest 004 §4.1) and Mode B (the stroke's field, [`crate::field`]), both
//! through the crowd's one seam for guidance from outside (`Crowd::add_guided_goal`).
//!
//! A route's goals are ordinary crowd goals, handed to each follower as its goal queue
//! (`Crowd::set_goals`), so followers are ordinary walkers: one spatial index, one collision
//! guard, the same states and events as everyone (a `ReachedWaypoint` at each sub-goal, an
//! `Arrived` at the end). For a group, the same goals become the group's route
//! (`Groups::follow_route`): its map follows them one after another (layer 2).
//!
//! ## Mode B goal queues
//!
//! Each leg of a stroke field ([`Leg`]) is one goal: a segment's field with a disc round its
//! sub-goal (the last segment's disc is the stroke's end, [`StrokeFieldSettings::goal_radius`]),
//! or a bridge, a plain crowd goal at the start of the next piece whose global map leads round
//! the obstacle between. A walker's queue depends on where it stands when ordered:
//!
//! - joining at the nearest point: the segment nearest it, its field grown over a box holding
//!   the walker ([`StrokeField::join_field`]), then the legs after that segment;
//! - walking the whole curve from outside the tube: the approach field (to q_1), then every leg;
//! - walking the whole curve from inside the tube: the reversed stroke's segments from where it
//!   stands back to q_1 (it walks the tube back), then every leg.
//!
//! Goals are shared by every follower that needs them and removed by [`Routes::release`] once
//! no follower holds them (or at once by [`Routes::cancel`]).

use std::collections::BTreeMap;
use std::time::Duration;

use glam::DVec2;

use crowdfield_field::{Field, Shape};
use crowdfield_group::{GroupId, Groups};
use crowdfield_steer::{AgentId, Crowd, GoalId, Guidance};

use crate::field::{Joining, Leg, StrokeField, StrokeFieldSettings};
use crate::{SketchError, Stroke};

/// Identifies a route of [`Routes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteId(pub u32);

impl std::fmt::Display for RouteId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "route {}", self.0)
    }
}

/// Mode A settings: where the waypoints go on the stroke.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[cfg_attr(feature = "serde", serde(default))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaypointSettings {
    /// Metres between waypoints along the stroke (the stroke's end is always one).
    pub spacing: f64,
    /// A waypoint is reached within this many metres of it.
    pub radius: f64,
}

impl Default for WaypointSettings {
    fn default() -> Self {
        Self {
            spacing: 2.0,
            radius: 0.75,
        }
    }
}

/// How a route's followers are steered.
#[derive(Debug, Clone)]
pub enum RouteKind {
    /// Mode A: waypoints at these points.
    Waypoints(Vec<DVec2>),
    /// Mode B: the stroke's field (and, for whole-curve walkers that started in the tube, the
    /// reversed stroke's field).
    Field {
        /// The stroke's field.
        field: Box<StrokeField>,
        /// The reversed stroke's field, when some follower needed it.
        reversed: Option<Box<StrokeField>>,
        /// How followers join.
        joining: Joining,
    },
}

/// One order along a stroke: its stroke, how it steers, its goals and who follows it.
#[derive(Debug, Clone)]
pub struct Route {
    stroke: Stroke,
    kind: RouteKind,
    /// Every goal the route added.
    goals: Vec<GoalId>,
    /// Followers and their goal queues.
    agents: Vec<(AgentId, Vec<GoalId>)>,
    /// A group that follows it (the group removes its own goals).
    group: Option<GroupId>,
    /// While the field is being built: the goal at the stroke's end that stands in for the
    /// segments not built yet, last in every queue.
    tail: Option<GoalId>,
}

impl Route {
    /// The stroke followed.
    pub fn stroke(&self) -> &Stroke {
        &self.stroke
    }

    /// How it steers.
    pub fn kind(&self) -> &RouteKind {
        &self.kind
    }

    /// The stroke's field (Mode B).
    pub fn field(&self) -> Option<&StrokeField> {
        match &self.kind {
            RouteKind::Field { field, .. } => Some(field),
            RouteKind::Waypoints(_) => None,
        }
    }

    /// Each follower with its goal queue.
    pub fn followers(&self) -> &[(AgentId, Vec<GoalId>)] {
        &self.agents
    }

    /// The group following it, if one does.
    pub fn group(&self) -> Option<GroupId> {
        self.group
    }

    /// Every goal the route added.
    pub fn goals(&self) -> &[GoalId] {
        &self.goals
    }

    /// Whether its field is still being built ([`Routes::advance`]).
    pub fn is_building(&self) -> bool {
        self.tail.is_some()
    }
}

/// Every route of a crowd (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct Routes {
    routes: BTreeMap<RouteId, Route>,
    next: u32,
    /// How long an order may spend building its stroke's field before its followers set off
    /// (`None`: all of it, at once).
    budget: Option<Duration>,
}

/// Goals made for one order, shared between its followers.
struct GoalMaker<'a> {
    crowd: &'a mut Crowd,
    made: Vec<GoalId>,
    segments: BTreeMap<(bool, usize, bool), GoalId>,
    bridges: Vec<(DVec2, GoalId)>,
    approach: Option<GoalId>,
}

impl<'a> GoalMaker<'a> {
    fn new(crowd: &'a mut Crowd) -> Self {
        Self {
            crowd,
            made: Vec::new(),
            segments: BTreeMap::new(),
            bridges: Vec::new(),
            approach: None,
        }
    }

    /// The goal standing in for segments not built yet: straight to the stroke's end.
    fn tail(&mut self, field: &StrokeField) -> Result<GoalId, SketchError> {
        let end = field.end();
        let radius = field.settings().goal_radius();
        self.add(
            Shape::Disc {
                centre: end,
                radius,
            },
            Guidance::Towards(end),
        )
    }

    fn add(&mut self, shape: Shape, guidance: Guidance) -> Result<GoalId, SketchError> {
        let id = self.crowd.add_guided_goal(shape, guidance)?;
        self.made.push(id);
        Ok(id)
    }

    /// The goal of leg `leg` of `field`; `join`: with its joining field (the first leg of a
    /// walker joining there); `reversed`: a leg of the reversed stroke.
    fn leg(
        &mut self,
        field: &mut StrokeField,
        leg: Leg,
        join: bool,
        reversed: bool,
    ) -> Result<GoalId, SketchError> {
        match leg {
            Leg::Bridge(to) => {
                if let Some((_, id)) = self.bridges.iter().find(|(p, _)| *p == to) {
                    return Ok(*id);
                }
                let radius = field.settings().tube_half_width * 0.5;
                let id = self.crowd.add_goal(Shape::Disc { centre: to, radius })?;
                self.made.push(id);
                self.bridges.push((to, id));
                Ok(id)
            }
            Leg::Segment(k) => {
                if let Some(id) = self.segments.get(&(reversed, k, join)) {
                    return Ok(*id);
                }
                // The stroke's end is the queue's end; everywhere else (sub-goals, the
                // reversed stroke's end on the way back to q_1) a walker only passes.
                let last = !reversed && k + 1 == field.segments().len();
                let radius = if last {
                    field.settings().goal_radius()
                } else {
                    (field.settings().tube_half_width * 0.5).max(field.settings().cell_size)
                };
                let centre = field.segments()[k].end;
                let map: Field<f64> = if join {
                    // Built (for every walker joining here) before the queues.
                    field.join_field(k, &[])?.clone()
                } else {
                    field.segments()[k].field.clone()
                };
                let id = self.add(Shape::Disc { centre, radius }, Guidance::Map(map))?;
                self.segments.insert((reversed, k, join), id);
                Ok(id)
            }
        }
    }
}

impl Routes {
    /// No routes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Orders spend at most `budget` building a stroke's field before their followers set off;
    /// the rest is built by [`Routes::advance`] (call it every frame or planner step). While a
    /// field is unfinished each follower's queue ends with a goal straight to the stroke's end,
    /// replaced by the segments as they are built; a group's route ends with it the same way
    /// ([`Groups::splice_route`]). `None` (the default): fields are built whole when ordered.
    pub fn set_build_budget(&mut self, budget: Option<Duration>) {
        self.budget = budget;
    }

    /// Builds more of the unfinished fields, within `budget` each, and hands their followers
    /// the new segments. Returns how many routes are still being built.
    pub fn advance(&mut self, crowd: &mut Crowd, budget: Duration) -> Result<usize, SketchError> {
        self.advance_inner(crowd, None, budget)
    }

    /// [`Routes::advance`] for routes of walkers and of groups: a group's route has the new
    /// segments spliced in ([`Groups::splice_route`]); a group already on the straight way to
    /// the end joins the stroke again from its map's centre.
    pub fn advance_with_groups(
        &mut self,
        crowd: &mut Crowd,
        groups: &mut Groups,
        budget: Duration,
    ) -> Result<usize, SketchError> {
        self.advance_inner(crowd, Some(groups), budget)
    }

    fn advance_inner(
        &mut self,
        crowd: &mut Crowd,
        mut groups: Option<&mut Groups>,
        budget: Duration,
    ) -> Result<usize, SketchError> {
        let mut building = 0;
        for route in self.routes.values_mut() {
            let Some(tail) = route.tail else { continue };
            let RouteKind::Field {
                field, joining: _, ..
            } = &mut route.kind
            else {
                continue;
            };
            let before = field.legs().len();
            let complete = field.advance(budget)?;
            let mut maker = GoalMaker::new(crowd);
            let mut fresh = Vec::new();
            let new_legs = field.legs()[before..].to_vec();
            for leg in new_legs {
                fresh.push(maker.leg(field, leg, false, false)?);
            }
            let mut queues = Vec::with_capacity(route.agents.len());
            for (agent, queue) in &route.agents {
                let Some(a) = maker.crowd.agent(*agent) else {
                    queues.push(None);
                    continue;
                };
                if a.params().goals != *queue {
                    // Given other goals since: not this route's any more.
                    queues.push(None);
                    continue;
                }
                let at = a.goal_index().min(queue.len() - 1);
                let mut next: Vec<GoalId> = if queue[at] == tail {
                    // Ahead of the segments built so far, on the straight way to the end:
                    // join the stroke again from where it stands.
                    let p = a.position();
                    rejoin(&mut maker, field, p)?
                } else {
                    let mut q = queue[at..queue.len() - 1].to_vec();
                    q.extend(&fresh);
                    q
                };
                if !complete {
                    next.push(tail);
                }
                queues.push(Some(next));
            }
            if let (Some(g), Some(groups)) = (route.group, groups.as_deref_mut())
                && let Some(group) = groups.group(g)
            {
                let mut next = if group.guide().goal() == Some(tail) {
                    let p = group.anchor();
                    rejoin(&mut maker, field, p)?
                } else {
                    fresh.clone()
                };
                if !complete {
                    next.push(tail);
                }
                groups.splice_route(maker.crowd, g, tail, next)?;
            }
            let made = std::mem::take(&mut maker.made);
            route.goals.extend(made);
            for ((agent, queue), next) in route.agents.iter_mut().zip(queues) {
                if let Some(next) = next {
                    crowd
                        .set_goals(*agent, next.clone())
                        .expect("live agents and goals");
                    *queue = next;
                }
            }
            if complete {
                route.tail = None;
                // Followers that had it were all handed the segments instead; one that was
                // given other goals holding it keeps it alive until `release`.
                if crowd.remove_goal(tail).is_ok() {
                    route.goals.retain(|g| *g != tail);
                }
            } else {
                building += 1;
            }
        }
        Ok(building)
    }

    /// A route.
    pub fn route(&self, id: RouteId) -> Option<&Route> {
        self.routes.get(&id)
    }

    /// Every route, oldest first.
    pub fn routes(&self) -> impl Iterator<Item = (RouteId, &Route)> {
        self.routes.iter().map(|(k, v)| (*k, v))
    }

    /// Mode B: sends `agents` along the field of `stroke`, joining it as `joining` says. The
    /// field is built over the crowd's world and static obstacles (grown by
    /// [`StrokeFieldSettings::inflation`]). On error nothing is changed.
    pub fn follow(
        &mut self,
        crowd: &mut Crowd,
        agents: &[AgentId],
        stroke: &Stroke,
        joining: Joining,
        settings: StrokeFieldSettings,
    ) -> Result<RouteId, SketchError> {
        let starts = agents
            .iter()
            .map(|a| {
                crowd
                    .agent(*a)
                    .map(|ag| ag.position())
                    .ok_or(crowdfield_steer::SteerError::UnknownAgent(*a).into())
            })
            .collect::<Result<Vec<DVec2>, SketchError>>()?;
        let mut field = Box::new(begin_field(crowd, stroke, settings)?);
        field.advance(self.budget.unwrap_or(Duration::MAX))?;
        prepare_joining(&mut field, joining, &starts)?;
        let mut reversed = None;
        let mut maker = GoalMaker::new(crowd);
        let mut tail = None;
        let result = (|| {
            let mut queues = Vec::with_capacity(agents.len());
            if !field.is_complete() {
                tail = Some(maker.tail(&field)?);
            }
            for &start in &starts {
                let mut queue = queue_for(
                    &mut maker,
                    &mut field,
                    &mut reversed,
                    stroke,
                    joining,
                    start,
                )?;
                queue.extend(tail);
                queues.push(queue);
            }
            Ok::<_, SketchError>(queues)
        })();
        let made = std::mem::take(&mut maker.made);
        let queues = match result {
            Ok(q) => q,
            Err(e) => {
                for g in made {
                    let _ = crowd.remove_goal(g);
                }
                return Err(e);
            }
        };
        for (agent, queue) in agents.iter().zip(&queues) {
            crowd
                .set_goals(*agent, queue.clone())
                .expect("agents and goals checked above");
        }
        Ok(self.insert(Route {
            stroke: stroke.clone(),
            kind: RouteKind::Field {
                field,
                reversed,
                joining,
            },
            goals: made,
            agents: agents.iter().copied().zip(queues).collect(),
            group: None,
            tail,
        }))
    }

    /// Mode B for a group: its map follows the stroke's field (layer 2), joining it from the
    /// map's centre as `joining` says. The group owns the goals and removes them when its
    /// order changes; the group's earlier route here is forgotten.
    pub fn follow_with_group(
        &mut self,
        crowd: &mut Crowd,
        groups: &mut Groups,
        group: GroupId,
        stroke: &Stroke,
        joining: Joining,
        settings: StrokeFieldSettings,
    ) -> Result<RouteId, SketchError> {
        let start = groups
            .group(group)
            .ok_or(crowdfield_group::GroupError::UnknownGroup(group))?
            .anchor();
        let mut field = Box::new(begin_field(crowd, stroke, settings)?);
        field.advance(self.budget.unwrap_or(Duration::MAX))?;
        prepare_joining(&mut field, joining, &[start])?;
        let mut reversed = None;
        let mut maker = GoalMaker::new(crowd);
        let mut tail = None;
        let queue = queue_for(
            &mut maker,
            &mut field,
            &mut reversed,
            stroke,
            joining,
            start,
        )
        .and_then(|mut q| {
            if !field.is_complete() {
                let t = maker.tail(&field)?;
                tail = Some(t);
                q.push(t);
            }
            Ok(q)
        });
        let made = std::mem::take(&mut maker.made);
        if let Err(e) = queue.and_then(|q| Ok(groups.follow_route(crowd, group, q, true)?)) {
            for g in made {
                let _ = crowd.remove_goal(g);
            }
            return Err(e);
        }
        // The group's earlier route went with its earlier order.
        self.forget_group(group);
        Ok(self.insert(Route {
            stroke: stroke.clone(),
            kind: RouteKind::Field {
                field,
                reversed,
                joining,
            },
            goals: made,
            agents: Vec::new(),
            group: Some(group),
            tail,
        }))
    }

    /// Mode A: sends `agents` through waypoints along `stroke`, in order, shared by all of them
    /// (digest 004 §4.1: the same intermediate goal for a subset; each walker keeps its own
    /// (v, ε) and local map, so each follows the path in its own way). A waypoint is steered to
    /// straight ([`Guidance::Towards`]): the walker's local map takes it round what lies
    /// between. On error nothing is changed.
    pub fn waypoints(
        &mut self,
        crowd: &mut Crowd,
        agents: &[AgentId],
        stroke: &Stroke,
        settings: WaypointSettings,
    ) -> Result<RouteId, SketchError> {
        if let Some(a) = agents.iter().find(|a| crowd.agent(**a).is_none()) {
            return Err(crowdfield_steer::SteerError::UnknownAgent(*a).into());
        }
        let points = waypoint_points(stroke, settings)?;
        let mut made = Vec::with_capacity(points.len());
        for &p in &points {
            let shape = Shape::Disc {
                centre: p,
                radius: settings.radius,
            };
            match crowd.add_guided_goal(shape, Guidance::Towards(p)) {
                Ok(id) => made.push(id),
                Err(e) => {
                    for g in made {
                        let _ = crowd.remove_goal(g);
                    }
                    return Err(e.into());
                }
            }
        }
        for a in agents {
            crowd
                .set_goals(*a, made.clone())
                .expect("agents and goals checked above");
        }
        Ok(self.insert(Route {
            stroke: stroke.clone(),
            kind: RouteKind::Waypoints(points),
            agents: agents.iter().map(|a| (*a, made.clone())).collect(),
            goals: made,
            group: None,
            tail: None,
        }))
    }

    /// Mode A for a group: its map walks the waypoints one after another. The group owns the
    /// goals.
    pub fn waypoints_with_group(
        &mut self,
        crowd: &mut Crowd,
        groups: &mut Groups,
        group: GroupId,
        stroke: &Stroke,
        settings: WaypointSettings,
    ) -> Result<RouteId, SketchError> {
        groups
            .group(group)
            .ok_or(crowdfield_group::GroupError::UnknownGroup(group))?;
        let points = waypoint_points(stroke, settings)?;
        let mut made = Vec::with_capacity(points.len());
        let result = (|| {
            for &p in &points {
                let shape = Shape::Disc {
                    centre: p,
                    radius: settings.radius,
                };
                made.push(crowd.add_guided_goal(shape, Guidance::Towards(p))?);
            }
            groups.follow_route(crowd, group, made.clone(), true)?;
            Ok::<(), SketchError>(())
        })();
        if let Err(e) = result {
            for g in made {
                let _ = crowd.remove_goal(g);
            }
            return Err(e);
        }
        self.forget_group(group);
        Ok(self.insert(Route {
            stroke: stroke.clone(),
            kind: RouteKind::Waypoints(points),
            agents: Vec::new(),
            goals: made,
            group: Some(group),
            tail: None,
        }))
    }

    /// Forgets the routes group `group` follows (its goals are the group's own, removed by the
    /// group when its order changes). Returns how many were forgotten.
    pub fn forget_group(&mut self, group: GroupId) -> usize {
        let before = self.routes.len();
        self.routes.retain(|_, r| r.group != Some(group));
        before - self.routes.len()
    }

    /// Ends a route: its followers stop (an empty goal queue, unless they were given other
    /// goals since) and its goals are removed. A group's goals are the group's: give the group
    /// another order.
    pub fn cancel(&mut self, crowd: &mut Crowd, id: RouteId) -> Result<(), SketchError> {
        let route = self
            .routes
            .remove(&id)
            .ok_or(SketchError::BadSetting("no such route"))?;
        for (agent, queue) in &route.agents {
            if crowd
                .agent(*agent)
                .is_some_and(|a| a.params().goals == *queue)
            {
                let _ = crowd.set_goals(*agent, Vec::new());
            }
        }
        if route.group.is_none() {
            for g in route.goals {
                let _ = crowd.remove_goal(g);
            }
        }
        Ok(())
    }

    /// Removes the goals of routes no follower holds any more (they arrived, were given other
    /// goals, or left the crowd) and forgets those routes; returns how many were forgotten.
    /// Call now and then (the plugin calls it every planner step).
    pub fn release(&mut self, crowd: &mut Crowd) -> usize {
        let done: Vec<RouteId> = self
            .routes
            .iter()
            .filter(|(_, r)| {
                r.group.is_none()
                    && r.agents.iter().all(|(a, queue)| {
                        crowd.agent(*a).is_none_or(|ag| {
                            ag.params().goals != *queue
                                || ag.state() == crowdfield_steer::AgentState::Arrived
                        })
                    })
            })
            .map(|(k, _)| *k)
            .collect();
        let mut forgotten = 0;
        for id in done {
            let route = &self.routes[&id];
            // An arrived follower still holds its queue: empty it so the goals can go.
            for (a, queue) in &route.agents {
                if crowd
                    .agent(*a)
                    .is_some_and(|ag| ag.params().goals == *queue)
                {
                    let _ = crowd.set_goals(*a, Vec::new());
                }
            }
            let all_removed = route.goals.iter().map(|g| crowd.remove_goal(*g)).all(|r| {
                r.is_ok() || matches!(r, Err(crowdfield_steer::SteerError::UnknownGoal(_)))
            });
            if all_removed {
                self.routes.remove(&id);
                forgotten += 1;
            }
        }
        forgotten
    }

    fn insert(&mut self, route: Route) -> RouteId {
        let id = RouteId(self.next);
        self.next += 1;
        self.routes.insert(id, route);
        id
    }
}

/// The waypoints of a stroke: every `spacing` metres, the end included.
fn waypoint_points(stroke: &Stroke, settings: WaypointSettings) -> Result<Vec<DVec2>, SketchError> {
    if !(settings.radius.is_finite() && settings.radius > 0.0) {
        return Err(SketchError::BadSetting(
            "waypoint radius must be finite and > 0",
        ));
    }
    if stroke.is_empty() {
        return Err(SketchError::EmptyStroke);
    }
    let samples = stroke.resampled(settings.spacing)?;
    // The first sample is where the stroke starts: a walker drawn from starts there already,
    // so it is a waypoint only for a stroke of one point.
    let mut points = samples.positions();
    if points.len() > 1 {
        points.remove(0);
    }
    Ok(points)
}

/// Builds the joining fields (and the approach) the followers standing at `starts` need, each
/// over a box holding the followers that use it.
fn prepare_joining(
    field: &mut StrokeField,
    joining: Joining,
    starts: &[DVec2],
) -> Result<(), SketchError> {
    match joining {
        Joining::NearestPoint => {
            let mut by_segment: BTreeMap<usize, Vec<DVec2>> = BTreeMap::new();
            for &p in starts {
                let (k, _) = field.nearest_chain(p).expect("a field has a chain");
                // A walker nearest a part not built yet waits for nothing: it is built now.
                while field.segment_of(k).is_none() && !field.is_complete() {
                    field.advance(Duration::ZERO)?;
                }
                let segment = field.segment_of(k).expect("every chain cell has a segment");
                by_segment.entry(segment).or_default().push(p);
            }
            for (segment, points) in by_segment {
                field.join_field(segment, &points)?;
            }
        }
        Joining::WholeCurve => {
            let outside: Vec<DVec2> = starts
                .iter()
                .copied()
                .filter(|p| !starts_inside(field, *p))
                .collect();
            if !outside.is_empty() {
                field.approach_field(&outside)?;
            }
        }
    }
    Ok(())
}

/// The goals from the segment nearest `p` on, its field grown to `p`: a follower that went
/// ahead of the segments built so far joins the stroke again.
fn rejoin(
    maker: &mut GoalMaker<'_>,
    field: &mut StrokeField,
    p: DVec2,
) -> Result<Vec<GoalId>, SketchError> {
    let (k, _) = field.nearest_chain(p).expect("a field has a chain");
    let segment = field.segment_of(k).unwrap_or(field.segments().len() - 1);
    field.join_field(segment, &[p])?;
    let legs = field.legs().to_vec();
    let from = legs
        .iter()
        .position(|l| *l == Leg::Segment(segment))
        .expect("every segment is a leg");
    let mut q = vec![maker.leg(field, legs[from], true, false)?];
    for &leg in &legs[from + 1..] {
        q.push(maker.leg(field, leg, false, false)?);
    }
    Ok(q)
}

/// Whether a whole-curve walker at `p` starts inside the tube (and walks it back to q_1).
fn starts_inside(field: &StrokeField, p: DVec2) -> bool {
    field.in_tube(p) && field.start().distance(p) > field.settings().tube_half_width
}

/// The stroke's field over the crowd's world and static obstacles, begun (its first segment).
fn begin_field(
    crowd: &Crowd,
    stroke: &Stroke,
    settings: StrokeFieldSettings,
) -> Result<StrokeField, SketchError> {
    let s = crowd.settings();
    StrokeField::begin(stroke, (s.min, s.max), crowd.statics(), settings)
}

/// The goal queue for a follower standing at `start` (see the module doc).
fn queue_for(
    maker: &mut GoalMaker<'_>,
    field: &mut StrokeField,
    reversed: &mut Option<Box<StrokeField>>,
    stroke: &Stroke,
    joining: Joining,
    start: DVec2,
) -> Result<Vec<GoalId>, SketchError> {
    let legs = field.legs().to_vec();
    let mut queue = Vec::new();
    match joining {
        Joining::NearestPoint => {
            let (k, _) = field.nearest_chain(start).expect("a field has a chain");
            let segment = field.segment_of(k).expect("every chain cell has a segment");
            let at = legs
                .iter()
                .position(|l| *l == Leg::Segment(segment))
                .expect("every segment is a leg");
            queue.push(maker.leg(field, legs[at], true, false)?);
            for &leg in &legs[at + 1..] {
                queue.push(maker.leg(field, leg, false, false)?);
            }
        }
        Joining::WholeCurve => {
            let inside = field.in_tube(start)
                && field.start().distance(start) > field.settings().tube_half_width;
            if inside {
                // Walk the tube back to q_1 on the reversed stroke's field.
                if reversed.is_none() {
                    *reversed = Some(Box::new(field.for_stroke(&stroke.reversed())?));
                }
                let back = reversed.as_mut().expect("just built");
                let (k, _) = back.nearest_chain(start).expect("a field has a chain");
                let segment = back.segment_of(k).expect("every chain cell has a segment");
                let back_legs = back.legs().to_vec();
                let at = back_legs
                    .iter()
                    .position(|l| *l == Leg::Segment(segment))
                    .expect("every segment is a leg");
                for &leg in &back_legs[at..] {
                    queue.push(maker.leg(back, leg, false, true)?);
                }
            } else {
                let id = match maker.approach {
                    Some(id) => id,
                    None => {
                        let map = field.approach_field(&[])?.clone();
                        let centre = field.start();
                        let radius = field.settings().tube_half_width;
                        let id = maker.add(Shape::Disc { centre, radius }, Guidance::Map(map))?;
                        maker.approach = Some(id);
                        id
                    }
                };
                queue.push(id);
            }
            for &leg in &legs {
                queue.push(maker.leg(field, leg, false, false)?);
            }
        }
    }
    Ok(queue)
}
