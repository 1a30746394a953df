//! The plugin's settings resource.

use std::time::Duration;

use bevy::prelude::*;

/// Who moves an agent's [`Transform`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
#[reflect(Default, PartialEq)]
pub enum MotionMode {
    /// The plugin writes the Transform every frame, interpolating between the positions before
    /// and after the last planner step, so motion is smooth at any frame rate.
    #[default]
    Transform,
    /// The game moves the agent (physics, animation, root motion) from
    /// [`DesiredVelocity`](crate::DesiredVelocity); the plugin reads the agent's Transform back
    /// before every planner step and never writes it.
    External,
}

/// World-wide settings of the crowd.
///
/// Changing `planner_hz`, the world bounds, `global_cell_size`, `global_inflation`,
/// `map_solves_per_step`, `stuck_after` or `line_of_sight` rebuilds the crowd at the next planner
/// step: every agent registers again where it was last shown, with a fresh local map and its goal
/// queue started over from the first target, and every obstacle is written into new global maps.
/// `motion`, `face_heading`, `split_phases`, `fuse_motion`, `worker_spin` and
/// `point_goal_radius` (for goals added from then on) apply at once.
#[derive(Resource, Debug, Clone, PartialEq, Reflect)]
#[reflect(Resource, Default)]
pub struct CrowdfieldSettings {
    /// Planner steps per second (the seeds plan 2–3.5 steps a second, one footstep each). The
    /// planner runs in `FixedUpdate`, on the first fixed tick at or past each step's time.
    pub planner_hz: f64,
    /// Lower-left corner of the walkable world.
    pub world_min: Vec2,
    /// Upper-right corner of the walkable world. Agents never leave the rectangle.
    pub world_max: Vec2,
    /// Cell size of the global maps (one per goal).
    pub global_cell_size: f64,
    /// Radius the global maps grow obstacles by (the typical agent radius).
    pub global_inflation: f64,
    /// Global maps re-solved at most per planner step after obstacles changed.
    pub map_solves_per_step: usize,
    /// Planner steps without progress before an agent is reported stuck ([`AgentStuck`]):
    /// progress is measured towards the goal, not by the distance the agent walks
    /// ([`CrowdSettings::stuck_after`](crate::steer::CrowdSettings::stuck_after)).
    ///
    /// [`AgentStuck`]: crate::AgentStuck
    pub stuck_after: u32,
    /// Who moves agents' Transforms.
    pub motion: MotionMode,
    /// Whether the plugin also turns agents (about +z) to face their heading, in
    /// [`MotionMode::Transform`].
    pub face_heading: bool,
    /// Radius of the disc a [`GoalTarget::Point`](crate::GoalTarget::Point) goal covers.
    pub point_goal_radius: f64,
    /// Sight: behaviours see only neighbours in line of sight, past no static obstacle (every
    /// static rapier collider and [`CrowdObstacle`](crate::CrowdObstacle)). Rays are cast
    /// against the crowd's copy of that geometry, so rapier's physics need not run. Decides
    /// `TowardsNearest` / `AroundNearest` targets and the `ahead` slot; local maps still hold
    /// every neighbour. Off by default.
    pub line_of_sight: bool,
    /// Whether sensing, relaxation and decision run apart, one system set after the other, so
    /// that game systems ordered between [`CrowdfieldSystems::Sensing`],
    /// [`CrowdfieldSystems::Relaxation`] and [`CrowdfieldSystems::Decision`] see the crowd
    /// between them. Off by default: the three run together in the `Sensing` set, a job
    /// of agents at a time while their local maps are in cache (same results, faster: the
    /// figure is in docs/performance.md, *Measurements behind tuning constants*), and the other
    /// two sets find nothing left to do.
    ///
    /// [`CrowdfieldSystems::Sensing`]: crate::CrowdfieldSystems::Sensing
    /// [`CrowdfieldSystems::Relaxation`]: crate::CrowdfieldSystems::Relaxation
    /// [`CrowdfieldSystems::Decision`]: crate::CrowdfieldSystems::Decision
    pub split_phases: bool,
    /// Whether the [`CrowdfieldSystems::Sensing`] set runs the step on through its commit, for
    /// hosts that order nothing of their own between [`CrowdfieldSystems::Sensing`] and
    /// [`CrowdfieldSystems::Motion`] (headless runs: `crowdfield run` and `bench` turn it on).
    /// Where the step has more than 64 planners and rayon's pool another thread, the crowd then
    /// commits moves while it still plans (see [`Crowd::step`]; from a thread outside rayon's
    /// pools, as under Bevy's multi-threaded executor, the step first moves onto a thread of the
    /// global pool); the `Motion` set writes the outputs as usual. Off by default: a game may
    /// read or change the crowd between decision and motion. Ignored with `split_phases`.
    /// Results never depend on it.
    ///
    /// [`CrowdfieldSystems::Sensing`]: crate::CrowdfieldSystems::Sensing
    /// [`CrowdfieldSystems::Motion`]: crate::CrowdfieldSystems::Motion
    /// [`Crowd::step`]: crowdfield_steer::Crowd::step
    pub fuse_motion: bool,
    /// How long rayon's pool threads stay awake after a planner step's parallel work, waiting
    /// for the next step's ([`Crowd::set_worker_spin`]). Zero by default: worth setting (to
    /// about 1 ms) only where planner steps run back to back, as in headless runs; in a game
    /// it costs up to this much of a core's time per thread and step for nothing. Results
    /// never depend on it.
    ///
    /// [`Crowd::set_worker_spin`]: crowdfield_steer::Crowd::set_worker_spin
    pub worker_spin: Duration,
    /// Which plane of the Transform the crowd walks on: x–y for 2D games (the default), x–z
    /// with y up for 3D games, heights from [`GroundHeight`]. Set it before agents spawn.
    pub plane: GroundPlane,
    /// The steering where the seeds leave a choice: [`Preset::Seeds`] (the default for now)
    /// for the seeds' steering as written, or [`Preset::Flow`] for crowds that queue at doors
    /// and pass each other in counterflow ([`CrowdfieldSettings::flow`]). Changing it rebuilds
    /// the crowd.
    ///
    /// [`Preset::Flow`]: crowdfield_steer::Preset::Flow
    /// [`Preset::Seeds`]: crowdfield_steer::Preset::Seeds
    pub preset: crowdfield_steer::Preset,
}

/// The plane of the Transform the crowd's ground lies in ([`CrowdfieldSettings::plane`]).
///
/// The crowd itself always works in its own plane (x, y); this says how that plane sits in
/// the game's world. Agents' Transforms, obstacles' and colliders' poses (rapier 2D colliders
/// stay the scene input for both) are read and written through it; goals, world bounds and
/// every other setting are given in the crowd's plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Reflect)]
pub enum GroundPlane {
    /// The crowd's (x, y) is the Transform's (x, y); z is left alone. Turning is about +z.
    #[default]
    XY,
    /// The crowd's (x, y) is the Transform's (x, −z), y up: looked at from above, the crowd's
    /// counter-clockwise stays counter-clockwise (and ε > 0 still bends paths towards +v).
    /// The plugin writes y from [`GroundHeight`], so agents stand on the surface. Turning is
    /// about +y.
    XZ,
}

impl GroundPlane {
    /// A Transform's translation in the crowd's plane.
    pub fn to_ground(self, t: Vec3) -> Vec2 {
        match self {
            GroundPlane::XY => t.truncate(),
            GroundPlane::XZ => Vec2::new(t.x, -t.z),
        }
    }

    /// A point of the crowd's plane at `height` in the game's world (XY: the height is z).
    pub fn to_world(self, p: Vec2, height: f32) -> Vec3 {
        match self {
            GroundPlane::XY => p.extend(height),
            GroundPlane::XZ => Vec3::new(p.x, height, -p.y),
        }
    }

    /// A Transform's turn in the crowd's plane (about +z, or about +y in XZ), radians.
    pub fn angle(self, rotation: Quat) -> f32 {
        match self {
            GroundPlane::XY => rotation.to_euler(EulerRot::ZYX).0,
            GroundPlane::XZ => rotation.to_euler(EulerRot::YXZ).0,
        }
    }

    /// The rotation that turns +x towards the crowd's `angle`.
    pub fn rotation(self, angle: f32) -> Quat {
        match self {
            GroundPlane::XY => Quat::from_rotation_z(angle),
            GroundPlane::XZ => Quat::from_rotation_y(angle),
        }
    }

    /// A Transform's scale in the crowd's plane.
    pub fn scale(self, scale: Vec3) -> Vec2 {
        match self {
            GroundPlane::XY => scale.truncate(),
            GroundPlane::XZ => Vec2::new(scale.x, scale.z),
        }
    }
}

/// The ground's height under a point of the crowd's plane, for [`GroundPlane::XZ`]: the
/// plugin stands agents at it. Flat ground at 0 by default; give a function (a game's own
/// height field) with [`GroundHeight::new`], or a terrain's height map with
/// `GroundHeight::from_height_map` (`markers` feature).
#[derive(Resource, Clone, Default)]
pub struct GroundHeight(Option<std::sync::Arc<dyn Fn(Vec2) -> f32 + Send + Sync>>);

impl GroundHeight {
    /// The ground at `height(p)` under each point p of the crowd's plane.
    pub fn new(height: impl Fn(Vec2) -> f32 + Send + Sync + 'static) -> Self {
        Self(Some(std::sync::Arc::new(height)))
    }

    /// The height under `p` (0 on flat ground; a height that is not finite reads 0).
    pub fn height(&self, p: Vec2) -> f32 {
        let h = self.0.as_ref().map_or(0.0, |f| f(p));
        if h.is_finite() { h } else { 0.0 }
    }

    /// A terrain's height map (`markers` feature): the surface marker agents and terrain
    /// graphs read.
    #[cfg(feature = "markers")]
    pub fn from_height_map(heights: crowdfield_markers::HeightMap) -> Self {
        Self::new(move |p| heights.height(p.as_dvec2()) as f32)
    }
}

impl std::fmt::Debug for GroundHeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("GroundHeight")
            .field(&if self.0.is_some() {
                "a function"
            } else {
                "flat"
            })
            .finish()
    }
}

impl Default for CrowdfieldSettings {
    fn default() -> Self {
        Self {
            planner_hz: 3.5,
            world_min: Vec2::ZERO,
            world_max: Vec2::splat(50.0),
            global_cell_size: 0.5,
            global_inflation: 0.25,
            map_solves_per_step: 2,
            stuck_after: 60,
            motion: MotionMode::Transform,
            face_heading: true,
            point_goal_radius: 0.5,
            line_of_sight: false,
            split_phases: false,
            fuse_motion: false,
            worker_spin: Duration::ZERO,
            plane: GroundPlane::XY,
            preset: crowdfield_steer::Preset::default(),
        }
    }
}

impl CrowdfieldSettings {
    /// The default settings on the seeds' steering
    /// ([`Preset::Seeds`](crowdfield_steer::Preset::Seeds)): one line for a game that wants
    /// the seeds' walks, `app.insert_resource(CrowdfieldSettings::seeds())`.
    pub fn seeds() -> Self {
        Self {
            preset: crowdfield_steer::Preset::Seeds,
            ..Self::default()
        }
    }

    /// The default settings on the steering for crowds that flow
    /// ([`Preset::Flow`](crowdfield_steer::Preset::Flow)):
    /// `app.insert_resource(CrowdfieldSettings::flow())`.
    pub fn flow() -> Self {
        Self {
            preset: crowdfield_steer::Preset::Flow,
            ..Self::default()
        }
    }

    /// Seconds per planner step.
    pub fn planner_period(&self) -> f64 {
        if self.planner_hz.is_finite() && self.planner_hz > 0.0 {
            1.0 / self.planner_hz
        } else {
            // A bad rate is reported once by the plugin and the seeds' 3.5 Hz used instead.
            1.0 / 3.5
        }
    }

    /// The part of the settings the crowd is built from: a change rebuilds it.
    pub(crate) fn crowd_settings(&self) -> crowdfield_steer::CrowdSettings {
        crowdfield_steer::CrowdSettings {
            min: self.world_min.as_dvec2(),
            max: self.world_max.as_dvec2(),
            global_cell_size: self.global_cell_size,
            global_inflation: self.global_inflation,
            stuck_after: self.stuck_after,
            map_solves_per_step: self.map_solves_per_step,
            line_of_sight: self.line_of_sight,
            preset: self.preset,
            ..Default::default()
        }
    }
}
