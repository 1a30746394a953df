//! The sketch planner in a street scene (seed 004 chapter 5, seed 002's spray tool): draw the
//! path a group follows, a path with branches for two subsets of walkers, and a group's
//! formation; spray, erase and paint the markers of the ground. Everything goes through the
//! sketch tool (`crowdfield_debug::tool`), the help at the top left lists its inputs.
//!
//! ```text
//! cargo run --release --example sketch
//! CROWDFIELD_DEMO=1 cargo run --release --example sketch   # watch the tool used first
//! ```
//!
//! The demo drives the tool with the same mouse and key events a user makes: it selects the
//! wedge and draws its path along the main street, selects the six walkers and draws a trunk to
//! the crossroads, then a branch north for three of them and a branch south for the others
//! (Alt held: waypoints along them), draws a crescent as the box group's formation and its path
//! along the bottom street, sprays markers with the brush, and leaves a last path half drawn.
//! Screenshot mode plays it too.

#[path = "support/mod.rs"]
mod support;

use std::collections::VecDeque;

use bevy::input::ButtonState;
use bevy::input::keyboard::{Key, KeyboardInput, NativeKey};
use bevy::input::mouse::MouseButtonInput;
use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use crowdfield_debug::prelude::*;
use crowdfield_debug::tool::{self, SketchTool, SketchToolSystems, ToolBrush, ToolCursor};

/// World size, metres.
const WORLD: Vec2 = Vec2::new(64.0, 40.0);

fn main() {
    let mut help: Vec<String> = vec![
        "A street scene: a main street east-west, side streets north and south at the crossroads."
            .into(),
    ];
    help.extend(tool::help());
    help.push(
        "Overlays: P drawn paths, K stroke fields, M markers and painted terrain, 0 group slots."
            .into(),
    );
    let demo =
        std::env::var("CROWDFIELD_DEMO").is_ok() || std::env::var("CROWDFIELD_SCREENSHOT").is_ok();
    let mut app = App::new();
    app.add_plugins((
        DefaultPlugins.set(support::window("crowdfield: sketch")),
        CrowdfieldPlugins,
        CrowdDebugPlugin,
        support::ExampleView { help },
        SketchTool,
    ))
    .insert_resource(CrowdfieldSettings {
        world_min: Vec2::ZERO,
        world_max: WORLD,
        global_cell_size: 0.25,
        global_inflation: 0.2,
        ..default()
    })
    .insert_resource(CrowdDebugSettings {
        // The tool owns the left button.
        select_button: None,
        ..default()
    })
    .insert_resource(MarkerGround::default())
    .add_systems(Startup, (spawn_street, overlays_on, spawn_status))
    .add_systems(
        Update,
        (show_status, markers_with_brush).after(SketchToolSystems),
    );
    if demo {
        app.insert_resource(Demo(script()))
            // The demo moves the cursor itself.
            .insert_resource(tool::ToolBindings {
                cursor_from_window: false,
                ..default()
            })
            .add_systems(PreUpdate, play_demo);
    }
    app.run();
}

fn overlays_on(mut overlays: ResMut<DebugOverlays>) {
    overlays.set(OverlayId::DRAWN_PATHS, true);
    overlays.set(OverlayId::GROUP_SLOTS, true);
    overlays.set(OverlayId::STATS, false);
}

/// Four blocks round a crossroads, a fountain in its middle; streets along the top and the
/// bottom too.
fn street() -> Vec<Shape> {
    let mut shapes: Vec<Shape> = [
        ((8.0, 26.0), (34.0, 37.0)),
        ((44.0, 26.0), (62.0, 37.0)),
        ((8.0, 5.0), (34.0, 14.0)),
        ((44.0, 5.0), (62.0, 14.0)),
    ]
    .into_iter()
    .map(|((x0, y0), (x1, y1))| Shape::Aabb {
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    })
    .collect();
    shapes.push(Shape::Disc {
        centre: DVec2::new(39.0, 20.0),
        radius: 1.2,
    });
    shapes
}

/// The wedge's members start here (the west end of the main street).
const WEDGE_AT: Vec2 = Vec2::new(3.0, 20.0);
/// The walkers start here (the plaza's north part), two columns of three.
const WALKERS_AT: Vec2 = Vec2::new(2.5, 30.0);
/// The box group starts here (the plaza's south part).
const BOX_AT: Vec2 = Vec2::new(3.0, 4.0);

fn spawn_street(mut commands: Commands, mut brushes: MessageWriter<MarkerBrush>) {
    for shape in street() {
        commands.spawn((CrowdObstacle::fixed(shape), Transform::IDENTITY));
    }
    let wedge = commands
        .spawn((
            Name::new("wedge"),
            CrowdGroup::in_formation(Formation::template(FormationTemplate::Wedge)),
            GroupOrder::Hold,
        ))
        .id();
    for i in 0..7 {
        let p = WEDGE_AT + Vec2::new((i / 3) as f32 * -1.2, ((i % 3) as f32 - 1.0) * 1.2);
        commands.spawn((
            CrowdAgent,
            Transform::from_translation(p.extend(0.0)),
            MemberOf(wedge),
        ));
    }
    for i in 0..6 {
        let p = WALKERS_AT + Vec2::new((i / 3) as f32 * 2.0, (i % 3) as f32 * 1.5);
        commands.spawn((
            CrowdAgent,
            Transform::from_translation(p.extend(0.0)),
            AgentGoals::default().then_settle(),
        ));
    }
    let boxed = commands
        .spawn((
            Name::new("box"),
            CrowdGroup::in_formation(Formation::template(FormationTemplate::Box)),
            GroupOrder::Hold,
        ))
        .id();
    for i in 0..6 {
        let p = BOX_AT + Vec2::new((i % 2) as f32 * 1.2, (i / 2) as f32 * 1.2);
        commands.spawn((
            CrowdAgent,
            Transform::from_translation(p.extend(0.0)),
            MemberOf(boxed),
        ));
    }
    // The plaza's lawn, best avoided, and a building site nobody may cross, painted on the
    // ground's markers.
    brushes.write(MarkerBrush::Stroke {
        brush: Brush {
            kind: BrushKind::Paint(Terrain::Avoid { intensity: 0.6 }),
            radius: 1.5,
        },
        points: vec![Vec2::new(2.0, 11.0), Vec2::new(6.0, 11.0)],
    });
    brushes.write(MarkerBrush::Stroke {
        brush: Brush {
            kind: BrushKind::Paint(Terrain::Forbidden),
            radius: 1.0,
        },
        points: vec![Vec2::new(52.0, 23.0), Vec2::new(58.0, 23.0)],
    });
}

/// The markers overlay comes on with a brush and goes off with it (M still switches it).
fn markers_with_brush(brush: Res<ToolBrush>, mut overlays: ResMut<DebugOverlays>) {
    if brush.is_changed() && !brush.is_added() {
        overlays.set(OverlayId::MARKERS, brush.kind.is_some());
    }
}

/// The status line: selection and brush.
#[derive(Component)]
struct StatusLine;

fn spawn_status(mut commands: Commands) {
    commands.spawn((
        StatusLine,
        Text::new(""),
        TextFont {
            font_size: FontSize::Px(15.0),
            ..default()
        },
        Node {
            position_type: PositionType::Absolute,
            bottom: px(8),
            left: px(10),
            ..default()
        },
    ));
}

fn show_status(
    selection: Res<tool::Selection>,
    brush: Res<ToolBrush>,
    mut line: Single<&mut Text, With<StatusLine>>,
) {
    let text = format!(
        "selected: {} unit(s)   {}",
        selection.0.len(),
        tool::brush_label(&brush)
    );
    if line.0 != text {
        line.0 = text;
    }
}

/// One scripted input.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// The cursor moves here.
    Cursor(Vec2),
    /// A mouse button changes state.
    Mouse(MouseButton, ButtonState),
    /// A key changes state.
    Key(KeyCode, ButtonState),
    /// Nothing for this many frames.
    Wait(u32),
}

/// The demo's steps, one a frame.
#[derive(Resource)]
struct Demo(VecDeque<Step>);

/// A box drag with the left button.
fn select_box(steps: &mut Vec<Step>, from: Vec2, to: Vec2) {
    steps.push(Step::Cursor(from));
    steps.push(Step::Mouse(MouseButton::Left, ButtonState::Pressed));
    for k in 1..=6 {
        steps.push(Step::Cursor(from.lerp(to, k as f32 / 6.0)));
    }
    steps.push(Step::Mouse(MouseButton::Left, ButtonState::Released));
}

/// A right drag through `points`, in moves of 0.6 m.
fn stroke(steps: &mut Vec<Step>, points: &[Vec2]) {
    steps.push(Step::Cursor(points[0]));
    steps.push(Step::Mouse(MouseButton::Right, ButtonState::Pressed));
    for w in points.windows(2) {
        let n = (w[0].distance(w[1]) / 0.6).ceil().max(1.0) as usize;
        for k in 1..=n {
            steps.push(Step::Cursor(w[0].lerp(w[1], k as f32 / n as f32)));
        }
    }
    steps.push(Step::Mouse(MouseButton::Right, ButtonState::Released));
}

fn tap(steps: &mut Vec<Step>, key: KeyCode) {
    steps.push(Step::Key(key, ButtonState::Pressed));
    steps.push(Step::Key(key, ButtonState::Released));
}

fn script() -> VecDeque<Step> {
    let mut s = Vec::new();
    s.push(Step::Wait(20));
    // The wedge: its path along the main street, weaving past the fountain's north side.
    select_box(
        &mut s,
        WEDGE_AT - Vec2::new(3.5, 2.0),
        WEDGE_AT + Vec2::new(1.0, 2.0),
    );
    stroke(
        &mut s,
        &[
            Vec2::new(6.0, 20.0),
            Vec2::new(18.0, 18.0),
            Vec2::new(30.0, 21.5),
            Vec2::new(39.0, 23.0),
            Vec2::new(48.0, 20.0),
            Vec2::new(60.0, 19.0),
        ],
    );
    s.push(Step::Wait(10));
    // The six walkers: a trunk to the crossroads (Alt: waypoints along it).
    select_box(
        &mut s,
        WALKERS_AT - Vec2::splat(1.0),
        WALKERS_AT + Vec2::new(3.0, 4.0),
    );
    s.push(Step::Key(KeyCode::AltLeft, ButtonState::Pressed));
    stroke(
        &mut s,
        &[
            Vec2::new(4.5, 29.0),
            Vec2::new(5.0, 24.5),
            Vec2::new(12.0, 23.0),
            Vec2::new(35.0, 23.0),
        ],
    );
    // The first column: a branch from the trunk's end up the north street.
    select_box(
        &mut s,
        WALKERS_AT - Vec2::new(1.0, 1.0),
        WALKERS_AT + Vec2::new(0.8, 4.0),
    );
    stroke(
        &mut s,
        &[
            Vec2::new(35.2, 23.0),
            Vec2::new(38.0, 25.0),
            Vec2::new(39.5, 30.0),
            Vec2::new(39.5, 38.5),
        ],
    );
    // The second column: a branch from the same fork down the south street.
    select_box(
        &mut s,
        WALKERS_AT + Vec2::new(1.2, -1.0),
        WALKERS_AT + Vec2::new(3.0, 4.0),
    );
    stroke(
        &mut s,
        &[
            Vec2::new(35.2, 23.0),
            Vec2::new(36.0, 18.0),
            Vec2::new(38.5, 12.0),
            Vec2::new(39.5, 1.5),
        ],
    );
    s.push(Step::Key(KeyCode::AltLeft, ButtonState::Released));
    // The box group: a crescent drawn as its formation (Ctrl), then a path east along the
    // bottom street.
    select_box(
        &mut s,
        BOX_AT - Vec2::splat(1.0),
        BOX_AT + Vec2::new(2.5, 3.5),
    );
    s.push(Step::Key(KeyCode::ControlLeft, ButtonState::Pressed));
    let crescent: Vec<Vec2> = (0..=12)
        .map(|k| {
            let a = std::f32::consts::PI * (0.15 + 0.7 * k as f32 / 12.0);
            Vec2::new(7.0, 2.5) + Vec2::new(-a.cos(), a.sin() * 0.6) * 2.0
        })
        .collect();
    stroke(&mut s, &crescent);
    s.push(Step::Key(KeyCode::ControlLeft, ButtonState::Released));
    s.push(Step::Wait(10));
    stroke(
        &mut s,
        &[
            Vec2::new(6.0, 2.5),
            Vec2::new(30.0, 2.5),
            Vec2::new(58.0, 2.5),
        ],
    );
    // The brush: a spray along the north pavement, then off.
    tap(&mut s, KeyCode::KeyQ);
    stroke(&mut s, &[Vec2::new(46.0, 24.5), Vec2::new(60.0, 24.5)]);
    s.push(Step::Wait(30));
    tap(&mut s, KeyCode::KeyQ);
    tap(&mut s, KeyCode::KeyQ);
    tap(&mut s, KeyCode::KeyQ);
    tap(&mut s, KeyCode::KeyQ);
    // A last path being drawn for the wedge, left unfinished so the picture shows a stroke
    // in progress.
    select_box(&mut s, Vec2::new(10.0, 15.0), Vec2::new(30.0, 25.0));
    stroke(
        &mut s,
        &[
            Vec2::new(20.0, 16.0),
            Vec2::new(30.0, 15.5),
            Vec2::new(42.0, 16.0),
        ],
    );
    s.pop();
    s.push(Step::Wait(u32::MAX));
    s.into()
}

/// Plays one step a frame, as input events the tool reads like a user's.
fn play_demo(
    mut demo: ResMut<Demo>,
    mut cursor: ResMut<ToolCursor>,
    mut mouse: MessageWriter<MouseButtonInput>,
    mut keys: MessageWriter<KeyboardInput>,
    window: Single<Entity, With<Window>>,
) {
    let Some(step) = demo.0.pop_front() else {
        return;
    };
    match step {
        Step::Cursor(p) => cursor.0 = Some(p),
        Step::Mouse(button, state) => {
            mouse.write(MouseButtonInput {
                button,
                state,
                window: *window,
            });
        }
        Step::Key(key_code, state) => {
            keys.write(KeyboardInput {
                key_code,
                logical_key: Key::Unidentified(NativeKey::Unidentified),
                state,
                text: None,
                repeat: false,
                window: *window,
            });
        }
        Step::Wait(n) => {
            if n > 1 {
                demo.0.push_front(Step::Wait(n - 1));
            }
        }
    }
}
