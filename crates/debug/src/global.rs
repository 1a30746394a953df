//! Global map overlays (seed 000 §3.2: the harmonic map towards one goal): the heat map as a
//! texture, isolines and descent arrows as retained gizmo lines. All three are rebuilt only when
//! the shown map's revision changes, so a steady map costs one comparison per frame.

use bevy::asset::RenderAssetUsages;
use bevy::image::ImageSampler;
use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::steer::GoalId;
use wgpu_types::{Extent3d, TextureDimension, TextureFormat};

use crate::ground::{Ground, GroundRes};
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
    ground: GroundRes,
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
        if ground.get().plane() == GroundPlane::XY {
            transform.translation.z = settings.heat_map_z;
        }
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
        *transform = ground
            .get()
            .picture(lo.as_vec2(), hi.as_vec2(), settings.heat_map_z, 0.0);
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
        ground
            .get()
            .picture(lo.as_vec2(), hi.as_vec2(), settings.heat_map_z, 0.0),
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
    placed: Transform,
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
                placed,
            ));
        }
        (_, _, Some((entity, _))) => {
            commands.entity(entity).despawn();
        }
        _ => {}
    }
}

/// Where a map's retained lines lie: as drawn on XY; on XZ flat, just above its heat map.
fn lines_placed(ground: &Ground, map: Option<&bevy_crowdfield::field::Field<f64>>) -> Transform {
    match (ground.plane(), map) {
        (GroundPlane::XZ, Some(map)) => {
            let (lo, hi) = map.geometry().world_bounds();
            let mut placed = ground.picture(lo.as_vec2(), hi.as_vec2(), 0.0, 0.5);
            // The lines are drawn in the crowd's plane: only the lift and the turn apply.
            placed.translation.x = 0.0;
            placed.translation.z = 0.0;
            placed
        }
        _ => Transform::IDENTITY,
    }
}

fn sync_isolines(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    ground: GroundRes,
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
        lines_placed(&ground.get(), map),
    );
}

fn sync_arrows(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    selected: Res<SelectedAgent>,
    world: Res<CrowdWorld>,
    ground: GroundRes,
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
        lines_placed(&ground.get(), map),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::OverlayInfo;

    /// In a 3D game (x–z ground) the heat map lies flat on x–z, centred over its map, above
    /// the highest ground under it; in a 2D game it stays at its depth on x–y.
    #[test]
    fn the_heat_map_lies_on_the_ground_plane() {
        for plane in [GroundPlane::XY, GroundPlane::XZ] {
            let mut app = App::new();
            app.add_plugins((
                MinimalPlugins,
                bevy::asset::AssetPlugin::default(),
                bevy_crowdfield::CrowdfieldPlugin,
            ))
            .init_asset::<Image>()
            .insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(
                std::time::Duration::from_millis(300),
            ))
            .insert_resource(CrowdfieldSettings {
                world_min: Vec2::ZERO,
                world_max: Vec2::new(20.0, 10.0),
                plane,
                ..default()
            })
            .insert_resource(GroundHeight::new(|p: Vec2| 0.2 * p.x))
            .init_resource::<CrowdDebugSettings>()
            .init_resource::<SelectedAgent>()
            .add_systems(Update, sync_heat_map);
            let mut overlays = DebugOverlays::default();
            overlays.register(OverlayInfo::new(OverlayId::HEAT_MAP, "heat map").enabled());
            app.insert_resource(overlays);
            app.world_mut().spawn((
                CrowdAgent,
                Transform::from_translation(plane.to_world(Vec2::new(2.0, 5.0), 0.0)),
                AgentGoals::point(Vec2::new(18.0, 5.0)),
            ));
            for _ in 0..5 {
                app.update();
            }
            let mut sprites = app
                .world_mut()
                .query_filtered::<&Transform, With<HeatMapSprite>>();
            let t = *sprites.single(app.world()).expect("one heat-map sprite");
            match plane {
                GroundPlane::XY => {
                    assert_eq!(t.rotation, Quat::IDENTITY);
                    assert_eq!(t.translation.z, CrowdDebugSettings::default().heat_map_z);
                }
                GroundPlane::XZ => {
                    // Flat: the picture's normal is +y, its +y the world's −z.
                    assert!((t.rotation * Vec3::Z - Vec3::Y).length() < 1e-5);
                    assert!((t.rotation * Vec3::Y - Vec3::NEG_Z).length() < 1e-5);
                    // Over the map (its centre near the world's, z = −y), above the hill's top
                    // (0.2 × the map's east edge, at x ≥ 20).
                    assert!((t.translation.x - 10.0).abs() < 2.0, "{t:?}");
                    assert!((t.translation.z + 5.0).abs() < 2.0, "{t:?}");
                    assert!(t.translation.y > 4.0 && t.translation.y < 5.0, "{t:?}");
                }
            }
        }
    }
}
