//! Single agents along drawn paths ([`crowdfield_sketch`], seed 004 chapter 5): put an
//! [`AgentPath`] on an agent and it walks the path, by the path's stroke field (Mode B,
//! [`AgentPath::Follow`]) or through waypoints along it (Mode A, [`AgentPath::Waypoints`]).
//! Behind the `sketch` feature (on by default). Groups take paths through
//! [`GroupOrder::FollowPath`](crate::GroupOrder::FollowPath) instead.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_crowdfield::prelude::*;
//!
//! fn send(mut commands: Commands, walkers: Query<Entity, With<CrowdAgent>>) {
//!     let path = vec![Vec2::new(2.0, 2.0), Vec2::new(20.0, 4.0), Vec2::new(30.0, 18.0)];
//!     for walker in &walkers {
//!         commands.entity(walker).insert(AgentPath::Follow {
//!             points: path.clone(),
//!             joining: Joining::NearestPoint,
//!         });
//!     }
//! }
//! ```
//!
//! ## What the plugin does with it
//!
//! In [`CrowdfieldSystems::SceneInput`](crate::CrowdfieldSystems::SceneInput), after agents
//! register, the agents whose path was added or changed are sent along it: agents given the
//! same path in the same planner step share one route (one stroke field, one set of goals,
//! [`sketch::Routes`](crowdfield_sketch::Routes)). The route's goals become the agent's goal
//! queue, so it is an ordinary walker: [`AgentReachedWaypoint`](crate::AgentReachedWaypoint)
//! at each sub-goal, [`AgentArrived`](crate::AgentArrived) at the path's end, the same
//! collision guard and states as everyone. Every planner step, fields still being built (see
//! [`PathSettings::build_budget`]) are built further and routes nobody follows any more are
//! dropped with their goals.
//!
//! Whichever order is newer wins: changing an agent's [`AgentGoals`] while it follows a path
//! takes it off the path (the plugin removes its [`AgentPath`]); removing the [`AgentPath`]
//! sends it back to its [`AgentGoals`] from where it stands. An agent re-registered (a changed
//! style) starts its path again from where it stands.
//!
//! ## Bad input
//!
//! A path with no points, with a point that is not finite, or lying wholly outside the world
//! or inside walls gets a [`PathRejected`] message with the typed error; the agent keeps its
//! goals until the path changes. A member of a group ([`MemberOf`]) is refused the same way:
//! give its group the path. Nothing panics.

use std::time::Duration;

use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;

use crowdfield_sketch::{Joining, RouteId, Routes, SketchError, Stroke, StrokeFieldSettings};
use crowdfield_steer::AgentId;

use crate::components::AgentGoals;
use crate::group::MemberOf;
use crate::plugin::{SceneInputStage, planner_due};
use crate::settings::CrowdfieldSettings;
use crate::world::CrowdWorld;

/// On an agent: walk along a drawn path instead of towards its [`AgentGoals`] (see the module
/// doc). Changing it re-routes the agent from where it stands; removing it sends the agent
/// back to its goals.
#[derive(Component, Debug, Clone, PartialEq)]
pub enum AgentPath {
    /// Follow the path's stroke field (seed 004 §4.2, Mode B), joining it as `joining` says,
    /// and arrive at its end.
    Follow {
        /// The path's points, in order (a drawn stroke; the field simplifies and resamples
        /// it).
        points: Vec<Vec2>,
        /// Join at the nearest point, or walk the whole path from its start.
        joining: Joining,
    },
    /// Walk through waypoints every 2 m along the path (seed 004 §4.1, Mode A).
    Waypoints(Vec<Vec2>),
}

impl AgentPath {
    /// The path's points.
    pub fn points(&self) -> &[Vec2] {
        match self {
            AgentPath::Follow { points, .. } | AgentPath::Waypoints(points) => points,
        }
    }
}

/// An agent's [`AgentPath`] was refused; it keeps its goals until the path changes.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct PathRejected {
    /// The agent entity.
    pub entity: Entity,
    /// Why.
    pub error: SketchError,
}

/// The routes of single agents sent along paths ([`AgentPath`]): their strokes, stroke fields
/// and goals, for overlays and games.
#[derive(Resource, Default)]
pub struct PathWorld {
    routes: Routes,
    /// Each agent on a path: the crowd id it was sent under and its route (`None`: its path
    /// was refused).
    followers: EntityHashMap<(AgentId, Option<RouteId>)>,
}

/// How drawn paths' stroke fields are built, for agents and groups alike.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub struct PathSettings {
    /// Spend at most this per planner step building a new path's stroke field: followers set
    /// off at once, straight for the path's end, and take the field's segments as they are
    /// built (seed 004 §4.2: a stroke walkable in the frame it is finished, larger fields
    /// time-sliced). `None` (the default) builds each field whole when it is ordered, which
    /// keeps runs the same on every machine; a budget makes the first steps depend on how
    /// fast the machine builds.
    pub build_budget: Option<Duration>,
}

impl PathWorld {
    /// The routes of agents on paths.
    pub fn routes(&self) -> &Routes {
        &self.routes
    }

    /// The route an agent follows, if any.
    pub fn route_of(&self, entity: Entity) -> Option<RouteId> {
        self.followers.get(&entity).and_then(|(_, r)| *r)
    }
}

/// Single agents along drawn paths: [`AgentPath`], [`PathRejected`], [`PathWorld`] (see the
/// module doc). Added by [`CrowdfieldPlugins`](crate::CrowdfieldPlugins) with the `sketch`
/// feature.
#[derive(Debug, Default, Clone, Copy)]
pub struct CrowdfieldPathPlugin;

impl Plugin for CrowdfieldPathPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<PathWorld>()
            .init_resource::<PathSettings>()
            .add_message::<PathRejected>()
            .add_systems(
                FixedUpdate,
                sync_paths
                    .in_set(SceneInputStage::Groups)
                    .before(crate::group::sync_groups)
                    .run_if(planner_due),
            );
    }
}

type PathItem<'a> = (
    Entity,
    Ref<'a, AgentPath>,
    Ref<'a, AgentGoals>,
    Has<MemberOf>,
);

/// Agents sent along new paths, taken off them, or sent back to their goals; fields built
/// further and finished routes dropped.
fn sync_paths(
    settings: Res<CrowdfieldSettings>,
    path_settings: Res<PathSettings>,
    mut world: ResMut<CrowdWorld>,
    mut paths: ResMut<PathWorld>,
    agents: Query<PathItem>,
    goals: Query<&AgentGoals>,
    mut removed: RemovedComponents<AgentPath>,
    mut commands: Commands,
    mut rejected: MessageWriter<PathRejected>,
) {
    let world = &mut *world;
    let paths = &mut *paths;
    if world.rebuilt {
        // Every agent has a new id and the old crowd's goals are gone: start over.
        *paths = PathWorld::default();
    }
    let budget = path_settings.build_budget;
    paths.routes.set_build_budget(budget);
    if world.crowd().is_none() {
        return;
    }
    // A removed path sends its agent back to its goals.
    for entity in removed.read() {
        if agents.contains(entity) || paths.followers.remove(&entity).is_none() {
            continue;
        }
        let (Some(id), Ok(goals)) = (world.agent_id(entity), goals.get(entity)) else {
            continue;
        };
        let result = world
            .resolve_goals(goals, settings.point_goal_radius)
            .and_then(|ids| world.crowd_mut().expect("checked").set_goals(id, ids));
        if let Err(e) = result {
            warn!("crowdfield: {entity} could not go back to its goals: {e}");
        }
    }
    // New and changed paths, batched: agents given the same path together share its route.
    let mut batches: Vec<(AgentPath, Vec<(Entity, AgentId)>)> = Vec::new();
    for (entity, path, goals, member) in &agents {
        let Some(id) = world.agent_id(entity) else {
            continue;
        };
        let sent = paths.followers.get(&entity).is_some_and(|(a, _)| *a == id);
        if member {
            if !sent {
                paths.followers.insert(entity, (id, None));
                rejected.write(PathRejected {
                    entity,
                    error: SketchError::BadSetting(
                        "the agent is a group's member: give the group the path",
                    ),
                });
            }
            continue;
        }
        if sent && !path.is_changed() {
            if goals.is_changed() && !goals.is_added() {
                // Given goals since: they are its order now.
                paths.followers.remove(&entity);
                commands.entity(entity).remove::<AgentPath>();
            }
            continue;
        }
        match batches.iter_mut().find(|(p, _)| *p == *path) {
            Some((_, batch)) => batch.push((entity, id)),
            None => batches.push(((*path).clone(), vec![(entity, id)])),
        }
    }
    let field_settings = StrokeFieldSettings {
        inflation: settings.global_inflation,
        ..Default::default()
    };
    let crowd = world.crowd_mut().expect("checked above");
    for (path, batch) in batches {
        let ids: Vec<AgentId> = batch.iter().map(|(_, a)| *a).collect();
        let result = path_stroke(path.points()).and_then(|stroke| match &path {
            AgentPath::Follow { joining, .. } => {
                paths
                    .routes
                    .follow(crowd, &ids, &stroke, *joining, field_settings.clone())
            }
            AgentPath::Waypoints(_) => paths.routes.waypoints(
                crowd,
                &ids,
                &stroke,
                crowdfield_sketch::WaypointSettings::default(),
            ),
        });
        let route = match result {
            Ok(route) => Some(route),
            Err(error) => {
                for (entity, _) in &batch {
                    rejected.write(PathRejected {
                        entity: *entity,
                        error: error.clone(),
                    });
                }
                None
            }
        };
        for (entity, id) in batch {
            paths.followers.insert(entity, (id, route));
        }
    }
    if let Some(budget) = budget
        && let Err(e) = paths.routes.advance(crowd, budget)
    {
        // The field's world and obstacles were checked when it began; this is a bug.
        error!("crowdfield: building a path's field failed: {e}");
    }
    paths.routes.release(crowd);
}

/// A path's points as a stroke.
fn path_stroke(points: &[Vec2]) -> Result<Stroke, SketchError> {
    if points.is_empty() {
        return Err(SketchError::EmptyStroke);
    }
    Stroke::from_positions(points.iter().map(|p| p.as_dvec2()))
}
