//! Painted terrain for BVP walkers (ours, docs/terrain.md): forbidden ground as obstacles,
//! ground to avoid as lower conductivity in the goal's map. Walkers of the steering core walk
//! it as marker agents do: never on forbidden ground, less on avoided ground the higher its
//! intensity.

use crowdfield_field::Shape;
use crowdfield_markers::{
    MarkerSet, MarkerSettings, Terrain, TerrainMapSettings, forbidden_shapes, terrain_map,
};
use crowdfield_steer::{AgentParams, AgentState, ArrivalAction, Crowd, CrowdSettings, Guidance};
use glam::DVec2;

fn aabb(x0: f64, y0: f64, x1: f64, y1: f64) -> Shape {
    Shape::Aabb {
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    }
}

/// A 30 × 14 m field: a patch to avoid across the straight way (x 12–18, up to y = 10, a
/// walkable strip above it) and a forbidden pond beyond it on the straight line.
fn field(intensity: Option<f64>) -> MarkerSet {
    let mut set = MarkerSet::new(
        MarkerSettings {
            min: DVec2::ZERO,
            max: DVec2::new(30.0, 14.0),
            ..Default::default()
        },
        vec![],
    )
    .unwrap();
    if let Some(intensity) = intensity {
        set.paint(aabb(12.0, 0.0, 18.0, 8.0), Terrain::Avoid { intensity })
            .unwrap();
    }
    set.paint(
        Shape::Disc {
            centre: DVec2::new(22.5, 5.0),
            radius: 2.0,
        },
        Terrain::Forbidden,
    )
    .unwrap();
    set
}

/// Ten walkers from the west edge to a goal on the east: (agent-frames on avoided ground,
/// on forbidden ground, arrivals, all agent-frames).
fn walk(intensity: Option<f64>) -> (usize, usize, usize, usize) {
    let set = field(intensity);
    let map = terrain_map(
        &set,
        &Shape::Disc {
            centre: DVec2::new(27.5, 5.0),
            radius: 1.0,
        },
        &TerrainMapSettings::default(),
    )
    .unwrap();
    assert!(map.interior_local_minima().is_empty(), "no local minimum");
    let mut crowd = Crowd::new(
        CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::new(30.0, 14.0),
            ..CrowdSettings::default()
        },
        forbidden_shapes(&set),
    )
    .unwrap();
    let goal = crowd
        .add_guided_goal(
            Shape::Disc {
                centre: DVec2::new(27.5, 5.0),
                radius: 1.0,
            },
            Guidance::Map(map),
        )
        .unwrap();
    let ids: Vec<_> = (0..10)
        .map(|k| {
            crowd
                .spawn(AgentParams {
                    position: DVec2::new(2.0 + (k / 5) as f64 * 1.2, 3.0 + (k % 5) as f64),
                    goals: vec![goal],
                    on_arrival: ArrivalAction::Despawn,
                    ..AgentParams::default()
                })
                .unwrap()
        })
        .collect();
    let (mut avoided, mut forbidden, mut frames) = (0, 0, 0);
    let mut arrived = 0;
    for _ in 0..3_000 {
        crowd.step();
        let mut walking = 0;
        for id in &ids {
            let Some(a) = crowd.agent(*id) else {
                continue;
            };
            if a.state() == AgentState::Arrived {
                continue;
            }
            walking += 1;
            frames += 1;
            let p = a.position();
            // On the patch's rectangle, painted or not (the unpainted run's baseline).
            if (12.0..=18.0).contains(&p.x) && p.y <= 8.0 {
                avoided += 1;
            }
            if set.terrain().terrain_at(p) == Terrain::Forbidden {
                forbidden += 1;
            }
        }
        if walking == 0 {
            break;
        }
    }
    for id in &ids {
        if crowd
            .agent(*id)
            .is_none_or(|a| a.state() == AgentState::Arrived)
        {
            arrived += 1;
        }
    }
    (avoided, forbidden, arrived, frames)
}

#[test]
fn bvp_walkers_keep_off_forbidden_ground_and_avoid_more_as_intensity_rises() {
    let mut shares = Vec::new();
    for intensity in [None, Some(0.3), Some(0.6), Some(0.9)] {
        let (avoided, forbidden, arrived, frames) = walk(intensity);
        let on_patch = avoided;
        println!(
            "BVP terrain, ι = {intensity:?}: {arrived}/10 arrived, {on_patch} of {frames} agent-frames on the patch, {forbidden} on forbidden ground"
        );
        assert_eq!(forbidden, 0);
        assert_eq!(arrived, 10);
        shares.push(on_patch as f64 / frames as f64);
    }
    for w in shares.windows(2) {
        assert!(w[1] < w[0], "{shares:?}");
    }
}

#[test]
fn bad_terrain_maps_are_refused() {
    let set = field(Some(0.5));
    let goal = Shape::Disc {
        centre: DVec2::new(27.5, 5.0),
        radius: 1.0,
    };
    for bad in [
        TerrainMapSettings {
            tolerance: 0.0,
            ..Default::default()
        },
        TerrainMapSettings {
            cell: f64::NAN,
            ..Default::default()
        },
        TerrainMapSettings {
            avoid_exponent: -1,
            ..Default::default()
        },
        TerrainMapSettings {
            inflation: -0.1,
            ..Default::default()
        },
    ] {
        assert!(terrain_map(&set, &goal, &bad).is_err());
    }
    // A goal on forbidden ground has no free cell.
    let pond = Shape::Disc {
        centre: DVec2::new(22.5, 5.0),
        radius: 0.5,
    };
    assert!(terrain_map(&set, &pond, &TerrainMapSettings::default()).is_err());
}
