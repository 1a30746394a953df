//! The sketch tool: an RTS-style control scheme for crowds and groups that a game can add as
//! it is ([`SketchTool`]) or rebind ([`ToolBindings`]). It implements the interactive side of
//! seed 004 chapter 5 (digest 004 §4: drawn paths, branching paths for subsets, formation
//! strokes, redrawing while units move) and seed 002's spray and erase tool (digest 002 §3 A1),
//! with painted terrain (digest 003 §2.2).
//!
//! With the default bindings:
//!
//! | input | does |
//! |---|---|
//! | left click / left drag | select the unit under the cursor / every unit in the box (Shift adds); a unit is a group (click any member) or a single walker |
//! | right click | send the selection there |
//! | right drag | draw the path the selection follows (its stroke field); started on an earlier path, it branches off it and the selection follows the earlier path to the fork, then the branch |
//! | Alt + right drag | the same through waypoints along the path (Mode A) |
//! | Ctrl + right drag | draw the selected groups' formation (the drag direction forward) |
//! | L C V E O B D, F | a formation template for the selected groups, F a free group |
//! | `[` / `]` | smaller / larger group maps (cohesion) |
//! | N / U | form one group of the selected units / ungroup them into walkers |
//! | Q | brush: off, spray, erase, paint avoided ground, paint forbidden ground; right drag then paints |
//! | `-` / `=` | smaller / larger brush |
//! | Ctrl+Z | take the last change back (orders, paths, formations, groups, brush strokes) |
//!
//! The tool reads the cursor from [`ToolCursor`] (filled from the window: the point of the
//! ground under it, on x–y or x–z, see [`crate::ground`]; headless tests set it) and Bevy's `ButtonInput` resources, and acts only
//! through the plugin's components and messages ([`GroupOrder`], [`CrowdGroup`], [`MemberOf`],
//! [`AgentGoals`], [`AgentPath`], [`MarkerBrush`]), as a game's own tool would.

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::sketch::{Sketch, StrokeId, StrokeKind};

use crate::CrowdDebugSystems;
use crate::ground::{GroundGizmos, GroundRes};

/// The tool's inputs; change them to rebind.
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct ToolBindings {
    /// Selects (click or box).
    pub select: MouseButton,
    /// Orders (click) and draws (drag).
    pub order: MouseButton,
    /// Held: selecting adds to the selection.
    pub add: Vec<KeyCode>,
    /// Held: a drawn stroke is a formation.
    pub formation: Vec<KeyCode>,
    /// Held: a drawn path is followed through waypoints (Mode A).
    pub waypoints: Vec<KeyCode>,
    /// Held with [`ToolBindings::undo`]: take the last change back.
    pub undo_modifier: Vec<KeyCode>,
    /// Takes the last change back (with [`ToolBindings::undo_modifier`]).
    pub undo: KeyCode,
    /// Forms a group of the selected units.
    pub form_group: KeyCode,
    /// Ungroups the selected units.
    pub ungroup: KeyCode,
    /// Cycles the brush: off, spray, erase, avoid, forbid.
    pub brush: KeyCode,
    /// Makes the brush smaller.
    pub brush_smaller: KeyCode,
    /// Makes the brush larger.
    pub brush_larger: KeyCode,
    /// Makes the selected groups' maps smaller.
    pub cohesion_tighter: KeyCode,
    /// Makes the selected groups' maps larger.
    pub cohesion_looser: KeyCode,
    /// A formation template for each key, `None` for a free group.
    pub templates: Vec<(KeyCode, Option<FormationTemplate>)>,
    /// Whether [`ToolCursor`] follows the window's cursor (through the first active 2D
    /// camera); off, the game (or a scripted demo) sets it.
    pub cursor_from_window: bool,
}

impl Default for ToolBindings {
    fn default() -> Self {
        Self {
            select: MouseButton::Left,
            order: MouseButton::Right,
            add: vec![KeyCode::ShiftLeft, KeyCode::ShiftRight],
            formation: vec![KeyCode::ControlLeft, KeyCode::ControlRight],
            waypoints: vec![KeyCode::AltLeft, KeyCode::AltRight],
            undo_modifier: vec![KeyCode::ControlLeft, KeyCode::ControlRight],
            undo: KeyCode::KeyZ,
            form_group: KeyCode::KeyN,
            ungroup: KeyCode::KeyU,
            brush: KeyCode::KeyQ,
            brush_smaller: KeyCode::Minus,
            brush_larger: KeyCode::Equal,
            cohesion_tighter: KeyCode::BracketLeft,
            cohesion_looser: KeyCode::BracketRight,
            templates: vec![
                (KeyCode::KeyL, Some(FormationTemplate::Line)),
                (KeyCode::KeyC, Some(FormationTemplate::Column)),
                (KeyCode::KeyV, Some(FormationTemplate::Wedge)),
                (KeyCode::KeyE, Some(FormationTemplate::Echelon)),
                (KeyCode::KeyO, Some(FormationTemplate::Circle)),
                (KeyCode::KeyB, Some(FormationTemplate::Box)),
                (KeyCode::KeyD, Some(FormationTemplate::Diamond)),
                (KeyCode::KeyF, None),
            ],
            cursor_from_window: true,
        }
    }
}

/// The cursor in world coordinates (its last point over the window; `None` before it first
/// came over it).
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub struct ToolCursor(pub Option<Vec2>);

/// The selected units: group entities and single walkers, in the order selected.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct Selection(pub Vec<Entity>);

/// A selection box being dragged from this world point.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub struct SelectionBox(pub Option<Vec2>);

/// The stroke being drawn with the order button, in world points.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub struct Drawing(pub Option<Vec<Vec2>>);

/// The paths drawn so far, for branching (digest 004 §4.1): a path drawn from an earlier one
/// branches off it.
#[derive(Resource, Debug, Clone, Default)]
pub struct DrawnPaths(pub Sketch);

/// The brush: what the order button paints while it is on, and its radius.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct ToolBrush {
    /// What it paints; `None`: the order button gives orders.
    pub kind: Option<BrushKind>,
    /// Metres.
    pub radius: f64,
}

impl Default for ToolBrush {
    fn default() -> Self {
        Self {
            kind: None,
            radius: 1.0,
        }
    }
}

/// The brushes [`ToolBindings::brush`] cycles through after "off": a spray four times the
/// seed's ground density (agents of the marker back end prefer denser ground), the eraser,
/// ground avoided at intensity 0.6, forbidden ground.
pub const BRUSHES: [BrushKind; 4] = [
    BrushKind::Spray {
        density: 240.0,
        tag: None,
    },
    BrushKind::Erase,
    BrushKind::Paint(Terrain::Avoid { intensity: 0.6 }),
    BrushKind::Paint(Terrain::Forbidden),
];

/// What one change replaced, for undo.
#[derive(Debug, Clone)]
pub enum Change {
    /// Orders, formations or settings given to units, with the path stroke drawn for them.
    Orders {
        /// Each unit as it was.
        before: Vec<UnitBefore>,
        /// The path drawn for the orders.
        stroke: Option<StrokeId>,
    },
    /// Units grouped or ungrouped.
    Membership {
        /// The group made, if any (despawned on undo).
        made: Option<Entity>,
        /// Each agent and the group it was in.
        before: Vec<(Entity, Option<Entity>)>,
    },
    /// A brush stroke.
    Brush,
}

/// A unit as it was before an order.
#[derive(Debug, Clone)]
pub enum UnitBefore {
    /// A group's components.
    Group(Entity, CrowdGroup, GroupOrder),
    /// A walker's goals and path.
    Walker(Entity, AgentGoals, Option<AgentPath>),
}

/// Every change, newest last.
#[derive(Resource, Debug, Clone, Default)]
pub struct History(pub Vec<Change>);

/// Points of a drawn stroke closer than this to the last one are skipped (metres).
const DRAW_STEP: f32 = 0.25;
/// Drags shorter than this (metres) are clicks.
const CLICK: f32 = 0.3;
/// A click picks the agent within this distance of the cursor (metres).
const PICK: f32 = 0.8;

/// The tool's help lines, for an on-screen panel.
pub fn help() -> Vec<String> {
    vec![
        "Left click a unit or drag a box: select (Shift adds). N: form a group, U: ungroup.".into(),
        "Right click: go there. Right drag: draw their path (start on a path to branch off it; Alt: waypoints).".into(),
        "Ctrl + right drag: draw the groups' formation. L C V E O B D: templates, F: free. [ ]: cohesion.".into(),
        "Q: brush (spray, erase, avoid, forbid), right drag paints; - / =: brush size. Ctrl+Z: undo.".into(),
    ]
}

/// The brush's name for a status line.
pub fn brush_label(brush: &ToolBrush) -> String {
    let what = match brush.kind {
        None => return "brush off".into(),
        Some(BrushKind::Spray { density, .. }) => {
            format!("spray {density} markers per square metre")
        }
        Some(BrushKind::Erase) => "erase".into(),
        Some(BrushKind::Paint(Terrain::Avoid { intensity })) => format!("avoid ({intensity})"),
        Some(BrushKind::Paint(Terrain::Forbidden)) => "forbid".into(),
        Some(BrushKind::Paint(Terrain::Walkable)) => "walkable".into(),
    };
    format!("brush: {what}, radius {:.2} m", brush.radius)
}

/// The sketch tool's resources and systems (in `Update`, in [`SketchToolSystems`]; its
/// drawing in [`CrowdDebugSystems::Draw`] when gizmos are there).
#[derive(Debug, Default, Clone, Copy)]
pub struct SketchTool;

/// The tool's systems, in order.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SketchToolSystems;

impl Plugin for SketchTool {
    fn build(&self, app: &mut App) {
        app.init_resource::<ToolBindings>()
            .init_resource::<ToolCursor>()
            .init_resource::<Selection>()
            .init_resource::<SelectionBox>()
            .init_resource::<Drawing>()
            .init_resource::<DrawnPaths>()
            .init_resource::<ToolBrush>()
            .init_resource::<History>()
            .add_systems(
                Update,
                (
                    track_cursor,
                    select,
                    order,
                    change_formation,
                    change_cohesion,
                    change_membership,
                    change_brush,
                    undo,
                    forget_gone,
                    follow_selection,
                )
                    .chain()
                    .in_set(SketchToolSystems),
            );
        if app.is_plugin_added::<bevy::gizmos::GizmoPlugin>() {
            app.add_systems(
                Update,
                draw_tool
                    .after(SketchToolSystems)
                    .in_set(CrowdDebugSystems::Draw),
            );
        }
    }
}

/// Colour of the selection rings and box.
const RING: Color = Color::srgb(1.0, 1.0, 1.0);
/// Colour of a stroke being drawn.
const DRAWN: Color = Color::srgb(1.0, 0.35, 0.95);
/// Colour of the brush.
const BRUSH: Color = Color::srgba(0.55, 0.85, 1.0, 0.8);

/// The box being dragged, the stroke being drawn, the brush under the cursor, and a ring round
/// every selected agent.
fn draw_tool(
    mut gizmos: GroundGizmos,
    cursor: Res<ToolCursor>,
    drag: Res<SelectionBox>,
    drawing: Res<Drawing>,
    brush: Res<ToolBrush>,
    selection: Res<Selection>,
    members: Query<&GroupMembers>,
    agents: Query<(&Transform, &AgentStyle), With<CrowdAgent>>,
) {
    if let (Some(from), Some(at)) = (drag.0, cursor.0) {
        gizmos.rect((from + at) * 0.5, (at - from).abs(), RING);
    }
    if let Some(points) = &drawing.0 {
        gizmos.linestrip(points.iter().copied(), DRAWN);
    }
    if brush.kind.is_some()
        && let Some(at) = cursor.0
    {
        gizmos.circle(at, brush.radius as f32, BRUSH, 32);
    }
    let ground = gizmos.ground();
    let mut ring = |e: Entity| {
        if let Ok((t, style)) = agents.get(e) {
            let at = ground.to_ground(t.translation);
            gizmos.circle(at, style.radius as f32 + 0.2, RING, 32);
        }
    };
    for unit in &selection.0 {
        match members.get(*unit) {
            Ok(m) => m.entities().iter().for_each(|e| ring(*e)),
            Err(_) => ring(*unit),
        }
    }
}

/// The per-agent debug overlays follow the first selected unit (a group's first member).
fn follow_selection(
    selection: Res<Selection>,
    members: Query<&GroupMembers>,
    selected: Option<ResMut<crate::SelectedAgent>>,
) {
    let Some(mut selected) = selected else {
        return;
    };
    if !selection.is_changed() {
        return;
    }
    let first = selection.0.first().map(|u| {
        members
            .get(*u)
            .ok()
            .and_then(|m| m.entities().first().copied())
            .unwrap_or(*u)
    });
    selected.set_if_neq(crate::SelectedAgent(first));
}

fn pressed(keys: &ButtonInput<KeyCode>, any: &[KeyCode]) -> bool {
    keys.any_pressed(any.iter().copied())
}

/// The point of the ground under the cursor ([`Ground::cursor`](crate::ground::Ground::cursor): through the first active 2D
/// camera on x–y, onto the surface on x–z) while it is over a window; left alone
/// otherwise, so a drag that leaves the window keeps its last point. Off when
/// [`ToolBindings::cursor_from_window`] is (tests and scripted demos set the cursor).
fn track_cursor(
    bindings: Res<ToolBindings>,
    windows: Query<&Window>,
    cameras: Query<(&Camera, &GlobalTransform, Has<Camera2d>)>,
    ground: GroundRes,
    mut cursor: ResMut<ToolCursor>,
) {
    if !bindings.cursor_from_window {
        return;
    }
    let at = ground.get().cursor(&windows, &cameras);
    if at.is_some() {
        cursor.set_if_neq(ToolCursor(at));
    }
}

/// The unit an agent belongs to: its group, or itself.
fn unit_of(agent: Entity, member: Option<&MemberOf>) -> Entity {
    member.map_or(agent, |m| m.0)
}

/// Selection: a click picks the unit of the agent under the cursor, a box every unit with an
/// agent inside; without the add keys the selection starts over.
pub fn select(
    bindings: Res<ToolBindings>,
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    cursor: Res<ToolCursor>,
    mut drag: ResMut<SelectionBox>,
    mut selection: ResMut<Selection>,
    agents: Query<(Entity, &AgentPlan, Option<&MemberOf>), With<CrowdAgent>>,
) {
    let Some(at) = cursor.0 else {
        return;
    };
    if buttons.just_pressed(bindings.select) {
        drag.0 = Some(at);
    }
    if !buttons.just_released(bindings.select) {
        return;
    }
    let Some(from) = drag.0.take() else {
        return;
    };
    if !pressed(&keys, &bindings.add) {
        selection.0.clear();
    }
    let mut picked: Vec<Entity> = Vec::new();
    if (at - from).length() < CLICK {
        let nearest = agents
            .iter()
            .map(|(e, plan, member)| ((plan.to - at).length(), unit_of(e, member)))
            .filter(|(d, _)| *d <= PICK)
            .min_by(|a, b| a.0.total_cmp(&b.0));
        picked.extend(nearest.map(|(_, u)| u));
    } else {
        let (lo, hi) = (from.min(at), from.max(at));
        // In the crowd's order of entities, so a selection is the same every run.
        let mut inside: Vec<(Entity, Entity)> = agents
            .iter()
            .filter(|(_, plan, _)| plan.to.cmpge(lo).all() && plan.to.cmple(hi).all())
            .map(|(e, _, member)| (e, unit_of(e, member)))
            .collect();
        inside.sort();
        for (_, unit) in inside {
            if !picked.contains(&unit) {
                picked.push(unit);
            }
        }
    }
    for u in picked {
        if !selection.0.contains(&u) {
            selection.0.push(u);
        }
    }
}

/// A walker's goals, path and plan.
type WalkerItem<'a> = (&'a mut AgentGoals, Option<&'a AgentPath>, &'a AgentPlan);

/// The order button: with the brush on, a stroke is painted ([`MarkerBrush`]); otherwise a
/// click sends the selection to the cursor and a drag draws their path (branching off an
/// earlier path it starts on) or, with the formation keys held, their formation.
#[allow(clippy::too_many_arguments)]
pub fn order(
    bindings: Res<ToolBindings>,
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    cursor: Res<ToolCursor>,
    selection: Res<Selection>,
    brush: Res<ToolBrush>,
    mut drawing: ResMut<Drawing>,
    mut paths: ResMut<DrawnPaths>,
    mut history: ResMut<History>,
    mut brushes: MessageWriter<MarkerBrush>,
    mut commands: Commands,
    mut groups: Query<(&mut CrowdGroup, &mut GroupOrder, Option<&GroupMembers>)>,
    mut walkers: Query<WalkerItem, (With<CrowdAgent>, Without<MemberOf>)>,
    plans: Query<&AgentPlan>,
    styles: Query<&AgentStyle>,
) {
    let Some(at) = cursor.0 else {
        return;
    };
    if buttons.just_pressed(bindings.order) {
        drawing.0 = Some(vec![at]);
    }
    if buttons.pressed(bindings.order)
        && let Some(points) = drawing.0.as_mut()
        && points.last().is_none_or(|p| p.distance(at) >= DRAW_STEP)
    {
        points.push(at);
    }
    if !buttons.just_released(bindings.order) {
        return;
    }
    let Some(mut points) = drawing.0.take() else {
        return;
    };
    if points.last() != Some(&at) {
        points.push(at);
    }
    let length: f32 = points.windows(2).map(|w| w[0].distance(w[1])).sum();
    if let Some(kind) = brush.kind {
        if length < CLICK {
            points.truncate(1);
        }
        brushes.write(MarkerBrush::Stroke {
            brush: Brush {
                kind,
                radius: brush.radius,
            },
            points,
        });
        history.0.push(Change::Brush);
        return;
    }
    if selection.0.is_empty() {
        return;
    }
    let formation = pressed(&keys, &bindings.formation);
    let waypoints = pressed(&keys, &bindings.waypoints);
    // A path: added to the drawn paths (a branch when it starts on an earlier one); the way
    // is the earlier paths up to the fork, then this one.
    let mut stroke_id = None;
    let mut way: Vec<Vec2> = points.clone();
    if length >= CLICK
        && !formation
        && let Ok(stroke) = Stroke::from_positions(points.iter().map(|p| p.as_dvec2()))
        && let Ok(id) = paths.0.add(stroke, StrokeKind::Path)
    {
        stroke_id = Some(id);
        way = paths
            .0
            .path_to(id)
            .positions()
            .iter()
            .map(|p| p.as_vec2())
            .collect();
    }
    let mut before = Vec::new();
    for unit in &selection.0 {
        if let Ok((mut group, mut o, members)) = groups.get_mut(*unit) {
            before.push(UnitBefore::Group(*unit, group.clone(), o.clone()));
            if length < CLICK {
                *o = GroupOrder::MoveTo(at);
            } else if formation {
                let n = members.map_or(0, |m| m.entities().len());
                let radius = members
                    .and_then(|m| m.entities().first())
                    .and_then(|e| styles.get(*e).ok())
                    .map_or(AgentStyle::default().radius, |s| s.radius);
                let stroke = Stroke::from_positions(points.iter().map(|p| p.as_dvec2()))
                    .and_then(|s| s.resampled(0.5));
                if let Ok(f) = stroke
                    .and_then(|s| formation_from_stroke(&s, None, n, radius, Resampling::Stride))
                {
                    group.formation = Some(f);
                }
            } else if waypoints {
                let centre = members
                    .map(|m| centroid(m.entities().iter().filter_map(|e| plans.get(*e).ok())))
                    .unwrap_or(at);
                *o = GroupOrder::Waypoints(from_nearest(&way, centre));
            } else {
                *o = GroupOrder::FollowPath {
                    points: way.clone(),
                    joining: Joining::NearestPoint,
                };
            }
        } else if let Ok((mut goals, path, plan)) = walkers.get_mut(*unit) {
            if formation {
                continue;
            }
            before.push(UnitBefore::Walker(*unit, goals.clone(), path.cloned()));
            if length < CLICK {
                *goals = AgentGoals {
                    targets: vec![GoalTarget::Point(at)],
                    ..goals.clone()
                };
                commands.entity(*unit).remove::<AgentPath>();
            } else if waypoints {
                commands
                    .entity(*unit)
                    .insert(AgentPath::Waypoints(from_nearest(&way, plan.to)));
            } else {
                commands.entity(*unit).insert(AgentPath::Follow {
                    points: way.clone(),
                    joining: Joining::NearestPoint,
                });
            }
        }
    }
    history.0.push(Change::Orders {
        before,
        stroke: stroke_id,
    });
}

fn centroid<'a>(plans: impl Iterator<Item = &'a AgentPlan>) -> Vec2 {
    let (sum, n) = plans.fold((Vec2::ZERO, 0.0), |(s, n), p| (s + p.to, n + 1.0));
    if n > 0.0 { sum / n } else { Vec2::ZERO }
}

/// The part of `way` from its point nearest `p` on (waypoints start there, not back at the
/// way's start).
fn from_nearest(way: &[Vec2], p: Vec2) -> Vec<Vec2> {
    let Ok(stroke) = Stroke::from_positions(way.iter().map(|q| q.as_dvec2())) else {
        return way.to_vec();
    };
    match stroke.nearest(p.as_dvec2()) {
        Some((along, _, _)) => stroke
            .between(along, stroke.length())
            .positions()
            .iter()
            .map(|q| q.as_vec2())
            .collect(),
        None => way.to_vec(),
    }
}

/// Formation keys: the selected groups take the template (or become free groups).
pub fn change_formation(
    bindings: Res<ToolBindings>,
    keys: Res<ButtonInput<KeyCode>>,
    selection: Res<Selection>,
    mut history: ResMut<History>,
    mut groups: Query<(&mut CrowdGroup, &GroupOrder)>,
) {
    for (key, template) in &bindings.templates {
        if !keys.just_pressed(*key) {
            continue;
        }
        let mut before = Vec::new();
        for g in &selection.0 {
            if let Ok((mut group, order)) = groups.get_mut(*g) {
                before.push(UnitBefore::Group(*g, group.clone(), order.clone()));
                group.formation = template.map(Formation::template);
            }
        }
        if !before.is_empty() {
            history.0.push(Change::Orders {
                before,
                stroke: None,
            });
        }
    }
}

/// Cohesion keys: the selected groups' maps two cells smaller or larger.
pub fn change_cohesion(
    bindings: Res<ToolBindings>,
    keys: Res<ButtonInput<KeyCode>>,
    selection: Res<Selection>,
    mut groups: Query<&mut CrowdGroup>,
) {
    let change: i32 = if keys.just_pressed(bindings.cohesion_tighter) {
        -2
    } else if keys.just_pressed(bindings.cohesion_looser) {
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

/// Form-group key: every agent of the selection (walkers and the selected groups' members)
/// joins one new free group, which becomes the selection. Ungroup key: the selected groups'
/// members become walkers, standing where they are.
#[allow(clippy::too_many_arguments)]
pub fn change_membership(
    bindings: Res<ToolBindings>,
    keys: Res<ButtonInput<KeyCode>>,
    mut selection: ResMut<Selection>,
    mut history: ResMut<History>,
    mut commands: Commands,
    groups: Query<&GroupMembers>,
    agents: Query<(Entity, Option<&MemberOf>), With<CrowdAgent>>,
) {
    let forming = keys.just_pressed(bindings.form_group);
    let ungrouping = keys.just_pressed(bindings.ungroup);
    if !(forming || ungrouping) || selection.0.is_empty() {
        return;
    }
    let mut chosen: Vec<(Entity, Option<Entity>)> = Vec::new();
    for unit in &selection.0 {
        if let Ok(members) = groups.get(*unit) {
            chosen.extend(members.entities().iter().map(|e| (*e, Some(*unit))));
        } else if let Ok((e, member)) = agents.get(*unit) {
            chosen.push((e, member.map(|m| m.0)));
        }
    }
    if chosen.is_empty() {
        return;
    }
    if forming {
        let group = commands
            .spawn((
                Name::new("drawn group"),
                CrowdGroup::default(),
                GroupOrder::Hold,
            ))
            .id();
        for (agent, _) in &chosen {
            commands
                .entity(*agent)
                .remove::<AgentPath>()
                .insert(MemberOf(group));
        }
        selection.0 = vec![group];
        history.0.push(Change::Membership {
            made: Some(group),
            before: chosen,
        });
    } else {
        let mut walkers = Vec::new();
        for (agent, was) in &chosen {
            if was.is_some() {
                // A walker now, holding where it stands: no goals.
                commands
                    .entity(*agent)
                    .remove::<MemberOf>()
                    .insert(AgentGoals::default());
                walkers.push(*agent);
            }
        }
        selection.0 = walkers;
        history.0.push(Change::Membership {
            made: None,
            before: chosen,
        });
    }
}

/// Brush keys: cycle the brush, change its radius (0.25 to 8 m).
pub fn change_brush(
    bindings: Res<ToolBindings>,
    keys: Res<ButtonInput<KeyCode>>,
    mut brush: ResMut<ToolBrush>,
) {
    if keys.just_pressed(bindings.brush) {
        let at = brush
            .kind
            .and_then(|k| BRUSHES.iter().position(|b| *b == k));
        brush.kind = match at {
            None => Some(BRUSHES[0]),
            Some(i) if i + 1 < BRUSHES.len() => Some(BRUSHES[i + 1]),
            Some(_) => None,
        };
    }
    if keys.just_pressed(bindings.brush_smaller) {
        brush.radius = (brush.radius / 1.5).max(0.25);
    }
    if keys.just_pressed(bindings.brush_larger) {
        brush.radius = (brush.radius * 1.5).min(8.0);
    }
}

/// Undo: the last change is taken back.
#[allow(clippy::too_many_arguments)]
pub fn undo(
    bindings: Res<ToolBindings>,
    keys: Res<ButtonInput<KeyCode>>,
    mut history: ResMut<History>,
    mut paths: ResMut<DrawnPaths>,
    mut brushes: MessageWriter<MarkerBrush>,
    mut commands: Commands,
    mut groups: Query<(&mut CrowdGroup, &mut GroupOrder)>,
    mut goals: Query<&mut AgentGoals>,
) {
    if !(pressed(&keys, &bindings.undo_modifier) && keys.just_pressed(bindings.undo)) {
        return;
    }
    let Some(last) = history.0.pop() else {
        return;
    };
    match last {
        Change::Orders { before, stroke } => {
            if let Some(id) = stroke {
                let _ = paths.0.remove(id);
            }
            for unit in before {
                match unit {
                    UnitBefore::Group(g, group, order) => {
                        if let Ok((mut now_group, mut now_order)) = groups.get_mut(g) {
                            now_group.set_if_neq(group);
                            now_order.set_if_neq(order);
                        }
                    }
                    UnitBefore::Walker(e, was, path) => {
                        let Ok(mut now) = goals.get_mut(e) else {
                            continue;
                        };
                        match path {
                            Some(path) => {
                                commands.entity(e).insert(path);
                            }
                            None => {
                                commands.entity(e).remove::<AgentPath>();
                                // Its goals again, from where it stands.
                                *now = was;
                            }
                        }
                    }
                }
            }
        }
        Change::Membership { made, before } => {
            for (agent, was) in before {
                let Ok(mut entity) = commands.get_entity(agent) else {
                    continue;
                };
                match was {
                    Some(group) => {
                        entity.insert(MemberOf(group));
                    }
                    None => {
                        entity.remove::<MemberOf>();
                    }
                }
            }
            if let Some(group) = made
                && let Ok(mut entity) = commands.get_entity(group)
            {
                entity.despawn();
            }
        }
        Change::Brush => {
            brushes.write(MarkerBrush::Undo);
        }
    }
}

/// Units that are gone leave the selection.
pub fn forget_gone(
    mut selection: ResMut<Selection>,
    groups: Query<(), With<CrowdGroup>>,
    agents: Query<(), With<CrowdAgent>>,
) {
    if selection
        .0
        .iter()
        .any(|u| !groups.contains(*u) && !agents.contains(*u))
    {
        selection
            .0
            .retain(|u| groups.contains(*u) || agents.contains(*u));
    }
}
