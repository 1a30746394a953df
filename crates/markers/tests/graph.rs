//! The terrain graph (digest 003 §2.10, §10 test 9) and height maps.

use crowdfield_field::Shape;
use crowdfield_markers::{
    Connectivity, GraphSettings, HeightMap, MarkerError, MarkerSet, MarkerSettings, Terrain,
    TerrainGraph,
};
use glam::DVec2;

/// A 20 × 10 m world with no markers (the graph reads the ground, not the markers).
fn ground(obstacles: Vec<Shape>) -> MarkerSet {
    MarkerSet::new(
        MarkerSettings {
            min: DVec2::ZERO,
            max: DVec2::new(20.0, 10.0),
            ..Default::default()
        },
        obstacles,
    )
    .unwrap()
}

fn band(x0: f64, x1: f64) -> Shape {
    Shape::Aabb {
        min: DVec2::new(x0, -1.0),
        max: DVec2::new(x1, 11.0),
    }
}

fn four(spacing: f64) -> GraphSettings {
    GraphSettings {
        spacing,
        connectivity: Connectivity::Four,
        ..Default::default()
    }
}

/// Digest 003 test 9 (Fig. 4.5): a walkable pair gets an edge costing its 3D length; a pair
/// across ground to be avoided costs more, and more as the intensity rises; a pair across
/// forbidden ground gets no edge; a grid point on forbidden ground gets no node.
#[test]
fn the_graph_follows_the_seeds_builder_rules() {
    let slope =
        HeightMap::from_fn(DVec2::ZERO, DVec2::new(20.0, 10.0), 0.5, |p| 0.5 * p.x).unwrap();
    let cost_across_avoid = |intensity: f64| {
        let mut set = ground(vec![]);
        set.paint(band(4.5, 5.5), Terrain::Avoid { intensity })
            .unwrap();
        set.paint(band(10.5, 11.5), Terrain::Forbidden).unwrap();
        set.paint(
            Shape::Aabb {
                min: DVec2::new(15.5, 3.5),
                max: DVec2::new(16.5, 4.5),
            },
            Terrain::Forbidden,
        )
        .unwrap();
        set.set_heights(Some(slope.clone())).unwrap();
        let graph = TerrainGraph::build(&set, four(2.0)).unwrap();
        let at = |c: usize, r: usize| graph.node_at(c, r).expect("a node");
        // A–B: walkable only, (0, 4)–(2, 4) on a slope of 1 in 2: √(2² + 1²).
        let ab = graph.edge(at(0, 2), at(1, 2)).expect("A–B");
        assert!((ab - 5f64.sqrt()).abs() < 1e-9, "{ab}");
        // C–D: across the forbidden band, no edge; the nodes on both sides are there.
        assert!(graph.edge(at(5, 2), at(6, 2)).is_none());
        // No node on the forbidden patch at (16, 4); its neighbours are there.
        assert!(graph.node_at(8, 2).is_none());
        assert!(graph.node_at(7, 2).is_some() && graph.node_at(9, 2).is_some());
        // A–C: across the avoided band.
        graph.edge(at(2, 2), at(3, 2)).expect("A–C")
    };
    let length = 5f64.sqrt();
    let (low, high) = (cost_across_avoid(0.3), cost_across_avoid(0.8));
    assert!(low > length + 1e-6, "{low}");
    assert!(high > low, "{high} vs {low}");
    println!(
        "test 9: walkable edge {length:.3} m; across avoided ground {low:.3} (ι = 0.3), {high:.3} (ι = 0.8)"
    );
}

/// Routes keep off forbidden ground and obstacles, prefer walkable ground to avoided ground
/// when the detour is short, and climb less round a hill than over it (digest 003 E3).
#[test]
fn routes_go_round_what_costs_more() {
    // An avoided patch in the middle; the way round it is short.
    let mut set = ground(vec![Shape::Aabb {
        min: DVec2::new(14.0, 0.0),
        max: DVec2::new(15.0, 7.0),
    }]);
    set.paint(
        Shape::Aabb {
            min: DVec2::new(6.0, 3.0),
            max: DVec2::new(9.0, 7.0),
        },
        Terrain::Avoid { intensity: 0.9 },
    )
    .unwrap();
    let graph = TerrainGraph::build(&set, GraphSettings::default()).unwrap();
    let route = graph
        .route(&set, DVec2::new(1.0, 5.0), DVec2::new(19.0, 3.0))
        .unwrap();
    for w in route.windows(2) {
        let (a, b) = (w[0].truncate(), w[1].truncate());
        assert!(set.sees(a, b), "through the wall: {a} {b}");
        for k in 0..=10 {
            let p = a.lerp(b, k as f64 / 10.0);
            assert!(
                !matches!(set.terrain().terrain_at(p), Terrain::Avoid { .. }),
                "over the avoided patch at {p}"
            );
        }
    }
    // Past the wall's top end.
    assert!(
        route
            .iter()
            .any(|p| p.y > 7.0 && (13.0..16.0).contains(&p.x))
    );

    // A hill in the middle of an open field: the route climbs less than the straight line.
    let mut set = ground(vec![]);
    let hill = HeightMap::from_fn(DVec2::ZERO, DVec2::new(20.0, 10.0), 0.5, |p| {
        6.0 * (-(p - DVec2::new(10.0, 5.0)).length_squared() / 8.0).exp()
    })
    .unwrap();
    set.set_heights(Some(hill)).unwrap();
    let graph = TerrainGraph::build(&set, GraphSettings::default()).unwrap();
    let route = graph
        .route(&set, DVec2::new(1.0, 5.0), DVec2::new(19.0, 5.0))
        .unwrap();
    let top = route.iter().map(|p| p.z).fold(0.0, f64::max);
    println!("E3: the route's highest point {top:.2} m (the hill: 6 m)");
    assert!(top < 3.0, "{top}");
}

/// Bad input: height maps with NaN or the wrong size, bad settings, goals on forbidden ground,
/// goals walled off.
#[test]
fn bad_terrain_input_is_refused() {
    assert!(matches!(
        HeightMap::new(DVec2::ZERO, 1.0, 2, 2, vec![0.0, f64::NAN, 0.0, 0.0]),
        Err(MarkerError::NonFinite(_))
    ));
    assert!(HeightMap::new(DVec2::ZERO, 1.0, 2, 2, vec![0.0; 3]).is_err());
    assert!(HeightMap::new(DVec2::ZERO, 0.0, 2, 2, vec![0.0; 4]).is_err());
    assert!(HeightMap::new(DVec2::ZERO, 1.0, 1, 4, vec![0.0; 4]).is_err());
    assert!(HeightMap::from_fn(DVec2::ZERO, DVec2::ZERO, 1.0, |_| 0.0).is_err());
    let mut set = ground(vec![]);
    for bad in [
        GraphSettings {
            spacing: 0.0,
            ..Default::default()
        },
        GraphSettings {
            sample: f64::NAN,
            ..Default::default()
        },
        GraphSettings {
            avoid_penalty: -1.0,
            ..Default::default()
        },
    ] {
        assert!(TerrainGraph::build(&set, bad).is_err());
    }
    // A forbidden band walls off the east.
    set.paint(band(10.0, 11.0), Terrain::Forbidden).unwrap();
    let graph = TerrainGraph::build(&set, GraphSettings::default()).unwrap();
    assert!(matches!(
        graph.route(&set, DVec2::new(1.0, 5.0), DVec2::new(10.5, 5.0)),
        Err(MarkerError::GoalNotWalkable { .. })
    ));
    assert!(matches!(
        graph.route(&set, DVec2::new(1.0, 5.0), DVec2::new(18.0, 5.0)),
        Err(MarkerError::NoRoute)
    ));
    assert!(matches!(
        graph.route(&set, DVec2::new(f64::NAN, 5.0), DVec2::new(8.0, 5.0)),
        Err(MarkerError::NonFinite(_))
    ));
    assert!(
        graph
            .route(&set, DVec2::new(1.0, 5.0), DVec2::new(8.0, 5.0))
            .is_ok()
    );
}
