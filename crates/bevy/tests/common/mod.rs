//! A headless app with the crowdfield plugins, one planner step per update.

#![allow(dead_code)]

use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::steer::SteerError;

/// Planner steps per second in the tests; every `app.update()` is one fixed tick and one step.
pub const HZ: f64 = 4.0;

/// Messages seen so far.
#[derive(Resource, Default, Debug)]
pub struct Seen {
    pub arrived: Vec<Entity>,
    /// Where each agent of `arrived` stood on arriving.
    pub arrived_at: Vec<Vec2>,
    pub unreachable: Vec<Entity>,
    pub rejected: Vec<(Entity, SteerError)>,
    /// The other agent each rejection names, in the order of `rejected`.
    pub rejected_others: Vec<Option<Entity>>,
    pub obstacles_rejected: Vec<(Entity, SteerError)>,
    pub waypoints: Vec<(Entity, usize)>,
    pub timed_out: Vec<(Entity, usize)>,
    /// Where each agent of `timed_out` stood when it gave its target up.
    pub timed_out_at: Vec<Vec2>,
    pub settings_rejected: Vec<SteerError>,
}

fn collect(
    mut seen: ResMut<Seen>,
    mut arrived: MessageReader<AgentArrived>,
    mut unreachable: MessageReader<AgentUnreachable>,
    mut rejected: MessageReader<AgentRejected>,
    mut obstacles: MessageReader<ObstacleRejected>,
    mut waypoints: MessageReader<AgentReachedWaypoint>,
    mut timed_out: MessageReader<AgentTimedOut>,
    mut settings: MessageReader<SettingsRejected>,
) {
    for m in arrived.read() {
        seen.arrived.push(m.entity);
        seen.arrived_at.push(m.position);
    }
    seen.unreachable
        .extend(unreachable.read().map(|m| m.entity));
    for m in rejected.read() {
        seen.rejected.push((m.entity, m.error.clone()));
        seen.rejected_others.push(m.other);
    }
    seen.obstacles_rejected
        .extend(obstacles.read().map(|m| (m.entity, m.error.clone())));
    seen.waypoints
        .extend(waypoints.read().map(|m| (m.entity, m.next)));
    for m in timed_out.read() {
        seen.timed_out.push((m.entity, m.target));
        seen.timed_out_at.push(m.position);
    }
    seen.settings_rejected
        .extend(settings.read().map(|m| m.error.clone()));
}

/// A headless app over a `w` × `h` world.
pub fn app(w: f32, h: f32) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, CrowdfieldPlugins))
        .insert_resource(Time::<Fixed>::from_hz(HZ))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / HZ,
        )))
        .insert_resource(CrowdfieldSettings {
            planner_hz: HZ,
            world_min: Vec2::ZERO,
            world_max: Vec2::new(w, h),
            ..default()
        })
        .init_resource::<Seen>()
        .add_systems(FixedUpdate, collect.after(CrowdfieldSystems::Events));
    app
}

/// Runs updates until `done` holds or `max` updates have run; returns the updates run.
pub fn run_until(app: &mut App, max: usize, mut done: impl FnMut(&mut App) -> bool) -> usize {
    for i in 0..max {
        app.update();
        if done(app) {
            return i + 1;
        }
    }
    max
}

/// The planner's position of an agent after its last step.
pub fn planned(app: &App, agent: Entity) -> Vec2 {
    app.world().get::<AgentPlan>(agent).unwrap().to
}

pub fn state(app: &App, agent: Entity) -> AgentState {
    *app.world().get::<AgentState>(agent).unwrap()
}

pub fn seen(app: &App) -> &Seen {
    app.world().resource::<Seen>()
}
