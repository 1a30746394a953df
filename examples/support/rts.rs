//! An RTS-style tool for groups: click or drag a box to select groups, keys to pick a
//! formation, right click to send them, right drag to draw the path they follow (seed 004 §4),
//! Ctrl + right drag to draw their formation, Ctrl+Z to take the last order or formation back.
//! Shared by the `formations` example and the headless tests that drive it with mouse and key
//! events (`tests/formations_tool.rs`).
//!
//! It reads the cursor from [`CursorWorld`] (the example fills it from the camera; tests set
//! it) and buttons from Bevy's `ButtonInput` resources, and acts only through components
//! ([`CrowdGroup`], [`GroupOrder`]), as a game's own tool would.

#![allow(dead_code)]

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

/// The cursor in world coordinates, `None` outside the window.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub struct CursorWorld(pub Option<Vec2>);

/// The selected group entities, in the order they were selected.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct Selection(pub Vec<Entity>);

/// A box being dragged from this world point.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub struct Drag(pub Option<Vec2>);

/// The stroke being drawn with the right button, in world points.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct Drawing(pub Option<Vec<Vec2>>);

/// What each order or formation change replaced, newest last (Ctrl+Z takes it back).
#[derive(Resource, Debug, Clone, Default)]
pub struct History(pub Vec<Vec<(Entity, CrowdGroup, GroupOrder)>>);

/// Points of a drawn stroke closer than this to the last one are skipped (metres).
const DRAW_STEP: f32 = 0.25;

/// Drags shorter than this (metres) are clicks.
const CLICK: f32 = 0.3;
/// A click selects the group of the member within this distance of the cursor (metres).
const PICK: f32 = 0.8;

/// The formation keys: a template each, and F for a free group.
pub const FORMATION_KEYS: [(KeyCode, Option<FormationTemplate>); 8] = [
    (KeyCode::KeyL, Some(FormationTemplate::Line)),
    (KeyCode::KeyC, Some(FormationTemplate::Column)),
    (KeyCode::KeyV, Some(FormationTemplate::Wedge)),
    (KeyCode::KeyE, Some(FormationTemplate::Echelon)),
    (KeyCode::KeyO, Some(FormationTemplate::Circle)),
    (KeyCode::KeyB, Some(FormationTemplate::Box)),
    (KeyCode::KeyD, Some(FormationTemplate::Diamond)),
    (KeyCode::KeyF, None),
];

/// The help lines of the tool.
pub fn help() -> Vec<String> {
    vec![
        "Left click a member, or drag a box: select groups (Shift adds).".into(),
        "L line, C column, V wedge, E echelon, O circle, B box, D diamond, F free group.".into(),
        "Right click: send the selected groups there.   [ / ]: smaller / larger group map (cohesion).".into(),
        "Right drag: draw their path.   Ctrl + right drag: draw their formation.   Ctrl+Z: undo.".into(),
    ]
}

/// The tool's resources and systems (in `Update`).
pub struct RtsTool;

impl Plugin for RtsTool {
    fn build(&self, app: &mut App) {
        app.init_resource::<CursorWorld>()
            .init_resource::<Selection>()
            .init_resource::<Drag>()
            .init_resource::<Drawing>()
            .init_resource::<History>()
            .add_systems(
                Update,
                (select, order, change_formation, change_cohesion, undo).chain(),
            );
    }
}

/// Left button: a click picks the group of the member under the cursor, a drag every group with
/// a member in the box; without Shift the selection starts over.
pub fn select(
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    cursor: Res<CursorWorld>,
    mut drag: ResMut<Drag>,
    mut selection: ResMut<Selection>,
    members: Query<(&AgentPlan, &MemberOf)>,
) {
    let Some(at) = cursor.0 else {
        return;
    };
    if buttons.just_pressed(MouseButton::Left) {
        drag.0 = Some(at);
    }
    if !buttons.just_released(MouseButton::Left) {
        return;
    }
    let Some(from) = drag.0.take() else {
        return;
    };
    let adding = keys.pressed(KeyCode::ShiftLeft) || keys.pressed(KeyCode::ShiftRight);
    if !adding {
        selection.0.clear();
    }
    let mut picked: Vec<Entity> = Vec::new();
    if (at - from).length() < CLICK {
        let nearest = members
            .iter()
            .map(|(plan, member)| ((plan.to - at).length(), member.0))
            .filter(|(d, _)| *d <= PICK)
            .min_by(|a, b| a.0.total_cmp(&b.0));
        picked.extend(nearest.map(|(_, g)| g));
    } else {
        let (lo, hi) = (from.min(at), from.max(at));
        for (plan, member) in &members {
            let p = plan.to;
            if p.cmpge(lo).all() && p.cmple(hi).all() && !picked.contains(&member.0) {
                picked.push(member.0);
            }
        }
    }
    for g in picked {
        if !selection.0.contains(&g) {
            selection.0.push(g);
        }
    }
}

/// Right button: a click orders every selected group to the cursor; a drag draws a stroke,
/// the path they follow (`GroupOrder::FollowPath`), or with Ctrl held their formation (the
/// drag direction forward, the seed's stride rule).
#[allow(clippy::too_many_arguments)]
pub fn order(
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    cursor: Res<CursorWorld>,
    selection: Res<Selection>,
    mut drawing: ResMut<Drawing>,
    mut history: ResMut<History>,
    mut groups: Query<(&mut CrowdGroup, &mut GroupOrder, Option<&GroupMembers>)>,
) {
    let Some(at) = cursor.0 else {
        return;
    };
    if buttons.just_pressed(MouseButton::Right) {
        drawing.0 = Some(vec![at]);
    }
    if buttons.pressed(MouseButton::Right)
        && let Some(points) = drawing.0.as_mut()
        && points.last().is_none_or(|p| p.distance(at) >= DRAW_STEP)
    {
        points.push(at);
    }
    if !buttons.just_released(MouseButton::Right) {
        return;
    }
    let Some(mut points) = drawing.0.take() else {
        return;
    };
    if points.last() != Some(&at) {
        points.push(at);
    }
    let length: f32 = points.windows(2).map(|w| w[0].distance(w[1])).sum();
    let formation = keys.pressed(KeyCode::ControlLeft) || keys.pressed(KeyCode::ControlRight);
    let mut replaced = Vec::new();
    for g in &selection.0 {
        let Ok((mut group, mut o, members)) = groups.get_mut(*g) else {
            continue;
        };
        replaced.push((*g, group.clone(), o.clone()));
        if length < CLICK {
            *o = GroupOrder::MoveTo(at);
        } else if formation {
            let n = members.map_or(0, |m| m.entities().len());
            let stroke = Stroke::from_positions(points.iter().map(|p| p.as_dvec2()))
                .and_then(|s| s.resampled(0.5));
            if let Ok(f) =
                stroke.and_then(|s| formation_from_stroke(&s, None, n, 0.25, Resampling::Stride))
            {
                group.formation = Some(f);
            }
        } else {
            *o = GroupOrder::FollowPath {
                points: points.clone(),
                joining: Joining::NearestPoint,
            };
        }
    }
    if !replaced.is_empty() {
        history.0.push(replaced);
    }
}

/// Ctrl+Z: the groups of the last order, drawn path or drawn formation take back what they had.
pub fn undo(
    keys: Res<ButtonInput<KeyCode>>,
    mut history: ResMut<History>,
    mut groups: Query<(&mut CrowdGroup, &mut GroupOrder)>,
) {
    let ctrl = keys.pressed(KeyCode::ControlLeft) || keys.pressed(KeyCode::ControlRight);
    if !(ctrl && keys.just_pressed(KeyCode::KeyZ)) {
        return;
    }
    let Some(last) = history.0.pop() else {
        return;
    };
    for (g, group, order) in last {
        if let Ok((mut now_group, mut now_order)) = groups.get_mut(g) {
            if *now_group != group {
                *now_group = group;
            }
            if *now_order != order {
                *now_order = order;
            }
        }
    }
}

/// Formation keys: the selected groups take the template (or become free groups).
pub fn change_formation(
    keys: Res<ButtonInput<KeyCode>>,
    selection: Res<Selection>,
    mut groups: Query<&mut CrowdGroup>,
) {
    for (key, template) in FORMATION_KEYS {
        if !keys.just_pressed(key) {
            continue;
        }
        for g in &selection.0 {
            if let Ok(mut group) = groups.get_mut(*g) {
                group.formation = template.map(Formation::template);
            }
        }
    }
}

/// `[` and `]`: the selected groups' maps two cells smaller or larger (cohesion).
pub fn change_cohesion(
    keys: Res<ButtonInput<KeyCode>>,
    selection: Res<Selection>,
    mut groups: Query<&mut CrowdGroup>,
) {
    let change: i32 = if keys.just_pressed(KeyCode::BracketLeft) {
        -2
    } else if keys.just_pressed(KeyCode::BracketRight) {
        2
    } else {
        return;
    };
    for g in &selection.0 {
        if let Ok(mut group) = groups.get_mut(*g) {
            let side = (group.settings.map_side as i32 + change).clamp(8, 60) as usize;
            group.settings.map_side = side;
        }
    }
}
