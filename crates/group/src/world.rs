//! [`Groups`]: every group of a crowd, their orders, and their share of a planner step.
//!
//! Members are agents of the crowd ([`Steering::External`]): one spatial index, one collision
//! guard, one set of states and ids for everyone. A group only decides its members' steps and
//! hands them over ([`Crowd::hand_over_step`]); the crowd commits them in id order with
//! everyone else's. A step with groups:
//!
//! 1. [`Groups::prepare`]: members that left the crowd are dropped; leaders' positions are
//!    handed to the goals that follow them ([`Crowd::set_guidance`]).
//! 2. The crowd's guidance phase ([`StepPhase::Guidance`]) takes them.
//! 3. [`Groups::plan`]: for every group at once (in parallel, each from the same snapshot),
//!    the map moves and is stamped; then all maps are relaxed, up to 32 maps of a side per
//!    SIMD batch ([`FieldBatchF32`]); then each group's members decide (Eq 5.1) and their
//!    steps are handed over.
//! 4. The crowd's step commits them with everyone's.
//! 5. [`Groups::finish`]: measures and events (arrived, formation reached or broken, member
//!    lost).
//!
//! [`Groups::step`] runs all five. Every group's work depends only on the snapshot and its own
//! state, and maps are relaxed lane by lane as if alone, so results do not depend on the number
//! of threads.

use std::collections::BTreeMap;

use glam::DVec2;
use rayon::prelude::*;

use crowdfield_field::{Bias, Field, FieldBatchF32, Shape, SubgoalStack};
use crowdfield_steer::{
    AgentGrid, AgentId, Crowd, Guidance, SteerError, Steering, StepPhase, StepReport,
};

use crate::group::{Group, GroupMeasures, Guide, Member};
use crate::map::GroupMap;
use crate::{Formation, GroupError, GroupSettings, measure};

/// Checks what [`Groups::create`] would check of a group before it has agents: its settings, and
/// that `formation` gives `members` members of radius `radius` a slot each and fits the map
/// (a free group: that the map holds `members`). For scenario files and editors.
pub fn check_group(
    settings: &GroupSettings,
    formation: Option<&Formation>,
    members: usize,
    radius: f64,
) -> Result<(), GroupError> {
    if members == 0 {
        return Err(GroupError::EmptyGroup);
    }
    settings.validate()?;
    let slots = match formation {
        Some(f) => f.slots(members, radius)?,
        None => Vec::new(),
    };
    crate::group::check_fit(
        &slots,
        members,
        settings.map_side,
        settings.cell_for(radius),
    )
}

/// Identifies a group. Ids are never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroupId(pub u32);

impl std::fmt::Display for GroupId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "group {}", self.0)
    }
}

/// Why a member was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostReason {
    /// It left the crowd (removed, or despawned by the game); it is no longer a member.
    Removed,
    /// It stood outside its group map for [`GroupSettings::lost_after`] steps; it stays a
    /// member and keeps walking for its slot.
    OutOfMap,
}

/// Something that happened to a group in a step.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum GroupEvent {
    /// The group's map reached its goal and every member settled (on its slot, or for a free
    /// group stopped inside the map).
    Arrived {
        /// The group.
        group: GroupId,
        /// Planner steps between the first and the last member settling.
        spread: u64,
    },
    /// The members came within [`GroupSettings::formation_tolerance`] of their slots.
    FormationReached {
        /// The group.
        group: GroupId,
    },
    /// A reached formation came apart beyond [`GroupSettings::break_tolerance`].
    FormationBroken {
        /// The group.
        group: GroupId,
    },
    /// A member was lost.
    MemberLost {
        /// The group.
        group: GroupId,
        /// The member.
        agent: AgentId,
        /// Why.
        reason: LostReason,
    },
    /// A leader the group followed left the crowd; the group holds where it is.
    LeaderLost {
        /// The group.
        group: GroupId,
        /// The leader.
        leader: AgentId,
    },
}

/// What happened to the groups in one step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupReport {
    /// The events, in group order.
    pub events: Vec<GroupEvent>,
}

/// Every group of a crowd (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct Groups {
    groups: Vec<Option<Group>>,
    member_of: BTreeMap<AgentId, GroupId>,
    /// Regions near which groups use their `keep_together_side`, with their boxes.
    keep_together: Vec<(Shape, (DVec2, DVec2))>,
    /// Static shapes on a bucket grid, rebuilt when the crowd's static shapes change.
    statics: StaticIndex,
    /// Events found before the step's end (members removed, leaders lost).
    pending: Vec<GroupEvent>,
    step: u64,
}

impl Groups {
    /// No groups.
    pub fn new() -> Self {
        Self::default()
    }

    /// A group by id.
    pub fn group(&self, id: GroupId) -> Option<&Group> {
        self.groups.get(id.0 as usize).and_then(Option::as_ref)
    }

    fn group_mut(&mut self, id: GroupId) -> Result<&mut Group, GroupError> {
        self.groups
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(GroupError::UnknownGroup(id))
    }

    /// Live groups with their ids, in id order.
    pub fn groups(&self) -> impl Iterator<Item = (GroupId, &Group)> {
        self.groups
            .iter()
            .enumerate()
            .filter_map(|(i, g)| g.as_ref().map(|g| (GroupId(i as u32), g)))
    }

    /// The group an agent belongs to.
    pub fn group_of(&self, agent: AgentId) -> Option<GroupId> {
        self.member_of.get(&agent).copied()
    }

    /// Forms a group of `members` (in order: with [`SlotAssignment::ByIndex`](crate::SlotAssignment)
    /// member i takes slot i), in `formation` (`None`: a free group), with `settings`. The
    /// members are handed over to the group ([`Steering::External`]); its map is centred on
    /// their centroid, facing their mean heading (or +y). Errors, with nothing changed: no
    /// members, an agent listed twice or already in a group, an unknown agent, bad settings, a
    /// formation that is bad or does not fit the map.
    pub fn create(
        &mut self,
        crowd: &mut Crowd,
        members: &[AgentId],
        settings: GroupSettings,
        formation: Option<Formation>,
    ) -> Result<GroupId, GroupError> {
        if members.is_empty() {
            return Err(GroupError::EmptyGroup);
        }
        let bias = settings.validate()?;
        let id = GroupId(
            u32::try_from(self.groups.len())
                .map_err(|_| GroupError::BadSettings("no group id left"))?,
        );
        let mut seen = Vec::with_capacity(members.len());
        let mut list = Vec::with_capacity(members.len());
        for &agent in members {
            if seen.contains(&agent) {
                return Err(GroupError::AlreadyInGroup { agent, group: id });
            }
            if let Some(group) = self.group_of(agent) {
                return Err(GroupError::AlreadyInGroup { agent, group });
            }
            let a = crowd.agent(agent).ok_or(SteerError::UnknownAgent(agent))?;
            seen.push(agent);
            let mut m = Member::new(agent);
            m.position = a.position();
            m.radius = a.params().radius;
            m.max_step = a.params().max_step;
            list.push(m);
        }
        if let Some(f) = &formation {
            f.validate()?;
        }
        let radius = list.iter().map(|m| m.radius).fold(0.0, f64::max);
        let centroid = list.iter().map(|m| m.position).sum::<DVec2>() / list.len() as f64;
        let heading = members
            .iter()
            .filter_map(|id| crowd.agent(*id))
            .map(|a| a.heading())
            .sum::<DVec2>()
            .try_normalize()
            .unwrap_or(DVec2::Y);
        let cell = settings.cell_for(radius);
        let map = GroupMap::new(settings.map_side, cell, centroid, settings.initial_value)?;
        let mut group = Group {
            side: settings.map_side,
            settings,
            bias,
            members: list,
            formation,
            frame_slots: Vec::new(),
            slots: Vec::new(),
            guide: Guide::Hold,
            anchor: centroid,
            heading,
            assigned_heading: heading,
            reassign: true,
            map,
            subgoals: SubgoalStack::new(),
            arrived: false,
            standing: false,
            reported_arrival: false,
            formation_reached: false,
            arrived_at: None,
            measures: GroupMeasures::default(),
        };
        group.layout()?;
        group.place_slots();
        for &agent in members {
            crowd.set_steering(agent, Steering::External)?;
            self.member_of.insert(agent, id);
        }
        self.groups.push(Some(group));
        Ok(id)
    }

    /// Disbands a group: its members walk on their own local maps again (towards their own
    /// goals, if any), and goals it added for its orders are removed.
    pub fn remove(&mut self, crowd: &mut Crowd, id: GroupId) -> Result<(), GroupError> {
        self.group_mut(id)?;
        let group = self.groups[id.0 as usize].take().expect("checked above");
        for m in &group.members {
            self.member_of.remove(&m.id);
            // A member that left the crowd is simply forgotten.
            let _ = crowd.set_steering(m.id, Steering::LocalMap);
        }
        for goal in group.guide.owned_goals() {
            let _ = crowd.remove_goal(goal);
        }
        Ok(())
    }

    /// Adds a member at the end of the group's list; slots are laid out again.
    pub fn add_member(
        &mut self,
        crowd: &mut Crowd,
        id: GroupId,
        agent: AgentId,
    ) -> Result<(), GroupError> {
        if let Some(group) = self.group_of(agent) {
            return Err(GroupError::AlreadyInGroup { agent, group });
        }
        let a = crowd.agent(agent).ok_or(SteerError::UnknownAgent(agent))?;
        let mut m = Member::new(agent);
        m.position = a.position();
        m.radius = a.params().radius;
        m.max_step = a.params().max_step;
        let group = self.group_mut(id)?;
        group.members.push(m);
        if let Err(e) = group.layout() {
            group.members.pop();
            group.layout().expect("it fitted before");
            return Err(e);
        }
        crowd.set_steering(agent, Steering::External)?;
        self.member_of.insert(agent, id);
        Ok(())
    }

    /// Takes a member out of its group; it walks on its own local map again. A group may be
    /// left with no members: it holds still until given some.
    pub fn remove_member(
        &mut self,
        crowd: &mut Crowd,
        id: GroupId,
        agent: AgentId,
    ) -> Result<(), GroupError> {
        let group = self.group_mut(id)?;
        let k = group
            .members
            .iter()
            .position(|m| m.id == agent)
            .ok_or(GroupError::NotAMember { agent, group: id })?;
        group.members.remove(k);
        group.layout()?;
        self.member_of.remove(&agent);
        let _ = crowd.set_steering(agent, Steering::LocalMap);
        Ok(())
    }

    /// Changes the group's formation (`None`: a free group) at run time; members migrate to
    /// their new slots while the group keeps to its order (seed 004 §5.8).
    pub fn set_formation(
        &mut self,
        id: GroupId,
        formation: Option<Formation>,
    ) -> Result<(), GroupError> {
        if let Some(f) = &formation {
            f.validate()?;
        }
        let group = self.group_mut(id)?;
        let old = std::mem::replace(&mut group.formation, formation);
        if let Err(e) = group.layout() {
            group.formation = old;
            group.layout().expect("it fitted before");
            return Err(e);
        }
        group.formation_reached = false;
        group.place_slots();
        Ok(())
    }

    /// Changes the group map's side at run time: the seed's cohesion control (a smaller map
    /// keeps the group together round obstacles a larger one splits it around).
    pub fn set_map_side(&mut self, id: GroupId, side: usize) -> Result<(), GroupError> {
        let group = self.group_mut(id)?;
        let mut settings = group.settings.clone();
        settings.map_side = side;
        settings.validate()?;
        crate::group::check_fit(&group.frame_slots, group.members.len(), side, group.cell())?;
        group.settings = settings;
        Ok(())
    }

    /// Replaces a group's settings (the cell size is kept: it is fixed when the group forms).
    pub fn set_settings(&mut self, id: GroupId, settings: GroupSettings) -> Result<(), GroupError> {
        let bias = settings.validate()?;
        let group = self.group_mut(id)?;
        crate::group::check_fit(
            &group.frame_slots,
            group.members.len(),
            settings.map_side,
            group.cell(),
        )?;
        group.settings = settings;
        group.bias = bias;
        group.reassign = true;
        Ok(())
    }

    /// Orders the group to `region`: the crowd adds a goal there (its harmonic global map,
    /// solved at once) that the group's map follows; the goal of the previous order, if the
    /// group added it, is removed. Errors: an unknown group, a region that is not finite or lies
    /// wholly inside obstacles ([`SteerError::GoalBlocked`]).
    pub fn move_to(
        &mut self,
        crowd: &mut Crowd,
        id: GroupId,
        region: Shape,
    ) -> Result<(), GroupError> {
        self.group_mut(id)?;
        let goal = crowd.add_goal(region)?;
        self.set_guide(crowd, id, Guide::Goal { goal, owned: true });
        Ok(())
    }

    /// Orders the group to follow an existing crowd goal's guidance (a goal the game or another
    /// crate made: a stroke field, a shared destination). The group does not remove it.
    pub fn follow_goal(
        &mut self,
        crowd: &mut Crowd,
        id: GroupId,
        goal: crowdfield_steer::GoalId,
    ) -> Result<(), GroupError> {
        self.group_mut(id)?;
        if crowd.goal(goal).is_none() {
            return Err(SteerError::UnknownGoal(goal).into());
        }
        self.set_guide(crowd, id, Guide::Goal { goal, owned: false });
        Ok(())
    }

    /// Orders the group along crowd goals one after another (a drawn stroke's sub-goals,
    /// waypoints): its map follows each goal's guidance until the map's centre reaches that
    /// goal's region, then the next; the group arrives at the last. With `owned`, the group
    /// removes the goals when the order ends (they must not be used by anyone else).
    pub fn follow_route(
        &mut self,
        crowd: &mut Crowd,
        id: GroupId,
        goals: Vec<crowdfield_steer::GoalId>,
        owned: bool,
    ) -> Result<(), GroupError> {
        self.group_mut(id)?;
        if goals.is_empty() {
            return Err(GroupError::BadOrder("a route needs at least one goal"));
        }
        if let Some(&goal) = goals.iter().find(|g| crowd.goal(**g).is_none()) {
            return Err(SteerError::UnknownGoal(goal).into());
        }
        self.set_guide(
            crowd,
            id,
            Guide::Route {
                goals,
                next: 0,
                owned,
            },
        );
        Ok(())
    }

    /// Replaces the part of a group's route from goal `from` on with `goals`: a route built
    /// while the group walks it, whose stand-in goal (straight to the end) gives way to the
    /// goals built since. The group walks on from the same place in its route; an owned route
    /// owns the new goals too. `from` itself stays in the crowd (it is the caller's to
    /// remove). On error nothing changes.
    pub fn splice_route(
        &mut self,
        crowd: &Crowd,
        id: GroupId,
        from: crowdfield_steer::GoalId,
        goals: Vec<crowdfield_steer::GoalId>,
    ) -> Result<(), GroupError> {
        if goals.is_empty() {
            return Err(GroupError::BadOrder("a route needs at least one goal"));
        }
        if let Some(&goal) = goals.iter().find(|g| crowd.goal(**g).is_none()) {
            return Err(SteerError::UnknownGoal(goal).into());
        }
        let group = self.group_mut(id)?;
        let Guide::Route {
            goals: route, next, ..
        } = &mut group.guide
        else {
            return Err(GroupError::BadOrder("the group follows no route"));
        };
        let at = route
            .iter()
            .position(|g| *g == from)
            .ok_or(GroupError::BadOrder("the goal is not on the group's route"))?;
        route.truncate(at);
        route.extend(goals);
        if *next >= at {
            // It was on its way to (or at) the stand-in: on to the first goal put in its
            // place.
            *next = at;
            group.arrived = false;
            group.reported_arrival = false;
            group.arrived_at = None;
            group.subgoals.clear();
        }
        Ok(())
    }

    /// Orders the group to follow `leader` (any agent of the crowd but its own members),
    /// keeping its map's centre `distance` metres behind it (seed 004 §5.9: the leader's
    /// position is the group map's intermediate goal).
    pub fn follow(
        &mut self,
        crowd: &mut Crowd,
        id: GroupId,
        leader: AgentId,
        distance: f64,
    ) -> Result<(), GroupError> {
        if !(distance.is_finite() && distance >= 0.0) {
            return Err(GroupError::BadOrder(
                "follow distance must be finite and ≥ 0",
            ));
        }
        if self.group_of(leader) == Some(id) {
            return Err(GroupError::BadOrder("a group cannot follow its own member"));
        }
        self.group_mut(id)?;
        let at = crowd
            .agent(leader)
            .ok_or(SteerError::UnknownAgent(leader))?
            .position();
        let region = Shape::Disc {
            centre: at,
            radius: 0.01,
        };
        let goal = crowd.add_guided_goal(region, Guidance::Towards(at))?;
        self.set_guide(
            crowd,
            id,
            Guide::Leader {
                leader,
                goal,
                distance,
            },
        );
        Ok(())
    }

    /// Orders the group to stand where it is.
    pub fn hold(&mut self, crowd: &mut Crowd, id: GroupId) -> Result<(), GroupError> {
        self.group_mut(id)?;
        self.set_guide(crowd, id, Guide::Hold);
        Ok(())
    }

    fn set_guide(&mut self, crowd: &mut Crowd, id: GroupId, guide: Guide) {
        let Ok(group) = self.group_mut(id) else {
            return;
        };
        let old = std::mem::replace(&mut group.guide, guide);
        group.arrived = false;
        group.reported_arrival = false;
        group.arrived_at = None;
        group.reassign = true;
        group.subgoals.clear();
        for m in &mut group.members {
            m.settled_at = None;
        }
        for goal in old.owned_goals() {
            let _ = crowd.remove_goal(goal);
        }
    }

    /// Marks a region near which groups use their [`GroupSettings::keep_together_side`]: an
    /// obstacle the game tags "large enough that a group must stay together" (seed 004 §5.10:
    /// split round bushes, stay together round big rocks). Returns its index.
    pub fn add_keep_together(&mut self, region: Shape) -> Result<usize, GroupError> {
        let bounds = region.bounds()?;
        self.keep_together.push((region, bounds));
        Ok(self.keep_together.len() - 1)
    }

    /// Replaces every "keep together" region at once (a game or plugin that keeps its own list
    /// hands it over whenever it changes). Validated as a whole: on error the previous regions
    /// stay.
    pub fn set_keep_together(
        &mut self,
        regions: impl IntoIterator<Item = Shape>,
    ) -> Result<(), GroupError> {
        let regions = regions
            .into_iter()
            .map(|r| r.bounds().map(|b| (r, b)))
            .collect::<Result<Vec<_>, _>>()?;
        self.keep_together = regions;
        Ok(())
    }

    /// The "keep together" regions, in the order they were added.
    pub fn keep_together(&self) -> impl Iterator<Item = &Shape> {
        self.keep_together.iter().map(|(s, _)| s)
    }

    /// Step 1 (see the module doc): leaders' positions are handed to the goals that follow
    /// them. Call before the crowd's guidance phase.
    pub fn prepare(&mut self, crowd: &mut Crowd) {
        for (g, slot) in self.groups.iter_mut().enumerate() {
            let Some(group) = slot.as_mut() else { continue };
            let id = GroupId(g as u32);
            if let Guide::Leader {
                leader,
                goal,
                distance,
            } = group.guide.clone()
            {
                match crowd.agent(leader) {
                    Some(a) => {
                        let at = a.position();
                        let back = a
                            .heading()
                            .try_normalize()
                            .or_else(|| (at - group.anchor).try_normalize())
                            .unwrap_or(DVec2::Y);
                        let target = at - back * distance;
                        let _ = crowd.set_guidance(goal, Guidance::Towards(target));
                    }
                    None => {
                        self.pending
                            .push(GroupEvent::LeaderLost { group: id, leader });
                        group.guide = Guide::Hold;
                        let _ = crowd.remove_goal(goal);
                    }
                }
            }
        }
    }

    /// Step 3 (see the module doc): every group's map, relaxation and members' decisions; the
    /// steps are handed over to the crowd. Call after the crowd's guidance phase and before its
    /// sensing.
    pub fn plan(&mut self, crowd: &mut Crowd) {
        if self.groups.iter().flatten().next().is_none() {
            return;
        }
        // The snapshot every group reads.
        let agents: Vec<(AgentId, DVec2, f64)> = crowd
            .agents()
            .map(|(id, a)| (id, a.position(), a.params().radius))
            .collect();
        let points: Vec<Option<(DVec2, f64)>> =
            agents.iter().map(|(_, p, r)| Some((*p, *r))).collect();
        let largest = agents.iter().map(|a| a.2).fold(0.0, f64::max);
        let grid = AgentGrid::build(&points, 4.0);
        self.statics.update(crowd.statics());
        let moving: Vec<&Shape> = crowd.moving_obstacles().collect();
        let keep_together = &self.keep_together;
        let statics = &self.statics;
        let crowd_ref: &Crowd = crowd;
        let position_of = |id: AgentId| {
            agents
                .binary_search_by_key(&id, |a| a.0)
                .ok()
                .map(|k| (agents[k].1, agents[k].2))
        };
        // Phase A: members that left the crowd dropped; the map moved, stamped and its goal
        // projected, group by group.
        let done: Vec<(Vec<AgentId>, Option<GroupError>)> = self
            .groups
            .par_iter_mut()
            .map(|slot| {
                let Some(group) = slot.as_mut() else {
                    return (Vec::new(), None);
                };
                let mut gone = Vec::new();
                group.members.retain_mut(|m| match position_of(m.id) {
                    Some((p, r)) => {
                        m.position = p;
                        m.radius = r;
                        true
                    }
                    None => {
                        gone.push(m.id);
                        false
                    }
                });
                if !gone.is_empty() {
                    // Fewer members never make a formation that fitted stop fitting.
                    let _ = group.layout();
                }
                let guidance = guidance_of(group, crowd_ref);
                group.standing = guidance == DVec2::ZERO;
                let full = group.settings.map_side;
                let side = match group.settings.keep_together_side {
                    0 => full,
                    small => {
                        let reach = DVec2::splat(full as f64 * group.cell() * 0.5);
                        let (lo, hi) = (group.anchor - reach, group.anchor + reach);
                        let near = keep_together.iter().any(|(_, (a, b))| {
                            a.x <= hi.x && a.y <= hi.y && b.x >= lo.x && b.y >= lo.y
                        });
                        if near { small.min(full) } else { full }
                    }
                };
                group.advance_anchor(guidance, side);
                let half = side as f64 * group.cell() * 0.5 + group.cell();
                let (lo, hi) = (
                    group.anchor - DVec2::splat(half),
                    group.anchor + DVec2::splat(half),
                );
                let mut near: Vec<&Shape> = statics.near(lo, hi);
                near.extend(moving.iter().copied().filter(|s| {
                    s.bounds().is_ok_and(|(a, b)| {
                        a.x <= hi.x && a.y <= hi.y && b.x >= lo.x && b.y >= lo.y
                    })
                }));
                let mut own: Vec<AgentId> = group.members.iter().map(|m| m.id).collect();
                own.sort_unstable();
                let mut others = Vec::new();
                let reach = half * std::f64::consts::SQRT_2 + largest;
                grid.for_each_point_near(group.anchor, reach, |k, q, r| {
                    if own.binary_search(&agents[k].0).is_err() {
                        others.push((q, r));
                    }
                });
                (gone, group.stamp_map(side, &near, &others, guidance).err())
            })
            .collect();
        for (g, (gone, failure)) in done.into_iter().enumerate() {
            for agent in gone {
                self.member_of.remove(&agent);
                self.pending.push(GroupEvent::MemberLost {
                    group: GroupId(g as u32),
                    agent,
                    reason: LostReason::Removed,
                });
            }
            // Sides and cells are validated when set; a map that cannot be built is a bug.
            debug_assert!(failure.is_none(), "group map not built: {failure:?}");
        }
        // Members stamped on their cells.
        let saved: Vec<Vec<Option<(usize, usize)>>> = self
            .groups
            .par_iter_mut()
            .map(|slot| slot.as_mut().map_or_else(Vec::new, Group::stamp_members))
            .collect();
        // Phase B: every map relaxed, 32 of a side at a time.
        relax_maps(&mut self.groups);
        // Phase C: members decide, group by group.
        let steps: Vec<Vec<(AgentId, crowdfield_steer::HandedStep)>> = self
            .groups
            .par_iter_mut()
            .zip(saved)
            .map(|(slot, saved)| {
                let Some(group) = slot.as_mut() else {
                    return Vec::new();
                };
                // (A group standing, arrived or waiting for its leader, has a map with no goal,
                // flat by design: nothing to read.)
                let goal = group
                    .guide
                    .goal()
                    .filter(|_| !group.standing)
                    .and_then(|g| crowd_ref.goal(g));
                let way = |p: DVec2| {
                    goal.map_or(DVec2::ZERO, |g| g.guidance_at(p, &mut SubgoalStack::new()))
                };
                group.decide_members(saved, way)
            })
            .collect();
        for (agent, step) in steps.into_iter().flatten() {
            // Members are live agents with external steering and steps within their max
            // step; a refusal here would be a bug, and the member just stands.
            let handed = crowd.hand_over_step(agent, step);
            debug_assert!(handed.is_ok(), "{agent} refused its step: {handed:?}");
        }
    }

    /// Step 5 (see the module doc): measures and events after the crowd's step.
    pub fn finish(&mut self, crowd: &Crowd) -> GroupReport {
        self.step += 1;
        let step = self.step;
        let mut report = GroupReport {
            events: std::mem::take(&mut self.pending),
        };
        let events: Vec<Vec<GroupEvent>> = self
            .groups
            .par_iter_mut()
            .enumerate()
            .map(|(g, slot)| match slot.as_mut() {
                Some(group) => finish_group(GroupId(g as u32), group, crowd, step),
                None => Vec::new(),
            })
            .collect();
        report.events.extend(events.into_iter().flatten());
        report
    }

    /// One planner step of the crowd with its groups: [`Self::prepare`], the crowd's guidance
    /// phase, [`Self::plan`], the rest of the crowd's step, [`Self::finish`].
    pub fn step(&mut self, crowd: &mut Crowd) -> (StepReport, GroupReport) {
        self.prepare(crowd);
        crowd.advance_to(StepPhase::Guidance);
        self.plan(crowd);
        let report = crowd.step();
        let groups = self.finish(crowd);
        (report, groups)
    }
}

/// A group's measures and events after the crowd's step `step` (see [`Groups::finish`]).
fn finish_group(id: GroupId, group: &mut Group, crowd: &Crowd, step: u64) -> Vec<GroupEvent> {
    let mut events = Vec::new();
    let positions: Vec<DVec2> = group
        .members
        .iter()
        .map(|m| crowd.agent(m.id).map_or(m.position, |a| a.position()))
        .collect();
    let cell = group.cell();
    let slots: Vec<DVec2> = group
        .members
        .iter()
        .filter_map(|m| group.slots.get(m.slot).copied())
        .collect();
    let formation = slots.len() == positions.len() && !slots.is_empty();
    let distance = if formation {
        measure::slot_distance(&positions, &slots)
    } else {
        0.0
    };
    group.measures = GroupMeasures {
        slot_distance: distance,
        formation_error: if formation {
            measure::formation_error(&positions, &slots, cell)
        } else {
            0.0
        },
        cohesion: measure::cohesion(&positions, group.map.half_size()),
        parts: measure::splits(&positions, link_distance(group)),
    };
    // Members outside their map.
    for (m, p) in group.members.iter_mut().zip(&positions) {
        if group.map.interior_cell(*p).is_some() {
            m.outside = 0;
        } else {
            m.outside = m.outside.saturating_add(1);
            if m.outside == group.settings.lost_after.max(1) {
                events.push(GroupEvent::MemberLost {
                    group: id,
                    agent: m.id,
                    reason: LostReason::OutOfMap,
                });
            }
        }
    }
    let tolerance = group.formation_tolerance();
    let break_tolerance = group.break_tolerance();
    if formation {
        if !group.formation_reached && distance <= tolerance {
            group.formation_reached = true;
            events.push(GroupEvent::FormationReached { group: id });
        } else if group.formation_reached && distance > break_tolerance {
            group.formation_reached = false;
            events.push(GroupEvent::FormationBroken { group: id });
        }
    }
    // Arrival: every member settled once the map stands in the goal.
    if group.arrived && !group.reported_arrival && !group.members.is_empty() {
        let before: Vec<DVec2> = group.members.iter().map(|m| m.position).collect();
        for (k, m) in group.members.iter_mut().enumerate() {
            let settled = if formation {
                (positions[k] - slots[k]).length() <= tolerance
            } else {
                group.map.interior_cell(positions[k]).is_some()
                    && (positions[k] - before[k]).length() <= 0.05 * m.max_step
            };
            if settled && m.settled_at.is_none() {
                m.settled_at = Some(step);
            }
        }
        let settled: Vec<Option<u64>> = group.members.iter().map(|m| m.settled_at).collect();
        if let Some(spread) = measure::arrival_spread(&settled) {
            group.reported_arrival = true;
            events.push(GroupEvent::Arrived { group: id, spread });
        }
    }

    events
}

/// The direction the group's guidance gives at its anchor (zero to stand), and whether the
/// anchor has arrived (noted on the group).
fn guidance_of(group: &mut Group, crowd: &Crowd) -> DVec2 {
    let Some(goal_id) = group.guide.goal() else {
        return DVec2::ZERO;
    };
    let Some(goal) = crowd.goal(goal_id) else {
        return DVec2::ZERO;
    };
    let at = group.anchor;
    if let Guide::Leader { .. } = group.guide {
        // Towards the point behind the leader; stand within a cell of it.
        let d = goal.guidance_at(at, &mut group.subgoals);
        return if d.length() <= group.cell() {
            DVec2::ZERO
        } else {
            d
        };
    }
    let reached = |goal: &crowdfield_steer::Goal| {
        goal.shape()
            .distance(at)
            .is_ok_and(|d| d <= group.settings.arrival_radius)
    };
    if !group.arrived
        && reached(goal)
        && let Guide::Route { goals, next, .. } = &mut group.guide
        && *next + 1 < goals.len()
    {
        // On to the route's next goal.
        *next += 1;
        group.subgoals.clear();
        return match crowd.goal(goals[*next]) {
            Some(goal) => goal.guidance_at(at, &mut group.subgoals),
            None => DVec2::ZERO,
        };
    }
    if group.arrived || reached(goal) {
        group.arrived = true;
        return DVec2::ZERO;
    }
    goal.guidance_at(at, &mut group.subgoals)
}

/// Members closer than this are connected (for [`measure::splits`]): the formation's spacing
/// with half again of slack, or three cells for a free group.
fn link_distance(group: &Group) -> f64 {
    let spacing = group
        .frame_slots
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            group.frame_slots[..i]
                .iter()
                .map(move |b| (*a - *b).length())
        })
        .fold(f64::INFINITY, f64::min);
    if spacing.is_finite() {
        spacing * 1.5
    } else {
        3.0 * group.cell()
    }
}

/// Relaxes every group's map with its bias and sweeps, maps of one side and sweep count
/// together, 32 to a SIMD batch ([`FieldBatchF32`]: each lane as if relaxed alone, so batches
/// and threads change no result).
/// A map to relax: its side, its sweeps, the map and its bias.
type MapJob<'a> = (usize, usize, &'a mut Field<f64>, Bias);

fn relax_maps(groups: &mut [Option<Group>]) {
    let mut maps: Vec<MapJob<'_>> = groups
        .iter_mut()
        .flatten()
        .map(|g| {
            let side = g.map.side();
            let sweeps = g.settings.sweeps;
            let bias = g.bias;
            (side, sweeps, g.map.field_mut(), bias)
        })
        .collect();
    maps.sort_by_key(|m| (m.0, m.1));
    let mut jobs: Vec<&mut [MapJob<'_>]> = Vec::new();
    for same in maps.chunk_by_mut(|a, b| (a.0, a.1) == (b.0, b.1)) {
        jobs.extend(same.chunks_mut(crowdfield_field::BATCH_LANES_F32));
    }
    jobs.into_par_iter().for_each(|job| {
        let (side, sweeps) = (job[0].0, job[0].1);
        let biases: Vec<Bias> = job.iter().map(|m| m.3).collect();
        let mut lanes: Vec<(&mut Field<f64>, &Bias)> = job
            .iter_mut()
            .zip(&biases)
            .map(|(m, b)| (&mut *m.2, b))
            .collect();
        let mut batch = FieldBatchF32::new(side, side);
        let done = batch.relax_whole(&mut lanes, sweeps);
        debug_assert!(done, "maps of one side fit one batch");
    });
}

/// Static shapes bucketed on a coarse grid of their boxes, so that a group finds those near
/// its map without testing them all.
#[derive(Debug, Clone, Default)]
struct StaticIndex {
    shapes: Vec<Shape>,
    bounds: Vec<(DVec2, DVec2)>,
    origin: DVec2,
    cols: usize,
    rows: usize,
    buckets: Vec<Vec<u32>>,
}

/// Bucket size of [`StaticIndex`], metres.
const BUCKET: f64 = 8.0;

impl StaticIndex {
    /// Rebuilds the index when `statics` differ from the shapes it holds.
    fn update(&mut self, statics: &[Shape]) {
        if self.cols > 0 && self.shapes.as_slice() == statics {
            return;
        }
        self.shapes = statics.to_vec();
        self.bounds = statics
            .iter()
            .map(|s| s.bounds().unwrap_or((DVec2::ZERO, DVec2::ZERO)))
            .collect();
        let (lo, hi) = self.bounds.iter().fold(
            (DVec2::INFINITY, DVec2::NEG_INFINITY),
            |(lo, hi), (a, b)| (lo.min(*a), hi.max(*b)),
        );
        if !lo.is_finite() || !hi.is_finite() {
            *self = StaticIndex {
                cols: 1,
                ..StaticIndex::default()
            };
            return;
        }
        self.origin = lo;
        self.cols = (((hi.x - lo.x) / BUCKET).floor() as usize + 1).min(4096);
        self.rows = (((hi.y - lo.y) / BUCKET).floor() as usize + 1).min(4096);
        self.buckets = vec![Vec::new(); self.cols * self.rows];
        for (k, (a, b)) in self.bounds.iter().enumerate() {
            let (c0, r0) = self.cell(*a);
            let (c1, r1) = self.cell(*b);
            for r in r0..=r1 {
                for c in c0..=c1 {
                    self.buckets[r * self.cols + c].push(k as u32);
                }
            }
        }
    }

    fn cell(&self, p: DVec2) -> (usize, usize) {
        let g = (p - self.origin) / BUCKET;
        (
            (g.x.max(0.0) as usize).min(self.cols.saturating_sub(1)),
            (g.y.max(0.0) as usize).min(self.rows.saturating_sub(1)),
        )
    }

    /// The shapes whose boxes meet `lo..hi`, each once, in index order.
    fn near(&self, lo: DVec2, hi: DVec2) -> Vec<&Shape> {
        if self.buckets.is_empty() {
            return Vec::new();
        }
        let (c0, r0) = self.cell(lo);
        let (c1, r1) = self.cell(hi);
        let mut found: Vec<u32> = Vec::new();
        for r in r0..=r1 {
            for c in c0..=c1 {
                found.extend(&self.buckets[r * self.cols + c]);
            }
        }
        found.sort_unstable();
        found.dedup();
        found
            .into_iter()
            .filter(|&k| {
                let (a, b) = self.bounds[k as usize];
                a.x <= hi.x && a.y <= hi.y && b.x >= lo.x && b.y >= lo.y
            })
            .map(|k| &self.shapes[k as usize])
            .collect()
    }
}
