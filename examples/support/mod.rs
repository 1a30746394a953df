//! What every windowed example shares: a camera that fits the world, agents drawn as discs
//! coloured by state, obstacles and goals, a help panel, and a screenshot mode.
//!
//! Screenshot mode (for docs and checks, never needed to play):
//! `CROWDFIELD_SCREENSHOT=out.png CROWDFIELD_SCREENSHOT_AT=20 cargo run --example NAME` advances
//! simulated time by 1/30 s per frame, saves the window at 20 simulated seconds and exits.
//!
//! Frame-time mode: `CROWDFIELD_FRAME_STATS=300 cargo run --example NAME` skips 60 frames, then
//! measures the wall time of the next 300 frames, prints mean, median and 95th percentile, and
//! exits.

#![allow(dead_code)]

use std::collections::HashMap;

use bevy::camera::ScalingMode;
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use bevy::time::TimeUpdateStrategy;
use bevy_crowdfield::prelude::*;

/// Colours of agent states.
pub fn state_colour(state: AgentState) -> Color {
    match state {
        AgentState::Pending => Color::srgb(0.6, 0.6, 0.6),
        AgentState::Moving => Color::srgb(0.25, 0.55, 0.95),
        AgentState::Waiting => Color::srgb(0.95, 0.75, 0.2),
        AgentState::Arrived => Color::srgb(0.3, 0.8, 0.35),
        AgentState::Stuck => Color::srgb(0.95, 0.45, 0.1),
        AgentState::Unreachable => Color::srgb(0.85, 0.2, 0.2),
        AgentState::Rejected => Color::srgb(0.5, 0.1, 0.5),
    }
}

const OBSTACLE: Color = Color::srgb(0.42, 0.45, 0.5);
const GOAL: Color = Color::srgb(0.3, 0.85, 0.4);

/// The shared view: add it with the example's help lines.
pub struct ExampleView {
    /// Lines of the help panel (the common keys are appended).
    pub help: Vec<String>,
}

impl Plugin for ExampleView {
    fn build(&self, app: &mut App) {
        app.add_plugins(ExampleHelp {
            help: self.help.clone(),
        })
        .insert_resource(ClearColor(Color::srgb(0.11, 0.12, 0.14)))
        .init_resource::<Visuals>()
        .add_systems(Startup, spawn_camera)
        .add_systems(
            Update,
            (
                fit_camera,
                attach_agent_visuals,
                colour_agents,
                attach_obstacle_visuals,
                draw_world,
            ),
        );
    }
}

/// What every example shares but the view: the help panel with the crowd's counts, the keys
/// (pause, hide the help, quit), and the screenshot and frame-time modes. [`ExampleView`]
/// adds it; a 3D example with its own camera adds it alone.
pub struct ExampleHelp {
    /// Lines of the help panel (the common keys are appended).
    pub help: Vec<String>,
}

impl Plugin for ExampleHelp {
    fn build(&self, app: &mut App) {
        let mut help = self.help.clone();
        help.push(String::new());
        help.push("Space: pause   H: hide this help   Esc: quit".into());
        help.push(
            "Colours: blue moving, yellow waiting, green arrived, orange stuck, red unreachable"
                .into(),
        );
        app.insert_resource(HelpLines(help))
            .add_systems(Startup, spawn_help)
            .add_systems(Update, (update_stats, keys));
        if let Ok(path) = std::env::var("CROWDFIELD_SCREENSHOT") {
            let at = std::env::var("CROWDFIELD_SCREENSHOT_AT")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(10.0);
            app.insert_resource(TimeUpdateStrategy::ManualDuration(
                std::time::Duration::from_secs_f64(1.0 / 30.0),
            ))
            .insert_resource(ScreenshotPlan {
                path,
                at,
                taken_frame: None,
                frame: 0,
            })
            .add_systems(Last, screenshot);
        }
        if let Some(frames) = std::env::var("CROWDFIELD_FRAME_STATS")
            .ok()
            .and_then(|s| s.parse().ok())
        {
            app.insert_resource(FrameStats {
                frames,
                seen: 0,
                last: None,
                times: Vec::new(),
            })
            .add_systems(Last, frame_stats);
        }
    }
}

#[derive(Resource)]
pub struct FrameStats {
    frames: usize,
    seen: usize,
    last: Option<std::time::Instant>,
    times: Vec<f64>,
}

/// Frames skipped before measuring (start-up, asset loading, first global map solves).
const WARM_UP_FRAMES: usize = 60;

pub fn frame_stats(mut stats: ResMut<FrameStats>, mut exit: MessageWriter<AppExit>) {
    let now = std::time::Instant::now();
    stats.seen += 1;
    if stats.seen > WARM_UP_FRAMES
        && let Some(last) = stats.last
    {
        stats.times.push((now - last).as_secs_f64() * 1e3);
    }
    stats.last = Some(now);
    if stats.times.len() >= stats.frames {
        let mut t = stats.times.clone();
        t.sort_by(f64::total_cmp);
        let mean = t.iter().sum::<f64>() / t.len() as f64;
        println!(
            "frame time over {} frames: mean {mean:.2} ms, median {:.2} ms, p95 {:.2} ms",
            t.len(),
            t[t.len() / 2],
            t[(t.len() * 95 / 100).min(t.len() - 1)]
        );
        exit.write(AppExit::Success);
    }
}

#[derive(Resource)]
struct HelpLines(Vec<String>);

#[derive(Component)]
struct HelpPanel;

#[derive(Component)]
struct StatsLine;

#[derive(Resource, Default)]
struct Visuals {
    discs: HashMap<u64, Handle<Mesh>>,
    states: HashMap<AgentState, Handle<ColorMaterial>>,
    obstacle: Option<Handle<ColorMaterial>>,
}

fn spawn_camera(mut commands: Commands) {
    commands.spawn((
        Camera2d,
        Projection::Orthographic(OrthographicProjection {
            scaling_mode: ScalingMode::AutoMin {
                min_width: 50.0,
                min_height: 50.0,
            },
            ..OrthographicProjection::default_2d()
        }),
    ));
}

/// Keeps the whole world in view (with a margin) as scenarios change the bounds.
fn fit_camera(
    settings: Res<CrowdfieldSettings>,
    mut camera: Single<(&mut Transform, &mut Projection), With<Camera2d>>,
) {
    if !settings.is_changed() {
        return;
    }
    let (min, max) = (settings.world_min, settings.world_max);
    let size = (max - min) * 1.06 + Vec2::splat(1.0);
    let centre = (min + max) * 0.5;
    // Room at the top for the help panel.
    camera.0.translation = Vec3::new(centre.x, centre.y + size.y * 0.08, 0.0);
    if let Projection::Orthographic(o) = &mut *camera.1 {
        o.scaling_mode = ScalingMode::AutoMin {
            min_width: size.x,
            min_height: size.y * 1.16,
        };
    }
}

fn spawn_help(mut commands: Commands, help: Res<HelpLines>) {
    let font = TextFont {
        font_size: FontSize::Px(15.0),
        ..default()
    };
    commands
        .spawn((
            HelpPanel,
            Node {
                position_type: PositionType::Absolute,
                top: px(8),
                left: px(10),
                flex_direction: FlexDirection::Column,
                ..default()
            },
        ))
        .with_children(|panel| {
            for line in &help.0 {
                panel.spawn((Text::new(line.clone()), font.clone()));
            }
            panel.spawn((StatsLine, Text::new(""), font.clone()));
        });
}

fn update_stats(
    world: Res<CrowdWorld>,
    agents: Query<&AgentState, With<CrowdAgent>>,
    mut line: Single<&mut Text, With<StatsLine>>,
    time: Res<Time<Virtual>>,
) {
    let mut counts = [0usize; 4];
    for s in &agents {
        match s {
            AgentState::Moving => counts[0] += 1,
            AgentState::Waiting => counts[1] += 1,
            AgentState::Arrived => counts[2] += 1,
            _ => counts[3] += 1,
        }
    }
    line.0 = format!(
        "t = {:.1} s   agents {} (moving {}, waiting {}, arrived {}, other {})   planner step {:.1} ms",
        time.elapsed_secs(),
        agents.iter().count(),
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        world.last_step_time().as_secs_f64() * 1e3,
    );
}

fn keys(
    input: Res<ButtonInput<KeyCode>>,
    mut time: ResMut<Time<Virtual>>,
    mut panel: Single<&mut Visibility, With<HelpPanel>>,
    mut exit: MessageWriter<AppExit>,
) {
    if input.just_pressed(KeyCode::Space) {
        if time.is_paused() {
            time.unpause();
        } else {
            time.pause();
        }
    }
    if input.just_pressed(KeyCode::KeyH) {
        **panel = match **panel {
            Visibility::Hidden => Visibility::Inherited,
            _ => Visibility::Hidden,
        };
    }
    if input.just_pressed(KeyCode::Escape) {
        exit.write(AppExit::Success);
    }
}

fn material(
    visuals: &mut Visuals,
    materials: &mut Assets<ColorMaterial>,
    state: AgentState,
) -> Handle<ColorMaterial> {
    visuals
        .states
        .entry(state)
        .or_insert_with(|| materials.add(state_colour(state)))
        .clone()
}

/// Agents without a disc yet.
type Undrawn = (With<CrowdAgent>, Without<Mesh2d>);

/// Agents get a disc of their radius.
fn attach_agent_visuals(
    mut commands: Commands,
    agents: Query<(Entity, &AgentStyle, &AgentState), Undrawn>,
    mut visuals: ResMut<Visuals>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<ColorMaterial>>,
) {
    for (entity, style, state) in &agents {
        let radius = style.radius as f32;
        let mesh = visuals
            .discs
            .entry(radius.to_bits() as u64)
            .or_insert_with(|| meshes.add(Circle::new(radius)))
            .clone();
        let colour = material(&mut visuals, &mut materials, *state);
        commands
            .entity(entity)
            .insert((Mesh2d(mesh), MeshMaterial2d(colour)));
    }
}

fn colour_agents(
    mut agents: Query<(&AgentState, &mut MeshMaterial2d<ColorMaterial>), Changed<AgentState>>,
    mut visuals: ResMut<Visuals>,
    mut materials: ResMut<Assets<ColorMaterial>>,
) {
    for (state, mut handle) in &mut agents {
        handle.0 = material(&mut visuals, &mut materials, *state);
    }
}

#[derive(Component)]
struct ObstacleVisual;

/// Obstacle components get a filled mesh (discs and boxes) as a child; other shapes are drawn
/// as outlines by `draw_world`.
fn attach_obstacle_visuals(
    mut commands: Commands,
    obstacles: Query<(Entity, &CrowdObstacle), Added<CrowdObstacle>>,
    mut visuals: ResMut<Visuals>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<ColorMaterial>>,
) {
    let colour = visuals
        .obstacle
        .get_or_insert_with(|| materials.add(OBSTACLE))
        .clone();
    for (entity, obstacle) in &obstacles {
        let (mesh, at, angle) = match &obstacle.shape {
            Shape::Disc { centre, radius } => (
                meshes.add(Circle::new(*radius as f32)),
                centre.as_vec2(),
                0.0,
            ),
            Shape::Aabb { min, max } => (
                meshes.add(Rectangle::from_corners(min.as_vec2(), max.as_vec2())),
                ((*min + *max) * 0.5).as_vec2(),
                0.0,
            ),
            Shape::RotatedBox {
                centre,
                half_extents,
                angle,
            } => (
                meshes.add(Rectangle::new(
                    2.0 * half_extents.x as f32,
                    2.0 * half_extents.y as f32,
                )),
                centre.as_vec2(),
                *angle as f32,
            ),
            _ => continue,
        };
        // The parent needs visibility for its child mesh to show.
        commands
            .entity(entity)
            .insert(Visibility::default())
            .with_child((
                ObstacleVisual,
                Mesh2d(mesh),
                MeshMaterial2d(colour.clone()),
                Transform::from_translation(at.extend(-1.0))
                    .with_rotation(Quat::from_rotation_z(angle)),
            ));
    }
}

fn outline(gizmos: &mut Gizmos, shape: &Shape, colour: Color) {
    match shape {
        Shape::Disc { centre, radius } => {
            gizmos.circle_2d(centre.as_vec2(), *radius as f32, colour);
        }
        Shape::Aabb { min, max } => {
            gizmos.rect_2d(
                ((*min + *max) * 0.5).as_vec2(),
                (*max - *min).as_vec2(),
                colour,
            );
        }
        Shape::RotatedBox {
            centre,
            half_extents,
            angle,
        } => {
            gizmos.rect_2d(
                Isometry2d::new(centre.as_vec2(), Rot2::radians(*angle as f32)),
                (*half_extents * 2.0).as_vec2(),
                colour,
            );
        }
        Shape::Polygon(points) => {
            let mut pts: Vec<Vec2> = points.iter().map(|p| p.as_vec2()).collect();
            pts.push(pts[0]);
            gizmos.linestrip_2d(pts, colour);
        }
        Shape::Segment { a, b, .. } => gizmos.line_2d(a.as_vec2(), b.as_vec2(), colour),
        Shape::Polyline { points, .. } => {
            gizmos.linestrip_2d(points.iter().map(|p| p.as_vec2()), colour);
        }
    }
}

/// World bounds, every static shape the crowd knows (components and colliders), moving
/// obstacles, goals, and headings while there are few agents.
fn draw_world(
    mut gizmos: Gizmos,
    settings: Res<CrowdfieldSettings>,
    world: Res<CrowdWorld>,
    agents: Query<(&Transform, &AgentPlan, &AgentStyle), With<CrowdAgent>>,
) {
    let (min, max) = (settings.world_min, settings.world_max);
    gizmos.rect_2d((min + max) * 0.5, max - min, Color::srgb(0.7, 0.7, 0.7));
    let Some(crowd) = world.crowd() else {
        return;
    };
    let statics = crowd.statics();
    for shape in &statics[..statics.len().saturating_sub(4)] {
        outline(&mut gizmos, shape, Color::srgb(0.75, 0.78, 0.82));
    }
    for shape in crowd.moving_obstacles() {
        outline(&mut gizmos, shape, Color::srgb(0.95, 0.6, 0.3));
    }
    let mut g = 0;
    while let Some(goal) = crowd.goal(bevy_crowdfield::steer::GoalId(g)) {
        outline(&mut gizmos, goal.shape(), GOAL);
        g += 1;
    }
    if agents.iter().len() <= 3000 {
        for (t, plan, style) in &agents {
            let p = t.translation.truncate();
            let r = style.radius as f32;
            gizmos.line_2d(p, p + plan.heading * r * 1.8, Color::WHITE);
        }
    }
}

#[derive(Resource)]
struct ScreenshotPlan {
    path: String,
    at: f64,
    taken_frame: Option<u32>,
    frame: u32,
}

fn screenshot(
    mut commands: Commands,
    mut plan: ResMut<ScreenshotPlan>,
    time: Res<Time<Virtual>>,
    mut exit: MessageWriter<AppExit>,
) {
    plan.frame += 1;
    match plan.taken_frame {
        None if time.elapsed_secs_f64() >= plan.at => {
            commands
                .spawn(Screenshot::primary_window())
                .observe(save_to_disk(plan.path.clone()));
            plan.taken_frame = Some(plan.frame);
        }
        Some(f) if plan.frame > f + 30 => {
            exit.write(AppExit::Success);
        }
        _ => {}
    }
}

/// The window every example opens.
pub fn window(title: &str) -> WindowPlugin {
    WindowPlugin {
        primary_window: Some(Window {
            title: title.into(),
            resolution: (1280, 720).into(),
            ..default()
        }),
        ..default()
    }
}

/// Path of a shipped scenario, relative to the asset folder.
pub fn scenario_path(name: &str) -> String {
    format!("scenarios/{name}.scenario.ron")
}

/// The five accesses and the cart's counter.
pub const PARK_GOALS: [(Vec2, Vec2); 6] = [
    (Vec2::new(0.2, 17.5), Vec2::new(1.0, 22.5)),
    (Vec2::new(18.0, 38.5), Vec2::new(22.0, 39.5)),
    (Vec2::new(38.8, 34.5), Vec2::new(39.8, 39.5)),
    (Vec2::new(0.2, 0.2), Vec2::new(5.5, 1.2)),
    (Vec2::new(34.5, 0.2), Vec2::new(39.8, 5.5)),
    (Vec2::new(19.0, 6.6), Vec2::new(21.0, 7.6)),
];

/// C: 100 more park walkers, a new draw each time.
pub fn park_crowd_on_c(
    mut commands: Commands,
    input: Res<ButtonInput<KeyCode>>,
    world: Res<CrowdWorld>,
    mut round: Local<u64>,
) {
    if input.just_pressed(KeyCode::KeyC)
        && let Some(crowd) = world.crowd()
    {
        *round += 1;
        // Round 1 is the showcase's first crowd.
        park_crowd(&mut commands, crowd, 100, 100 + *round);
    }
}

/// `count` park walkers at random free spots (seed 000 test 22), each with a random v in
/// [-1, 1]², a random step of 0.3–1 local cells per planner step and one of the six goals;
/// they leave on arrival. `round` seeds the draw.
pub fn park_crowd(
    commands: &mut Commands,
    crowd: &bevy_crowdfield::steer::Crowd,
    count: usize,
    round: u64,
) {
    let mut rng = round.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f32 / (1u64 << 53) as f32
    };
    let mut placed = 0;
    let mut taken: Vec<Vec2> = crowd
        .agents()
        .map(|(_, a)| a.position().as_vec2())
        .collect();
    while placed < count {
        let p = Vec2::new(3.0 + 34.0 * next(), 3.0 + 34.0 * next());
        let free = crowd
            .statics()
            .iter()
            .all(|s| s.distance(p.as_dvec2()).is_ok_and(|d| d > 0.4))
            && taken.iter().all(|q| q.distance(p) > 0.6);
        if !free {
            continue;
        }
        let (lo, hi) = PARK_GOALS[(next() * 6.0) as usize % 6];
        let v = Vec2::new(2.0 * next() - 1.0, 2.0 * next() - 1.0);
        let step = 0.3 + 0.7 * next();
        commands.spawn((
            CrowdAgent,
            Transform::from_translation(p.extend(0.0)),
            AgentGoals {
                targets: vec![GoalTarget::Region(Shape::Aabb {
                    min: lo.as_dvec2(),
                    max: hi.as_dvec2(),
                })],
                ..default()
            }
            .then_despawn(),
            AgentStyle {
                // `step` local cells (0.5 m) per planner step at 3.5 steps a second.
                max_speed: (step * 0.5 * 3.5) as f64,
                ..default()
            }
            .with_behaviour(Behaviour::Constant {
                epsilon: 0.8,
                v: v.as_dvec2(),
                frame: Frame::World,
            }),
        ));
        taken.push(p);
        placed += 1;
    }
}
