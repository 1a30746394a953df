//! Headless app tests of the plugin's markers: the ground from the scene, brush strokes,
//! rebuilds when obstacles change, bad input.

mod common;

use bevy::prelude::*;
use bevy_crowdfield::markers::MarkerSet;
use bevy_crowdfield::prelude::*;
use common::*;

#[derive(Resource, Default)]
struct Refused {
    ground: usize,
    brushes: usize,
}

fn collect(
    mut refused: ResMut<Refused>,
    mut ground: MessageReader<MarkersRejected>,
    mut brushes: MessageReader<BrushRejected>,
) {
    refused.ground += ground.read().count();
    refused.brushes += brushes.read().count();
}

fn marker_app() -> App {
    let mut app = app(30.0, 20.0);
    app.init_resource::<Refused>().add_systems(Last, collect);
    app.world_mut().spawn((
        CrowdObstacle::fixed(Shape::Disc {
            centre: DVec2::new(15.0, 10.0),
            radius: 3.0,
        }),
        Transform::IDENTITY,
    ));
    app
}

fn set(app: &App) -> &MarkerSet {
    app.world()
        .resource::<MarkerWorld>()
        .markers()
        .expect("built")
}

fn brush(app: &mut App, kind: BrushKind, radius: f64, points: Vec<Vec2>) {
    app.world_mut().write_message(MarkerBrush::Stroke {
        brush: Brush { kind, radius },
        points,
    });
    app.update();
}

#[test]
fn the_ground_is_scattered_over_the_scene_and_brushes_edit_it() {
    let mut app = marker_app();
    app.insert_resource(MarkerGround::default());
    run_until(&mut app, 2, |_| false);
    let walkable = 600.0 - std::f64::consts::PI * 9.0;
    let ratio = set(&app).len() as f64 / (60.0 * walkable);
    assert!((0.97..1.03).contains(&ratio), "{ratio}");
    assert!(
        set(&app)
            .markers()
            .all(|(_, m)| m.position.distance(DVec2::new(15.0, 10.0)) > 3.0)
    );
    // An eraser dragged across the left part clears a band.
    let line = vec![Vec2::new(2.0, 5.0), Vec2::new(10.0, 5.0)];
    brush(&mut app, BrushKind::Erase, 1.0, line);
    assert!(set(&app).within(DVec2::new(6.0, 5.0), 0.9).is_empty());
    // A spray over it puts tagged markers back.
    let spray = BrushKind::Spray {
        density: 200.0,
        tag: Some(7),
    };
    brush(&mut app, spray, 0.5, vec![Vec2::new(6.0, 5.0)]);
    let tagged = set(&app)
        .markers()
        .filter(|(_, m)| m.tag == Some(7))
        .count();
    assert!((120..200).contains(&tagged), "{tagged}");
    // A pond painted forbidden loses its markers.
    brush(
        &mut app,
        BrushKind::Paint(Terrain::Forbidden),
        2.0,
        vec![Vec2::new(25.0, 15.0)],
    );
    assert!(set(&app).within(DVec2::new(25.0, 15.0), 2.0).is_empty());
    assert_eq!(app.world().resource::<Refused>().brushes, 0);
    // A wall added later: the set is rebuilt round it, the brushes' edits kept.
    app.world_mut().spawn((
        CrowdObstacle::fixed(Shape::Aabb {
            min: DVec2::new(20.0, 2.0),
            max: DVec2::new(22.0, 8.0),
        }),
        Transform::IDENTITY,
    ));
    run_until(&mut app, 2, |_| false);
    let markers = set(&app);
    assert!(markers.markers().all(|(_, m)| {
        let p = m.position;
        !(p.x >= 20.0 && p.x <= 22.0 && p.y >= 2.0 && p.y <= 8.0)
    }));
    assert_eq!(
        markers.markers().filter(|(_, m)| m.tag == Some(7)).count(),
        tagged
    );
    assert!(markers.within(DVec2::new(25.0, 15.0), 2.0).is_empty());
    // Undo takes the pond back: markers there again, from the ground's log.
    app.world_mut().write_message(MarkerBrush::Undo);
    app.update();
    assert!(!set(&app).within(DVec2::new(25.0, 15.0), 2.0).is_empty());
    assert_eq!(
        set(&app)
            .markers()
            .filter(|(_, m)| m.tag == Some(7))
            .count(),
        tagged
    );
}

#[test]
fn the_same_scene_and_strokes_give_the_same_markers() {
    let run = || {
        let mut app = marker_app();
        app.insert_resource(MarkerGround {
            seed: 3,
            ..default()
        });
        app.update();
        let spray = BrushKind::Spray {
            density: 90.0,
            tag: None,
        };
        brush(
            &mut app,
            spray,
            1.0,
            vec![Vec2::new(3.0, 3.0), Vec2::new(9.0, 12.0)],
        );
        set(&app)
            .markers()
            .map(|(id, m)| (id, m.position))
            .collect::<Vec<_>>()
    };
    let first = run();
    assert!(first.len() > 10_000, "{} markers", first.len());
    assert_eq!(first, run());
}

#[test]
fn brushes_without_a_ground_start_an_empty_set_and_bad_input_is_refused() {
    let mut app = marker_app();
    app.update();
    assert!(app.world().resource::<MarkerWorld>().markers().is_none());
    let spray = BrushKind::Spray {
        density: 60.0,
        tag: None,
    };
    brush(&mut app, spray, 1.0, vec![Vec2::new(5.0, 5.0)]);
    let sprayed = set(&app).len();
    assert!(sprayed > 100, "{sprayed}");
    for (kind, radius, points) in [
        (BrushKind::Erase, 0.0, vec![Vec2::new(5.0, 5.0)]),
        (BrushKind::Erase, 1.0, vec![]),
        (BrushKind::Erase, 1.0, vec![Vec2::new(f32::NAN, 5.0)]),
        (
            BrushKind::Spray {
                density: 5e6,
                tag: None,
            },
            1.0,
            vec![Vec2::new(5.0, 5.0)],
        ),
        (
            BrushKind::Paint(Terrain::Avoid { intensity: 2.0 }),
            1.0,
            vec![Vec2::new(5.0, 5.0)],
        ),
    ] {
        brush(&mut app, kind, radius, points);
    }
    assert_eq!(app.world().resource::<Refused>().brushes, 5);
    // Undo takes the spray back; with nothing left, undo is refused.
    app.world_mut().write_message(MarkerBrush::Undo);
    app.update();
    assert!(set(&app).is_empty());
    app.world_mut().write_message(MarkerBrush::Undo);
    app.update();
    assert_eq!(app.world().resource::<Refused>().brushes, 6);
    brush(&mut app, spray, 1.0, vec![Vec2::new(5.0, 5.0)]);
    assert_eq!(set(&app).len(), sprayed);
    // A ground of no markers per m² is refused; the set stays.
    app.insert_resource(MarkerGround {
        density: 0.0,
        ..default()
    });
    run_until(&mut app, 3, |_| false);
    assert_eq!(app.world().resource::<Refused>().ground, 1);
    assert_eq!(set(&app).len(), sprayed);
}

#[test]
fn a_refused_ground_is_said_once_and_brushes_still_land() {
    let mut app = marker_app();
    app.insert_resource(MarkerGround {
        density: f64::NAN,
        ..default()
    });
    run_until(&mut app, 3, |_| false);
    assert_eq!(app.world().resource::<Refused>().ground, 1);
    let spray = BrushKind::Spray {
        density: 60.0,
        tag: None,
    };
    brush(&mut app, spray, 1.0, vec![Vec2::new(5.0, 5.0)]);
    run_until(&mut app, 3, |_| false);
    assert!(set(&app).len() > 100, "{}", set(&app).len());
    assert_eq!(app.world().resource::<Refused>().ground, 1);
}
