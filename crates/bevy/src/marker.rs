//! Markers over the walkable ground ([`crowdfield_markers`], seeds 002 and 003), kept by the
//! plugin in [`MarkerWorld`]: generated from the scene when a game inserts [`MarkerGround`]
//! (the world's bounds and the crowd's static obstacles, rapier colliders included), and
//! edited with brushes ([`MarkerBrush`] messages: spray, erase, paint terrain). Behind the
//! `markers` feature (on by default; the sketch planner's brushes need it).
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_crowdfield::prelude::*;
//! use bevy_crowdfield::sketch::{Brush, BrushKind};
//!
//! fn setup(mut commands: Commands) {
//!     // The seed's ground: 60 markers per m².
//!     commands.insert_resource(MarkerGround::default());
//! }
//!
//! fn spray(mut brushes: MessageWriter<MarkerBrush>) {
//!     brushes.write(MarkerBrush::Stroke {
//!         brush: Brush { kind: BrushKind::Spray { density: 120.0, tag: None }, radius: 1.0 },
//!         points: vec![Vec2::new(4.0, 4.0), Vec2::new(12.0, 6.0)],
//!     });
//! }
//! ```
//!
//! ## When things run
//!
//! Every frame (in `Update`), once the crowd is built: the set is built (on the first [`MarkerBrush`] without a
//! [`MarkerGround`], as an empty set); when the crowd's static obstacles or bounds change, or
//! [`MarkerGround`] does, it is rebuilt by replaying its edit log over the new scene (digest
//! 002 test M4: the same edits give the same markers); then the step's brush strokes are
//! applied in the order they were written. Each spray draws from a seed made of the ground's
//! seed and the edit's place in the log, so runs repeat.
//!
//! ## Marker files
//!
//! A set is saved as its edit log ([`MarkerFile`]: the ground's generation, sprays, erases and
//! paints with their seeds) and loaded as an asset (`*.markers.ron`, with Bevy's
//! `AssetPlugin`): insert [`MarkerGroundFile`] with its handle and, once loaded, the set is
//! the file's edits replayed over the scene (the same markers with the same ids, digest 002
//! test M4); a [`MarkerGround`] is not used while a file is. Brush strokes made later join the
//! log as usual; a file that changes on disk (hot reloading) replaces the set again.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_crowdfield::prelude::*;
//!
//! fn setup(mut commands: Commands, server: Res<AssetServer>) {
//!     commands.insert_resource(MarkerGroundFile(server.load("plaza.markers.ron")));
//! }
//! ```
//!
//! ## Bad input
//!
//! A ground the marker set refuses (a density of zero or of millions per m², a world too large
//! for its density) gets a [`MarkersRejected`] message with the typed error and the markers
//! built before stay; a brush stroke it refuses (a radius that is not positive, a stroke with
//! no points or points that are not finite, a spray of millions per m²) gets a
//! [`BrushRejected`] message and changes nothing.

use bevy::prelude::*;

use crowdfield_field::Shape;
use crowdfield_markers::{Generation, MarkerError, MarkerSet, MarkerSettings};

use crate::world::CrowdWorld;

/// The marker ground a game asks for: insert it to have [`MarkerWorld`] scatter markers over
/// the walkable ground; change it to scatter them again (brush edits are kept).
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct MarkerGround {
    /// Dart throwing (the seed's) or a jittered grid.
    pub generation: Generation,
    /// Markers per m² (the seed's 60).
    pub density: f64,
    /// The random streams' seed (the ground's and every spray's).
    pub seed: u64,
}

impl Default for MarkerGround {
    fn default() -> Self {
        Self {
            generation: Generation::default(),
            density: 60.0,
            seed: 0,
        }
    }
}

/// A marker set saved as its edit log (see the module doc): replayed over a scene, it gives
/// the same markers with the same ids as the set it was saved from, over the same scene.
#[derive(Asset, TypePath, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MarkerFile {
    /// The edits, in order.
    pub edits: Vec<crowdfield_markers::Edit>,
}

impl MarkerFile {
    /// The file of `set` (its edit log).
    pub fn of(set: &MarkerSet) -> Self {
        Self {
            edits: set.edits().to_vec(),
        }
    }

    /// The file as RON text.
    pub fn to_ron(&self) -> String {
        ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default())
            .expect("edits always serialize")
    }

    /// A file from RON text; the error says where the text is wrong.
    pub fn from_ron(text: &str) -> Result<Self, MarkerFileError> {
        ron::from_str(text).map_err(|e| MarkerFileError::Parse(e.to_string()))
    }
}

/// Why a marker file did not load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MarkerFileError {
    /// The file could not be read.
    #[error("cannot read the marker file: {0}")]
    Io(#[from] std::io::Error),
    /// The text is not a marker file.
    #[error("not a marker file: {0}")]
    Parse(String),
}

/// Loads `.markers.ron` files as [`MarkerFile`] assets.
#[derive(Debug, Default, TypePath)]
pub struct MarkerFileLoader;

impl bevy::asset::AssetLoader for MarkerFileLoader {
    type Asset = MarkerFile;
    type Settings = ();
    type Error = MarkerFileError;

    async fn load(
        &self,
        reader: &mut dyn bevy::asset::io::Reader,
        _settings: &(),
        _load_context: &mut bevy::asset::LoadContext<'_>,
    ) -> Result<MarkerFile, MarkerFileError> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await?;
        let text = String::from_utf8(bytes)
            .map_err(|e| MarkerFileError::Parse(format!("not UTF-8: {e}")))?;
        MarkerFile::from_ron(&text)
    }

    fn extensions(&self) -> &[&str] {
        &["markers.ron"]
    }
}

/// The marker ground from a file: insert it to have [`MarkerWorld`] replay the file's edits
/// over the scene once it has loaded (see the module doc).
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct MarkerGroundFile(pub Handle<MarkerFile>);

/// An edit of [`MarkerWorld`]'s markers with a brush, applied at the next planner step in
/// the order written.
#[cfg(feature = "sketch")]
#[derive(Message, Debug, Clone, PartialEq)]
pub enum MarkerBrush {
    /// A brush dragged along `points` (world coordinates; one point is a dab): spray, erase or
    /// paint.
    Stroke {
        /// The brush.
        brush: crowdfield_sketch::Brush,
        /// The stroke's points, in order.
        points: Vec<Vec2>,
    },
    /// Takes the last brush stroke back (the set is rebuilt from its log without it).
    Undo,
}

/// A [`MarkerGround`] the marker set refused (a density out of range, a world too large for
/// it); the markers built before, if any, stay.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct MarkersRejected {
    /// Why.
    pub error: MarkerError,
}

/// A [`MarkerBrush`] the marker set refused; nothing changed.
#[cfg(feature = "sketch")]
#[derive(Message, Debug, Clone, PartialEq)]
pub struct BrushRejected {
    /// The edit.
    pub edit: MarkerBrush,
    /// Why.
    pub error: crowdfield_sketch::SketchError,
}

/// The markers of the scene (see the module doc), for overlays, tools and the marker back end.
#[derive(Resource, Default)]
pub struct MarkerWorld {
    set: Option<MarkerSet>,
    /// The scene the set was built over: bounds and static shapes.
    scene: Option<(Vec2, Vec2, Vec<Shape>)>,
    ground: Option<MarkerGround>,
    /// The file last tried, the edits it held, and whether the set was replayed from them
    /// (a refused file leaves the set, and the ground it came from, as they were).
    file: Option<(AssetId<MarkerFile>, Vec<crowdfield_markers::Edit>, bool)>,
    version: u64,
}

impl MarkerWorld {
    /// Whether brush strokes go to a terrain instead of this set: there is a terrain, and no
    /// seed 002 ground, marker file or set.
    pub(crate) fn leaves_brushes_to_terrain(
        &self,
        ground: bool,
        file: bool,
        terrain: bool,
    ) -> bool {
        terrain && !ground && !file && self.set.is_none() && self.file.is_none()
    }

    /// The markers, once built.
    pub fn markers(&self) -> Option<&MarkerSet> {
        self.set.as_ref()
    }

    /// Changes with every edit and rebuild (overlays redraw when it does).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The set over the scene `(min, max, statics)`, replaying `edits`: the index cell is the
    /// seed's 1.2 m, or larger in worlds too large for a million cells.
    fn build(
        scene: &(Vec2, Vec2, Vec<Shape>),
        edits: &[crowdfield_markers::Edit],
    ) -> Result<MarkerSet, MarkerError> {
        let (min, max, statics) = scene;
        let size = *max - *min;
        let cell = 1.2f64.max(f64::from(size.x * size.y).sqrt() / 1000.0);
        MarkerSet::replay(
            MarkerSettings {
                min: min.as_dvec2(),
                max: max.as_dvec2(),
                index_cell: cell,
                ..Default::default()
            },
            statics.clone(),
            edits,
        )
    }
}

/// Markers from the scene and brushes: [`MarkerGround`], [`MarkerWorld`], [`MarkerBrush`],
/// [`MarkersRejected`]. Added by [`CrowdfieldPlugins`](crate::CrowdfieldPlugins) with the
/// `markers` feature.
#[derive(Debug, Default, Clone, Copy)]
pub struct CrowdfieldMarkerPlugin;

impl Plugin for CrowdfieldMarkerPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<MarkerWorld>()
            .init_resource::<crate::marker_agents::MarkerAgents>()
            .init_resource::<crate::marker_agents::MarkerSteeringSettings>()
            .add_message::<MarkersRejected>()
            .add_message::<crate::marker_agents::MarkerOrderRejected>()
            .add_systems(
                FixedUpdate,
                (
                    crate::marker_agents::sync_marker_agents
                        .after(crate::plugin::SceneInputStage::Agents)
                        .in_set(crate::CrowdfieldSystems::SceneInput),
                    crate::marker_agents::drive_marker_agents
                        .after(crate::CrowdfieldSystems::Guidance)
                        .before(crate::CrowdfieldSystems::Sensing),
                )
                    .run_if(crate::plugin::planner_due),
            );
        #[cfg(feature = "sketch")]
        app.add_message::<MarkerBrush>()
            .add_message::<BrushRejected>();
        // Every frame: brush messages last two frames, and a planner step may not come in
        // that time.
        app.add_systems(Update, sync_markers);
        if app.is_plugin_added::<bevy::asset::AssetPlugin>() {
            app.init_asset::<MarkerFile>()
                .init_asset_loader::<MarkerFileLoader>()
                .add_systems(Update, load_marker_files.before(sync_markers));
        }
    }
}

/// Replays a [`MarkerGroundFile`] over the scene once it has loaded, and again when it
/// changes.
fn load_marker_files(
    world: Res<CrowdWorld>,
    file: Option<Res<MarkerGroundFile>>,
    files: Res<Assets<MarkerFile>>,
    mut markers: ResMut<MarkerWorld>,
    mut rejected: MessageWriter<MarkersRejected>,
) {
    let (Some(crowd), Some(file)) = (world.crowd(), file) else {
        return;
    };
    let Some(loaded) = files.get(&file.0) else {
        return;
    };
    let id = file.0.id();
    if markers
        .file
        .as_ref()
        .is_some_and(|(had, edits, _)| *had == id && *edits == loaded.edits)
    {
        return;
    }
    let scene = scene_of(crowd);
    let replayed = match MarkerWorld::build(&scene, &loaded.edits) {
        Ok(set) => {
            markers.set = Some(set);
            markers.scene = Some(scene);
            markers.version += 1;
            true
        }
        Err(error) => {
            rejected.write(MarkersRejected { error });
            // A set replayed from an earlier version of the file stays one.
            markers.file.as_ref().is_some_and(|f| f.2)
        }
    };
    // Tried once per version of the file, replayed or refused.
    markers.file = Some((id, loaded.edits.clone(), replayed));
}

/// The scene a marker set is built over: the crowd's bounds and its static shapes (less the
/// four walls just outside the bounds, which hold no marker anyway).
fn scene_of(crowd: &crowdfield_steer::Crowd) -> (Vec2, Vec2, Vec<Shape>) {
    let settings = crowd.settings();
    let statics = crowd.statics();
    let statics = &statics[..statics.len().saturating_sub(4)];
    (
        settings.min.as_vec2(),
        settings.max.as_vec2(),
        statics.to_vec(),
    )
}

/// Builds, rebuilds and edits the marker set (see the module doc).
#[allow(clippy::too_many_arguments)]
fn sync_markers(
    world: Res<CrowdWorld>,
    ground: Option<Res<MarkerGround>>,
    mut markers: ResMut<MarkerWorld>,
    sprays: Option<ResMut<crate::scenario::PendingSprays>>,
    #[cfg(feature = "sketch")] mut brushes: MessageReader<MarkerBrush>,
    #[cfg(feature = "sketch")] mut brush_rejected: MessageWriter<BrushRejected>,
    mut rejected: MessageWriter<MarkersRejected>,
    terrain: Option<Res<crate::TerrainGround>>,
    file: Option<Res<MarkerGroundFile>>,
) {
    let Some(crowd) = world.crowd() else {
        return;
    };
    // Without a seed 002 ground, brushes paint a terrain where there is one (see
    // `crate::terrain`): no marker set of ours is made for them.
    if markers.leaves_brushes_to_terrain(ground.is_some(), file.is_some(), terrain.is_some()) {
        #[cfg(feature = "sketch")]
        brushes.clear();
        return;
    }
    #[cfg(feature = "sketch")]
    let strokes: Vec<MarkerBrush> = brushes.read().cloned().collect();
    #[cfg(not(feature = "sketch"))]
    let strokes: Vec<()> = Vec::new();
    let markers = &mut *markers;
    // A set from a file has its ground in its edits.
    let from_file = markers.file.as_ref().is_some_and(|f| f.2);
    let ground = if from_file { None } else { ground.map(|g| *g) };
    if markers.set.is_none() && ground.is_none() && strokes.is_empty() {
        return;
    }
    let scene = scene_of(crowd);
    let same_scene = markers.scene.as_ref() == Some(&scene);
    if markers.set.is_none() || !same_scene || (!from_file && !same_ground(markers.ground, ground))
    {
        // Keep the brushes' edits (a file's, all of them); the ground's own generation
        // follows `ground`.
        let mut edits: Vec<crowdfield_markers::Edit> = markers
            .set
            .as_ref()
            .map(|s| s.edits().to_vec())
            .unwrap_or_default()
            .into_iter()
            .filter(|e| from_file || !matches!(e, crowdfield_markers::Edit::Generate { .. }))
            .collect();
        if let Some(g) = ground {
            edits.insert(
                0,
                crowdfield_markers::Edit::Generate {
                    generation: g.generation,
                    density: g.density,
                    seed: g.seed,
                },
            );
        }
        match MarkerWorld::build(&scene, &edits) {
            Ok(set) => {
                markers.set = Some(set);
                markers.scene = Some(scene);
                markers.ground = ground;
                markers.version += 1;
            }
            Err(error) => {
                // Said once per refused ground, not every frame.
                if !same_ground(markers.ground, ground) {
                    rejected.write(MarkersRejected { error });
                }
                markers.ground = ground;
                if markers.set.is_none() {
                    // No set yet: one without the refused ground, so brush strokes still land.
                    match MarkerWorld::build(&scene, &[]) {
                        Ok(set) => {
                            markers.set = Some(set);
                            markers.scene = Some(scene);
                            markers.version += 1;
                        }
                        // The crowd's own bounds and shapes were accepted; this is a bug.
                        Err(e) => {
                            error!("crowdfield: no marker set over the scene: {e}");
                            return;
                        }
                    }
                }
            }
        }
    }
    // A scenario's tagged sprays, once the set is built (they join its edit log).
    if let (Some(mut sprays), Some(set)) = (sprays, markers.set.as_mut()) {
        for spray in sprays.0.drain(..) {
            let seed = spray.tag as u64 ^ set.edits().len() as u64;
            match set.spray_shape(spray.shape, spray.density, seed, Some(spray.tag)) {
                Ok(_) => markers.version += 1,
                Err(error) => {
                    rejected.write(MarkersRejected { error });
                }
            }
        }
    }
    #[cfg(feature = "sketch")]
    {
        let base = ground.map_or(0, |g| g.seed);
        for edit in strokes {
            let set = markers.set.as_mut().expect("built above");
            let result = match &edit {
                MarkerBrush::Stroke { brush, points } => {
                    let seed = mix(base, set.edits().len() as u64);
                    crowdfield_sketch::Stroke::from_positions(points.iter().map(|p| p.as_dvec2()))
                        .and_then(|s| brush.apply(&s, set, seed))
                        .map(|_| ())
                }
                MarkerBrush::Undo => {
                    let mut edits = set.edits().to_vec();
                    match edits
                        .iter()
                        .rposition(|e| !matches!(e, crowdfield_markers::Edit::Generate { .. }))
                    {
                        Some(last) => {
                            edits.remove(last);
                            let scene = markers.scene.as_ref().expect("built with the set");
                            MarkerWorld::build(scene, &edits)
                                .map(|rebuilt| *set = rebuilt)
                                .map_err(crowdfield_sketch::SketchError::from)
                        }
                        None => Err(crowdfield_sketch::SketchError::NothingToUndo("undo")),
                    }
                }
            };
            match result {
                Ok(()) => markers.version += 1,
                Err(error) => {
                    brush_rejected.write(BrushRejected { edit, error });
                }
            }
        }
    }
}

/// Whether two grounds are the same, bit for bit (a NaN density is the same as itself: a
/// refused ground is not tried again every frame).
fn same_ground(a: Option<MarkerGround>, b: Option<MarkerGround>) -> bool {
    let bits = |g: MarkerGround| {
        let generation = match g.generation {
            Generation::JitteredGrid => (0, 0),
            Generation::DartThrowing { min_distance } => (1, min_distance.to_bits()),
            Generation::Mesh => (2, 0),
        };
        (generation, g.density.to_bits(), g.seed)
    };
    a.map(bits) == b.map(bits)
}

/// A seed for the edit at `index` of a log whose ground seed is `seed` (SplitMix64's
/// finaliser).
#[cfg(feature = "sketch")]
fn mix(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
