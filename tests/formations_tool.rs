//! The `formations` example's RTS tool, driven headless with mouse and key events: click and
//! box selection, formation keys, right-click orders, cohesion keys.

#[path = "../examples/support/rts.rs"]
mod rts;

use std::time::Duration;

use bevy::input::ButtonState;
use bevy::input::InputPlugin;
use bevy::input::keyboard::{Key, KeyboardInput};
use bevy::input::mouse::MouseButtonInput;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_crowdfield::prelude::*;

const HZ: f64 = 4.0;

fn app() -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, InputPlugin, CrowdfieldPlugins, rts::RtsTool))
        .insert_resource(Time::<Fixed>::from_hz(HZ))
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
            1.0 / HZ,
        )))
        .insert_resource(CrowdfieldSettings {
            planner_hz: HZ,
            world_min: Vec2::ZERO,
            world_max: Vec2::new(40.0, 30.0),
            ..default()
        });
    app
}

/// A group of `n` members in a row from `at`, holding.
fn group(app: &mut App, at: Vec2, n: usize) -> (Entity, Vec<Entity>) {
    let g = app
        .world_mut()
        .spawn((
            CrowdGroup::in_formation(Formation::template(FormationTemplate::Line)),
            GroupOrder::Hold,
        ))
        .id();
    let members = (0..n)
        .map(|i| {
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_translation((at + Vec2::new(0.0, i as f32 * 1.5)).extend(0.0)),
                    MemberOf(g),
                ))
                .id()
        })
        .collect();
    (g, members)
}

fn cursor(app: &mut App, at: Vec2) {
    app.world_mut().resource_mut::<rts::CursorWorld>().0 = Some(at);
}

fn mouse(app: &mut App, button: MouseButton, state: ButtonState) {
    app.world_mut().write_message(MouseButtonInput {
        button,
        state,
        window: Entity::PLACEHOLDER,
    });
    app.update();
}

fn click(app: &mut App, button: MouseButton, at: Vec2) {
    cursor(app, at);
    mouse(app, button, ButtonState::Pressed);
    mouse(app, button, ButtonState::Released);
}

fn key(app: &mut App, key_code: KeyCode, state: ButtonState) {
    app.world_mut().write_message(KeyboardInput {
        key_code,
        logical_key: Key::Unidentified(bevy::input::keyboard::NativeKey::Unidentified),
        state,
        text: None,
        repeat: false,
        window: Entity::PLACEHOLDER,
    });
    app.update();
}

fn tap(app: &mut App, key_code: KeyCode) {
    key(app, key_code, ButtonState::Pressed);
    key(app, key_code, ButtonState::Released);
}

fn selection(app: &App) -> Vec<Entity> {
    app.world().resource::<rts::Selection>().0.clone()
}

#[test]
fn click_select_pick_a_formation_and_send_a_group_with_the_right_button() {
    let mut app = app();
    let (a, members_a) = group(&mut app, Vec2::new(5.0, 5.0), 4);
    let (b, _) = group(&mut app, Vec2::new(5.0, 20.0), 4);
    for _ in 0..3 {
        app.update();
    }
    // A click on one of group A's members selects group A.
    let member = app.world().get::<AgentPlan>(members_a[2]).unwrap().to;
    click(&mut app, MouseButton::Left, member + Vec2::new(0.2, 0.1));
    assert_eq!(selection(&app), vec![a]);
    // V: a wedge, for the selected group only.
    tap(&mut app, KeyCode::KeyV);
    assert_eq!(
        app.world().get::<CrowdGroup>(a).unwrap().formation,
        Some(Formation::template(FormationTemplate::Wedge))
    );
    assert_eq!(
        app.world().get::<CrowdGroup>(b).unwrap().formation,
        Some(Formation::template(FormationTemplate::Line))
    );
    // Right click: group A goes there, group B holds.
    let target = Vec2::new(30.0, 8.0);
    click(&mut app, MouseButton::Right, target);
    assert_eq!(
        *app.world().get::<GroupOrder>(a).unwrap(),
        GroupOrder::MoveTo(target)
    );
    assert_eq!(*app.world().get::<GroupOrder>(b).unwrap(), GroupOrder::Hold);
    for _ in 0..300 {
        app.update();
        if app.world().get::<GroupStatus>(a).unwrap().arrived {
            break;
        }
    }
    let status = app.world().get::<GroupStatus>(a).unwrap();
    assert!(status.arrived && (status.anchor - target).length() < 1.0);
    // A click on empty ground clears the selection.
    click(&mut app, MouseButton::Left, Vec2::new(20.0, 28.0));
    assert!(selection(&app).is_empty());
}

#[test]
fn a_box_drag_selects_every_group_in_it_and_shift_adds_to_the_selection() {
    let mut app = app();
    let (a, _) = group(&mut app, Vec2::new(5.0, 3.0), 3);
    let (b, _) = group(&mut app, Vec2::new(12.0, 3.0), 3);
    let (c, members_c) = group(&mut app, Vec2::new(30.0, 20.0), 3);
    for _ in 0..3 {
        app.update();
    }
    // A box round A and B.
    cursor(&mut app, Vec2::new(2.0, 1.0));
    mouse(&mut app, MouseButton::Left, ButtonState::Pressed);
    cursor(&mut app, Vec2::new(15.0, 10.0));
    mouse(&mut app, MouseButton::Left, ButtonState::Released);
    let mut chosen = selection(&app);
    chosen.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(chosen, expected);
    // Shift and a click on C adds it.
    key(&mut app, KeyCode::ShiftLeft, ButtonState::Pressed);
    let member = app.world().get::<AgentPlan>(members_c[0]).unwrap().to;
    click(&mut app, MouseButton::Left, member);
    key(&mut app, KeyCode::ShiftLeft, ButtonState::Released);
    assert_eq!(selection(&app).len(), 3);
    // ] widens every selected group's map by two cells; F makes them free groups.
    let before = app.world().get::<CrowdGroup>(c).unwrap().settings.map_side;
    tap(&mut app, KeyCode::BracketRight);
    for g in [a, b, c] {
        let group = app.world().get::<CrowdGroup>(g).unwrap();
        assert_eq!(group.settings.map_side, before + 2);
    }
    tap(&mut app, KeyCode::KeyF);
    for g in [a, b, c] {
        assert_eq!(app.world().get::<CrowdGroup>(g).unwrap().formation, None);
    }
}

/// Drags the right button through `points` (press at the first, moves, release at the last).
fn draw(app: &mut App, points: &[Vec2]) {
    cursor(app, points[0]);
    mouse(app, MouseButton::Right, ButtonState::Pressed);
    for p in &points[1..] {
        cursor(app, *p);
        app.update();
    }
    mouse(app, MouseButton::Right, ButtonState::Released);
}

#[test]
fn a_drawn_path_is_followed_a_drawn_shape_becomes_the_formation_and_ctrl_z_takes_them_back() {
    let mut app = app();
    let (a, members) = group(&mut app, Vec2::new(4.0, 4.0), 4);
    for _ in 0..3 {
        app.update();
    }
    let member = app.world().get::<AgentPlan>(members[0]).unwrap().to;
    click(&mut app, MouseButton::Left, member);
    assert_eq!(selection(&app), vec![a]);
    // Right drag along an L: east, then north, in half-metre moves.
    let mut path: Vec<Vec2> = (0..=50)
        .map(|k| Vec2::new(6.0 + 0.5 * k as f32, 6.0))
        .collect();
    path.extend((1..=36).map(|k| Vec2::new(31.0, 6.0 + 0.5 * k as f32)));
    draw(&mut app, &path);
    let GroupOrder::FollowPath { points, .. } = app.world().get::<GroupOrder>(a).unwrap().clone()
    else {
        panic!("a drawn path")
    };
    assert_eq!(points.first(), path.first());
    assert_eq!(points.last(), path.last());
    assert!(points.len() > 40, "{} points", points.len());
    let mut corner = false;
    for _ in 0..600 {
        app.update();
        let status = app.world().get::<GroupStatus>(a).unwrap();
        corner |= status.anchor.distance(Vec2::new(31.0, 6.0)) < 2.5;
        if status.arrived {
            break;
        }
    }
    let status = app.world().get::<GroupStatus>(a).unwrap().clone();
    assert!(status.arrived && corner, "{status:?}");
    assert!(status.anchor.distance(Vec2::new(31.0, 24.0)) < 1.5);
    // Ctrl + right drag: a V drawn left to right becomes the formation.
    key(&mut app, KeyCode::ControlLeft, ButtonState::Pressed);
    let at = status.anchor;
    let v: Vec<Vec2> = (0..=8)
        .map(|k| at + Vec2::new(-4.0 + k as f32, 2.0 - (k as f32 - 4.0).abs() * 0.5))
        .collect();
    draw(&mut app, &v);
    key(&mut app, KeyCode::ControlLeft, ButtonState::Released);
    assert!(matches!(
        app.world().get::<CrowdGroup>(a).unwrap().formation,
        Some(Formation::Points { .. })
    ));
    assert!(matches!(
        app.world().get::<GroupOrder>(a).unwrap(),
        GroupOrder::FollowPath { .. }
    ));
    // Ctrl+Z takes the drawn formation back, then the drawn path.
    key(&mut app, KeyCode::ControlLeft, ButtonState::Pressed);
    tap(&mut app, KeyCode::KeyZ);
    assert_eq!(
        app.world().get::<CrowdGroup>(a).unwrap().formation,
        Some(Formation::template(FormationTemplate::Line))
    );
    tap(&mut app, KeyCode::KeyZ);
    key(&mut app, KeyCode::ControlLeft, ButtonState::Released);
    assert_eq!(*app.world().get::<GroupOrder>(a).unwrap(), GroupOrder::Hold);
}
