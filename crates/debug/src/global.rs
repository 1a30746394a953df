//! Global map overlays (seed 000 §3.2: the harmonic map towards one goal): the heat map as a
//! texture, isolines and descent arrows as retained gizmo lines. All three are rebuilt only when
//! the shown map's revision changes, so a steady map costs one comparison per frame.

use bevy::asset::RenderAssetUsages;
use bevy::image::ImageSampler;
use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::steer::GoalId;
use wgpu_types::{Extent3d, TextureDimension, TextureFormat};

use crate::overlay::{DebugOverlays, OverlayId, overlay_enabled_or_switched};
use crate::paint;
use crate::{CrowdDebugSettings, CrowdDebugSystems, SelectedAgent, ShownMap, shown_goal};

/// Colour of isolines.
const ISOLINE: Color = Color::srgba(1.0, 1.0, 1.0, 0.75);
/// Colour of descent arrows.
const ARROW: Color = Color::srgb(0.35, 0.95, 1.0);

pub(crate) fn build(app: &mut App) {
    app.add_systems(
        Update,
        (
            sync_heat_map.run_if(overlay_enabled_or_switched(OverlayId::HEAT_MAP)),
            sync_isolines.run_if(overlay_enabled_or_switched(OverlayId::ISOLINES)),
            sync_arrows.run_if(overlay_enabled_or_switched(OverlayId::DESCENT)),
        )
            .in_set(CrowdDebugSystems::Draw),
    );
}

/// What a cached picture was drawn from: the map's revision and the settings that shape it.
type DrawnFrom = (u64, usize, u32);

#[derive(Component)]
struct HeatMapSprite {
    drawn_from: DrawnFrom,
}

#[derive(Component)]
struct IsolineGizmo {
    drawn_from: DrawnFrom,
}

#[derive(Component)]
struct ArrowGizmo {
    drawn_from: DrawnFrom,
}

/// G steps the shown map: the selection's goal, then goal 0, 1, … and back.
pub(crate) fn next_map(
    keys: Option<Res<ButtonInput<KeyCode>>>,
    mut settings: ResMut<CrowdDebugSettings>,
    world: Res<CrowdWorld>,
) {
    let (Some(keys), Some(key)) = (keys, settings.next_map_key) else {
        return;
    };
    if !keys.just_pressed(key) {
        return;
    }
    let count = world.crowd().map_or(0, crate::goal_count);
    settings.shown_map = match settings.shown_map {
        ShownMap::FollowSelection if count > 0 => ShownMap::Goal(0),
        ShownMap::Goal(i) if i + 1 < count => ShownMap::Goal(i + 1),
        _ => ShownMap::FollowSelection,
    };
}

/// The shown goal and its map's revision.
fn shown(
    world: &CrowdWorld,
    settings: &CrowdDebugSettings,
    selected: SelectedAgent,
) -> Option<(GoalId, u64)> {
    let goal = shown_goal(world, settings, selected)?;
    let revision = world.crowd()?.goal(goal)?.revision();
    Some((goal, revision))
}

/// A heat-map picture as a nearest-sampled sRGB texture.
pub(crate) fn map_image(picture: &paint::HeatMap) -> Image {
    let mut image = Image::new(
        Extent3d {
            width: picture.width as u32,
            height: picture.height as u32,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        picture.rgba.clone(),
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    );
    image.sampler = ImageSampler::nearest();
    image
}

/// Keeps the heat-map sprite in step with the shown map; hides it while the overlay is off.
#[allow(clippy::too_many_arguments)]
fn sync_heat_map(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    mut images: ResMut<Assets<Image>>,
    mut sprites: Query<(
        &mut HeatMapSprite,
        &mut Sprite,
        &mut Transform,
        &mut Visibility,
    )>,
) {
    let target = overlays
        .is_enabled(OverlayId::HEAT_MAP)
        .then(|| shown(&world, &settings, *selected))
        .flatten();
    let Some((goal, revision)) = target else {
        for (_, _, _, mut visibility) in &mut sprites {
            visibility.set_if_neq(Visibility::Hidden);
        }
        return;
    };
    let alpha = (settings.heat_map_alpha.clamp(0.0, 1.0) * 255.0).round() as u8;
    let key = (revision, alpha as usize, goal.0);
    if let Ok((mut cached, mut sprite, mut transform, mut visibility)) = sprites.single_mut() {
        visibility.set_if_neq(Visibility::Inherited);
        transform.translation.z = settings.heat_map_z;
        if cached.drawn_from == key {
            return;
        }
        let Some(map) = world.crowd().and_then(|c| c.goal(goal)).map(|g| g.map()) else {
            return;
        };
        let picture = paint::heat_map(map, alpha);
        let (lo, hi) = map.geometry().world_bounds();
        sprite.image = images.add(map_image(&picture));
        sprite.custom_size = Some((hi - lo).as_vec2());
        transform.translation = ((lo + hi) * 0.5).as_vec2().extend(settings.heat_map_z);
        cached.drawn_from = key;
        return;
    }
    let Some(map) = world.crowd().and_then(|c| c.goal(goal)).map(|g| g.map()) else {
        return;
    };
    let picture = paint::heat_map(map, alpha);
    let (lo, hi) = map.geometry().world_bounds();
    commands.spawn((
        Name::new("crowdfield debug: heat map"),
        HeatMapSprite { drawn_from: key },
        Sprite {
            image: images.add(map_image(&picture)),
            custom_size: Some((hi - lo).as_vec2()),
            ..default()
        },
        Transform::from_translation(((lo + hi) * 0.5).as_vec2().extend(settings.heat_map_z)),
    ));
}

/// Shared shape of the two retained-line overlays: despawned while off, rebuilt on change.
fn sync_lines<C: Component>(
    commands: &mut Commands,
    on: bool,
    key: Option<DrawnFrom>,
    existing: Option<(Entity, DrawnFrom)>,
    gizmo_assets: &mut Assets<GizmoAsset>,
    draw: impl FnOnce(&mut GizmoAsset),
    marker: impl FnOnce(DrawnFrom) -> C,
    name: &'static str,
) {
    match (on, key, existing) {
        (true, Some(key), Some((_, drawn))) if drawn == key => {}
        (true, Some(key), existing) => {
            if let Some((entity, _)) = existing {
                commands.entity(entity).despawn();
            }
            let mut asset = GizmoAsset::new();
            draw(&mut asset);
            commands.spawn((
                Name::new(name),
                marker(key),
                Gizmo {
                    handle: gizmo_assets.add(asset),
                    line_config: GizmoLineConfig {
                        width: 1.5,
                        ..default()
                    },
                    ..default()
                },
            ));
        }
        (_, _, Some((entity, _))) => {
            commands.entity(entity).despawn();
        }
        _ => {}
    }
}

fn sync_isolines(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    mut gizmo_assets: ResMut<Assets<GizmoAsset>>,
    existing: Query<(Entity, &IsolineGizmo)>,
) {
    let on = overlays.is_enabled(OverlayId::ISOLINES);
    let existing = existing.iter().next().map(|(e, c)| (e, c.drawn_from));
    if !on && existing.is_none() {
        return;
    }
    let shown = shown(&world, &settings, *selected);
    let key = shown.map(|(g, r)| (r, settings.isolines, g.0));
    let map = shown.and_then(|(g, _)| world.crowd()?.goal(g).map(|g| g.map()));
    sync_lines(
        &mut commands,
        on,
        key,
        existing,
        &mut gizmo_assets,
        |asset| {
            if let Some(map) = map {
                for [a, b] in paint::isolines(map, settings.isolines) {
                    asset.line_2d(a.as_vec2(), b.as_vec2(), ISOLINE);
                }
            }
        },
        |drawn_from| IsolineGizmo { drawn_from },
        "crowdfield debug: isolines",
    );
}

fn sync_arrows(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    mut gizmo_assets: ResMut<Assets<GizmoAsset>>,
    existing: Query<(Entity, &ArrowGizmo)>,
) {
    let on = overlays.is_enabled(OverlayId::DESCENT);
    let existing = existing.iter().next().map(|(e, c)| (e, c.drawn_from));
    if !on && existing.is_none() {
        return;
    }
    let shown = shown(&world, &settings, *selected);
    let spacing = settings.arrow_spacing.max(1);
    let key = shown.map(|(g, r)| (r, spacing, g.0));
    let map = shown.and_then(|(g, _)| world.crowd()?.goal(g).map(|g| g.map()));
    sync_lines(
        &mut commands,
        on,
        key,
        existing,
        &mut gizmo_assets,
        |asset| {
            if let Some(map) = map {
                let length = (spacing as f64 * map.geometry().cell_size() * 0.8) as f32;
                for arrow in paint::descent_arrows(map, spacing) {
                    let from = arrow.at.as_vec2() - arrow.direction.as_vec2() * length * 0.5;
                    let to = from + arrow.direction.as_vec2() * length;
                    asset
                        .arrow_2d(from, to, ARROW)
                        .with_tip_length(length * 0.35);
                }
            }
        },
        |drawn_from| ArrowGizmo { drawn_from },
        "crowdfield debug: descent arrows",
    );
}
