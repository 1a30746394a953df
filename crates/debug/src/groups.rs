//! Group overlays (seed 004 §5.2–§5.3): each group's map as a heat map, its bands μ, and its
//! slots with a line from every member to its slot, the map's bounds, anchor and heading; and
//! the paths groups were sent along (seed 004 §4): the drawn stroke, its tube, the stroke
//! field's sub-goals and bridges, or the waypoints.
//! The heat map and the bands show the selected agent's group, or every group while there are
//! at most [`SHOWN_GROUPS`] (a game of thousands of groups would otherwise draw them all);
//! slots and bounds are drawn for every group.

use bevy::prelude::*;
use bevy_crowdfield::groups::{Group, GroupId};
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::sketch::{Route, RouteId, Routes};

use crate::ground::{GroundGizmos, GroundRes};
use crate::overlay::{DebugOverlays, OverlayId, overlay_enabled, overlay_enabled_or_switched};
use crate::paint;
use crate::{CrowdDebugSettings, CrowdDebugSystems, SelectedAgent};

/// Groups whose maps and bands are drawn when no selected agent picks one.
pub const SHOWN_GROUPS: usize = 8;

/// Colour of the map's bounds and heading.
const BOUNDS: Color = Color::srgba(1.0, 0.85, 0.2, 0.9);
/// Colour of slots.
const SLOT: Color = Color::srgb(0.3, 1.0, 0.5);
/// Colour of a member's line to its slot.
const TO_SLOT: Color = Color::srgba(0.3, 1.0, 0.5, 0.55);
/// Colour of the band squares (its alpha scaled by μ).
const BAND: Color = Color::srgb(1.0, 0.35, 0.2);
/// Colour of a drawn path.
const PATH: Color = Color::srgb(1.0, 0.35, 0.95);
/// Colour of a path's tube edges, sub-goals, bridges and waypoints.
const TUBE: Color = Color::srgba(1.0, 0.35, 0.95, 0.6);

impl OverlayId {
    /// The group maps as heat maps.
    pub const GROUP_MAP: Self = Self("crowdfield.group_map");
    /// The bands μ of the group maps.
    pub const GROUP_BANDS: Self = Self("crowdfield.group_bands");
    /// Slots, member-to-slot lines, map bounds, anchors and headings.
    pub const GROUP_SLOTS: Self = Self("crowdfield.group_slots");
    /// Paths groups were sent along: strokes, tubes, sub-goals, bridges, waypoints.
    pub const DRAWN_PATHS: Self = Self("crowdfield.drawn_paths");
    /// The stroke fields of those paths as heat maps, one per segment.
    pub const STROKE_FIELDS: Self = Self("crowdfield.stroke_fields");
}

pub(crate) fn build(app: &mut App) {
    app.add_systems(
        Update,
        (
            sync_group_maps.run_if(overlay_enabled_or_switched(OverlayId::GROUP_MAP)),
            draw_bands.run_if(overlay_enabled(OverlayId::GROUP_BANDS)),
            draw_slots.run_if(overlay_enabled(OverlayId::GROUP_SLOTS)),
            draw_paths.run_if(overlay_enabled(OverlayId::DRAWN_PATHS)),
            sync_stroke_fields.run_if(overlay_enabled_or_switched(OverlayId::STROKE_FIELDS)),
        )
            .in_set(CrowdDebugSystems::Draw),
    );
}

/// The groups whose map and bands are shown: the selected agent's, or the first few.
fn shown_groups<'a>(
    groups: &'a GroupWorld,
    world: &CrowdWorld,
    selected: SelectedAgent,
) -> Vec<(GroupId, &'a Group)> {
    let picked = selected
        .0
        .and_then(|e| world.agent_id(e))
        .and_then(|id| groups.groups().group_of(id));
    match picked {
        Some(id) => groups
            .groups()
            .group(id)
            .map(|g| vec![(id, g)])
            .unwrap_or_default(),
        None => groups.groups().groups().take(SHOWN_GROUPS).collect(),
    }
}

/// One group map's heat-map sprite.
#[derive(Component)]
struct GroupMapSprite {
    /// The group it shows.
    group: GroupId,
}

/// Keeps one heat-map sprite per shown group map, repainted every frame the overlay is on (a
/// group map changes every planner step, and has a few hundred cells).
#[allow(clippy::too_many_arguments)]
fn sync_group_maps(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    groups: Res<GroupWorld>,
    ground: GroundRes,
    mut images: ResMut<Assets<Image>>,
    mut sprites: Query<(Entity, &GroupMapSprite, &mut Sprite, &mut Transform)>,
) {
    let ground = ground.get();
    let shown: Vec<(GroupId, &Group)> = if overlays.is_enabled(OverlayId::GROUP_MAP) {
        shown_groups(&groups, &world, *selected)
    } else {
        Vec::new()
    };
    let alpha = (settings.heat_map_alpha.clamp(0.0, 1.0) * 220.0).round() as u8;
    let z = settings.heat_map_z + 1.0;
    let mut kept = Vec::new();
    for (entity, sprite_of, mut sprite, mut transform) in &mut sprites {
        match shown.iter().find(|(id, _)| *id == sprite_of.group) {
            Some((_, group)) => {
                let field = group.map().field();
                let (lo, hi) = field.geometry().world_bounds();
                sprite.image = images.add(crate::global::map_image(&paint::heat_map(field, alpha)));
                sprite.custom_size = Some((hi - lo).as_vec2());
                *transform = ground.picture(lo.as_vec2(), hi.as_vec2(), z, 2.0);
                kept.push(sprite_of.group);
            }
            None => commands.entity(entity).despawn(),
        }
    }
    for (id, group) in shown.into_iter().filter(|(id, _)| !kept.contains(id)) {
        let field = group.map().field();
        let (lo, hi) = field.geometry().world_bounds();
        commands.spawn((
            Name::new("crowdfield debug: group map"),
            GroupMapSprite { group: id },
            Sprite {
                image: images.add(crate::global::map_image(&paint::heat_map(field, alpha))),
                custom_size: Some((hi - lo).as_vec2()),
                ..default()
            },
            ground.picture(lo.as_vec2(), hi.as_vec2(), z, 2.0),
        ));
    }
}

/// Each shown group map's cells in bands B_i as squares, more opaque where μ is higher.
fn draw_bands(
    mut gizmos: GroundGizmos,
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    groups: Res<GroupWorld>,
) {
    for (_, group) in shown_groups(&groups, &world, *selected) {
        let map = group.map();
        let geometry = *map.field().geometry();
        let side = map.side();
        let weights = group.band_weights();
        let size = Vec2::splat(geometry.cell_size() as f32 * 0.8);
        for y in 1..side - 1 {
            for x in 1..side - 1 {
                let mu = weights[y * side + x] as f32;
                if mu <= 0.0
                    || map.field().kind(x, y) != Some(bevy_crowdfield::field::CellKind::Free)
                {
                    continue;
                }
                let centre = geometry.cell_centre(x, y).as_vec2();
                gizmos.rect(centre, size, BAND.with_alpha(0.25 + 0.75 * mu));
            }
        }
    }
}

/// Every group's slots, member-to-slot lines, map bounds, anchor and heading.
fn draw_slots(mut gizmos: GroundGizmos, world: Res<CrowdWorld>, groups: Res<GroupWorld>) {
    let Some(crowd) = world.crowd() else {
        return;
    };
    for (_, group) in groups.groups().groups() {
        let (lo, hi) = group.map().field().geometry().world_bounds();
        let (lo, hi) = (lo.as_vec2(), hi.as_vec2());
        gizmos.rect((lo + hi) * 0.5, hi - lo, BOUNDS);
        let anchor = group.anchor().as_vec2();
        let cell = group.map().cell_size() as f32;
        gizmos.arrow(
            anchor,
            anchor + group.heading().as_vec2() * 4.0 * cell,
            BOUNDS,
        );
        for (agent, slot) in group.member_slots() {
            let Some(slot) = slot.map(|s| s.as_vec2()) else {
                continue;
            };
            gizmos.cross(slot, 0.5 * cell, SLOT);
            if let Some(a) = crowd.agent(agent) {
                gizmos.line(a.position().as_vec2(), slot, TO_SLOT);
            }
        }
    }
}

/// Every route of the groups and of single walkers: the drawn stroke; for a stroke field the chain's centre line, the
/// tube's edges ζ_w to each side, each sub-goal's arrival disc and each bridge's target; for
/// waypoints a cross at each.
fn draw_paths(mut gizmos: GroundGizmos, groups: Res<GroupWorld>, walkers: Option<Res<PathWorld>>) {
    use bevy_crowdfield::sketch::{Leg, RouteKind};
    let walkers = walkers.as_deref().map(|w| w.routes());
    for (_, route) in every_route(groups.routes(), walkers) {
        let stroke: Vec<Vec2> = route
            .stroke()
            .positions()
            .iter()
            .map(|p| p.as_vec2())
            .collect();
        gizmos.linestrip(stroke.iter().copied(), PATH);
        match route.kind() {
            RouteKind::Waypoints(points) => {
                for p in points {
                    gizmos.cross(p.as_vec2(), 0.4, TUBE);
                }
            }
            RouteKind::Field { field, .. } => {
                let half = field.settings().tube_half_width as f32;
                let chain: Vec<Vec2> = field.chain().iter().map(|c| c.centre.as_vec2()).collect();
                for (first, last) in field.pieces() {
                    let piece = &chain[*first..=*last];
                    for side in [-1.0f32, 1.0] {
                        let edge = piece.iter().enumerate().map(|(k, p)| {
                            let a = piece[k.saturating_sub(1)];
                            let b = piece[(k + 1).min(piece.len() - 1)];
                            let normal = (b - a).perp().normalize_or_zero();
                            *p + normal * half * side
                        });
                        gizmos.linestrip(edge, TUBE);
                    }
                }
                for leg in field.legs() {
                    match *leg {
                        Leg::Segment(k) => {
                            let end = field.segments()[k].end.as_vec2();
                            gizmos.circle(end, 0.5 * half, TUBE, 32);
                        }
                        Leg::Bridge(to) => {
                            gizmos.cross(to.as_vec2(), half, TUBE);
                        }
                    }
                }
            }
        }
    }
}

/// The routes of groups (tagged `false`) and of single walkers (tagged `true`).
fn every_route<'a>(
    groups: &'a Routes,
    walkers: Option<&'a Routes>,
) -> impl Iterator<Item = ((bool, RouteId), &'a Route)> {
    let groups = groups.routes().map(|(id, r)| ((false, id), r));
    let walkers = walkers
        .into_iter()
        .flat_map(|w| w.routes().map(|(id, r)| ((true, id), r)));
    groups.chain(walkers)
}

/// One stroke-field segment's heat-map sprite.
#[derive(Component)]
struct StrokeFieldSprite {
    /// The route (tagged as in [`every_route`]) and segment it shows.
    shows: ((bool, RouteId), usize),
}

/// Keeps one heat-map sprite per segment of every route's stroke field (its local field: the
/// tube's stage 1 and the margin's stage 2), painted when the segment first shows; routes and
/// segments that went take their sprites with them.
fn sync_stroke_fields(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    groups: Res<GroupWorld>,
    walkers: Option<Res<PathWorld>>,
    ground: GroundRes,
    mut images: ResMut<Assets<Image>>,
    sprites: Query<(Entity, &StrokeFieldSprite)>,
) {
    let ground = ground.get();
    use bevy_crowdfield::sketch::RouteKind;
    let walkers = walkers.as_deref().map(|w| w.routes());
    let mut wanted = Vec::new();
    if overlays.is_enabled(OverlayId::STROKE_FIELDS) {
        for (id, route) in every_route(groups.routes(), walkers) {
            if let RouteKind::Field { field, .. } = route.kind() {
                for k in 0..field.segments().len() {
                    wanted.push((id, k));
                }
            }
        }
    }
    let mut shown = Vec::new();
    for (entity, sprite) in &sprites {
        if wanted.contains(&sprite.shows) {
            shown.push(sprite.shows);
        } else {
            commands.entity(entity).despawn();
        }
    }
    let alpha = (settings.heat_map_alpha.clamp(0.0, 1.0) * 200.0).round() as u8;
    // Below the group maps, above the global map.
    let z = settings.heat_map_z + 0.5;
    for (id, k) in wanted.into_iter().filter(|w| !shown.contains(w)) {
        let (walker, route) = id;
        let routes = if walker {
            walkers
        } else {
            Some(groups.routes())
        };
        let Some(RouteKind::Field { field, .. }) =
            routes.and_then(|r| r.route(route)).map(|r| r.kind())
        else {
            continue;
        };
        let segment = &field.segments()[k].field;
        let (lo, hi) = segment.geometry().world_bounds();
        commands.spawn((
            Name::new("crowdfield debug: stroke field"),
            StrokeFieldSprite { shows: (id, k) },
            Sprite {
                image: images.add(crate::global::map_image(&paint::heat_map(segment, alpha))),
                custom_size: Some((hi - lo).as_vec2()),
                ..default()
            },
            // Later segments above earlier ones, where they overlap.
            ground.picture(
                lo.as_vec2(),
                hi.as_vec2(),
                z + 0.001 * k as f32,
                1.0 + 0.01 * k as f32,
            ),
        ));
    }
}
