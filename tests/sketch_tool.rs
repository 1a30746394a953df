//! The sketch tool (`crowdfield_debug::tool`, used by the `formations` and `sketch` examples),
//! driven headless with mouse and key events: click and box selection, formation keys,
//! right-click orders, cohesion keys, drawn paths and formations, branching paths for subsets,
//! walkers formed into groups and back, brushes, undo.

use std::time::Duration;

use bevy::input::ButtonState;
use bevy::input::InputPlugin;
use bevy::input::keyboard::{Key, KeyboardInput};
use bevy::input::mouse::MouseButtonInput;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_crowdfield::prelude::*;
use crowdfield_debug::tool::{self, SketchTool};

const HZ: f64 = 4.0;

fn app() -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, InputPlugin, CrowdfieldPlugins, SketchTool))
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
    app.world_mut().resource_mut::<tool::ToolCursor>().0 = Some(at);
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
    app.world().resource::<tool::Selection>().0.clone()
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

/// `n` walkers in a column from `at`, 1.2 m apart, with no goals.
fn walkers(app: &mut App, at: Vec2, n: usize) -> Vec<Entity> {
    (0..n)
        .map(|i| {
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_translation((at + Vec2::new(0.0, i as f32 * 1.2)).extend(0.0)),
                ))
                .id()
        })
        .collect()
}

/// A box drag with the left button from `from` to `to`.
fn box_select(app: &mut App, from: Vec2, to: Vec2) {
    cursor(app, from);
    mouse(app, MouseButton::Left, ButtonState::Pressed);
    cursor(app, to);
    mouse(app, MouseButton::Left, ButtonState::Released);
}

/// A straight drag of the right button from `a` to `b` in half-metre moves.
fn draw_line(app: &mut App, a: Vec2, b: Vec2) {
    let n = (a.distance(b) / 0.5).ceil() as usize;
    let points: Vec<Vec2> = (0..=n).map(|k| a.lerp(b, k as f32 / n as f32)).collect();
    draw(app, &points);
}

fn sorted(mut v: Vec<Entity>) -> Vec<Entity> {
    v.sort();
    v
}

fn planned(app: &App, e: Entity) -> Vec2 {
    app.world().get::<AgentPlan>(e).unwrap().to
}

#[test]
fn walkers_follow_a_drawn_path_together_form_a_group_and_undo_dissolves_it() {
    let mut app = app();
    let ws = walkers(&mut app, Vec2::new(4.0, 4.0), 3);
    for _ in 0..3 {
        app.update();
    }
    box_select(&mut app, Vec2::new(2.0, 2.0), Vec2::new(6.0, 8.0));
    assert_eq!(sorted(selection(&app)), sorted(ws.clone()));
    draw_line(&mut app, Vec2::new(5.0, 5.0), Vec2::new(30.0, 5.0));
    let paths: Vec<AgentPath> = ws
        .iter()
        .map(|w| app.world().get::<AgentPath>(*w).unwrap().clone())
        .collect();
    assert!(paths.iter().all(|p| *p == paths[0]));
    assert_eq!(paths[0].points().last(), Some(&Vec2::new(30.0, 5.0)));
    for _ in 0..30 {
        app.update();
    }
    // One route for the three.
    assert_eq!(
        app.world()
            .resource::<PathWorld>()
            .routes()
            .routes()
            .count(),
        1
    );
    let at: Vec<Vec2> = ws.iter().map(|w| planned(&app, *w)).collect();
    assert!(
        at.iter().all(|p| p.x > 6.0 && (p.y - 5.0).abs() < 1.0),
        "{at:?}"
    );
    // N: the three form a group, which becomes the selection; their paths go.
    tap(&mut app, KeyCode::KeyN);
    let group = selection(&app)[0];
    assert!(app.world().get::<CrowdGroup>(group).is_some());
    for w in &ws {
        assert_eq!(app.world().get::<MemberOf>(*w), Some(&MemberOf(group)));
        assert!(app.world().get::<AgentPath>(*w).is_none());
    }
    // A right click sends the new group; it arrives together.
    let target = Vec2::new(20.0, 20.0);
    click(&mut app, MouseButton::Right, target);
    assert_eq!(
        *app.world().get::<GroupOrder>(group).unwrap(),
        GroupOrder::MoveTo(target)
    );
    for _ in 0..400 {
        app.update();
        if app.world().get::<GroupStatus>(group).unwrap().arrived {
            break;
        }
    }
    assert!(app.world().get::<GroupStatus>(group).unwrap().arrived);
    // Ctrl+Z twice: the order, then the group itself (gone, its members walkers again).
    key(&mut app, KeyCode::ControlLeft, ButtonState::Pressed);
    tap(&mut app, KeyCode::KeyZ);
    tap(&mut app, KeyCode::KeyZ);
    key(&mut app, KeyCode::ControlLeft, ButtonState::Released);
    assert!(app.world().get_entity(group).is_err());
    assert!(ws.iter().all(|w| app.world().get::<MemberOf>(*w).is_none()));
    // N then U: grouped and ungrouped; the walkers are the selection and stand.
    box_select(&mut app, Vec2::new(10.0, 10.0), Vec2::new(30.0, 30.0));
    tap(&mut app, KeyCode::KeyN);
    assert!(ws.iter().all(|w| app.world().get::<MemberOf>(*w).is_some()));
    tap(&mut app, KeyCode::KeyU);
    assert_eq!(sorted(selection(&app)), sorted(ws.clone()));
    app.update();
    assert!(ws.iter().all(|w| app.world().get::<MemberOf>(*w).is_none()));
}

/// Digest 004 §12 test 9 through the tool: a trunk drawn for two subsets of walkers, then a
/// branch from it for each subset (Alt: waypoints, Mode A); each subset goes down its own
/// branch, no one overlaps anyone.
#[test]
fn branches_drawn_from_a_path_send_each_subset_down_its_own() {
    let mut app = app();
    let north = walkers(&mut app, Vec2::new(3.0, 14.0), 3);
    let south = walkers(&mut app, Vec2::new(5.0, 14.0), 3);
    for _ in 0..3 {
        app.update();
    }
    // Time stands still while the user draws (the tool works on a paused game too).
    app.world_mut().resource_mut::<Time<Virtual>>().pause();
    key(&mut app, KeyCode::AltLeft, ButtonState::Pressed);
    // Both subsets: the trunk east along y = 15.
    box_select(&mut app, Vec2::new(2.0, 13.0), Vec2::new(6.0, 18.0));
    assert_eq!(selection(&app).len(), 6);
    draw_line(&mut app, Vec2::new(6.0, 15.0), Vec2::new(20.0, 15.0));
    // The north subset (x = 3): a branch from the trunk's end up to the north-east.
    box_select(&mut app, Vec2::new(2.5, 13.0), Vec2::new(3.5, 18.0));
    assert_eq!(sorted(selection(&app)), sorted(north.clone()));
    draw_line(&mut app, Vec2::new(20.2, 15.0), Vec2::new(34.0, 26.0));
    // The south subset (x = 5): a branch from the same fork to the south-east.
    box_select(&mut app, Vec2::new(4.5, 13.0), Vec2::new(5.5, 18.0));
    assert_eq!(sorted(selection(&app)), sorted(south.clone()));
    draw_line(&mut app, Vec2::new(20.2, 15.0), Vec2::new(34.0, 4.0));
    key(&mut app, KeyCode::AltLeft, ButtonState::Released);
    app.world_mut().resource_mut::<Time<Virtual>>().unpause();
    // Each subset's waypoints run along the trunk, then its branch.
    for (subset, end) in [
        (&north, Vec2::new(34.0, 26.0)),
        (&south, Vec2::new(34.0, 4.0)),
    ] {
        for w in subset {
            let AgentPath::Waypoints(points) = app.world().get::<AgentPath>(*w).unwrap() else {
                panic!("waypoints")
            };
            assert_eq!(points.last(), Some(&end));
            assert!(
                points
                    .iter()
                    .any(|p| p.distance(Vec2::new(12.0, 15.0)) < 0.5)
            );
        }
    }
    let all: Vec<Entity> = north.iter().chain(&south).copied().collect();
    let mut closest = f32::INFINITY;
    let mut strays = Vec::new();
    for _ in 0..500 {
        app.update();
        for (i, a) in all.iter().enumerate() {
            let p = planned(&app, *a);
            for b in &all[i + 1..] {
                closest = closest.min(p.distance(planned(&app, *b)));
            }
            // Past the fork, each on its own side.
            if p.x > 23.0 {
                let north_side = p.y > 15.0;
                if north_side != north.contains(a) {
                    strays.push((*a, p));
                }
            }
        }
        if all
            .iter()
            .all(|a| *app.world().get::<AgentState>(*a).unwrap() == AgentState::Arrived)
        {
            break;
        }
    }
    assert!(strays.is_empty(), "{strays:?}");
    // Two agents of radius 0.25: no overlap.
    assert!(closest >= 0.5 - 1e-3, "{closest}");
    for (subset, end) in [
        (&north, Vec2::new(34.0, 26.0)),
        (&south, Vec2::new(34.0, 4.0)),
    ] {
        for w in subset {
            assert_eq!(
                *app.world().get::<AgentState>(*w).unwrap(),
                AgentState::Arrived
            );
            assert!(
                planned(&app, *w).distance(end) < 2.5,
                "{}",
                planned(&app, *w)
            );
        }
    }
}

fn marker_count(app: &App) -> usize {
    app.world()
        .resource::<MarkerWorld>()
        .markers()
        .map_or(0, |m| m.len())
}

#[test]
fn brushes_spray_erase_and_paint_from_the_tool_and_undo_takes_them_back() {
    let mut app = app();
    for _ in 0..2 {
        app.update();
    }
    // Q: spray. A right drag sprays the band along it.
    tap(&mut app, KeyCode::KeyQ);
    draw_line(&mut app, Vec2::new(5.0, 10.0), Vec2::new(15.0, 10.0));
    app.update();
    let sprayed = marker_count(&app);
    // 10 m by 2 m and two half discs at 240 per m².
    assert!((4700..5600).contains(&sprayed), "{sprayed}");
    // = : a larger brush; Q: erase; a click erases a disc of 1.5 m.
    tap(&mut app, KeyCode::Equal);
    assert_eq!(app.world().resource::<tool::ToolBrush>().radius, 1.5);
    tap(&mut app, KeyCode::KeyQ);
    click(&mut app, MouseButton::Right, Vec2::new(10.0, 10.0));
    app.update();
    let set = app.world().resource::<MarkerWorld>().markers().unwrap();
    assert!(set.within(DVec2::new(10.0, 10.0), 1.5).is_empty());
    let erased = sprayed - marker_count(&app);
    assert!(erased > 800, "{erased}");
    // Q twice: forbidden ground, painted along a drag.
    tap(&mut app, KeyCode::KeyQ);
    tap(&mut app, KeyCode::KeyQ);
    draw_line(&mut app, Vec2::new(5.0, 10.0), Vec2::new(7.0, 10.0));
    app.update();
    let set = app.world().resource::<MarkerWorld>().markers().unwrap();
    assert_eq!(
        set.terrain().terrain_at(DVec2::new(6.0, 10.0)),
        Terrain::Forbidden
    );
    assert!(set.within(DVec2::new(6.0, 10.0), 1.4).is_empty());
    // Ctrl+Z twice: the paint and the erase are taken back.
    key(&mut app, KeyCode::ControlLeft, ButtonState::Pressed);
    tap(&mut app, KeyCode::KeyZ);
    tap(&mut app, KeyCode::KeyZ);
    key(&mut app, KeyCode::ControlLeft, ButtonState::Released);
    app.update();
    assert_eq!(marker_count(&app), sprayed);
    // Q: off again; a right drag with nothing selected does nothing.
    tap(&mut app, KeyCode::KeyQ);
    assert_eq!(app.world().resource::<tool::ToolBrush>().kind, None);
    draw_line(&mut app, Vec2::new(5.0, 5.0), Vec2::new(15.0, 5.0));
    app.update();
    assert_eq!(marker_count(&app), sprayed);
}
