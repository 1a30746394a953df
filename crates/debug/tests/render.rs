//! Rendering test: every overlay drawn in a real window and checked in the picture.
//!
//! Opens a window (X11; in CI through Xvfb and Mesa's software Vulkan driver), runs the
//! `deadend` scenario for three simulated seconds, pauses it, and captures one frame with no
//! overlay and one frame per overlay. Each overlay's frame must differ from the bare frame, and
//! the changed pixels must be the overlay's own colours (the heat map's ramp, cyan arrows, white
//! isolines, …). The frames are written to `CROWDFIELD_RENDER_OUT` (or the test's temporary
//! directory) as PNGs; `docs/overlays/` holds copies.
//!
//! A window needs the main thread, so this test has its own `main` (no libtest harness). It
//! needs a display and a Vulkan driver, so it runs only when `CROWDFIELD_RENDER_TESTS=1`;
//! `.ci/run` sets that and installs both. Locally:
//!
//! ```text
//! CROWDFIELD_RENDER_TESTS=1 xvfb-run -a -s "-screen 0 1280x720x24" \
//!     cargo test -p crowdfield_debug --test render
//! ```

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bevy::camera::ScalingMode;
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::time::TimeUpdateStrategy;
use bevy::window::ExitCondition;
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;

/// One frame to capture: its name, the overlays on, and whether the help panel shows.
struct Stage {
    name: &'static str,
    overlays: &'static [OverlayId],
    help: bool,
}

const STAGES: &[Stage] = &[
    Stage {
        name: "off",
        overlays: &[],
        help: false,
    },
    Stage {
        name: "heat_map",
        overlays: &[OverlayId::HEAT_MAP],
        help: false,
    },
    Stage {
        name: "isolines",
        overlays: &[OverlayId::ISOLINES],
        help: false,
    },
    Stage {
        name: "descent",
        overlays: &[OverlayId::DESCENT],
        help: false,
    },
    Stage {
        name: "local_map",
        overlays: &[OverlayId::LOCAL_MAP],
        help: false,
    },
    Stage {
        name: "agent_states",
        overlays: &[OverlayId::AGENT_STATES],
        help: false,
    },
    Stage {
        name: "subgoals",
        overlays: &[OverlayId::SUBGOALS],
        help: false,
    },
    Stage {
        name: "stats",
        overlays: &[OverlayId::STATS],
        help: false,
    },
    Stage {
        name: "group_map",
        overlays: &[OverlayId::GROUP_MAP],
        help: false,
    },
    Stage {
        name: "group_bands",
        overlays: &[OverlayId::GROUP_BANDS],
        help: false,
    },
    Stage {
        name: "group_slots",
        overlays: &[OverlayId::GROUP_SLOTS],
        help: false,
    },
    Stage {
        name: "drawn_paths",
        overlays: &[OverlayId::DRAWN_PATHS],
        help: false,
    },
    Stage {
        name: "stroke_fields",
        overlays: &[OverlayId::STROKE_FIELDS],
        help: false,
    },
    Stage {
        name: "markers",
        overlays: &[OverlayId::MARKERS],
        help: false,
    },
    Stage {
        name: "marker_trees",
        overlays: &[OverlayId::MARKER_TREES],
        help: false,
    },
    Stage {
        name: "help",
        overlays: &[],
        help: true,
    },
    Stage {
        name: "all",
        overlays: &[
            OverlayId::HEAT_MAP,
            OverlayId::ISOLINES,
            OverlayId::DESCENT,
            OverlayId::LOCAL_MAP,
            OverlayId::SUBGOALS,
            OverlayId::STATS,
        ],
        help: true,
    },
];

/// A captured frame: RGB bytes, row-major from the top.
#[derive(Clone)]
struct Frame {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Frame {
    fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let o = ((y * self.width + x) * 3) as usize;
        [self.rgb[o], self.rgb[o + 1], self.rgb[o + 2]]
    }
}

type Captured = Arc<Mutex<Vec<(&'static str, Frame)>>>;

#[derive(Resource)]
struct Script {
    captured: Captured,
    stage: usize,
    /// Frame counter within the current phase.
    frame: u32,
    /// Screenshot requested for the current stage, waiting for it to arrive.
    waiting: bool,
    failure: Arc<Mutex<Option<String>>>,
}

/// Simulated seconds before the crowd is paused and frames are captured.
const WARM_UP_FRAMES: u32 = 90;
/// Frames between switching overlays and capturing (textures upload, UI lays out).
const SETTLE_FRAMES: u32 = 6;
/// Frames a screenshot may take to arrive.
const CAPTURE_TIMEOUT: u32 = 240;

fn main() {
    if std::env::var("CROWDFIELD_RENDER_TESTS").as_deref() != Ok("1") {
        println!(
            "render test skipped: it needs a display and a Vulkan driver; \
             set CROWDFIELD_RENDER_TESTS=1 to run it (CI does)"
        );
        return;
    }
    let out = std::env::var_os("CROWDFIELD_RENDER_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("overlays"));
    std::fs::create_dir_all(&out).expect("create the output directory");

    let captured: Captured = Arc::default();
    let failure: Arc<Mutex<Option<String>>> = Arc::default();
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: "crowdfield_debug render test".into(),
                    resolution: (1024, 576).into(),
                    ..default()
                }),
                exit_condition: ExitCondition::OnPrimaryClosed,
                ..default()
            })
            .set(bevy::log::LogPlugin {
                level: bevy::log::Level::WARN,
                ..default()
            }),
    )
    .add_plugins((CrowdfieldPlugins, CrowdDebugPlugin))
    .insert_resource(ClearColor(Color::srgb(0.11, 0.12, 0.14)))
    .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
        1.0 / 30.0,
    )))
    .insert_resource(Script {
        captured: captured.clone(),
        stage: 0,
        frame: 0,
        waiting: false,
        failure: failure.clone(),
    })
    .add_systems(Startup, setup)
    .add_systems(Update, select_first_agent)
    .add_systems(Last, script);
    // The window's event loop owns the app; what the script found comes back through `failure`.
    let exit = app.run();
    if let Some(failure) = failure.lock().unwrap().take() {
        panic!("{failure}");
    }
    assert!(exit.is_success(), "the app exited with {exit:?}");

    let frames = captured.lock().unwrap().clone();
    for (name, frame) in &frames {
        let path = out.join(format!("{name}.png"));
        save_png(&path, frame);
    }
    println!("frames written to {}", out.display());
    check(&frames);
    println!("render test: {} frames checked", frames.len());
}

fn save_png(path: &std::path::Path, frame: &Frame) {
    let file = std::fs::File::create(path).expect("create png");
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), frame.width, frame.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().expect("png header");
    writer.write_image_data(&frame.rgb).expect("png data");
}

fn setup(
    mut commands: Commands,
    mut settings: ResMut<CrowdfieldSettings>,
    mut brushes: MessageWriter<MarkerBrush>,
) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/scenarios/deadend.scenario.ron"
    );
    let scenario = Scenario::from_path(path.as_ref()).expect("deadend scenario");
    scenario.apply_settings(&mut settings);
    scenario.spawn(&mut commands, None);
    // A group in line, holding in the hall's upper right, for the group overlays.
    let group = commands
        .spawn((
            CrowdGroup::in_formation(Formation::template(FormationTemplate::Line)),
            GroupOrder::Hold,
        ))
        .id();
    for i in 0..5 {
        commands.spawn((
            CrowdAgent,
            Transform::from_xyz(32.0 + 1.5 * i as f32, 10.0, 0.0),
            MemberOf(group),
        ));
    }
    // A group sent along a drawn path past the pillar, for the drawn-paths overlay.
    let walking = commands
        .spawn((
            CrowdGroup::in_formation(Formation::template(FormationTemplate::Column)),
            GroupOrder::FollowPath {
                points: vec![
                    Vec2::new(16.0, 9.0),
                    Vec2::new(25.0, 9.0),
                    Vec2::new(26.0, 2.0),
                    Vec2::new(35.0, 1.5),
                ],
                joining: Joining::NearestPoint,
            },
        ))
        .id();
    for i in 0..3 {
        commands.spawn((
            CrowdAgent,
            Transform::from_xyz(15.0 + 1.5 * i as f32, 9.5, 0.0),
            MemberOf(walking),
        ));
    }
    // Markers over the hall, a dense tagged spray and a forbidden patch, for the markers
    // overlay.
    commands.insert_resource(MarkerGround {
        density: 30.0,
        ..default()
    });
    brushes.write(MarkerBrush::Stroke {
        brush: Brush {
            kind: BrushKind::Spray {
                density: 200.0,
                tag: Some(0),
            },
            radius: 1.5,
        },
        points: vec![Vec2::new(24.0, 3.0), Vec2::new(31.0, 3.0)],
    });
    brushes.write(MarkerBrush::Stroke {
        brush: Brush {
            kind: BrushKind::Paint(Terrain::Forbidden),
            radius: 2.0,
        },
        points: vec![Vec2::new(6.0, 4.0)],
    });
    // Three walkers of the marker back end in the hall, for the trees overlay.
    for i in 0..3 {
        let y = 8.0 + i as f32;
        commands.spawn((
            CrowdAgent,
            AgentGoals::point(Vec2::new(30.0, y - 4.0)),
            MarkerSteering::Goals,
            Transform::from_xyz(16.0, y, 0.0),
        ));
    }
    commands.spawn((
        Camera2d,
        Projection::Orthographic(OrthographicProjection {
            scaling_mode: ScalingMode::AutoMin {
                min_width: 41.0,
                min_height: 24.0,
            },
            ..OrthographicProjection::default_2d()
        }),
        Transform::from_xyz(20.0, 10.5, 0.0),
    ));
}

/// Selects the crowd's first walker that is not a group member (in the hall, on a sub-goal
/// stack).
fn select_first_agent(world: Res<CrowdWorld>, mut selected: ResMut<SelectedAgent>) {
    if selected.0.is_none()
        && let Some(entity) = world
            .crowd()
            .and_then(|c| {
                // A walker, not a group member (their steps are the group's).
                c.agents().find(|(_, a)| {
                    a.params().steering != bevy_crowdfield::steer::Steering::External
                })
            })
            .and_then(|(id, _)| world.entity(id))
    {
        selected.0 = Some(entity);
    }
}

fn script(
    mut commands: Commands,
    mut script: ResMut<Script>,
    mut overlays: ResMut<DebugOverlays>,
    mut settings: ResMut<CrowdDebugSettings>,
    mut time: ResMut<Time<Virtual>>,
    mut exit: MessageWriter<AppExit>,
) {
    script.frame += 1;
    if !time.is_paused() {
        if script.frame == 1 {
            overlays.disable_all();
            settings.show_help = false;
        }
        if script.frame >= WARM_UP_FRAMES {
            time.pause();
            script.frame = 0;
        }
        return;
    }
    let Some(stage) = STAGES.get(script.stage) else {
        exit.write(AppExit::Success);
        return;
    };
    if script.waiting {
        let have = script.captured.lock().unwrap().len();
        if have > script.stage {
            script.waiting = false;
            script.stage += 1;
            script.frame = 0;
        } else if script.frame > CAPTURE_TIMEOUT {
            *script.failure.lock().unwrap() =
                Some(format!("no screenshot arrived for `{}`", stage.name));
            exit.write(AppExit::error());
        }
        return;
    }
    if script.frame == 1 {
        overlays.disable_all();
        for id in stage.overlays {
            assert!(overlays.set(*id, true), "overlay {id:?} not registered");
        }
        settings.show_help = stage.help;
    }
    if script.frame == SETTLE_FRAMES {
        let captured = script.captured.clone();
        let name = stage.name;
        commands.spawn(Screenshot::primary_window()).observe(
            move |shot: On<ScreenshotCaptured>| {
                let rgb = shot
                    .image
                    .clone()
                    .try_into_dynamic()
                    .expect("screenshot as an image")
                    .to_rgb8();
                captured.lock().unwrap().push((
                    name,
                    Frame {
                        width: rgb.width(),
                        height: rgb.height(),
                        rgb: rgb.into_raw(),
                    },
                ));
            },
        );
        script.waiting = true;
        script.frame = 0;
    }
}

/// Pixels of `frame` that differ from `base` by more than a little in any channel.
fn changed(base: &Frame, frame: &Frame) -> Vec<(u32, u32, [u8; 3])> {
    assert_eq!((base.width, base.height), (frame.width, frame.height));
    let mut out = Vec::new();
    for y in 0..frame.height {
        for x in 0..frame.width {
            let (a, b) = (base.pixel(x, y), frame.pixel(x, y));
            if a.iter().zip(b).any(|(a, b)| a.abs_diff(b) > 24) {
                out.push((x, y, b));
            }
        }
    }
    out
}

/// How many changed pixels are within `tolerance` of `colour` in every channel.
fn near(pixels: &[(u32, u32, [u8; 3])], colour: [u8; 3], tolerance: u8) -> usize {
    pixels
        .iter()
        .filter(|(_, _, c)| {
            c.iter()
                .zip(colour)
                .all(|(a, b)| a.abs_diff(b) <= tolerance)
        })
        .count()
}

fn srgb(c: Color) -> [u8; 3] {
    let s = c.to_srgba();
    [s.red, s.green, s.blue].map(|v| (v * 255.0).round() as u8)
}

fn check(frames: &[(&'static str, Frame)]) {
    let get = |name: &str| {
        &frames
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no frame `{name}`"))
            .1
    };
    let base = get("off");
    let total = (base.width * base.height) as usize;
    let mut report = Vec::new();
    for stage in STAGES.iter().skip(1) {
        let diff = changed(base, get(stage.name));
        report.push(format!("{}: {} pixels changed", stage.name, diff.len()));
        assert!(
            diff.len() > 300,
            "`{}` looks like the frame without overlays ({} pixels changed)",
            stage.name,
            diff.len()
        );
        let fail =
            |what: &str| -> ! { panic!("`{}`: {what}; {} pixels changed", stage.name, diff.len()) };
        match stage.name {
            "heat_map" => {
                // The map covers most of the window, in many ramp colours from dark purple to
                // yellow, with the flat dead end in magenta.
                if diff.len() < total / 3 {
                    fail("the heat map covers less than a third of the window");
                }
                let dark = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] < 110 && c[1] < 90 && c[2] > 70)
                    .count();
                let bright = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] > 170 && c[1] > 190 && c[2] < 120)
                    .count();
                let flat = near(&diff, crowdfield_debug::paint::FLAT_RGB, 30);
                let mut buckets = std::collections::HashSet::new();
                for (_, _, c) in &diff {
                    buckets.insert(c.map(|v| v / 32));
                }
                if dark < 500 || bright < 500 || flat < 200 || buckets.len() < 12 {
                    fail(&format!(
                        "ramp not shown: {dark} dark, {bright} bright, {flat} flat pixels, \
                         {} colour buckets",
                        buckets.len()
                    ));
                }
            }
            "group_map" => {
                // The group's 10 m map in many ramp colours, its members as obstacles.
                let mut buckets = std::collections::HashSet::new();
                for (_, _, c) in &diff {
                    buckets.insert(c.map(|v| v / 32));
                }
                if diff.len() < total / 20 || buckets.len() < 6 {
                    fail(&format!("no group map: {} colour buckets", buckets.len()));
                }
            }
            "group_bands" => {
                let red = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] > 120 && c[1] < 110 && c[2] < 100)
                    .count();
                if red < 300 {
                    fail(&format!("only {red} band pixels"));
                }
            }
            "stroke_fields" => {
                // The segments' fields round the path, in many ramp colours.
                let mut buckets = std::collections::HashSet::new();
                for (_, _, c) in &diff {
                    buckets.insert(c.map(|v| v / 32));
                }
                if diff.len() < 5000 || buckets.len() < 6 {
                    fail(&format!(
                        "no stroke fields: {} colour buckets",
                        buckets.len()
                    ));
                }
            }
            "markers" => {
                // Ground markers faint blue over the whole hall, the spray in the first tag
                // colour, the forbidden patch red.
                let paint = crowdfield_debug::paint::TAG_RGB[0];
                let sprayed = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] > 150 && c[1] > 150 && c[2] < 120)
                    .count();
                let forbidden = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] > 90 && c[1] < 60 && c[2] < 70)
                    .count();
                if diff.len() < total / 10 || sprayed < 200 || forbidden < 200 {
                    fail(&format!(
                        "{sprayed} sprayed pixels (colour {paint:?}), {forbidden} forbidden \
                         pixels"
                    ));
                }
            }
            "marker_trees" => {
                // Live segments faint cyan, the ways ahead bright cyan, key positions yellow.
                let cyan = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] < 150 && c[1] > 150 && c[2] > 170)
                    .count();
                if cyan < 150 {
                    fail(&format!("{cyan} cyan pixels of tree segments"));
                }
            }
            "drawn_paths" => {
                let magenta = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] > 170 && c[1] < 150 && c[2] > 170)
                    .count();
                if magenta < 300 {
                    fail(&format!("only {magenta} path pixels"));
                }
            }
            "group_slots" => {
                let green = diff
                    .iter()
                    .filter(|(_, _, c)| c[1] > 170 && c[0] < 170 && c[2] < 200)
                    .count();
                let yellow = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] > 190 && c[1] > 160 && c[2] < 120)
                    .count();
                if green < 40 || yellow < 300 {
                    fail(&format!("{green} slot pixels, {yellow} bounds pixels"));
                }
            }
            "isolines" => {
                let white = diff
                    .iter()
                    .filter(|(_, _, c)| c.iter().all(|v| *v > 120))
                    .count();
                if white * 2 < diff.len() {
                    fail("most changed pixels are not the isolines' white");
                }
            }
            "descent" => {
                let cyan = diff
                    .iter()
                    .filter(|(_, _, c)| c[0] < 170 && c[1] > 170 && c[2] > 190)
                    .count();
                if cyan < 1000 {
                    fail(&format!("only {cyan} cyan arrow pixels"));
                }
            }
            "local_map" => {
                let orange = near(&diff, [255, 140, 38], 60);
                let white = diff
                    .iter()
                    .filter(|(_, _, c)| c.iter().all(|v| *v > 200))
                    .count();
                // The agent panel sits in the lower right corner.
                let panel = diff
                    .iter()
                    .filter(|(x, y, _)| *x > base.width / 2 && *y > base.height * 3 / 4)
                    .count();
                if orange < 30 || white < 200 || panel < 200 {
                    fail(&format!(
                        "{orange} neighbour, {white} window and {panel} panel pixels"
                    ));
                }
            }
            "agent_states" => {
                let moving = near(
                    &diff,
                    srgb(crowdfield_debug::state_colour(AgentState::Moving)),
                    40,
                );
                if moving < 300 {
                    fail(&format!("only {moving} pixels of the moving agents' blue"));
                }
            }
            "subgoals" => {
                let magenta = near(&diff, [214, 48, 170], 60);
                if magenta < 200 {
                    fail(&format!("only {magenta} sub-goal magenta pixels"));
                }
            }
            "stats" => {
                let corner = diff
                    .iter()
                    .filter(|(x, y, _)| *x < base.width * 3 / 4 && *y > base.height * 3 / 4)
                    .count();
                if corner * 10 < diff.len() * 9 {
                    fail("the stats panel is not in the lower left corner");
                }
            }
            "help" => {
                // Its 21 rows (15 overlays) reach a little past the middle of the window.
                let corner = diff
                    .iter()
                    .filter(|(x, y, _)| *x > base.width / 4 && *y < base.height * 2 / 3)
                    .count();
                if corner * 10 < diff.len() * 9 {
                    fail("the help panel is not in the upper right corner");
                }
            }
            _ => {}
        }
    }
    println!("{}", report.join("\n"));
}
