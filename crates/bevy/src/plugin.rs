//! The core plugin: settings, the planner clock, the system sets and their systems.

use bevy::math::DVec2;
use bevy::prelude::*;

use crowdfield_steer::{AgentId, Crowd, SteerError, StepPhase};

use crate::components::{
    AgentGoals, AgentPlan, AgentState, AgentStyle, CrowdAgent, CrowdObstacle, DesiredVelocity,
    GoalTarget, ObstacleKind,
};
use crate::messages::{
    AgentArrived, AgentReachedWaypoint, AgentRecovered, AgentRejected, AgentStuck, AgentTimedOut,
    AgentUnreachable, ObstacleRejected, SettingsRejected,
};
use crate::settings::{CrowdfieldSettings, GroundHeight, GroundPlane, MotionMode};
use crate::world::{CrowdWorld, ObstacleSource, agent_params};

/// The plugin's system sets. The planner sets run in `FixedUpdate`, in this order, once per
/// planner step (see [`CrowdfieldSettings::planner_hz`]); [`CrowdfieldSystems::Interpolate`]
/// runs every frame after the fixed loop. Order a game's systems around them, e.g. change goals
/// `.before(CrowdfieldSystems::SceneInput)` or read outputs `.after(CrowdfieldSystems::Motion)`.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrowdfieldSystems {
    /// Obstacles (components and colliders) and agents enter, change or leave the crowd.
    SceneInput,
    /// Global maps edited by obstacle changes are re-solved, a few per step.
    Guidance,
    /// Every agent senses its neighbours, picks (v, ε) and stamps its local map.
    Sensing,
    /// Local maps are relaxed, batched across agents and threads.
    Relaxation,
    /// Headings and speeds are decided from the relaxed maps.
    Decision,
    /// Steps are committed; [`AgentPlan`], [`DesiredVelocity`] and [`AgentState`] written.
    Motion,
    /// Messages ([`AgentArrived`] and the others) are written; arrived agents that asked for it
    /// are despawned.
    Events,
    /// Every frame (in `RunFixedMainLoop`, after the fixed loop): agents' Transforms are
    /// interpolated between planner steps, in [`MotionMode::Transform`].
    Interpolate,
}

/// Ordering inside [`CrowdfieldSystems::SceneInput`].
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SceneInputStage {
    /// Crowd built or rebuilt, moving shapes cleared.
    Prepare,
    /// Obstacle shapes gathered (components, colliders).
    Gather,
    /// Agents registered and moving obstacles handed to the crowd.
    Agents,
    /// Groups formed and changed, orders given (with the `groups` feature).
    #[cfg_attr(not(feature = "groups"), allow(dead_code))]
    Groups,
}

/// When the next planner step is due.
#[derive(Resource, Debug, Clone, Copy, Default, Reflect)]
#[reflect(Resource, Default)]
pub struct PlannerClock {
    since_step: f64,
    due: bool,
    started: bool,
    steps: u64,
}

impl PlannerClock {
    /// Seconds of fixed time since the last planner step.
    pub fn since_step(&self) -> f64 {
        self.since_step
    }

    /// Whether a planner step runs in the current fixed tick.
    pub fn is_due(&self) -> bool {
        self.due
    }

    /// Planner steps begun so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

/// Run condition: a planner step runs in this fixed tick.
pub fn planner_due(clock: Res<PlannerClock>) -> bool {
    clock.due
}

/// The core plugin: the crowd, its settings, components, messages and systems. Added by
/// [`CrowdfieldPlugins`](crate::CrowdfieldPlugins).
#[derive(Debug, Default, Clone, Copy)]
pub struct CrowdfieldPlugin;

impl Plugin for CrowdfieldPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<CrowdfieldSettings>()
            .init_resource::<GroundHeight>()
            .init_resource::<CrowdWorld>()
            .init_resource::<PlannerClock>()
            .register_type::<CrowdfieldSettings>()
            .register_type::<PlannerClock>()
            .register_type::<CrowdAgent>()
            .register_type::<AgentGoals>()
            .register_type::<AgentStyle>()
            .register_type::<AgentState>()
            .register_type::<AgentPlan>()
            .register_type::<DesiredVelocity>()
            .register_type::<CrowdObstacle>()
            .register_type::<GoalTarget>()
            .add_message::<AgentArrived>()
            .add_message::<AgentReachedWaypoint>()
            .add_message::<AgentTimedOut>()
            .add_message::<AgentStuck>()
            .add_message::<AgentUnreachable>()
            .add_message::<AgentRecovered>()
            .add_message::<AgentRejected>()
            .add_message::<ObstacleRejected>()
            .add_message::<SettingsRejected>()
            .configure_sets(
                FixedUpdate,
                (
                    CrowdfieldSystems::SceneInput,
                    CrowdfieldSystems::Guidance,
                    CrowdfieldSystems::Sensing,
                    CrowdfieldSystems::Relaxation,
                    CrowdfieldSystems::Decision,
                    CrowdfieldSystems::Motion,
                    CrowdfieldSystems::Events,
                )
                    .chain(),
            )
            .configure_sets(
                FixedUpdate,
                (
                    SceneInputStage::Prepare,
                    SceneInputStage::Gather,
                    SceneInputStage::Agents,
                    SceneInputStage::Groups,
                )
                    .chain()
                    .in_set(CrowdfieldSystems::SceneInput),
            )
            .configure_sets(
                RunFixedMainLoop,
                CrowdfieldSystems::Interpolate.in_set(RunFixedMainLoopSystems::AfterFixedMainLoop),
            )
            .add_systems(
                FixedUpdate,
                tick_planner.before(CrowdfieldSystems::SceneInput),
            )
            .add_systems(
                FixedUpdate,
                (
                    begin_step.in_set(SceneInputStage::Prepare),
                    sync_obstacles.in_set(SceneInputStage::Gather),
                    (register_agents, hand_over_moving_obstacles)
                        .chain()
                        .in_set(SceneInputStage::Agents),
                    advance(StepPhase::Guidance).in_set(CrowdfieldSystems::Guidance),
                    advance(StepPhase::Sensing).in_set(CrowdfieldSystems::Sensing),
                    advance(StepPhase::Relaxation).in_set(CrowdfieldSystems::Relaxation),
                    advance(StepPhase::Decision).in_set(CrowdfieldSystems::Decision),
                    commit_step.in_set(CrowdfieldSystems::Motion),
                    write_messages.in_set(CrowdfieldSystems::Events),
                )
                    .run_if(planner_due),
            )
            .add_systems(
                RunFixedMainLoop,
                interpolate_transforms.in_set(CrowdfieldSystems::Interpolate),
            );
    }
}

/// Advances the planner clock by one fixed tick.
fn tick_planner(
    time: Res<Time>,
    settings: Res<CrowdfieldSettings>,
    mut clock: ResMut<PlannerClock>,
    mut warned: Local<bool>,
) {
    let bad_rate = !(settings.planner_hz.is_finite() && settings.planner_hz > 0.0);
    if bad_rate && !*warned {
        warn!(
            "crowdfield: planner_hz {} is not a positive rate; planning at 3.5 Hz",
            settings.planner_hz
        );
        *warned = true;
    }
    let period = settings.planner_period();
    if !clock.started {
        // The first tick plans at once, so agents register without waiting a period.
        clock.started = true;
        clock.due = true;
    } else {
        clock.since_step += time.delta_secs_f64();
        clock.due = clock.since_step + 1e-9 >= period;
        if clock.due {
            // A long stall plans once, not a burst of catch-up steps.
            clock.since_step = (clock.since_step - period).clamp(0.0, period);
        }
    }
    if clock.due {
        clock.steps += 1;
    }
}

/// Builds or rebuilds the crowd, starts the step's timer and clears the moving shapes.
fn begin_step(
    settings: Res<CrowdfieldSettings>,
    mut world: ResMut<CrowdWorld>,
    mut warned: Local<bool>,
    mut rejected: MessageWriter<SettingsRejected>,
) {
    world.step_started = Some(std::time::Instant::now());
    world.moving.clear();
    world.rebuilt = false;
    // A step committed in the `Sensing` set is written out in the same planner step's
    // `Motion` set; nothing of it may reach a later step.
    world.fused = None;
    if let Err(e) = world.ensure_built(&settings) {
        if !*warned {
            error!("crowdfield: settings rejected, the crowd is not built: {e}");
            rejected.write(SettingsRejected { error: e });
            *warned = true;
        }
    } else {
        *warned = false;
    }
    if let Some(crowd) = world.crowd_mut() {
        crowd.set_worker_spin(settings.worker_spin);
    }
}

/// An entity's pose for placing its shape: its own Transform when it is top-level, the
/// propagated GlobalTransform when it is a child. Returns (translation, angle, scale) in the
/// crowd's plane ([`GroundPlane`]).
pub(crate) fn pose(
    transform: &Transform,
    global: Option<&GlobalTransform>,
    child: bool,
    plane: GroundPlane,
) -> (DVec2, f64, DVec2) {
    let t = match (child, global) {
        (true, Some(g)) => g.compute_transform(),
        _ => *transform,
    };
    (
        plane.to_ground(t.translation).as_dvec2(),
        plane.angle(t.rotation) as f64,
        plane.scale(t.scale).as_dvec2(),
    )
}

type ObstacleItem<'a> = (
    Entity,
    Ref<'a, CrowdObstacle>,
    Ref<'a, Transform>,
    Option<Ref<'a, GlobalTransform>>,
    Has<ChildOf>,
);

/// [`CrowdObstacle`] components: static ones into the crowd (again when changed or moved),
/// moving ones gathered for this step.
fn sync_obstacles(
    settings: Res<CrowdfieldSettings>,
    mut world: ResMut<CrowdWorld>,
    obstacles: Query<ObstacleItem>,
    mut removed: RemovedComponents<CrowdObstacle>,
    mut rejected: MessageWriter<ObstacleRejected>,
) {
    let world = &mut *world;
    if world.crowd().is_none() {
        return;
    }
    for entity in removed.read() {
        world.remove_obstacle(entity, ObstacleSource::Component);
    }
    let rebuilt = world.rebuilt;
    for (entity, obstacle, transform, global, child) in &obstacles {
        let moved = if child {
            global.as_ref().is_some_and(|g| g.is_changed())
        } else {
            transform.is_changed()
        };
        let changed = obstacle.is_changed() || moved;
        let (offset, angle, scale) = pose(&transform, global.as_deref(), child, settings.plane);
        let shape = obstacle.shape.transformed(offset, angle, scale);
        match obstacle.kind {
            ObstacleKind::Moving => {
                world.remove_obstacle(entity, ObstacleSource::Component);
                match shape.validate() {
                    Ok(()) => world.moving.push(shape),
                    Err(e) if changed => {
                        rejected.write(ObstacleRejected {
                            entity,
                            error: e.into(),
                        });
                    }
                    Err(_) => {}
                }
            }
            ObstacleKind::Static => {
                if !(rebuilt || changed || !world.has_obstacle(entity, ObstacleSource::Component)) {
                    continue;
                }
                world.remove_obstacle(entity, ObstacleSource::Component);
                if let Err(error) =
                    world.add_obstacle(entity, ObstacleSource::Component, vec![shape])
                {
                    rejected.write(ObstacleRejected { entity, error });
                }
            }
        }
    }
}

type AgentItem<'a> = (
    Entity,
    Ref<'a, Transform>,
    Ref<'a, AgentGoals>,
    Ref<'a, AgentStyle>,
    &'a mut AgentState,
    &'a mut AgentPlan,
    &'a mut DesiredVelocity,
);

/// Agents enter, change or leave the crowd.
fn register_agents(
    settings: Res<CrowdfieldSettings>,
    mut world: ResMut<CrowdWorld>,
    mut agents: Query<AgentItem, With<CrowdAgent>>,
    mut removed: RemovedComponents<CrowdAgent>,
    mut rejected: MessageWriter<AgentRejected>,
) {
    let world = &mut *world;
    if world.crowd().is_none() {
        return;
    }
    for entity in removed.read() {
        world.unregister(entity);
    }
    let rebuilt = world.rebuilt;
    let external = settings.motion == MotionMode::External;
    let mut fresh = Vec::new();
    for (entity, transform, goals, style, mut state, mut plan, mut velocity) in &mut agents {
        let Some(id) = world.agent_id(entity).filter(|_| !rebuilt) else {
            let retry = transform.is_changed() || goals.is_changed() || style.is_changed();
            if *state != AgentState::Rejected || retry || rebuilt {
                // Rebuilt: start from where the agent was last shown.
                let at = if rebuilt && *state != AgentState::Pending {
                    plan.to
                } else {
                    settings.plane.to_ground(transform.translation)
                };
                fresh.push((entity, at));
            }
            continue;
        };
        let result = update_agent(world, &settings, id, &transform, &goals, &style, external);
        match result {
            Ok(Some(at)) => {
                // Re-registered with a new style at its current position.
                world.unregister(entity);
                fresh.push((entity, at));
            }
            Ok(None) => {}
            Err(error) => {
                world.unregister(entity);
                *state = AgentState::Rejected;
                plan.from = plan.to;
                velocity.0 = Vec2::ZERO;
                rejected.write(rejection(world, entity, error));
            }
        }
    }
    // Registration order decides crowd ids and so the commit order: make it independent of
    // query order. (`Entity`'s order in Bevy 0.19 follows its bits, which put a later index
    // first: a batch spawned together registers last-spawned first.)
    fresh.sort_by_key(|(e, _)| *e);
    // New goals first, their maps solved together, in the order registration meets them;
    // agents whose time limits are rejected add none, as registration would not reach them.
    let lists: Vec<&AgentGoals> = fresh
        .iter()
        .filter_map(|(entity, _)| agents.get(*entity).ok())
        .map(|(_, _, goals, ..)| goals.into_inner())
        .filter(|goals| crate::world::check_time_limits(goals).is_ok())
        .collect();
    world.add_new_goals(lists, settings.point_goal_radius);
    for (entity, at) in fresh {
        let Ok((_, _, goals, style, mut state, mut plan, mut velocity)) = agents.get_mut(entity)
        else {
            continue;
        };
        match world.register(entity, at, &goals, &style, &settings) {
            Ok(id) => {
                let agent = world.crowd().and_then(|c| c.agent(id)).expect("registered");
                *state = map_state(agent.state());
                *plan = AgentPlan {
                    from: at,
                    to: at,
                    heading: agent.heading().as_vec2(),
                    speed_factor: 0.0,
                    goal_index: 0,
                };
            }
            Err(error) => {
                *state = AgentState::Rejected;
                plan.from = plan.to;
                velocity.0 = Vec2::ZERO;
                rejected.write(rejection(world, entity, error));
            }
        }
    }
}

/// The message for `entity` rejected with `error`, naming the entity of any agent the error
/// names by its crowd id.
fn rejection(world: &CrowdWorld, entity: Entity, error: SteerError) -> AgentRejected {
    let other = match error {
        SteerError::OverlapsAgent { other, .. } => world.entity(other),
        _ => None,
    };
    AgentRejected {
        entity,
        error,
        other,
    }
}

/// Applies changed goals and styles (and, with external motion, the Transform) to a registered
/// agent. Returns the position to re-register at when the style changed beyond its behaviour.
fn update_agent(
    world: &mut CrowdWorld,
    settings: &CrowdfieldSettings,
    id: AgentId,
    transform: &Ref<Transform>,
    goals: &Ref<AgentGoals>,
    style: &Ref<AgentStyle>,
    external: bool,
) -> Result<Option<Vec2>, SteerError> {
    if goals.is_changed() && !goals.is_added() {
        let ids = world.resolve_goals(goals, settings.point_goal_radius)?;
        let crowd = world.crowd_mut().expect("built");
        let agent = crowd.agent(id).expect("linked agents exist");
        let same_rest = agent.params().arrival_radius == goals.arrival_radius
            && agent.params().on_arrival == goals.on_arrival
            && agent.params().time_limits == crate::world::time_limit_steps(goals, settings);
        if !same_rest {
            let at = agent.position().as_vec2();
            return Ok(Some(at));
        }
        crowd.set_goals(id, ids)?;
    }
    let crowd: &mut Crowd = world.crowd_mut().expect("built");
    if style.is_changed() && !style.is_added() {
        let agent = crowd.agent(id).expect("linked agents exist");
        // Everything but the behaviour, compared with what the agent was spawned with: its
        // start position and goal ids stay, an unset seed keeps the derived one, and the
        // initial heading only mattered at spawn.
        let mut wanted = agent_params(
            agent.params().position.as_vec2(),
            agent.params().goals.clone(),
            goals,
            style,
            settings,
        );
        wanted.position = agent.params().position;
        wanted.seed = style.seed.unwrap_or(agent.params().seed);
        wanted.initial_heading = agent.params().initial_heading;
        wanted.behaviour = agent.params().behaviour.clone();
        // Who steers it is the business of whoever took it over (a group), not of its style.
        wanted.steering = agent.params().steering;
        if wanted != *agent.params() {
            return Ok(Some(agent.position().as_vec2()));
        }
        crowd.set_behaviour(id, style.behaviour.clone())?;
    }
    if external {
        crowd.set_position(
            id,
            settings.plane.to_ground(transform.translation).as_dvec2(),
        )?;
    }
    Ok(None)
}

fn hand_over_moving_obstacles(mut world: ResMut<CrowdWorld>) {
    let moving = std::mem::take(&mut world.moving);
    if let Some(crowd) = world.crowd_mut()
        && let Err(e) = crowd.set_moving_obstacles(moving)
    {
        // Shapes are validated one by one as they are gathered; this is a bug if it happens.
        error!("crowdfield: moving obstacles rejected: {e}");
    }
}

/// A system running the crowd up to `phase`; sensing runs on through decision unless
/// [`CrowdfieldSettings::split_phases`] asks for the phases apart, and on through the commit
/// with [`CrowdfieldSettings::fuse_motion`].
fn advance(phase: StepPhase) -> impl FnMut(Res<CrowdfieldSettings>, ResMut<CrowdWorld>) {
    move |settings: Res<CrowdfieldSettings>, mut world: ResMut<CrowdWorld>| {
        if !settings.split_phases && matches!(phase, StepPhase::Relaxation | StepPhase::Decision) {
            // The `Sensing` set ran them; after a step it ran whole, asking for them would
            // start the next step.
            return;
        }
        let together = phase == StepPhase::Sensing && !settings.split_phases;
        if together && settings.fuse_motion {
            let world = &mut *world;
            let before = positions_before(world);
            if let Some(report) = world
                .crowd_mut()
                .and_then(|c| c.advance_to(StepPhase::Motion))
            {
                world.fused = Some((before, report));
            }
            return;
        }
        let target = if together { StepPhase::Decision } else { phase };
        if let Some(crowd) = world.crowd_mut() {
            crowd.advance_to(target);
        }
    }
}

/// Every live agent's position before the step's commit, in id order (only live agents: a
/// game that keeps spawning and despawning agents must not pay for every id ever given).
fn positions_before(world: &CrowdWorld) -> Vec<(AgentId, Vec2)> {
    let Some(crowd) = world.crowd() else {
        return Vec::new();
    };
    crowd
        .agents()
        .map(|(id, a)| (id, a.position().as_vec2()))
        .collect()
}

fn map_state(state: crowdfield_steer::AgentState) -> AgentState {
    use crowdfield_steer::AgentState as S;
    match state {
        S::Moving => AgentState::Moving,
        S::Waiting => AgentState::Waiting,
        S::Arrived => AgentState::Arrived,
        S::Stuck => AgentState::Stuck,
        S::Unreachable => AgentState::Unreachable,
    }
}

/// Commits the step and writes every agent's outputs.
fn commit_step(
    settings: Res<CrowdfieldSettings>,
    mut world: ResMut<CrowdWorld>,
    mut agents: Query<(&mut AgentState, &mut AgentPlan, &mut DesiredVelocity), With<CrowdAgent>>,
) {
    let world = &mut *world;
    if world.crowd().is_none() {
        return;
    }
    // Committed already in the `Sensing` set (`fuse_motion`), or now.
    let (before, report) = match world.fused.take() {
        Some(done) => done,
        None => {
            let before = positions_before(world);
            let crowd = world.crowd_mut().expect("checked above");
            let Some(report) = crowd.advance_to(StepPhase::Motion) else {
                return;
            };
            (before, report)
        }
    };
    let crowd = world.crowd().expect("stepped above");
    let hz = 1.0 / settings.planner_period() as f32;
    for (id, agent) in crowd.agents() {
        let Some(entity) = world.entity(id) else {
            continue;
        };
        let Ok((mut state, mut plan, mut velocity)) = agents.get_mut(entity) else {
            continue;
        };
        let to = agent.position().as_vec2();
        let from = before
            .binary_search_by_key(&id, |(i, _)| *i)
            .map_or(to, |k| before[k].1);
        *plan = AgentPlan {
            from,
            to,
            heading: agent.heading().as_vec2(),
            speed_factor: agent.speed_factor() as f32,
            goal_index: agent.goal_index(),
        };
        velocity.0 = (to - from) * hz;
        let new_state = map_state(agent.state());
        if *state != new_state {
            *state = new_state;
        }
    }
    // Agents that arrived and left the crowd: they end where their last step took them.
    for (id, left_at) in &report.removed {
        if let Some(entity) = world.entity(*id)
            && let Ok((mut state, mut plan, mut velocity)) = agents.get_mut(entity)
        {
            *state = AgentState::Arrived;
            plan.from = plan.to;
            plan.to = left_at.as_vec2();
            velocity.0 = Vec2::ZERO;
        }
    }
    world.last_report = report;
    if let Some(start) = world.step_started.take() {
        world.last_step_time = start.elapsed();
    }
}

/// Messages for the step's report; despawns agents that left the crowd on arrival.
#[allow(clippy::too_many_arguments)]
fn write_messages(
    mut commands: Commands,
    mut world: ResMut<CrowdWorld>,
    mut arrived: MessageWriter<AgentArrived>,
    mut waypoint: MessageWriter<AgentReachedWaypoint>,
    mut timed_out: MessageWriter<AgentTimedOut>,
    mut stuck: MessageWriter<AgentStuck>,
    mut unreachable: MessageWriter<AgentUnreachable>,
    mut recovered: MessageWriter<AgentRecovered>,
) {
    let world = &mut *world;
    let report = std::mem::take(&mut world.last_report);
    // Where an agent stands after the step: in the crowd, or where it left it.
    let position_of = |world: &CrowdWorld, id: AgentId| {
        let crowd = world.crowd();
        crowd
            .and_then(|c| c.agent(id))
            .map(|a| a.position())
            .or_else(|| {
                let left = report.removed.iter().find(|(r, _)| *r == id);
                left.map(|(_, p)| *p)
            })
            .map(|p| p.as_vec2())
    };
    for id in &report.arrived {
        if let (Some(entity), Some(position)) = (world.entity(*id), position_of(world, *id)) {
            arrived.write(AgentArrived { entity, position });
        }
    }
    for id in &report.advanced {
        if let (Some(entity), Some(agent)) =
            (world.entity(*id), world.crowd().and_then(|c| c.agent(*id)))
        {
            waypoint.write(AgentReachedWaypoint {
                entity,
                next: agent.goal_index(),
            });
        }
    }
    for (id, target) in &report.timed_out {
        if let (Some(entity), Some(position)) = (world.entity(*id), position_of(world, *id)) {
            timed_out.write(AgentTimedOut {
                entity,
                position,
                target: *target,
            });
        }
    }
    for id in &report.stuck {
        if let Some(entity) = world.entity(*id) {
            stuck.write(AgentStuck { entity });
        }
    }
    for id in &report.unreachable {
        if let Some(entity) = world.entity(*id) {
            unreachable.write(AgentUnreachable { entity });
        }
    }
    for id in &report.recovered {
        if let Some(entity) = world.entity(*id) {
            recovered.write(AgentRecovered { entity });
        }
    }
    for (id, _) in &report.removed {
        if let Some(entity) = world.entity(*id) {
            world.unregister(entity);
            commands.entity(entity).try_despawn();
        }
    }
    world.last_report = report;
}

/// Places agents between the two positions of the last planner step.
fn interpolate_transforms(
    settings: Res<CrowdfieldSettings>,
    clock: Res<PlannerClock>,
    fixed: Res<Time<Fixed>>,
    ground: Res<GroundHeight>,
    mut agents: Query<(&AgentPlan, &AgentState, &mut Transform), With<CrowdAgent>>,
) {
    if settings.motion != MotionMode::Transform {
        return;
    }
    let period = settings.planner_period();
    let alpha = ((clock.since_step + fixed.overstep().as_secs_f64()) / period).clamp(0.0, 1.0);
    let alpha = alpha as f32;
    agents
        .par_iter_mut()
        .for_each(|(plan, state, mut transform)| {
            if matches!(state, AgentState::Pending | AgentState::Rejected) {
                return;
            }
            let p = plan.from.lerp(plan.to, alpha);
            let plane = settings.plane;
            let at = match plane {
                // z is the game's (a 2D sprite's layer).
                GroundPlane::XY => p.extend(transform.translation.z),
                GroundPlane::XZ => plane.to_world(p, ground.height(p)),
            };
            if transform.translation != at {
                transform.translation = at;
            }
            if settings.face_heading && plan.heading != Vec2::ZERO {
                let rotation = plane.rotation(plan.heading.to_angle());
                if transform.rotation != rotation {
                    transform.rotation = rotation;
                }
            }
        });
}
