//! The markers overlay (key M): the plugin's marker set ([`MarkerWorld`], seed 002's ground;
//! without one, the terrain's typed markers, [`TerrainWorld`], seed 003) as one sprite, every
//! marker a pixel, painted terrain as translucent fills; painted again when the set changes.

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;

use crate::ground::GroundRes;
use crate::overlay::{DebugOverlays, OverlayId, overlay_enabled_or_switched};
use crate::{CrowdDebugSettings, CrowdDebugSystems, paint};

impl OverlayId {
    /// Markers and painted terrain.
    pub const MARKERS: Self = Self("crowdfield.markers");
}

/// Pixels per metre of the markers picture: ten, so markers 13 cm apart (60 per m²) mostly
/// get a pixel each.
const PIXELS_PER_METRE: f64 = 10.0;
/// Neither side of the picture passes this many pixels.
const MAX_SIDE: usize = 4096;

pub(crate) fn build(app: &mut App) {
    app.add_systems(
        Update,
        sync_markers
            .run_if(overlay_enabled_or_switched(OverlayId::MARKERS))
            .in_set(CrowdDebugSystems::Draw),
    );
}

/// The markers sprite and the marker set it shows: which (0 the ground's, 1 the terrain's)
/// and its version.
#[derive(Component)]
struct MarkersSprite {
    version: (u8, u64),
}

fn sync_markers(
    mut commands: Commands,
    overlays: Res<DebugOverlays>,
    settings: Res<CrowdDebugSettings>,
    markers: Option<Res<MarkerWorld>>,
    terrain: Option<Res<TerrainWorld>>,
    surface: GroundRes,
    mut images: ResMut<Assets<Image>>,
    mut sprites: Query<(Entity, &MarkersSprite)>,
) {
    let wanted = overlays.is_enabled(OverlayId::MARKERS);
    let ground = markers
        .as_deref()
        .and_then(|m| Some((m.markers()?, (0, m.version()))));
    let terrain = terrain
        .as_deref()
        .and_then(|t| Some((t.markers()?, (1, t.version()))));
    let shown = ground.or(terrain).filter(|_| wanted);
    let Some((set, version)) = shown else {
        for (entity, _) in &sprites {
            commands.entity(entity).despawn();
        }
        return;
    };
    if let Ok((entity, sprite)) = sprites.single_mut() {
        if sprite.version == version {
            return;
        }
        commands.entity(entity).despawn();
    }
    let picture = paint::markers_picture(set, PIXELS_PER_METRE, MAX_SIDE);
    let (lo, hi) = (set.settings().min, set.settings().max);
    // Above the global map's heat map, below agents.
    let z = settings.heat_map_z + 0.8;
    commands.spawn((
        Name::new("crowdfield debug: markers"),
        MarkersSprite { version },
        Sprite {
            image: images.add(crate::global::map_image(&picture)),
            custom_size: Some((hi - lo).as_vec2()),
            ..default()
        },
        surface.get().picture(lo.as_vec2(), hi.as_vec2(), z, 1.5),
    ));
}
