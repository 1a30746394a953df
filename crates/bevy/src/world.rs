//! The crowd behind the ECS: a [`Crowd`] plus the maps between entities and crowd ids.

use std::time::Duration;

use bevy::ecs::entity::EntityHashMap;
use bevy::platform::collections::HashMap;
use bevy::prelude::*;

use crowdfield_field::Shape;
use crowdfield_steer::{
    AgentId, AgentParams, Crowd, CrowdSettings, GoalId, ObstacleId, SteerError, StepReport,
};

use crate::components::{AgentGoals, AgentStyle};
use crate::settings::CrowdfieldSettings;

/// Where an obstacle entity's shapes came from (an entity may carry both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ObstacleSource {
    /// A [`CrowdObstacle`](crate::CrowdObstacle).
    Component,
    /// A rapier collider.
    #[cfg_attr(not(feature = "rapier"), allow(dead_code))]
    Collider,
}

/// The steering world the plugin drives. Read it for anything the components do not carry
/// (local maps, global maps, sub-goals): the debug overlays do. It is rebuilt, with every agent
/// and obstacle registered again, when the world bounds or global-map settings change.
#[derive(Resource, Default)]
pub struct CrowdWorld {
    crowd: Option<Crowd>,
    /// What the crowd was built from (crowd settings and the planner rate).
    built_for: Option<(CrowdSettings, u64)>,
    /// Set for the planner step right after a rebuild: everything registers again.
    pub(crate) rebuilt: bool,
    /// Agent entities' crowd ids (looked up for every agent every planner step: hashed as
    /// entities, not through SipHash).
    pub(crate) by_entity: EntityHashMap<AgentId>,
    pub(crate) by_agent: Vec<Option<Entity>>,
    goals: HashMap<String, GoalId>,
    obstacles: HashMap<(Entity, ObstacleSource), Vec<ObstacleId>>,
    /// Moving obstacle shapes gathered for the current planner step.
    pub(crate) moving: Vec<Shape>,
    pub(crate) last_report: StepReport,
    /// A step the `Sensing` set ran on through its commit ([`CrowdfieldSettings::fuse_motion`]):
    /// every live agent's position before it, in id order, and its report, for the `Motion`
    /// set.
    ///
    /// [`CrowdfieldSettings::fuse_motion`]: crate::CrowdfieldSettings::fuse_motion
    pub(crate) fused: Option<(Vec<(AgentId, Vec2)>, StepReport)>,
    pub(crate) last_step_time: Duration,
    pub(crate) step_started: Option<std::time::Instant>,
}

impl CrowdWorld {
    /// The crowd, once the first planner step has built it.
    pub fn crowd(&self) -> Option<&Crowd> {
        self.crowd.as_ref()
    }

    /// The crowd, for direct edits (the plugin's components stay the usual way in).
    pub fn crowd_mut(&mut self) -> Option<&mut Crowd> {
        self.crowd.as_mut()
    }

    /// The crowd id of an agent entity, once registered.
    pub fn agent_id(&self, entity: Entity) -> Option<AgentId> {
        self.by_entity.get(&entity).copied()
    }

    /// The entity of a crowd agent.
    pub fn entity(&self, id: AgentId) -> Option<Entity> {
        self.by_agent.get(id.0 as usize).copied().flatten()
    }

    /// What happened in the last planner step (crowd ids; see [`CrowdWorld::entity`]).
    pub fn last_report(&self) -> &StepReport {
        &self.last_report
    }

    /// Wall time of the last planner step, all phases (scene input included).
    pub fn last_step_time(&self) -> Duration {
        self.last_step_time
    }

    /// Builds the crowd if it is missing or its settings changed. Returns an error when the
    /// settings are invalid (the old crowd, if any, stays).
    pub(crate) fn ensure_built(&mut self, settings: &CrowdfieldSettings) -> Result<(), SteerError> {
        let wanted = (
            settings.crowd_settings(),
            settings.planner_period().to_bits(),
        );
        if self.built_for.as_ref() == Some(&wanted) && self.crowd.is_some() {
            return Ok(());
        }
        let crowd = Crowd::new(wanted.0, Vec::new())?;
        self.crowd = Some(crowd);
        self.built_for = Some(wanted);
        self.rebuilt = true;
        self.by_entity.clear();
        self.by_agent.clear();
        self.goals.clear();
        self.obstacles.clear();
        Ok(())
    }

    /// Whether an entity's static shapes from `source` are in the crowd.
    pub(crate) fn has_obstacle(&self, entity: Entity, source: ObstacleSource) -> bool {
        self.obstacles.contains_key(&(entity, source))
    }

    /// Adds an entity's static shapes; on error none of them stays.
    pub(crate) fn add_obstacle(
        &mut self,
        entity: Entity,
        source: ObstacleSource,
        shapes: Vec<Shape>,
    ) -> Result<(), SteerError> {
        let crowd = self.crowd.as_mut().expect("built before scene input");
        let mut ids = Vec::with_capacity(shapes.len());
        for shape in shapes {
            match crowd.add_obstacle(shape) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    for id in ids {
                        let _ = crowd.remove_obstacle(id);
                    }
                    return Err(e);
                }
            }
        }
        self.obstacles.insert((entity, source), ids);
        Ok(())
    }

    /// An entity's static shapes in the crowd, from every source (its [`CrowdObstacle`] and
    /// its colliders), in world coordinates.
    ///
    /// [`CrowdObstacle`]: crate::CrowdObstacle
    #[cfg(any(feature = "groups", feature = "markers"))]
    pub(crate) fn obstacle_shapes(&self, entity: Entity) -> Vec<Shape> {
        let Some(crowd) = self.crowd.as_ref() else {
            return Vec::new();
        };
        let mut shapes = Vec::new();
        for source in [ObstacleSource::Component, ObstacleSource::Collider] {
            if let Some(ids) = self.obstacles.get(&(entity, source)) {
                shapes.extend(ids.iter().filter_map(|id| crowd.obstacle(*id)).cloned());
            }
        }
        shapes
    }

    /// Removes an entity's static shapes from `source`, if any.
    pub(crate) fn remove_obstacle(&mut self, entity: Entity, source: ObstacleSource) {
        if let Some(ids) = self.obstacles.remove(&(entity, source))
            && let Some(crowd) = self.crowd.as_mut()
        {
            for id in ids {
                let _ = crowd.remove_obstacle(id);
            }
        }
    }

    /// The goal ids for a goal list, adding goals (and solving their maps) as needed.
    pub(crate) fn resolve_goals(
        &mut self,
        goals: &AgentGoals,
        point_radius: f64,
    ) -> Result<Vec<GoalId>, SteerError> {
        let crowd = self.crowd.as_mut().expect("built before registration");
        goals
            .targets
            .iter()
            .map(|t| {
                let shape = t.shape(point_radius);
                let key = goal_key(&shape);
                if let Some(id) = self.goals.get(&key) {
                    return Ok(*id);
                }
                let id = crowd.add_goal(shape)?;
                self.goals.insert(key, id);
                Ok(id)
            })
            .collect()
    }

    /// Adds the goals that `lists` name and the crowd does not have yet, solving their global
    /// maps together ([`Crowd::add_goals`], in parallel), so that registering many agents with
    /// goals of their own does not solve the maps one after the other. Shapes the crowd
    /// rejects are left out, for registration to meet and report.
    pub(crate) fn add_new_goals<'a>(
        &mut self,
        lists: impl IntoIterator<Item = &'a AgentGoals>,
        point_radius: f64,
    ) {
        let crowd = self.crowd.as_mut().expect("built before registration");
        let mut keys = Vec::new();
        let mut shapes = Vec::new();
        for target in lists.into_iter().flat_map(|goals| &goals.targets) {
            let shape = target.shape(point_radius);
            let key = goal_key(&shape);
            if !self.goals.contains_key(&key) && !keys.contains(&key) {
                keys.push(key);
                shapes.push(shape);
            }
        }
        // A single new goal is left to registration, whose `add_goal` solves it with the
        // work memory the crowd keeps.
        if shapes.len() < 2 {
            return;
        }
        for (key, added) in keys.into_iter().zip(crowd.add_goals(shapes)) {
            if let Ok(id) = added {
                self.goals.insert(key, id);
            }
        }
    }

    /// Registers an agent entity; on error nothing is kept.
    pub(crate) fn register(
        &mut self,
        entity: Entity,
        position: Vec2,
        goals: &AgentGoals,
        style: &AgentStyle,
        settings: &CrowdfieldSettings,
    ) -> Result<AgentId, SteerError> {
        check_time_limits(goals)?;
        let goal_ids = self.resolve_goals(goals, settings.point_goal_radius)?;
        let params = agent_params(position, goal_ids, goals, style, settings);
        let crowd = self.crowd.as_mut().expect("built before registration");
        let id = crowd.spawn(params)?;
        self.link(entity, id);
        Ok(id)
    }

    pub(crate) fn link(&mut self, entity: Entity, id: AgentId) {
        self.by_entity.insert(entity, id);
        let i = id.0 as usize;
        if self.by_agent.len() <= i {
            self.by_agent.resize(i + 1, None);
        }
        self.by_agent[i] = Some(entity);
    }

    /// Forgets an agent entity and removes it from the crowd.
    pub(crate) fn unregister(&mut self, entity: Entity) {
        if let Some(id) = self.by_entity.remove(&entity) {
            if let Some(slot) = self.by_agent.get_mut(id.0 as usize) {
                *slot = None;
            }
            if let Some(crowd) = self.crowd.as_mut() {
                // Already gone when it despawned itself on arrival.
                let _ = crowd.remove(id);
            }
        }
    }
}

/// The key goals are shared by: two targets that give the same shape are one goal (`Debug`
/// prints every `f64` so that it reads back to the same bits).
fn goal_key(shape: &Shape) -> String {
    format!("{shape:?}")
}

/// Time limits must be finite and not negative.
pub(crate) fn check_time_limits(goals: &AgentGoals) -> Result<(), SteerError> {
    for &t in goals.time_limits.iter().flatten() {
        if !t.is_finite() {
            let what = "time limit";
            return Err(crowdfield_field::FieldError::NonFinite { what, value: t }.into());
        }
        if t < 0.0 {
            return Err(crowdfield_field::FieldError::BadExtent(t).into());
        }
    }
    Ok(())
}

/// The crowd's parameters for an agent from its components.
pub(crate) fn agent_params(
    position: Vec2,
    goals: Vec<GoalId>,
    agent_goals: &AgentGoals,
    style: &AgentStyle,
    settings: &CrowdfieldSettings,
) -> AgentParams {
    let position = position.as_dvec2();
    AgentParams {
        position,
        radius: style.radius,
        max_step: style.max_speed * settings.planner_period(),
        goals,
        arrival_radius: agent_goals.arrival_radius,
        on_arrival: agent_goals.on_arrival,
        time_limits: time_limit_steps(agent_goals, settings),
        behaviour: style.behaviour.clone(),
        initial_heading: style.initial_heading.as_dvec2(),
        heading: style.heading,
        speed: style.speed_law,
        local_map: style.local_map.resolved(settings.preset),
        seed: style.seed.unwrap_or_else(|| position_seed(position)),
        // Groups hand their members over to themselves after registration.
        steering: crowdfield_steer::Steering::LocalMap,
    }
}

/// Time limits in planner steps, rounded up: a limit never ends earlier than asked.
pub(crate) fn time_limit_steps(
    goals: &AgentGoals,
    settings: &CrowdfieldSettings,
) -> Vec<Option<u32>> {
    let period = settings.planner_period();
    goals
        .time_limits
        .iter()
        .map(|t| t.map(|t| (t.max(0.0) / period).ceil().min(u32::MAX as f64) as u32))
        .collect()
}

/// A seed from a start position: the same scenario replays the same streams whatever the
/// entity ids are (SplitMix64 finaliser over the coordinate bits).
fn position_seed(p: bevy::math::DVec2) -> u64 {
    let mut z = p.x.to_bits() ^ p.y.to_bits().rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
