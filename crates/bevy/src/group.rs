//! Groups in formation ([`crowdfield_group`]) driven from components: a group entity with a
//! [`CrowdGroup`] and a [`GroupOrder`], member agents pointing at it with [`MemberOf`]
//! (Bevy keeps the group's [`GroupMembers`] list in step), [`GroupStatus`] and messages out.
//! Behind the `groups` feature (on by default).
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_crowdfield::prelude::*;
//!
//! fn spawn(mut commands: Commands) {
//!     let group = commands
//!         .spawn((
//!             CrowdGroup::in_formation(Formation::template(FormationTemplate::Wedge)),
//!             GroupOrder::MoveTo(Vec2::new(30.0, 10.0)),
//!         ))
//!         .id();
//!     for i in 0..7 {
//!         commands.spawn((
//!             CrowdAgent,
//!             Transform::from_xyz(4.0, 6.0 + i as f32, 0.0),
//!             MemberOf(group),
//!         ));
//!     }
//! }
//! ```
//!
//! ## When things run
//!
//! In [`CrowdfieldSystems::SceneInput`] (after agents register) groups are formed, changed or
//! disbanded from their components, members join and leave, orders are given, and leaders'
//! positions are handed to the goals that follow them. Between
//! [`CrowdfieldSystems::Guidance`] and [`CrowdfieldSystems::Sensing`] every group plans: its
//! map moves, is stamped and relaxed, and its members' steps are handed to the crowd, which
//! commits them with every other agent's in [`CrowdfieldSystems::Motion`]. In
//! [`CrowdfieldSystems::Events`] [`GroupStatus`] is written and the messages sent.
//!
//! ## Bad input
//!
//! A group whose settings, formation or order cannot be used (a map too small for its
//! formation, a formation of one point for several members, a goal inside a wall, a member that
//! is already in another group) gets a [`GroupRejected`] message with the typed error, and keeps
//! what it had (a group not yet formed waits) until its components change. Members that are not
//! registered agents (pending, rejected) are left out until they are. A group with no member
//! registered yet simply waits; nothing panics.

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use crowdfield_field::Shape;
use crowdfield_group::{
    Formation, GroupError, GroupEvent, GroupId, GroupMeasures, GroupSettings, Groups, LostReason,
};
use crowdfield_steer::AgentId;

use crate::plugin::{CrowdfieldSystems, SceneInputStage, planner_due};
use crate::settings::CrowdfieldSettings;
use crate::world::CrowdWorld;

/// A group of agents deciding their steps together on one moving group map (seed 004): put it
/// on a group entity, with [`MemberOf`] on each member agent. Changing it at run time changes
/// the group's settings (its map side is its cohesion) or formation; members migrate to their
/// new slots while the group keeps to its order.
#[derive(Component, Debug, Clone, PartialEq, Default)]
#[require(GroupOrder, GroupStatus)]
pub struct CrowdGroup {
    /// The group's map, bands, motion and tolerances.
    pub settings: GroupSettings,
    /// The formation; `None` for a free group.
    pub formation: Option<Formation>,
}

impl CrowdGroup {
    /// A group in `formation` with the default settings.
    pub fn in_formation(formation: Formation) -> Self {
        Self {
            settings: GroupSettings::default(),
            formation: Some(formation),
        }
    }

    /// With these settings.
    pub fn with_settings(mut self, settings: GroupSettings) -> Self {
        self.settings = settings;
        self
    }
}

/// On a static obstacle (a [`CrowdObstacle`](crate::CrowdObstacle) or a rapier collider): a
/// group must keep together round it (seed 004 §5.10: split round bushes, stay together round
/// big rocks). Groups near it use their
/// [`keep_together_side`](GroupSettings::keep_together_side), a smaller map that sees the
/// obstacle only through its border and goal, so the whole group goes round one side. Moving
/// obstacles are not taken.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[reflect(Component, Default)]
pub struct KeepTogether;

/// On a member agent: the group entity it belongs to. Members are ordered as in the group's
/// [`GroupMembers`] (with the seed's slot assignment, member i takes slot i).
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
#[relationship(relationship_target = GroupMembers)]
pub struct MemberOf(pub Entity);

/// On a group entity: its member agents, kept by Bevy from their [`MemberOf`].
#[derive(Component, Debug, Clone, PartialEq, Eq, Default)]
#[relationship_target(relationship = MemberOf)]
pub struct GroupMembers(Vec<Entity>);

impl GroupMembers {
    /// The member entities, in order.
    pub fn entities(&self) -> &[Entity] {
        &self.0
    }
}

/// What a group does; change it to give a new order.
#[derive(Component, Debug, Clone, PartialEq, Default)]
pub enum GroupOrder {
    /// Stand where it is.
    #[default]
    Hold,
    /// Walk to a point (a disc of [`CrowdfieldSettings::point_goal_radius`]).
    MoveTo(Vec2),
    /// Walk into a region.
    MoveToRegion(Shape),
    /// Follow an agent, keeping the map's centre `distance` metres behind it.
    Follow {
        /// The leader (any registered agent but the group's own members).
        leader: Entity,
        /// Metres behind it.
        distance: f32,
    },
    /// Walk along a drawn path: the group's map follows the path's stroke field (seed 004
    /// §4.2, Mode B), joining it as `joining` says, and the group arrives at its end.
    #[cfg(feature = "sketch")]
    FollowPath {
        /// The path's points, in order (a drawn stroke, simplified and resampled by the
        /// field).
        points: Vec<Vec2>,
        /// Join at the nearest point, or walk the whole path from its start.
        joining: crowdfield_sketch::Joining,
    },
    /// Walk through points along a drawn path one after another (seed 004 §4.1, Mode A:
    /// waypoints every 2 m along it).
    #[cfg(feature = "sketch")]
    Waypoints(Vec<Vec2>),
}

/// A group's state after the last planner step, written by the plugin.
#[derive(Component, Debug, Clone, PartialEq, Default)]
pub struct GroupStatus {
    /// Whether the group is formed (it has registered members).
    pub formed: bool,
    /// The map's and formation's centre.
    pub anchor: Vec2,
    /// The formation's heading (unit).
    pub heading: Vec2,
    /// Whether the map reached its goal.
    pub arrived: bool,
    /// Whether the members are on their slots.
    pub formation_reached: bool,
    /// Formation error, cohesion and parts ([`crowdfield_group::measure`]).
    pub measures: GroupMeasures,
    /// Each member's slot in the world (none for a free group).
    pub slots: Vec<(Entity, Vec2)>,
}

/// A group's map reached its goal and every member settled.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupArrived {
    /// The group entity.
    pub group: Entity,
    /// Planner steps between the first and the last member settling.
    pub spread: u64,
}

/// A group's members came onto their slots.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupFormationReached {
    /// The group entity.
    pub group: Entity,
}

/// A group's reached formation came apart (in a narrow passage, among obstacles).
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupFormationBroken {
    /// The group entity.
    pub group: Entity,
}

/// A group lost a member: it left the crowd (despawned, or no longer an agent), or stood
/// outside its group map too long.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupMemberLost {
    /// The group entity.
    pub group: Entity,
    /// The member entity (gone if it was despawned).
    pub member: Entity,
    /// Why.
    pub reason: LostReason,
}

/// A group's components were rejected; it keeps what it had until they change.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct GroupRejected {
    /// The group entity.
    pub group: Entity,
    /// Why.
    pub error: GroupError,
}

/// Every group of the crowd behind the ECS, with the maps between entities and group ids.
/// Read it for what [`GroupStatus`] does not carry (group maps, bands): the debug overlays do.
#[derive(Resource, Default)]
pub struct GroupWorld {
    groups: Groups,
    by_entity: EntityHashMap<GroupId>,
    by_group: Vec<Option<Entity>>,
    /// The agents each group was given, with their entities, to see members re-registered or
    /// gone.
    members: EntityHashMap<Vec<(AgentId, Entity)>>,
    /// The routes of groups sent along drawn paths (their stroke fields, for overlays).
    #[cfg(feature = "sketch")]
    routes: crowdfield_sketch::Routes,
    /// The shapes of the [`KeepTogether`] obstacles handed to the groups last.
    keep_together: Vec<Shape>,
}

impl GroupWorld {
    /// The groups.
    pub fn groups(&self) -> &Groups {
        &self.groups
    }

    /// A group entity's id, once formed.
    pub fn group_id(&self, entity: Entity) -> Option<GroupId> {
        self.by_entity.get(&entity).copied()
    }

    /// The routes of groups sent along drawn paths ([`GroupOrder::FollowPath`],
    /// [`GroupOrder::Waypoints`]): strokes, stroke fields, goals.
    #[cfg(feature = "sketch")]
    pub fn routes(&self) -> &crowdfield_sketch::Routes {
        &self.routes
    }

    /// The entity of a group.
    pub fn entity(&self, id: GroupId) -> Option<Entity> {
        self.by_group.get(id.0 as usize).copied().flatten()
    }

    fn forget(&mut self, entity: Entity) -> Option<GroupId> {
        let id = self.by_entity.remove(&entity)?;
        if let Some(slot) = self.by_group.get_mut(id.0 as usize) {
            *slot = None;
        }
        self.members.remove(&entity);
        Some(id)
    }
}

/// Groups: components, systems and messages (see the module doc). Added by
/// [`CrowdfieldPlugins`](crate::CrowdfieldPlugins) with the `groups` feature.
#[derive(Debug, Default, Clone, Copy)]
pub struct CrowdfieldGroupPlugin;

impl Plugin for CrowdfieldGroupPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<GroupWorld>()
            .register_type::<KeepTogether>()
            .add_message::<GroupArrived>()
            .add_message::<GroupFormationReached>()
            .add_message::<GroupFormationBroken>()
            .add_message::<GroupMemberLost>()
            .add_message::<GroupRejected>()
            .add_systems(
                FixedUpdate,
                (
                    sync_groups.in_set(SceneInputStage::Groups),
                    plan_groups
                        .after(CrowdfieldSystems::Guidance)
                        .before(CrowdfieldSystems::Sensing),
                    finish_groups.in_set(CrowdfieldSystems::Events),
                )
                    .run_if(planner_due),
            );
    }
}

type GroupItem<'a> = (
    Entity,
    Ref<'a, CrowdGroup>,
    Option<&'a GroupMembers>,
    Ref<'a, GroupOrder>,
);

/// Groups formed, changed or disbanded; members joining and leaving; orders given; leaders
/// handed over (see the module doc).
pub(crate) fn sync_groups(
    settings: Res<CrowdfieldSettings>,
    mut world: ResMut<CrowdWorld>,
    mut groups: ResMut<GroupWorld>,
    query: Query<GroupItem>,
    mut removed: RemovedComponents<CrowdGroup>,
    keep_together: Query<Entity, With<KeepTogether>>,
    #[cfg(feature = "sketch")] path_settings: Option<Res<crate::PathSettings>>,
    mut rejected: MessageWriter<GroupRejected>,
    mut lost: MessageWriter<GroupMemberLost>,
) {
    let world = &mut *world;
    let groups = &mut *groups;
    if world.rebuilt {
        // New agent ids for everyone: every group forms again.
        *groups = GroupWorld::default();
    }
    // Tagged obstacles' shapes as the crowd holds them (placed, after this step's edits);
    // their shapes were checked when the crowd took them.
    let mut regions: Vec<(Entity, Vec<Shape>)> = keep_together
        .iter()
        .map(|e| (e, world.obstacle_shapes(e)))
        .collect();
    regions.sort_by_key(|(e, _)| *e);
    let regions: Vec<Shape> = regions.into_iter().flat_map(|(_, s)| s).collect();
    if regions != groups.keep_together && groups.groups.set_keep_together(regions.clone()).is_ok() {
        groups.keep_together = regions;
    }
    #[cfg(feature = "sketch")]
    let budget = path_settings.and_then(|p| p.build_budget);
    #[cfg(feature = "sketch")]
    groups.routes.set_build_budget(budget);
    let Some(crowd) = world.crowd_mut() else {
        return;
    };
    for entity in removed.read() {
        if let Some(id) = groups.forget(entity) {
            let _ = groups.groups.remove(crowd, id);
        }
    }
    for (entity, group, members, order) in &query {
        let wanted: Vec<(AgentId, Entity)> = members
            .map(|m| m.entities())
            .unwrap_or_default()
            .iter()
            .filter_map(|e| Some((world.agent_id(*e)?, *e)))
            .collect();
        let wanted_ids: Vec<AgentId> = wanted.iter().map(|(a, _)| *a).collect();
        let crowd = world.crowd_mut().expect("checked above");
        let id = match groups.group_id(entity) {
            Some(id) => id,
            None => {
                if wanted.is_empty() {
                    continue;
                }
                match groups.groups.create(
                    crowd,
                    &wanted_ids,
                    group.settings.clone(),
                    group.formation.clone(),
                ) {
                    Ok(id) => {
                        groups.by_entity.insert(entity, id);
                        let at = id.0 as usize;
                        if groups.by_group.len() <= at {
                            groups.by_group.resize(at + 1, None);
                        }
                        groups.by_group[at] = Some(entity);
                        groups.members.insert(entity, wanted.clone());
                        if let Err(error) = give_order(groups, world, id, &order, &settings) {
                            rejected.write(GroupRejected {
                                group: entity,
                                error,
                            });
                        }
                        continue;
                    }
                    Err(error) => {
                        if group.is_changed() || order.is_changed() {
                            rejected.write(GroupRejected {
                                group: entity,
                                error,
                            });
                        }
                        continue;
                    }
                }
            }
        };
        // Members that left, or were registered again under a new id, leave; new ones join.
        let had = groups.members.get(&entity).cloned().unwrap_or_default();
        if had != wanted {
            for &(agent, member) in had.iter().filter(|a| !wanted.contains(a)) {
                let _ = groups.groups.remove_member(crowd, id, agent);
                // Gone from the crowd (despawned, or no longer an agent), not merely moved
                // to another group or re-registered.
                if crowd.agent(agent).is_none() && world_entity_gone(&wanted, member) {
                    lost.write(GroupMemberLost {
                        group: entity,
                        member,
                        reason: LostReason::Removed,
                    });
                }
            }
            for &(agent, _) in wanted.iter().filter(|a| !had.contains(a)) {
                if let Err(error) = groups.groups.add_member(crowd, id, agent) {
                    rejected.write(GroupRejected {
                        group: entity,
                        error,
                    });
                }
            }
            let now: Vec<(AgentId, Entity)> = groups
                .groups
                .group(id)
                .map(|g| g.member_ids())
                .unwrap_or_default()
                .into_iter()
                .filter_map(|a| wanted.iter().find(|(w, _)| *w == a).copied())
                .collect();
            groups.members.insert(entity, now);
        }
        if group.is_changed() && !group.is_added() {
            let result = groups
                .groups
                .set_settings(id, group.settings.clone())
                .and_then(|()| groups.groups.set_formation(id, group.formation.clone()));
            if let Err(error) = result {
                rejected.write(GroupRejected {
                    group: entity,
                    error,
                });
            }
        }
        if order.is_changed()
            && !order.is_added()
            && let Err(error) = give_order(groups, world, id, &order, &settings)
        {
            rejected.write(GroupRejected {
                group: entity,
                error,
            });
        }
    }
    if let Some(crowd) = world.crowd_mut() {
        #[cfg(feature = "sketch")]
        if let Some(budget) = budget
            && let Err(e) = groups
                .routes
                .advance_with_groups(crowd, &mut groups.groups, budget)
        {
            // The field's world and obstacles were checked when it began; this is a bug.
            error!("crowdfield: building a group path's field failed: {e}");
        }
        groups.groups.prepare(crowd);
    }
}

/// Whether `member` is no longer among the group's wanted members (it left, rather than being
/// registered again under a new id).
fn world_entity_gone(wanted: &[(AgentId, Entity)], member: Entity) -> bool {
    !wanted.iter().any(|(_, e)| *e == member)
}

/// Gives group `id` its order.
fn give_order(
    groups: &mut GroupWorld,
    world: &mut CrowdWorld,
    id: GroupId,
    order: &GroupOrder,
    settings: &CrowdfieldSettings,
) -> Result<(), GroupError> {
    let leader = match order {
        GroupOrder::Follow { leader, .. } => Some(
            world
                .agent_id(*leader)
                .ok_or(GroupError::BadOrder("the leader is not a registered agent"))?,
        ),
        _ => None,
    };
    let crowd = world
        .crowd_mut()
        .ok_or(GroupError::BadOrder("no crowd yet"))?;
    // A path followed before is dropped with the old order (its goals go with the group's).
    #[cfg(feature = "sketch")]
    groups.routes.forget_group(id);
    match order {
        GroupOrder::Hold => groups.groups.hold(crowd, id),
        GroupOrder::MoveTo(p) => groups.groups.move_to(
            crowd,
            id,
            Shape::Disc {
                centre: p.as_dvec2(),
                radius: settings.point_goal_radius,
            },
        ),
        GroupOrder::MoveToRegion(shape) => groups.groups.move_to(crowd, id, shape.clone()),
        GroupOrder::Follow { distance, .. } => groups.groups.follow(
            crowd,
            id,
            leader.expect("resolved above"),
            f64::from(*distance),
        ),
        #[cfg(feature = "sketch")]
        GroupOrder::FollowPath { points, joining } => {
            let stroke = path_stroke(points)?;
            let routes = &mut groups.routes;
            routes
                .follow_with_group(
                    crowd,
                    &mut groups.groups,
                    id,
                    &stroke,
                    *joining,
                    crowdfield_sketch::StrokeFieldSettings {
                        inflation: settings.global_inflation,
                        ..Default::default()
                    },
                )
                .map(|_| ())
                .map_err(sketch_error)
        }
        #[cfg(feature = "sketch")]
        GroupOrder::Waypoints(points) => {
            let stroke = path_stroke(points)?;
            groups
                .routes
                .waypoints_with_group(
                    crowd,
                    &mut groups.groups,
                    id,
                    &stroke,
                    crowdfield_sketch::WaypointSettings::default(),
                )
                .map(|_| ())
                .map_err(sketch_error)
        }
    }
}

/// A drawn path as a stroke.
#[cfg(feature = "sketch")]
fn path_stroke(points: &[Vec2]) -> Result<crowdfield_sketch::Stroke, GroupError> {
    if points.is_empty() {
        return Err(GroupError::BadOrder("a path needs at least one point"));
    }
    crowdfield_sketch::Stroke::from_positions(points.iter().map(|p| p.as_dvec2()))
        .map_err(|_| GroupError::BadOrder("a path's points must be finite"))
}

/// A sketch error as a group order's rejection.
#[cfg(feature = "sketch")]
fn sketch_error(e: crowdfield_sketch::SketchError) -> GroupError {
    use crowdfield_sketch::SketchError as S;
    match e {
        S::Group(g) => g,
        S::Steer(s) => GroupError::Steer(s),
        S::NothingWalkable => {
            GroupError::BadOrder("no part of the path lies on walkable ground inside the world")
        }
        S::BadSetting(what) => GroupError::BadOrder(what),
        _ => GroupError::BadOrder("the path cannot be followed"),
    }
}

/// Every group plans its members' steps and hands them to the crowd.
fn plan_groups(mut world: ResMut<CrowdWorld>, mut groups: ResMut<GroupWorld>) {
    if let Some(crowd) = world.crowd_mut() {
        groups.groups.plan(crowd);
    }
}

/// [`GroupStatus`] and messages after the crowd's step.
#[allow(clippy::too_many_arguments)]
fn finish_groups(
    world: Res<CrowdWorld>,
    mut groups: ResMut<GroupWorld>,
    mut status: Query<&mut GroupStatus>,
    mut arrived: MessageWriter<GroupArrived>,
    mut reached: MessageWriter<GroupFormationReached>,
    mut broken: MessageWriter<GroupFormationBroken>,
    mut lost: MessageWriter<GroupMemberLost>,
) {
    let Some(crowd) = world.crowd() else {
        return;
    };
    let groups = &mut *groups;
    let report = groups.groups.finish(crowd);
    for event in report.events {
        match event {
            GroupEvent::Arrived { group, spread } => {
                if let Some(group) = groups.entity(group) {
                    arrived.write(GroupArrived { group, spread });
                }
            }
            GroupEvent::FormationReached { group } => {
                if let Some(group) = groups.entity(group) {
                    reached.write(GroupFormationReached { group });
                }
            }
            GroupEvent::FormationBroken { group } => {
                if let Some(group) = groups.entity(group) {
                    broken.write(GroupFormationBroken { group });
                }
            }
            GroupEvent::MemberLost {
                group,
                agent,
                reason,
            } => {
                if let (Some(group), Some(member)) = (groups.entity(group), world.entity(agent)) {
                    lost.write(GroupMemberLost {
                        group,
                        member,
                        reason,
                    });
                }
            }
            // A lost leader leaves the group holding (its status shows it); later kinds of
            // events are not messages yet.
            _ => {}
        }
    }
    for (id, group) in groups.groups.groups() {
        let Some(entity) = groups.entity(id) else {
            continue;
        };
        let Ok(mut s) = status.get_mut(entity) else {
            continue;
        };
        *s = GroupStatus {
            formed: true,
            anchor: group.anchor().as_vec2(),
            heading: group.heading().as_vec2(),
            arrived: group.has_arrived(),
            formation_reached: group.formation_reached(),
            measures: group.measures(),
            slots: group
                .member_slots()
                .filter_map(|(agent, slot)| Some((world.entity(agent)?, slot?.as_vec2())))
                .collect(),
        };
    }
}
