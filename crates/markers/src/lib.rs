//! # crowdfield_markers
//!
//! Walkable space as markers (seed 002, space colonisation; seed 003, BioCrowds with typed
//! markers): points scattered over the ground that agents of the marker back end compete for.
//! The specification is digest 002 §0, A1 and §4 (marker sets, spray and erase) and digest 003
//! §2.2 (painted terrain); docs/references.md says what those labels cover. Plain Rust over the field and steering cores; no
//! Bevy.
//!
//! This crate holds the marker sets and painted terrain, the tree paths of seed 002 (space
//! colonisation) and the marker back end's step ([`MarkerCrowd`]: goal-based walking, pursue,
//! surround, escape, formation, alignment, d_enf, the crowd mode's marker reservation), which
//! steers agents of a `crowdfield_steer::Crowd` through its external steering. The sketch
//! planner's brushes (`crowdfield_sketch::brush`) edit the markers. The method, the choices
//! where the seed is silent and the measured tests are in `docs/markers.md`.
//!
//! It also holds seed 003's terrain reasoning (docs/terrain.md): typed markers from an area-equalised terrain mesh ([`mesh`]),
//! BioCrowds motion (Eqs. 4.1–4.4, [`biocrowds`]) and its back end ([`BioCrowd`]: straight,
//! A* routes over the terrain graph, the indoor routine of a [`House`]), and painted terrain
//! for the BVP back end ([`bvp`]); `docs/terrain.md` has the choices and the measured tests.
//!
//! ```
//! use crowdfield_field::Shape;
//! use crowdfield_markers::{Generation, MarkerSet, MarkerSettings, Terrain};
//! use glam::DVec2;
//!
//! let settings = MarkerSettings { min: DVec2::ZERO, max: DVec2::new(20.0, 10.0), ..Default::default() };
//! let pillar = Shape::Disc { centre: DVec2::new(10.0, 5.0), radius: 1.5 };
//! let mut markers = MarkerSet::new(settings, vec![pillar])?;
//! markers.generate(Generation::JitteredGrid, 60.0, 7)?;
//! // About 60 markers per m² of the 200 m² less the pillar.
//! assert!((11_000..12_000).contains(&markers.len()));
//! // A lawn to keep off, then a sprayed patch and an erased one.
//! markers.paint(Shape::Aabb { min: DVec2::new(0.0, 0.0), max: DVec2::new(4.0, 4.0) },
//!     Terrain::Avoid { intensity: 0.7 })?;
//! markers.spray(DVec2::new(15.0, 5.0), 1.0, 120.0, 1, None)?;
//! markers.erase(DVec2::new(5.0, 8.0), 1.0)?;
//! assert!(markers.within(DVec2::new(5.0, 8.0), 1.0).is_empty());
//! // Rebuilt from its log, the set is the same.
//! let again = MarkerSet::replay(settings, markers.obstacles().to_vec(), markers.edits())?;
//! assert!(again.markers().eq(markers.markers()));
//! # Ok::<(), crowdfield_markers::MarkerError>(())
//! ```
//!
//! ## Modules
//!
//! - [`markers`]: marker sets, their generation, index, spray, erase and edit log.
//! - [`tree`]: tree paths: growth (digest 002 Eqs. 1–7), key positions, branch death.
//! - [`crowd`]: the marker back end's step over every agent.
//! - [`personal`]: personal space (markers split among agents), the seed's weighting f and
//!   marker directions, d_enf.
//! - [`terrain`]: painted terrain regions.
//! - [`graph`]: heights and the terrain graph A* routes over (digest 003 §2.10).
//! - [`mesh`]: markers from an area-equalised terrain mesh (digest 003 §2.3).
//! - [`house`]: indoor scenes: rooms, doors, the rooms-and-doors graph, the action table.
//! - [`bio_crowd`]: the BioCrowds back end: direct, A* routed and indoor-routine agents.
//! - [`bvp`]: painted terrain for the BVP back end: forbidden ground as obstacles, ground to
//!   avoid as lower conductivity in a weighted harmonic map.
//! - [`biocrowds`]: BioCrowds motion over typed markers (digest 003 Eqs. 4.2–4.4).

pub mod bio_crowd;
pub mod biocrowds;
pub mod bvp;
pub mod crowd;
pub mod error;
pub mod graph;
pub mod house;
pub mod markers;
pub mod mesh;
pub mod personal;
pub mod terrain;
pub mod tree;

pub use bio_crowd::{BioCrowd, BioCrowdSettings, BioEvent, BioOrder, BioState, RoutinePhase, Way};
pub use biocrowds::{BioAgent, BioSettings, FtTable, bio_step};
pub use bvp::{TerrainMapSettings, forbidden_shapes, terrain_map};
pub use crowd::{
    Enforcement, MarkerCrowd, MarkerCrowdSettings, MarkerEvent, MarkerState, Mask, Mode, Order,
    PersonalSpace, Phase, Sensed, SurroundRule,
};
pub use error::MarkerError;
pub use graph::{Connectivity, GraphNode, GraphSettings, HeightMap, TerrainGraph};
pub use house::{Action, Door, House, Room, RoomKind};
pub use markers::{
    Edit, Generation, MAX_DENSITY, MAX_MARKERS, Marker, MarkerId, MarkerSet, MarkerSettings,
};
pub use mesh::{EQUALISE_RATIO, TerrainMesh};
pub use terrain::{Terrain, TerrainMap, TerrainRegion};
pub use tree::{Aim, NodeId, NodeKind, PathNode, Sector, TreePath, TreeSettings};
