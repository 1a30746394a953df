//! Terrain reasoning in the plugin (seed 003, [`crowdfield_markers::BioCrowd`]; `markers`
//! feature): a ground with heights, painted regions and perhaps a house ([`TerrainGround`],
//! or a `*.terrain.ron` file: [`TerrainGroundFile`]), its typed markers in [`TerrainWorld`],
//! and agents steered by them ([`BioSteering`]): straight for their goals or along A* routes
//! over the terrain graph, animals with an inverted `ft` table, people living a routine in
//! the house.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_crowdfield::prelude::*;
//! use bevy_crowdfield::markers::{Terrain, TerrainRegion, Way};
//!
//! fn setup(mut commands: Commands) {
//!     commands.insert_resource(TerrainGround {
//!         regions: vec![TerrainRegion {
//!             shape: Shape::Disc { centre: DVec2::new(20.0, 10.0), radius: 4.0 },
//!             terrain: Terrain::Forbidden,
//!         }],
//!         ..default()
//!     });
//!     commands.spawn((
//!         CrowdAgent,
//!         AgentGoals::point(Vec2::new(38.0, 10.0)),
//!         BioSteering { way: Way::AStar, ..default() },
//!         Transform::from_xyz(2.0, 10.0, 0.0),
//!     ));
//! }
//! ```
//!
//! ## What the ground does
//!
//! When [`TerrainGround`] is inserted or changed: its forbidden regions become crowd obstacles
//! (unless [`TerrainGround::forbidden_obstacles`] is off: animals living there would stand
//! inside an obstacle), the house's walls too, each an entity with [`CrowdObstacle`] and
//! [`FromTerrain`]; its heights become [`GroundHeight`] (agents stand on the surface in
//! [`GroundPlane::XZ`](crate::GroundPlane::XZ)); and once the crowd holds the new obstacles,
//! [`TerrainWorld`] builds its markers: the seed's area-equalised mesh over the heights, typed by
//! the regions, forbidden ground included (seed 003), none inside other obstacles.
//!
//! ## BVP walkers and groups
//!
//! Agents without [`BioSteering`] walk the crowd's potential fields (seed 000) and groups
//! their group maps (seed 001); the terrain steers them too. Its forbidden regions are
//! obstacles (above). Where it has regions to avoid and [`TerrainGround::guide_goals`] is on,
//! every goal the crowd would solve itself (walkers' targets, groups' destinations) follows
//! the terrain's weighted map instead (`crowdfield_markers::bvp::terrain_map`: ∇·(k∇p) = 0,
//! k = ft³ on avoided ground, on the crowd's global cells with its inflation), handed over
//! through [`Crowd::guide_from_outside`](crowdfield_steer::Crowd::guide_from_outside) before
//! the step's guidance phase; solved again whenever the terrain's markers are rebuilt (the
//! ground, the bounds or the static obstacles changed). A goal on forbidden ground keeps the
//! crowd's map, and goals only BioCrowds walkers head for are left alone (they steer by
//! markers). [`TerrainWorld::guides`] says which goals follow the terrain. Each map is one SOR
//! solve in f64, in the planner step where the goal first appears: on large grounds a
//! noticeable pause (measured in `docs/terrain.md`).
//!
//! ## When things run
//!
//! In each planner step, after agents are registered, BioCrowds agents join, change order or
//! leave the back end; after guidance, the back end steps over every agent (all take markers)
//! and hands its agents their steps (`Steering::External`). Until [`TerrainWorld`] holds
//! markers they stand.
//!
//! ## Brushes
//!
//! With a [`TerrainGround`] and no seed 002 ground ([`MarkerGround`](crate::MarkerGround) or a
//! marker file), the sketch tool's brushes paint the terrain (`sketch` feature): a
//! [`MarkerBrush`](crate::MarkerBrush) paint stroke joins [`TerrainGround::regions`] as its
//! band (a polyline as wide as the brush), so its markers are typed again, painted forbidden
//! ground becomes an obstacle, and A* routes planned after it go round; `Undo` takes the last
//! painted region back. Sprays and erasers have no meaning on a terrain mesh: they get a
//! [`BrushRejected`](crate::BrushRejected) and change nothing.
//!
//! ## Bad input
//!
//! A ground whose markers cannot be made (a density out of range, a house that is not one)
//! gets a [`TerrainRejected`] message and the markers built before stay; an order the back end
//! refuses (an `ft` table outside [0, 1]) or a route it cannot find (a goal on forbidden
//! ground, a routine outside the house) gets a [`BioOrderRejected`] message and the agent
//! stands.

use bevy::prelude::*;

use crowdfield_field::Shape;
use crowdfield_markers::{
    BioCrowd, BioCrowdSettings, BioEvent, BioOrder, BioState, FtTable, Generation, HeightMap,
    House, MarkerError, MarkerSet, MarkerSettings, TerrainRegion, Way,
};
use crowdfield_steer::{AgentId, Steering};

use crate::components::CrowdObstacle;
use crate::settings::{CrowdfieldSettings, GroundHeight};
use crate::world::{CrowdWorld, ObstacleSource};

/// The terrain of the scene (see the module doc). Its regions are painted in order over
/// walkable ground; its house's rooms label the markers.
#[derive(
    Resource, Asset, TypePath, Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize,
)]
#[serde(default)]
pub struct TerrainGround {
    /// The ground's heights (flat without).
    pub heights: Option<HeightMap>,
    /// Painted regions, in order: ground to avoid, forbidden ground.
    pub regions: Vec<TerrainRegion>,
    /// A house for routines: its walls become obstacles (doors left open).
    pub house: Option<House>,
    /// Markers per m² of surface (60).
    pub density: f64,
    /// Whether forbidden regions become crowd obstacles (on): BVP walkers and the collision
    /// guard keep out of them. Off where animals live on forbidden ground (fish in a lake).
    pub forbidden_obstacles: bool,
    /// The house's walls' thickness, metres (0.1).
    pub wall_thickness: f64,
    /// Whether goals the crowd would solve itself (BVP walkers', groups') follow the
    /// terrain's weighted map instead where the ground has regions to avoid (on; see the
    /// module doc's *BVP walkers and groups*).
    pub guide_goals: bool,
}

impl Default for TerrainGround {
    fn default() -> Self {
        Self {
            heights: None,
            regions: Vec::new(),
            house: None,
            density: 60.0,
            forbidden_obstacles: true,
            wall_thickness: 0.1,
            guide_goals: true,
        }
    }
}

impl TerrainGround {
    /// The ground as RON text (a `*.terrain.ron` file).
    pub fn to_ron(&self) -> String {
        ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default())
            .expect("terrains always serialize")
    }

    /// A ground from RON text; the error says where the text is wrong.
    pub fn from_ron(text: &str) -> Result<Self, TerrainFileError> {
        ron::from_str(text).map_err(|e| TerrainFileError::Parse(e.to_string()))
    }

    /// The obstacles the ground adds to the crowd, each with whether it is forbidden ground:
    /// the house's walls, and the forbidden regions where
    /// [`forbidden_obstacles`](Self::forbidden_obstacles).
    pub fn obstacles(&self) -> Vec<(Shape, bool)> {
        let mut out: Vec<(Shape, bool)> = self
            .house
            .as_ref()
            .map_or_else(Vec::new, |h| h.walls(self.wall_thickness))
            .into_iter()
            .map(|s| (s, false))
            .collect();
        if self.forbidden_obstacles {
            out.extend(
                self.regions
                    .iter()
                    .filter(|r| r.terrain == crowdfield_markers::Terrain::Forbidden)
                    .map(|r| (r.shape.clone(), true)),
            );
        }
        out
    }
}

/// Why a terrain file did not load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TerrainFileError {
    /// The file could not be read.
    #[error("cannot read the terrain file: {0}")]
    Io(#[from] std::io::Error),
    /// The text is not a terrain.
    #[error("not a terrain file: {0}")]
    Parse(String),
}

/// Loads `.terrain.ron` files as [`TerrainGround`] assets.
#[derive(Debug, Default, TypePath)]
pub struct TerrainFileLoader;

impl bevy::asset::AssetLoader for TerrainFileLoader {
    type Asset = TerrainGround;
    type Settings = ();
    type Error = TerrainFileError;

    async fn load(
        &self,
        reader: &mut dyn bevy::asset::io::Reader,
        _settings: &(),
        _load_context: &mut bevy::asset::LoadContext<'_>,
    ) -> Result<TerrainGround, TerrainFileError> {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).await?;
        let text = String::from_utf8(bytes)
            .map_err(|e| TerrainFileError::Parse(format!("not UTF-8: {e}")))?;
        TerrainGround::from_ron(&text)
    }

    fn extensions(&self) -> &[&str] {
        &["terrain.ron"]
    }
}

/// The terrain from a file: once loaded (and whenever it changes) it becomes the
/// [`TerrainGround`] resource.
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct TerrainGroundFile(pub Handle<TerrainGround>);

/// Marks the obstacles the terrain added: the house's walls, and forbidden regions
/// (`forbidden`: their ground still holds the terrain's markers).
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct FromTerrain {
    /// Whether it is a forbidden region (else a wall).
    pub forbidden: bool,
}

/// A [`TerrainGround`] whose markers could not be made; the markers built before stay.
#[derive(Message, Debug, Clone, PartialEq)]
pub struct TerrainRejected {
    /// Why.
    pub error: MarkerError,
}

/// An order or route the BioCrowds back end refused: the agent stands until given another
/// (or, for a route, until its goal changes).
#[derive(Message, Debug, Clone, PartialEq)]
pub struct BioOrderRejected {
    /// The agent (`None`: the settings).
    pub entity: Option<Entity>,
    /// Why.
    pub error: MarkerError,
}

/// Puts a crowd agent under the BioCrowds back end (seed 003): its `ft` table, its way
/// (straight, A*, or the house's routine) and its group (members heading for one goal share
/// one A* route).
#[derive(
    Component, Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(default)]
pub struct BioSteering {
    /// Its terrain factors (Eq. 4.3): [`FtTable::inverted`] for fish.
    pub ft: FtTable,
    /// How it finds its way.
    pub way: Way,
    /// Its group.
    pub group: Option<u32>,
}

/// The BioCrowds back end's settings; the step length follows the agents' own `max_step`
/// and the period [`CrowdfieldSettings::planner_hz`].
#[derive(Resource, Debug, Clone, PartialEq, Default)]
pub struct BioSteeringSettings(pub BioCrowdSettings);

/// The terrain's markers (see the module doc).
#[derive(Resource, Default)]
pub struct TerrainWorld {
    set: Option<MarkerSet>,
    /// The ground and scene the set was built for.
    built: Option<(TerrainGround, Vec2, Vec2, Vec<Shape>)>,
    version: u64,
    /// Goals tried for the terrain's map: the set version tried over, and whether the goal
    /// follows it (a goal on forbidden ground has none, and is tried again after a rebuild).
    guided: std::collections::BTreeMap<crowdfield_steer::GoalId, (u64, bool)>,
    /// Goals only BioCrowds walkers head for, left alone until goals or orders change.
    bio_only: std::collections::BTreeSet<crowdfield_steer::GoalId>,
}

impl TerrainWorld {
    /// The markers, once built.
    pub fn markers(&self) -> Option<&MarkerSet> {
        self.set.as_ref()
    }

    /// Changes with every rebuild.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Whether `goal` follows the terrain's weighted map (see the module doc).
    pub fn guides(&self, goal: crowdfield_steer::GoalId) -> bool {
        self.guided.get(&goal).is_some_and(|(_, ok)| *ok)
    }
}

/// The BioCrowds back end and its agents.
#[derive(Resource, Debug)]
pub struct BioAgents {
    crowd: BioCrowd,
    agents: Vec<(Entity, AgentId, BioSteering)>,
    settings: Option<BioCrowdSettings>,
    house: Option<House>,
}

impl Default for BioAgents {
    fn default() -> Self {
        Self {
            crowd: BioCrowd::new(BioCrowdSettings::default()).expect("the default settings"),
            agents: Vec::new(),
            settings: None,
            house: None,
        }
    }
}

impl BioAgents {
    /// The back end (routes, routines) for overlays and tests.
    pub fn crowd(&self) -> &BioCrowd {
        &self.crowd
    }

    /// A BioCrowds agent's state.
    pub fn state(&self, entity: Entity) -> Option<&BioState> {
        let id = self.agents.iter().find(|(e, _, _)| *e == entity)?.1;
        self.crowd.state(id)
    }
}

/// Terrain, its markers and BioCrowds agents (see the module doc). Added by
/// [`CrowdfieldPlugins`](crate::CrowdfieldPlugins) with the `markers` feature.
#[derive(Debug, Default, Clone, Copy)]
pub struct CrowdfieldTerrainPlugin;

impl Plugin for CrowdfieldTerrainPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<TerrainWorld>()
            .init_resource::<BioAgents>()
            .init_resource::<BioSteeringSettings>()
            .add_message::<TerrainRejected>()
            .add_message::<BioOrderRejected>()
            .add_systems(
                Update,
                (spawn_terrain_obstacles, build_terrain_markers).chain(),
            );
        #[cfg(feature = "sketch")]
        app.add_systems(Update, paint_terrain.before(spawn_terrain_obstacles));
        app.add_systems(
            FixedUpdate,
            (
                sync_bio_agents
                    .after(crate::plugin::SceneInputStage::Agents)
                    .in_set(crate::CrowdfieldSystems::SceneInput),
                drive_bio_agents
                    .after(crate::CrowdfieldSystems::Guidance)
                    .before(crate::CrowdfieldSystems::Sensing),
                guide_goals
                    .after(crate::CrowdfieldSystems::SceneInput)
                    .before(crate::CrowdfieldSystems::Guidance),
            )
                .run_if(crate::plugin::planner_due),
        );
        if app.is_plugin_added::<bevy::asset::AssetPlugin>() {
            app.init_asset::<TerrainGround>()
                .init_asset_loader::<TerrainFileLoader>()
                .add_systems(Update, load_terrain_files.before(spawn_terrain_obstacles));
        }
    }
}

/// Copies a loaded [`TerrainGroundFile`] into [`TerrainGround`] (again when it changes).
fn load_terrain_files(
    mut commands: Commands,
    file: Option<Res<TerrainGroundFile>>,
    files: Res<Assets<TerrainGround>>,
    ground: Option<Res<TerrainGround>>,
) {
    let Some(file) = file else {
        return;
    };
    if let Some(loaded) = files.get(&file.0)
        && ground.as_deref() != Some(loaded)
    {
        commands.insert_resource(loaded.clone());
    }
}

/// Brush strokes on the terrain (see the module doc): paint strokes become regions, in the
/// order written; the regions painted so far are kept for `Undo`.
#[cfg(feature = "sketch")]
fn paint_terrain(
    mut brushes: MessageReader<crate::MarkerBrush>,
    ground: Option<ResMut<TerrainGround>>,
    marker_ground: Option<Res<crate::MarkerGround>>,
    marker_file: Option<Res<crate::MarkerGroundFile>>,
    markers: Res<crate::MarkerWorld>,
    mut painted: Local<Vec<TerrainRegion>>,
    mut rejected: MessageWriter<crate::BrushRejected>,
) {
    use crowdfield_sketch::{BrushKind, SketchError, Stroke};
    let strokes: Vec<crate::MarkerBrush> = brushes.read().cloned().collect();
    if strokes.is_empty()
        || !markers.leaves_brushes_to_terrain(
            marker_ground.is_some(),
            marker_file.is_some(),
            ground.is_some(),
        )
    {
        return;
    }
    let Some(mut ground) = ground else {
        return;
    };
    for edit in strokes {
        let region = match &edit {
            crate::MarkerBrush::Undo => {
                if let Some(last) = painted.pop()
                    && let Some(at) = ground.regions.iter().rposition(|r| *r == last)
                {
                    ground.regions.remove(at);
                }
                continue;
            }
            crate::MarkerBrush::Stroke { brush, points } => match brush.kind {
                BrushKind::Paint(terrain) => {
                    Stroke::from_positions(points.iter().map(|p| p.as_dvec2()))
                        .and_then(|stroke| brush.band(&stroke))
                        .map(|shape| TerrainRegion { shape, terrain })
                }
                BrushKind::Spray { .. } | BrushKind::Erase => Err(SketchError::BadSetting(
                    "a terrain takes paint strokes only: its markers come from its mesh",
                )),
            },
        };
        match region {
            Ok(region) => {
                painted.push(region.clone());
                ground.regions.push(region);
            }
            Err(error) => {
                rejected.write(crate::BrushRejected { edit, error });
            }
        }
    }
}

/// Agents whose goals or BioCrowds orders changed.
type OrdersChanged = Or<(Changed<crate::AgentGoals>, Changed<BioSteering>)>;

/// Hands the crowd's own goals the terrain's weighted maps (see the module doc): each goal
/// the crowd solves itself, once the terrain has regions to avoid, and again when the set is
/// rebuilt (the ground, the scene's static obstacles or the bounds changed). A goal whose map
/// cannot be made (it lies on forbidden ground) keeps the crowd's map.
fn guide_goals(
    mut world: ResMut<CrowdWorld>,
    ground: Option<Res<TerrainGround>>,
    mut terrain: ResMut<TerrainWorld>,
    plugin: Res<CrowdfieldSettings>,
    bio: Query<&crate::AgentGoals, With<BioSteering>>,
    others: Query<&crate::AgentGoals, Without<BioSteering>>,
    changed: Query<(), OrdersChanged>,
    mut gone: RemovedComponents<BioSteering>,
) {
    let orders_changed = !changed.is_empty() || gone.read().count() > 0;
    let Some(ground) = ground else {
        return;
    };
    let TerrainWorld {
        set,
        version,
        guided,
        bio_only,
        ..
    } = &mut *terrain;
    if orders_changed {
        bio_only.clear();
    }
    let Some(set) = set.as_ref() else {
        return;
    };
    let avoids = set
        .terrain()
        .regions()
        .iter()
        .any(|r| matches!(r.terrain, crowdfield_markers::Terrain::Avoid { .. }));
    let active = ground.guide_goals && avoids;
    if !active && guided.is_empty() {
        return;
    }
    let Some(crowd) = world.crowd_mut() else {
        return;
    };
    guided.retain(|g, _| crowd.goal(*g).is_some());
    bio_only.retain(|g| crowd.goal(*g).is_some());
    if !active && guided.values().all(|(_, ok)| !ok) {
        return;
    }
    let settings = crowdfield_markers::bvp::TerrainMapSettings {
        cell: crowd.settings().global_cell_size,
        inflation: crowd.settings().global_inflation,
        ..default()
    };
    let mut due: Vec<(crowdfield_steer::GoalId, Shape)> = crowd
        .goal_ids()
        .filter_map(|id| {
            let goal = crowd.goal(id)?;
            let wanted = match guided.get(&id) {
                // Ours (or tried and refused): again over a rebuilt set.
                Some((v, _)) => *v != *version,
                None => {
                    active
                        && !bio_only.contains(&id)
                        && !goal.is_guided_from_outside()
                        && !goal.is_search()
                }
            };
            wanted.then(|| (id, goal.shape().clone()))
        })
        .collect();
    // BioCrowds walkers steer by markers, not maps: goals only they head for are left alone.
    // Sorted out only for goals new to this system, once per change of goals or orders.
    if due.iter().any(|(id, _)| !guided.contains_key(id)) {
        let shapes = |goals: &crate::AgentGoals| {
            goals
                .targets
                .iter()
                .map(|t| t.shape(plugin.point_goal_radius))
                .collect::<Vec<Shape>>()
        };
        let bio_shapes: Vec<Shape> = bio.iter().flat_map(shapes).collect();
        let other_shapes: Vec<Shape> = others.iter().flat_map(shapes).collect();
        due.retain(|(id, shape)| {
            let only_bio = !guided.contains_key(id)
                && bio_shapes.contains(shape)
                && !other_shapes.contains(shape);
            if only_bio {
                bio_only.insert(*id);
            }
            !only_bio
        });
    }
    for (id, shape) in due {
        let was_ours = guided.get(&id).is_some_and(|(_, ok)| *ok);
        let made = crowdfield_markers::bvp::terrain_map(set, &shape, &settings)
            .map_err(|e| e.to_string())
            .and_then(|map| {
                crowd
                    .guide_from_outside(id, crowdfield_steer::Guidance::Map(map))
                    .map_err(|e| e.to_string())
            });
        match made {
            Ok(()) => {
                guided.insert(id, (*version, true));
            }
            Err(e) => {
                // A goal taken over keeps its last map (the crowd no longer solves it).
                guided.insert(id, (*version, was_ours));
                debug!("crowdfield: no terrain map for {id}: {e}");
            }
        }
    }
}

/// A changed ground's obstacles and heights (see the module doc).
fn spawn_terrain_obstacles(
    mut commands: Commands,
    ground: Option<Res<TerrainGround>>,
    old: Query<Entity, With<FromTerrain>>,
    mut heights: ResMut<GroundHeight>,
) {
    let Some(ground) = ground else {
        return;
    };
    if !ground.is_changed() {
        return;
    }
    for e in &old {
        commands.entity(e).despawn();
    }
    for (shape, forbidden) in ground.obstacles() {
        commands.spawn((
            Name::new("terrain obstacle"),
            CrowdObstacle::fixed(shape),
            Transform::IDENTITY,
            FromTerrain { forbidden },
        ));
    }
    if let Some(h) = &ground.heights {
        *heights = GroundHeight::from_height_map(h.clone());
    }
}

/// Builds the terrain's markers over the crowd's scene once it holds the ground's obstacles,
/// again when the ground or the scene changes.
fn build_terrain_markers(
    world: Res<CrowdWorld>,
    ground: Option<Res<TerrainGround>>,
    added: Query<(Entity, &FromTerrain)>,
    mut terrain: ResMut<TerrainWorld>,
    mut rejected: MessageWriter<TerrainRejected>,
) {
    let (Some(crowd), Some(ground)) = (world.crowd(), ground) else {
        return;
    };
    let settings = crowd.settings();
    let (min, max) = (settings.min.as_vec2(), settings.max.as_vec2());
    let statics = crowd.statics();
    let statics = statics[..statics.len().saturating_sub(4)].to_vec();
    // Wait for the crowd to take the ground's obstacles in.
    if added.iter().count() != ground.obstacles().len()
        || !added
            .iter()
            .all(|(e, _)| world.has_obstacle(e, ObstacleSource::Component))
    {
        return;
    }
    if terrain
        .built
        .as_ref()
        .is_some_and(|(g, a, b, s)| g == &*ground && *a == min && *b == max && *s == statics)
    {
        return;
    }
    // Forbidden ground keeps its markers (seed 003): its regions are left out of the set's
    // obstacles and painted instead.
    let forbidden: Vec<Shape> = added
        .iter()
        .filter(|(_, f)| f.forbidden)
        .flat_map(|(e, _)| world.obstacle_shapes(e))
        .collect();
    let obstacles: Vec<Shape> = statics
        .iter()
        .filter(|s| !forbidden.contains(s))
        .cloned()
        .collect();
    let built = build_set(&ground, min, max, obstacles);
    match built {
        Ok(set) => {
            terrain.set = Some(set);
            terrain.version += 1;
        }
        Err(error) => {
            rejected.write(TerrainRejected { error });
        }
    }
    terrain.built = Some((ground.clone(), min, max, statics));
}

fn build_set(
    ground: &TerrainGround,
    min: Vec2,
    max: Vec2,
    obstacles: Vec<Shape>,
) -> Result<MarkerSet, MarkerError> {
    let size = max - min;
    let cell = 1.2f64.max(f64::from(size.x * size.y).sqrt() / 1000.0);
    let mut set = MarkerSet::new(
        MarkerSettings {
            min: min.as_dvec2(),
            max: max.as_dvec2(),
            index_cell: cell,
            forbidden_markers: true,
        },
        obstacles,
    )?;
    set.set_heights(ground.heights.clone())?;
    for r in &ground.regions {
        set.paint(r.shape.clone(), r.terrain)?;
    }
    set.generate(Generation::Mesh, ground.density, 0)?;
    Ok(set)
}

type BioItem<'a> = (Entity, Ref<'a, BioSteering>);

/// BioCrowds agents join, change order or leave the back end; settings changes rebuild it.
#[allow(clippy::too_many_arguments)]
fn sync_bio_agents(
    settings: Res<CrowdfieldSettings>,
    wanted: Res<BioSteeringSettings>,
    ground: Option<Res<TerrainGround>>,
    mut world: ResMut<CrowdWorld>,
    mut agents: ResMut<BioAgents>,
    steered: Query<BioItem>,
    mut rejected: MessageWriter<BioOrderRejected>,
) {
    let agents = &mut *agents;
    let mut fresh = wanted.0;
    fresh.dt = settings.planner_period();
    if agents.settings != Some(fresh) {
        match BioCrowd::new(fresh) {
            Ok(crowd) => {
                agents.crowd = crowd;
                agents.agents.clear();
                agents.house = None;
            }
            Err(error) => {
                rejected.write(BioOrderRejected {
                    entity: None,
                    error,
                });
            }
        }
        agents.settings = Some(fresh);
    }
    let house = ground.as_ref().and_then(|g| g.house.clone());
    if agents.house != house {
        agents.crowd.set_house(house.clone());
        agents.house = house;
    }
    let Some(crowd) = world.crowd_mut() else {
        return;
    };
    // Those gone: unsteered, despawned or out of the crowd.
    let back = &mut agents.crowd;
    crate::marker_agents::keep_steered(
        crowd,
        &mut agents.agents,
        |e| steered.contains(e),
        |id| {
            back.remove(id);
        },
    );
    for (entity, steering) in &steered {
        let Some(id) = world.agent_id(entity) else {
            continue;
        };
        let known = agents.agents.iter().position(|(e, _, _)| *e == entity);
        if let Some(k) = known
            && agents.agents[k].1 == id
            && agents.agents[k].2 == *steering
        {
            continue;
        }
        let order = BioOrder {
            ft: steering.ft,
            way: steering.way,
            group: steering.group,
        };
        if let Err(error) = agents.crowd.insert(id, order) {
            agents.crowd.remove(id);
            rejected.write(BioOrderRejected {
                entity: Some(entity),
                error,
            });
        }
        if let Some(crowd) = world.crowd_mut() {
            let _ = crowd.set_steering(id, Steering::External);
        }
        match known {
            Some(k) => agents.agents[k] = (entity, id, *steering),
            None => agents.agents.push((entity, id, *steering)),
        }
    }
}

/// The back end steps over every agent and hands its agents their steps; refused routes are
/// told.
fn drive_bio_agents(
    terrain: Res<TerrainWorld>,
    mut world: ResMut<CrowdWorld>,
    mut agents: ResMut<BioAgents>,
    mut rejected: MessageWriter<BioOrderRejected>,
) {
    if agents.agents.is_empty() {
        return;
    }
    let Some(set) = terrain.markers() else {
        return;
    };
    let Some(crowd) = world.crowd_mut() else {
        return;
    };
    let agents = &mut *agents;
    if let Err(error) = agents.crowd.drive(crowd, set) {
        rejected.write(BioOrderRejected {
            entity: None,
            error,
        });
    }
    for event in agents.crowd.take_events() {
        if let BioEvent::RouteRefused { agent, error } = event {
            let entity = agents
                .agents
                .iter()
                .find(|(_, id, _)| *id == agent)
                .map(|(e, _, _)| *e);
            rejected.write(BioOrderRejected { entity, error });
        }
    }
}
