//! Marker sets: generation at a density, spray, erase, painted terrain, the edit log's replay
//! (digest 002 test M4) and bad input.

use crowdfield_field::Shape;
use crowdfield_markers::{
    Edit, Generation, MarkerError, MarkerId, MarkerSet, MarkerSettings, Terrain,
};
use glam::DVec2;
use proptest::prelude::*;

fn world() -> MarkerSettings {
    MarkerSettings {
        min: DVec2::ZERO,
        max: DVec2::new(30.0, 20.0),
        ..Default::default()
    }
}

fn pillar() -> Shape {
    Shape::Disc {
        centre: DVec2::new(15.0, 10.0),
        radius: 3.0,
    }
}

/// The walkable area of `world()` round `pillar()`.
fn walkable_area() -> f64 {
    600.0 - std::f64::consts::PI * 9.0
}

#[test]
fn both_generations_give_the_density_over_walkable_ground_only() {
    for generation in [Generation::JitteredGrid, Generation::default()] {
        let mut set = MarkerSet::new(world(), vec![pillar()]).unwrap();
        let added = set.generate(generation, 60.0, 3).unwrap();
        assert_eq!(added, set.len());
        let expected = 60.0 * walkable_area();
        let ratio = set.len() as f64 / expected;
        assert!((0.97..1.03).contains(&ratio), "{generation:?}: {ratio:.3}");
        for (_, m) in set.markers() {
            assert!(m.position.distance(DVec2::new(15.0, 10.0)) > 3.0);
            assert!(m.position.cmpge(DVec2::ZERO).all() && m.position.cmple(world().max).all());
            assert_eq!(m.terrain, Terrain::Walkable);
        }
    }
}

#[test]
fn thrown_darts_keep_their_distance() {
    let mut set = MarkerSet::new(world(), vec![]).unwrap();
    set.generate(Generation::DartThrowing { min_distance: 0.1 }, 40.0, 9)
        .unwrap();
    for (id, m) in set.markers() {
        set.for_each_within(m.position, 0.1, |other, o| {
            assert!(
                other == id || o.position.distance(m.position) >= 0.1 - 1e-12,
                "{id} and {other}"
            );
        });
    }
}

#[test]
fn a_spray_adds_its_density_in_the_brush_on_walkable_ground_with_its_tag() {
    let mut set = MarkerSet::new(world(), vec![pillar()]).unwrap();
    let added = set
        .spray(DVec2::new(5.0, 5.0), 2.0, 100.0, 1, Some(4))
        .unwrap();
    let expected = 100.0 * std::f64::consts::PI * 4.0;
    assert!(
        (added as f64 / expected - 1.0).abs() < 0.01,
        "{added} of {expected:.0}"
    );
    for (_, m) in set.markers() {
        assert!(m.position.distance(DVec2::new(5.0, 5.0)) <= 2.0);
        assert_eq!(m.tag, Some(4));
    }
    // Over the pillar's edge: only the walkable part gets markers.
    let before = set.len();
    set.spray(DVec2::new(12.0, 10.0), 2.0, 100.0, 2, None)
        .unwrap();
    assert!(set.len() > before);
    assert!(
        set.markers()
            .all(|(_, m)| m.position.distance(DVec2::new(15.0, 10.0)) > 3.0)
    );
}

#[test]
fn an_erase_removes_every_marker_in_the_brush_and_ids_are_never_given_again() {
    let mut set = MarkerSet::new(world(), vec![]).unwrap();
    set.generate(Generation::JitteredGrid, 60.0, 5).unwrap();
    let before = set.len();
    let bound = set.id_bound();
    let gone = set.erase(DVec2::new(10.0, 10.0), 3.0).unwrap();
    assert!(!gone.is_empty());
    assert_eq!(set.len(), before - gone.len());
    assert!(set.within(DVec2::new(10.0, 10.0), 3.0).is_empty());
    assert!(gone.iter().all(|id| set.marker(*id).is_none()));
    set.spray(DVec2::new(10.0, 10.0), 1.0, 60.0, 8, None)
        .unwrap();
    // New markers take new ids.
    assert!(
        set.within(DVec2::new(10.0, 10.0), 1.0)
            .iter()
            .all(|id| id.0 as usize >= bound)
    );
}

#[test]
fn painted_terrain_types_markers_and_forbidden_ground_loses_them() {
    let mut set = MarkerSet::new(world(), vec![]).unwrap();
    set.generate(Generation::JitteredGrid, 60.0, 5).unwrap();
    let lawn = Shape::Aabb {
        min: DVec2::new(2.0, 2.0),
        max: DVec2::new(8.0, 8.0),
    };
    let retyped = set.paint(lawn, Terrain::Avoid { intensity: 0.75 }).unwrap();
    assert!(retyped > 1500, "{retyped}");
    let pond = Shape::Disc {
        centre: DVec2::new(20.0, 10.0),
        radius: 2.0,
    };
    set.paint(pond, Terrain::Forbidden).unwrap();
    let mut on_lawn = 0;
    for (_, m) in set.markers() {
        let p = m.position;
        let in_lawn = p.cmpge(DVec2::splat(2.0)).all() && p.cmple(DVec2::splat(8.0)).all();
        if in_lawn {
            on_lawn += 1;
            assert_eq!(m.terrain, Terrain::Avoid { intensity: 0.75 });
            assert!((m.terrain.ft() - 0.25).abs() < 1e-12);
        } else {
            assert_eq!(m.terrain, Terrain::Walkable);
        }
        assert!(p.distance(DVec2::new(20.0, 10.0)) > 2.0);
    }
    assert_eq!(on_lawn, retyped);
    // Sprays take the ground's type and never land in the pond.
    set.spray(DVec2::new(20.0, 10.0), 3.0, 60.0, 1, None)
        .unwrap();
    assert!(
        set.markers()
            .all(|(_, m)| m.position.distance(DVec2::new(20.0, 10.0)) > 2.0)
    );
    let before = set.len();
    set.spray(DVec2::new(5.0, 5.0), 1.0, 60.0, 2, None).unwrap();
    assert!(
        set.markers()
            .skip(before)
            .all(|(_, m)| m.terrain == Terrain::Avoid { intensity: 0.75 })
    );
}

/// Digest 002 test M4: a set with spray and erase edits, saved as its log and reloaded, is the
/// same set.
#[test]
fn a_set_rebuilt_from_its_edit_log_is_identical() {
    let mut set = MarkerSet::new(world(), vec![pillar()]).unwrap();
    set.generate(Generation::default(), 60.0, 11).unwrap();
    set.spray(DVec2::new(4.0, 4.0), 1.5, 200.0, 12, Some(1))
        .unwrap();
    set.erase(DVec2::new(25.0, 15.0), 2.5).unwrap();
    set.paint(
        Shape::Aabb {
            min: DVec2::new(0.0, 12.0),
            max: DVec2::new(6.0, 20.0),
        },
        Terrain::Avoid { intensity: 0.5 },
    )
    .unwrap();
    set.spray(DVec2::new(25.0, 15.0), 1.0, 60.0, 13, None)
        .unwrap();
    let again = MarkerSet::replay(*set.settings(), set.obstacles().to_vec(), set.edits()).unwrap();
    assert_eq!(again.len(), set.len());
    assert!(again.markers().eq(set.markers()));
    #[cfg(feature = "serde")]
    {
        let text = ron::to_string(set.edits()).unwrap();
        let edits: Vec<Edit> = ron::from_str(&text).unwrap();
        let loaded = MarkerSet::replay(*set.settings(), set.obstacles().to_vec(), &edits).unwrap();
        assert!(loaded.markers().eq(set.markers()));
    }
}

#[test]
fn bad_input_is_refused_with_a_typed_error_and_changes_nothing() {
    let mut set = MarkerSet::new(world(), vec![]).unwrap();
    set.spray(DVec2::new(5.0, 5.0), 1.0, 60.0, 1, None).unwrap();
    let (len, edits) = (set.len(), set.edits().len());
    for density in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e7] {
        assert!(matches!(
            set.generate(Generation::JitteredGrid, density, 1),
            Err(MarkerError::BadDensity { .. })
        ));
        assert!(matches!(
            set.spray(DVec2::ZERO, 1.0, density, 1, None),
            Err(MarkerError::BadDensity { .. })
        ));
    }
    assert!(matches!(
        set.spray(DVec2::new(f64::NAN, 0.0), 1.0, 60.0, 1, None),
        Err(MarkerError::NonFinite(_))
    ));
    assert!(matches!(
        set.erase(DVec2::ZERO, 0.0),
        Err(MarkerError::BadSetting(_))
    ));
    assert!(matches!(
        set.erase(DVec2::ZERO, f64::NAN),
        Err(MarkerError::NonFinite(_))
    ));
    assert!(matches!(
        set.generate(Generation::DartThrowing { min_distance: 1.0 }, 60.0, 1),
        Err(MarkerError::BadSetting(_))
    ));
    // Millions per m² over a large brush: more than a set holds.
    assert!(matches!(
        set.spray(DVec2::ZERO, 1000.0, 10_000.0, 1, None),
        Err(MarkerError::TooManyMarkers { .. })
    ));
    assert_eq!((set.len(), set.edits().len()), (len, edits));
    // A world too large for 60 markers/m².
    let mut huge = MarkerSet::new(
        MarkerSettings {
            max: DVec2::new(4000.0, 4000.0),
            index_cell: 2.0,
            ..world()
        },
        vec![],
    )
    .unwrap();
    assert!(matches!(
        huge.generate(Generation::JitteredGrid, 60.0, 1),
        Err(MarkerError::TooManyMarkers { .. })
    ));
    assert!(huge.is_empty());
    // Bad worlds and shapes.
    for settings in [
        MarkerSettings {
            max: DVec2::new(f64::NAN, 1.0),
            ..world()
        },
        MarkerSettings {
            max: DVec2::ZERO,
            ..world()
        },
        MarkerSettings {
            index_cell: 0.0,
            ..world()
        },
        MarkerSettings {
            index_cell: 1e-4,
            ..world()
        },
    ] {
        assert!(MarkerSet::new(settings, vec![]).is_err(), "{settings:?}");
    }
    let bad_shape = Shape::Disc {
        centre: DVec2::ZERO,
        radius: -1.0,
    };
    assert!(MarkerSet::new(world(), vec![bad_shape.clone()]).is_err());
    assert!(set.paint(bad_shape, Terrain::Forbidden).is_err());
    // Queries on an empty set, or with bad arguments, find nothing.
    let empty = MarkerSet::new(world(), vec![]).unwrap();
    assert!(empty.within(DVec2::new(5.0, 5.0), 3.0).is_empty());
    assert!(set.within(DVec2::new(f64::NAN, 5.0), 3.0).is_empty());
    assert!(empty.marker(MarkerId(3)).is_none());
}

#[test]
fn a_brush_dragged_along_a_stroke_sprays_its_band_once_and_erases_it_whole() {
    let mut set = MarkerSet::new(world(), vec![]).unwrap();
    // A stroke doubling back on itself: its pieces overlap, the band gets the density once.
    let band = Shape::Polyline {
        points: vec![
            DVec2::new(2.0, 10.0),
            DVec2::new(10.0, 10.0),
            DVec2::new(18.0, 10.0),
            DVec2::new(10.0, 10.0),
        ],
        thickness: 2.0,
    };
    let added = set.spray_shape(band.clone(), 100.0, 3, None).unwrap();
    // The band: 16 m long, 2 m wide, rounded ends.
    let expected = 100.0 * (16.0 * 2.0 + std::f64::consts::PI);
    assert!(
        (added as f64 / expected - 1.0).abs() < 0.05,
        "{added} of {expected:.0}"
    );
    assert!(set.markers().all(|(_, m)| {
        let p = m.position;
        let along = p.x.clamp(2.0, 18.0);
        DVec2::new(along, 10.0).distance(p) <= 1.0
    }));
    let gone = set.erase_shape(band).unwrap();
    assert_eq!(gone.len(), added);
    assert!(set.is_empty());
    assert!(matches!(set.edits().last(), Some(Edit::Erase { .. })));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// The index finds exactly the markers a scan over all of them finds, after any sprays
    /// and erases, including brushes reaching past the world's edge.
    #[test]
    fn the_index_agrees_with_a_scan(
        edits in prop::collection::vec(
            (0.0f64..30.0, 0.0f64..20.0, 0.2f64..6.0, any::<bool>(), any::<u64>()), 1..12),
        query in (-2.0f64..32.0, -2.0f64..22.0, 0.0f64..8.0),
    ) {
        let mut set = MarkerSet::new(world(), vec![pillar()]).unwrap();
        for (x, y, r, spray, seed) in edits {
            let c = DVec2::new(x, y);
            if spray {
                set.spray(c, r, 30.0, seed, None).unwrap();
            } else {
                set.erase(c, r).unwrap();
            }
        }
        let c = DVec2::new(query.0, query.1);
        let found = set.within(c, query.2);
        let scanned: Vec<MarkerId> = set
            .markers()
            .filter(|(_, m)| (m.position - c).length_squared() <= query.2 * query.2)
            .map(|(id, _)| id)
            .collect();
        prop_assert_eq!(found, scanned);
    }
}
