//! The errors of docs/errors.md that no crate's own tests trigger: one test each, named in the
//! inventory. Each asserts the variant and that its message says what went wrong; none panics.
//! (The inventory's check, tests/errors.rs at the repository's root, keeps the page and the
//! tests in step.)

use bevy_crowdfield::field::{
    Bias, Field, FieldError, GridGeometry, MultigridSolver, Shape, SubgoalCache, SubgoalStack,
};
use bevy_crowdfield::groups::{GroupError, GroupSettings, Groups};
use bevy_crowdfield::markers::{
    MarkerCrowd, MarkerError, MarkerSet, MarkerSettings, Order, TerrainMesh,
};
use bevy_crowdfield::sketch::{Routes, Sketch, SketchError, Stroke, StrokeId, WaypointSettings};
use bevy_crowdfield::steer::{AgentId, AgentParams, Crowd, CrowdSettings, SteerError};
use bevy_crowdfield::{Scenario, ScenarioError};
use glam::DVec2;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir()
        .join("crowdfield-error-inventory")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A crowd on 20 × 20 m with two walkers standing (no goals).
fn crowd() -> (Crowd, Vec<AgentId>) {
    let mut crowd = Crowd::new(
        CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::splat(20.0),
            ..CrowdSettings::default()
        },
        Vec::new(),
    )
    .unwrap();
    let ids = [DVec2::new(5.0, 5.0), DVec2::new(8.0, 5.0)]
        .into_iter()
        .map(|position| {
            crowd
                .spawn(AgentParams {
                    position,
                    ..AgentParams::default()
                })
                .unwrap()
        })
        .collect();
    (crowd, ids)
}

#[test]
fn field_fixed_value_out_of_range() {
    let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, 8, 8).unwrap(), 1.0);
    for bad in [1.5, -0.1, f64::NAN] {
        let e = f.set_fixed(3, 3, bad).unwrap_err();
        assert!(matches!(e, FieldError::FixedValueOutOfRange(_)), "{e:?}");
        assert!(e.to_string().contains("outside [0, 1]"), "{e}");
    }
    assert_eq!(f.potential(3, 3), Some(1.0), "nothing changed");
}

#[test]
fn field_geometry_mismatch() {
    // A room behind a passage 50 m long, one cell wide: the harmonic map is flat there (seed
    // 000 §4.2; crates/field/src/flatness.rs), and a walker in it stacks a sub-goal field. Asked again on a map of
    // another grid, the stack refuses rather than read the wrong cells.
    let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, 90, 21).unwrap(), 1.0);
    for x in 20..70 {
        for y in (1..20).filter(|y| *y != 10) {
            f.set_obstacle(x, y).unwrap();
        }
    }
    f.set_goal(4, 10).unwrap();
    MultigridSolver::new()
        .solve(&mut f, &Bias::HARMONIC, 1e-14)
        .unwrap();
    let mut stack = SubgoalStack::new();
    let at = f.geometry().cell_centre(80, 10);
    stack.descent(&f, at).unwrap();
    assert!(!stack.is_empty(), "a sub-goal was stacked");
    let mut other = Field::new(GridGeometry::new(DVec2::ZERO, 0.5, 48, 24).unwrap(), 1.0);
    other.set_goal(40, 12).unwrap();
    let e = stack
        .descent_shared(&other, at, &SubgoalCache::new())
        .unwrap_err();
    assert!(matches!(e, FieldError::GeometryMismatch), "{e:?}");
    assert!(e.to_string().contains("geometries differ"), "{e}");
}

#[test]
fn steer_unsupported_shape() {
    use bevy_rapier2d::prelude::Collider;
    let e = bevy_crowdfield::collider_shapes(
        &Collider::halfspace(bevy::math::Vec2::Y).unwrap(),
        DVec2::ZERO,
        0.0,
        DVec2::ONE,
    )
    .unwrap_err();
    assert!(matches!(e, SteerError::UnsupportedShape(_)), "{e:?}");
    assert!(e.to_string().contains("half-space"), "{e}");
}

#[test]
fn group_not_a_member() {
    let (mut crowd, ids) = crowd();
    let mut groups = Groups::new();
    let g = groups
        .create(&mut crowd, &ids[..1], GroupSettings::default(), None)
        .unwrap();
    let e = groups.remove_member(&mut crowd, g, ids[1]).unwrap_err();
    assert!(matches!(e, GroupError::NotAMember { .. }), "{e:?}");
    assert!(e.to_string().contains("is not a member"), "{e}");
    assert_eq!(groups.group(g).unwrap().member_ids(), ids[..1]);
}

#[test]
fn group_bad_map_side() {
    let (mut crowd, ids) = crowd();
    let mut groups = Groups::new();
    let g = groups
        .create(&mut crowd, &ids, GroupSettings::default(), None)
        .unwrap();
    for side in [0, 1, 100_000] {
        let e = groups.set_map_side(g, side).unwrap_err();
        assert!(matches!(e, GroupError::BadMapSide(_)), "{e:?}");
        assert!(e.to_string().contains("out of range"), "{e}");
    }
}

#[test]
fn group_bad_settings() {
    let (mut crowd, ids) = crowd();
    let mut groups = Groups::new();
    for settings in [
        GroupSettings {
            initial_value: 2.0,
            ..GroupSettings::default()
        },
        GroupSettings {
            heading_inertia: 1.0,
            ..GroupSettings::default()
        },
    ] {
        let e = groups.create(&mut crowd, &ids, settings, None).unwrap_err();
        assert!(matches!(e, GroupError::BadSettings(_)), "{e:?}");
        assert!(e.to_string().starts_with("bad group settings"), "{e}");
    }
    assert_eq!(groups.groups().count(), 0, "no group was made");
}

fn marker_world() -> MarkerSettings {
    MarkerSettings {
        min: DVec2::ZERO,
        max: DVec2::new(20.0, 10.0),
        ..MarkerSettings::default()
    }
}

#[test]
fn markers_field() {
    let bad = Shape::Disc {
        centre: DVec2::new(f64::NAN, 1.0),
        radius: 1.0,
    };
    let e = MarkerSet::new(marker_world(), vec![bad]).unwrap_err();
    assert!(matches!(e, MarkerError::Field(_)), "{e:?}");
    assert!(e.to_string().contains("non-finite"), "{e}");
}

#[test]
fn markers_steer() {
    // The markers crate's own API returns none today; the variant carries the core's errors
    // through `?` for code built on both, as every crate's error does, and reads as the core's.
    let e = MarkerError::from(SteerError::UnknownAgent(AgentId(4)));
    assert!(matches!(e, MarkerError::Steer(SteerError::UnknownAgent(_))));
    assert_eq!(
        e.to_string(),
        SteerError::UnknownAgent(AgentId(4)).to_string()
    );
}

#[test]
fn markers_bad_order() {
    let set = MarkerSet::new(marker_world(), Vec::new()).unwrap();
    let mut crowd = MarkerCrowd::new(Default::default()).unwrap();
    let id = AgentId(0);
    let e = crowd.insert(&set, id, Order::Pursue(id)).unwrap_err();
    assert!(matches!(e, MarkerError::BadOrder(_)), "{e:?}");
    assert!(e.to_string().contains("cannot pursue itself"), "{e}");
    assert!(crowd.state(id).is_none(), "nothing inserted");
}

#[test]
fn markers_bad_mesh() {
    let e = TerrainMesh::new(Vec::new(), Vec::new()).unwrap_err();
    assert!(matches!(e, MarkerError::BadMesh(_)), "{e:?}");
    let flat = vec![glam::DVec3::ZERO, glam::DVec3::X, glam::DVec3::Y];
    let e = TerrainMesh::new(flat, vec![[0, 1, 7]]).unwrap_err();
    assert!(e.to_string().contains("missing vertex"), "{e}");
}

#[test]
fn sketch_steer_and_group() {
    let (mut crowd, ids) = crowd();
    crowd.remove(ids[1]).unwrap();
    let line = Stroke::from_positions([DVec2::new(2.0, 2.0), DVec2::new(15.0, 2.0)]).unwrap();
    let mut routes = Routes::new();
    let e = routes
        .waypoints(&mut crowd, &ids, &line, WaypointSettings::default())
        .unwrap_err();
    assert!(
        matches!(e, SketchError::Steer(SteerError::UnknownAgent(_))),
        "{e:?}"
    );
    let mut groups = Groups::new();
    let e = routes
        .waypoints_with_group(
            &mut crowd,
            &mut groups,
            bevy_crowdfield::groups::GroupId(3),
            &line,
            WaypointSettings::default(),
        )
        .unwrap_err();
    assert!(
        matches!(e, SketchError::Group(GroupError::UnknownGroup(_))),
        "{e:?}"
    );
    assert_eq!(crowd.goal_count(), 0, "no goal was left behind");
}

#[test]
fn sketch_unknown_stroke_and_nothing_to_undo() {
    let mut sketch = Sketch::new();
    let e = sketch.remove(StrokeId(9)).unwrap_err();
    assert!(matches!(e, SketchError::UnknownStroke(_)), "{e:?}");
    let e = sketch.undo().unwrap_err();
    assert!(matches!(e, SketchError::NothingToUndo("undo")), "{e:?}");
    assert_eq!(e.to_string(), "nothing to undo");
    assert!(matches!(
        sketch.redo(),
        Err(SketchError::NothingToUndo("redo"))
    ));
}

#[test]
fn scenario_io_and_format() {
    let dir = scratch("scenario");
    let e = Scenario::from_path(&dir.join("missing.scenario.ron")).unwrap_err();
    assert!(matches!(e, ScenarioError::Io(_)), "{e:?}");
    assert!(e.to_string().contains("could not read"), "{e}");
    let txt = dir.join("scenario.txt");
    std::fs::write(&txt, "(name: \"x\")").unwrap();
    let e = Scenario::from_path(&txt).unwrap_err();
    assert!(matches!(e, ScenarioError::Format(_)), "{e:?}");
    assert!(e.to_string().contains("use .ron or .json"), "{e}");
}

#[test]
fn scenario_path() {
    let text = r#"(
        name: "path",
        bounds: (min: (0.0, 0.0), max: (10.0, 10.0)),
        agents: [(position: (1.0, 1.0), path: Some(Waypoints([])))],
    )"#;
    // Reading a file checks its world: the path with no points is refused there.
    let e = Scenario::from_ron(text).unwrap_err();
    assert!(matches!(e, ScenarioError::Path { index: 0 }), "{e:?}");
}

#[test]
fn marker_and_terrain_files() {
    use bevy_crowdfield::{MarkerFile, MarkerFileError, TerrainFileError, TerrainGround};
    let e = MarkerFile::from_ron("not ( a marker file").unwrap_err();
    assert!(matches!(e, MarkerFileError::Parse(_)), "{e:?}");
    assert!(e.to_string().starts_with("not a marker file"), "{e}");
    let e = TerrainGround::from_ron("[1, 2").unwrap_err();
    assert!(matches!(e, TerrainFileError::Parse(_)), "{e:?}");
    assert!(e.to_string().starts_with("not a terrain file"), "{e}");
    // The loaders read through Bevy's asset reader; what it cannot read comes back as `Io`.
    let io = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "cut short");
    let e = MarkerFileError::from(io());
    assert!(
        e.to_string()
            .contains("cannot read the marker file: cut short")
    );
    let e = TerrainFileError::from(io());
    assert!(
        e.to_string()
            .contains("cannot read the terrain file: cut short")
    );
}

#[test]
fn menge_io_and_in() {
    use bevy_crowdfield::field::Coverage;
    use crowdfield_cli::menge::{MengeError, Source, from_menge, from_menge_files};
    let dir = scratch("menge");
    let e = from_menge_files(&dir.join("missing.xml"), None, 1, Coverage::Centre).unwrap_err();
    assert!(matches!(e, MengeError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("missing.xml"), "{e}");
    let scene = Source {
        name: "scene.xml",
        text: "<Experiment><AgentGroup>",
    };
    let behaviour = Source {
        name: "behavior.xml",
        text: "<BFSM/>",
    };
    let e = from_menge(&scene, &behaviour, 1, Coverage::Centre).unwrap_err();
    assert!(matches!(e, MengeError::In { .. }), "{e:?}");
    assert!(e.to_string().starts_with("scene.xml:"), "{e}");
}

#[test]
fn group_bad_formation() {
    use bevy_crowdfield::groups::Formation;
    let (mut crowd, ids) = crowd();
    let mut groups = Groups::new();
    for formation in [
        Formation::points(vec![DVec2::ZERO, DVec2::new(f64::NAN, 1.0)]),
        Formation::points(vec![DVec2::ZERO, DVec2::ZERO, DVec2::X]),
    ] {
        let e = groups
            .create(&mut crowd, &ids, GroupSettings::default(), Some(formation))
            .unwrap_err();
        assert!(matches!(e, GroupError::BadFormation(_)), "{e:?}");
        assert!(e.to_string().starts_with("bad formation"), "{e}");
    }
    assert_eq!(groups.groups().count(), 0);
}
