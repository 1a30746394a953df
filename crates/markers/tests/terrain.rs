//! Digest 003 §10: the terrain-reasoning tests (seed 003) on the BioCrowds back end, agents
//! as points moved by its steps alone (the seed's model). Figures print with `--nocapture`;
//! docs/terrain.md lists them.

use crowdfield_field::Shape;
use crowdfield_markers::{
    BioCrowd, BioCrowdSettings, BioEvent, BioOrder, Door, FtTable, Generation, GraphSettings,
    HeightMap, House, MarkerCrowd, MarkerCrowdSettings, MarkerError, MarkerSet, MarkerSettings,
    Order, Room, RoomKind, RoutinePhase, Sensed, Terrain, TerrainMesh, Way, personal,
};
use crowdfield_steer::AgentId;
use glam::{DVec2, DVec3};

mod common;

/// Seed 003's ground: markers on forbidden ground too, from the terrain mesh at 60 per m² or
/// more.
fn ground(size: DVec2, obstacles: Vec<Shape>, heights: Option<HeightMap>) -> MarkerSet {
    let settings = MarkerSettings {
        min: DVec2::ZERO,
        max: size,
        forbidden_markers: true,
        ..Default::default()
    };
    let mut set = MarkerSet::new(settings, obstacles).unwrap();
    set.set_heights(heights).unwrap();
    set.generate(Generation::Mesh, 60.0, 0).unwrap();
    set
}

fn aabb(x0: f64, y0: f64, x1: f64, y1: f64) -> Shape {
    Shape::Aabb {
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    }
}

fn disc(x: f64, y: f64, radius: f64) -> Shape {
    Shape::Disc {
        centre: DVec2::new(x, y),
        radius,
    }
}

/// Point agents moved by a BioCrowds back end; an agent that reaches its goal leaves.
struct Walk {
    bio: BioCrowd,
    /// Each agent's place (`None`: gone), goal, trail.
    at: Vec<Option<DVec2>>,
    goals: Vec<Option<DVec2>>,
    trails: Vec<Vec<DVec2>>,
    arrived: Vec<Option<u64>>,
    arrival: f64,
    frames: u64,
    events: Vec<BioEvent>,
}

impl Walk {
    fn new(arrival: f64) -> Self {
        Self {
            bio: BioCrowd::new(BioCrowdSettings::default()).unwrap(),
            at: Vec::new(),
            goals: Vec::new(),
            trails: Vec::new(),
            arrived: Vec::new(),
            arrival,
            frames: 0,
            events: Vec::new(),
        }
    }

    fn add(&mut self, p: DVec2, goal: Option<DVec2>, order: BioOrder) -> AgentId {
        let id = AgentId(self.at.len() as u32);
        self.bio.insert(id, order).unwrap();
        self.at.push(Some(p));
        self.goals.push(goal);
        self.trails.push(vec![p]);
        self.arrived.push(None);
        id
    }

    fn step(&mut self, set: &MarkerSet) {
        let sensed: Vec<Sensed> = self
            .at
            .iter()
            .enumerate()
            .filter_map(|(k, p)| {
                Some(Sensed {
                    id: AgentId(k as u32),
                    position: (*p)?,
                    goal: self.goals[k],
                })
            })
            .collect();
        for (id, d) in self.bio.step(set, &sensed).unwrap() {
            let k = id.0 as usize;
            let Some(p) = self.at[k].as_mut() else {
                continue;
            };
            *p += d;
            self.trails[k].push(*p);
            if let Some(g) = self.goals[k]
                && p.distance(g) <= self.arrival
            {
                self.arrived[k] = Some(self.frames);
                self.at[k] = None;
            }
        }
        self.events.extend(self.bio.take_events());
        self.frames += 1;
    }

    fn run(&mut self, set: &MarkerSet, frames: u64) {
        for _ in 0..frames {
            if self.at.iter().all(Option::is_none) {
                break;
            }
            self.step(set);
        }
    }

    fn arrivals(&self) -> usize {
        self.arrived.iter().filter(|a| a.is_some()).count()
    }

    /// Agent-frames at which `inside` holds.
    fn frames_where(&self, inside: impl Fn(DVec2) -> bool) -> usize {
        self.trails
            .iter()
            .map(|t| t.iter().filter(|p| inside(**p)).count())
            .sum()
    }

    fn agent_frames(&self) -> usize {
        self.trails.iter().map(Vec::len).sum()
    }
}

/// A group of `n` in rows of `per_row`, `gap` apart, from `corner`.
fn block(corner: DVec2, n: usize, per_row: usize, gap: f64) -> Vec<DVec2> {
    (0..n)
        .map(|k| corner + DVec2::new((k % per_row) as f64, (k / per_row) as f64) * gap)
        .collect()
}

fn order(way: Way) -> BioOrder {
    BioOrder {
        ft: FtTable::default(),
        way,
        group: None,
    }
}

/// Digest 003 test 1: the seed's subdivision leaves no triangle above 1.35 × the smallest; a
/// marker set made from the mesh holds one marker per final piece, at its centroid, on the
/// surface, typed by the paint over it.
#[test]
fn t1_markers_come_from_the_equalised_mesh() {
    // A ridge steep enough (up to 60°) that the height map's triangles differ by 2× in area.
    let heights = HeightMap::from_fn(DVec2::ZERO, DVec2::new(12.0, 8.0), 1.0, |p| {
        4.0 / (1.0 + (-(p.x - 6.0) * 1.2).exp())
    })
    .unwrap();
    let mesh = TerrainMesh::from_heights(&heights);
    let a_min = mesh.smallest_area();
    let a_max = (0..mesh.triangles().len())
        .map(|k| mesh.area(k))
        .fold(0.0, f64::max);
    let equal = mesh.equalise(1.35, 1_000_000).unwrap();
    let worst = (0..equal.triangles().len())
        .map(|k| equal.area(k) / a_min)
        .fold(0.0, f64::max);
    println!(
        "T1: {} triangles, areas {a_min:.3}–{a_max:.3} m² → {} triangles, the largest {worst:.3} × A_min",
        mesh.triangles().len(),
        equal.triangles().len()
    );
    assert!(a_max > 1.35 * a_min, "the mesh must be uneven");
    assert!(worst <= 1.35 + 1e-12);
    assert!(equal.triangles().len() > mesh.triangles().len());
    // Splits keep the surface: the same area.
    assert!((equal.surface_area() - mesh.surface_area()).abs() < 1e-9 * mesh.surface_area());

    let size = DVec2::new(12.0, 8.0);
    let mut set = MarkerSet::new(
        MarkerSettings {
            min: DVec2::ZERO,
            max: size,
            forbidden_markers: true,
            ..Default::default()
        },
        vec![],
    )
    .unwrap();
    set.set_heights(Some(heights.clone())).unwrap();
    set.paint(disc(3.0, 4.0, 1.5), Terrain::Forbidden).unwrap();
    set.paint(aabb(8.0, 0.0, 10.0, 8.0), Terrain::Avoid { intensity: 0.6 })
        .unwrap();
    set.generate(Generation::Mesh, 60.0, 0).unwrap();
    let n = equal.pieces_for(60.0);
    let want: Vec<DVec3> = equal.centroids_at(n).collect();
    assert_eq!(set.len(), want.len(), "one marker per final piece");
    for ((_, m), c) in set.markers().zip(&want) {
        assert!((m.position - c.truncate()).length() < 1e-6);
        assert!(
            (set.height(m.position) - c.z).abs() < 1e-9,
            "on the surface"
        );
        assert_eq!(m.terrain, set.terrain().terrain_at(m.position));
    }
    let density = set.len() as f64 / equal.surface_area();
    println!(
        "T1: {} markers, {density:.1} per m² of surface (60 asked, n = {n})",
        set.len()
    );
    assert!(density >= 60.0);
    assert!(set.markers().any(|(_, m)| m.terrain == Terrain::Forbidden));
    // Seed 002's sets keep forbidden ground empty.
    let mut plain = MarkerSet::new(
        MarkerSettings {
            min: DVec2::ZERO,
            max: size,
            ..Default::default()
        },
        vec![],
    )
    .unwrap();
    plain
        .paint(disc(3.0, 4.0, 1.5), Terrain::Forbidden)
        .unwrap();
    plain.generate(Generation::Mesh, 60.0, 0).unwrap();
    assert!(
        plain
            .markers()
            .all(|(_, m)| m.terrain != Terrain::Forbidden)
    );
    // Rebuilt from its log, the set is the same.
    let again = MarkerSet::replay(*set.settings(), vec![], set.edits()).unwrap();
    assert!(again.markers().eq(set.markers()));
}

/// Digest 003 test 4 (E1-a): a group of 50 and a hole wider than 2R between it and the goal:
/// no agent-frame inside, all arrive (with A*; straight for the goal, how many arrive is
/// printed).
#[test]
fn t4_nobody_walks_into_a_hole() {
    let hole = DVec2::new(20.0, 10.0);
    let mut set = ground(DVec2::new(40.0, 20.0), vec![], None);
    set.paint(disc(hole.x, hole.y, 3.5), Terrain::Forbidden)
        .unwrap();
    for way in [Way::AStar, Way::Direct] {
        let mut walk = Walk::new(1.0);
        for p in block(DVec2::new(2.0, 5.5), 50, 5, 1.0) {
            walk.add(p, Some(DVec2::new(37.0, 10.0)), order(way));
        }
        walk.run(&set, 2_400);
        let inside = walk.frames_where(|p| p.distance(hole) < 3.5);
        println!(
            "E1-a {way:?}: {} of 50 arrived in {} frames, {inside} agent-frames in the hole of {}",
            walk.arrivals(),
            walk.frames,
            walk.agent_frames()
        );
        assert_eq!(inside, 0);
        if way == Way::AStar {
            assert_eq!(walk.arrivals(), 50);
        }
    }
}

/// Digest 003 test 5 (E1-b): a walkable lane between strips to avoid, forbidden ground
/// beyond. The strips are used less at ft = 0.3 than at 1, more by 50 than by 5, never at
/// ft = 0; a strip across the way is crossed, slowly.
#[test]
fn t5_ground_to_avoid_is_used_only_when_needed() {
    let mut set = ground(DVec2::new(40.0, 12.0), vec![], None);
    set.paint(aabb(0.0, 2.0, 40.0, 4.0), Terrain::Avoid { intensity: 0.7 })
        .unwrap();
    set.paint(
        aabb(0.0, 8.0, 40.0, 10.0),
        Terrain::Avoid { intensity: 0.7 },
    )
    .unwrap();
    set.paint(aabb(0.0, 0.0, 40.0, 2.0), Terrain::Forbidden)
        .unwrap();
    set.paint(aabb(0.0, 10.0, 40.0, 12.0), Terrain::Forbidden)
        .unwrap();
    let share = |n: usize, avoid: f64| {
        let mut walk = Walk::new(1.5);
        let (per_row, gap) = if n > 5 { (10, 0.8) } else { (5, 0.8) };
        for p in block(DVec2::new(1.0, 4.4), n, per_row, gap) {
            walk.add(
                p,
                Some(DVec2::new(38.0, 6.0)),
                BioOrder {
                    ft: FtTable {
                        avoid: Some(avoid),
                        ..Default::default()
                    },
                    way: Way::Direct,
                    group: None,
                },
            );
        }
        walk.run(&set, 2_400);
        let on = walk.frames_where(|p| !(4.0..=8.0).contains(&p.y));
        let forbidden = walk.frames_where(|p| !(2.0..=10.0).contains(&p.y));
        let s = on as f64 / walk.agent_frames() as f64;
        println!(
            "E1-b: {n} agents, ft = {avoid}: {:.2} % of agent-frames on the strips, {} arrived, {forbidden} on forbidden ground",
            100.0 * s,
            walk.arrivals()
        );
        assert_eq!(forbidden, 0);
        (s, walk.arrivals())
    };
    let (crowd_03, arrived) = share(50, 0.3);
    let (crowd_10, _) = share(50, 1.0);
    let (few_03, _) = share(5, 0.3);
    let (crowd_00, _) = share(50, 0.0);
    assert_eq!(arrived, 50);
    assert!(crowd_03 < crowd_10, "{crowd_03} vs {crowd_10}");
    assert!(crowd_03 > few_03, "{crowd_03} vs {few_03}");
    assert_eq!(crowd_00, 0.0);

    // No way round: a strip across the lane is crossed, more slowly.
    let mut set = ground(DVec2::new(40.0, 12.0), vec![], None);
    set.paint(aabb(0.0, 0.0, 40.0, 4.0), Terrain::Forbidden)
        .unwrap();
    set.paint(aabb(0.0, 8.0, 40.0, 12.0), Terrain::Forbidden)
        .unwrap();
    set.paint(
        aabb(18.0, 4.0, 24.0, 8.0),
        Terrain::Avoid { intensity: 0.7 },
    )
    .unwrap();
    let mut walk = Walk::new(1.0);
    for y in [5.0, 6.0, 7.0] {
        walk.add(
            DVec2::new(2.0, y),
            Some(DVec2::new(38.0, y)),
            order(Way::Direct),
        );
    }
    walk.run(&set, 2_400);
    assert_eq!(walk.arrivals(), 3);
    let speed = |lo: f64, hi: f64| {
        let (mut d, mut n) = (0.0, 0);
        for t in &walk.trails {
            for w in t.windows(2) {
                if (lo..hi).contains(&w[0].x) {
                    d += w[0].distance(w[1]);
                    n += 1;
                }
            }
        }
        d / n as f64 * 24.0
    };
    let (on, off) = (speed(19.0, 23.0), speed(6.0, 14.0));
    println!("E1-b across: {on:.2} m/s on the strip, {off:.2} m/s before it");
    assert!(on < 0.6 * off);
}

/// Exclusive ownership through a run (digest 003 test 3): each marker has at most one owner
/// (the split gives each to one agent) and no two agents meet.
fn check_apart(walk: &Walk, set: &MarkerSet, least: &mut f64) {
    let points: Vec<DVec2> = walk.at.iter().flatten().copied().collect();
    let owned = personal::split(set, &points, 1.2);
    let mut seen = std::collections::HashSet::new();
    for ids in &owned {
        for id in ids {
            assert!(seen.insert(*id), "marker {id} has two owners");
        }
    }
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            *least = least.min(a.distance(*b));
        }
    }
}

/// Digest 003 tests 3 and 6 (E2): four groups of 10 on A* routes P1→P4, P2→P3, P3→P2, P4→P1
/// round forbidden ponds: four distinct routes on walkable ground, all 40 arrive, each agent
/// keeps within 2R of its group's route on average, markers have one owner and agents stay
/// apart at the crossings.
#[test]
fn t6_four_groups_on_their_routes() {
    let mut set = ground(DVec2::new(40.0, 40.0), vec![], None);
    for (x, y, r) in [(20.0, 20.0, 4.0), (11.0, 29.0, 2.5), (29.0, 11.0, 2.5)] {
        set.paint(disc(x, y, r), Terrain::Forbidden).unwrap();
    }
    let points = [
        DVec2::new(4.0, 4.0),
        DVec2::new(4.0, 36.0),
        DVec2::new(36.0, 4.0),
        DVec2::new(36.0, 36.0),
    ];
    let pairs = [(0, 3), (1, 2), (2, 1), (3, 0)];
    let mut walk = Walk::new(1.5);
    let mut group = Vec::new();
    for (g, &(from, to)) in pairs.iter().enumerate() {
        for p in block(points[from] - DVec2::splat(1.6), 10, 4, 1.1) {
            walk.add(
                p,
                Some(points[to]),
                BioOrder {
                    group: Some(g as u32),
                    ..order(Way::AStar)
                },
            );
            group.push(g);
        }
    }
    let mut least = f64::INFINITY;
    for _ in 0..3_000 {
        if walk.at.iter().all(Option::is_none) {
            break;
        }
        walk.step(&set);
        check_apart(&walk, &set, &mut least);
    }
    // Each group's route: the first member's.
    let routes: Vec<Vec<DVec2>> = (0..4)
        .map(|g| {
            walk.events
                .iter()
                .find_map(|e| match e {
                    BioEvent::Routed { agent, nodes } if group[agent.0 as usize] == g => {
                        Some(nodes.iter().map(|n| n.truncate()).collect())
                    }
                    _ => None,
                })
                .unwrap()
        })
        .collect();
    for (i, a) in routes.iter().enumerate() {
        assert!(a.iter().all(|p| set.is_walkable(*p)));
        for w in a.windows(2) {
            for k in 0..=20 {
                assert!(set.is_walkable(w[0].lerp(w[1], k as f64 / 20.0)));
            }
        }
        for b in &routes[i + 1..] {
            assert_ne!(a, b);
        }
    }
    let mut worst: f64 = 0.0;
    for (k, trail) in walk.trails.iter().enumerate() {
        let route = &routes[group[k]];
        let mean = trail
            .iter()
            .map(|p| distance_to_polyline(*p, route))
            .sum::<f64>()
            / trail.len() as f64;
        worst = worst.max(mean);
    }
    println!(
        "E2: {} of 40 arrived in {} frames; the farthest agent's mean distance from its route {worst:.2} m; least distance between agents {least:.2} m",
        walk.arrivals(),
        walk.frames
    );
    assert_eq!(walk.arrivals(), 40);
    assert!(worst < 2.4);
    assert!(least > 0.1);
}

fn distance_to_polyline(p: DVec2, line: &[DVec2]) -> f64 {
    line.windows(2)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            let t = ((p - a).dot(b - a) / (b - a).length_squared().max(1e-12)).clamp(0.0, 1.0);
            p.distance(a + (b - a) * t)
        })
        .fold(
            line.first().map_or(f64::INFINITY, |a| p.distance(*a)),
            f64::min,
        )
}

/// The 3D trail of a walk's agent on the set's surface: its climb Σ|Δz| and its length.
fn climb_and_length(set: &MarkerSet, trail: &[DVec2]) -> (f64, f64) {
    let points: Vec<DVec3> = trail.iter().map(|p| set.surface(*p)).collect();
    points.windows(2).fold((0.0, 0.0), |(c, l), w| {
        (c + (w[1].z - w[0].z).abs(), l + w[0].distance(w[1]))
    })
}

fn hausdorff(a: &[DVec2], b: &[DVec2]) -> f64 {
    let one = |a: &[DVec2], b: &[DVec2]| {
        a.iter()
            .map(|p| {
                b.iter()
                    .map(|q| p.distance(*q))
                    .fold(f64::INFINITY, f64::min)
            })
            .fold(0.0, f64::max)
    };
    one(a, b).max(one(b, a))
}

/// Digest 003 test 7 (E3): one agent over a hill, with A* and without: both arrive; the A*
/// walk climbs less and is no longer in 3D; the walks differ.
#[test]
fn t7_a_star_goes_round_the_mountain() {
    let hill = HeightMap::from_fn(DVec2::ZERO, DVec2::new(40.0, 20.0), 0.5, |p| {
        6.0 * (-(p - DVec2::new(20.0, 10.0)).length_squared() / 8.0).exp()
    })
    .unwrap();
    let set = ground(DVec2::new(40.0, 20.0), vec![], Some(hill));
    let mut trails = Vec::new();
    for way in [Way::AStar, Way::Direct] {
        let mut walk = Walk::new(0.5);
        walk.add(
            DVec2::new(4.0, 10.0),
            Some(DVec2::new(36.0, 10.0)),
            order(way),
        );
        walk.run(&set, 3_000);
        assert_eq!(walk.arrivals(), 1, "{way:?}");
        let (climb, length) = climb_and_length(&set, &walk.trails[0]);
        let top = walk.trails[0]
            .iter()
            .map(|p| set.height(*p))
            .fold(0.0, f64::max);
        println!(
            "E3 {way:?}: climb {climb:.2} m, 3D length {length:.2} m, highest {top:.2} m, {} frames",
            walk.frames
        );
        trails.push((climb, length, walk.trails[0].clone()));
    }
    let (a, d) = (&trails[0], &trails[1]);
    assert!(a.0 < d.0, "A* climbs less");
    assert!(a.1 <= d.1, "and walks no farther in 3D");
    let apart = hausdorff(&a.2, &d.2);
    println!("E3: the walks are {apart:.2} m apart (Hausdorff)");
    assert!(apart > 1.0);
}

/// Digest 003 test 8 (E4): a group routed round forbidden ground on a graph that keeps R
/// clear of it: no route node in it, and no agent ever holds a forbidden marker.
#[test]
fn t8_a_star_round_forbidden_ground_without_contact() {
    let mut set = ground(DVec2::new(30.0, 16.0), vec![], None);
    let region = aabb(12.0, 0.0, 18.0, 10.0);
    set.paint(region.clone(), Terrain::Forbidden).unwrap();
    let mut walk = Walk::new(1.0);
    walk.bio = BioCrowd::new(BioCrowdSettings {
        graph: GraphSettings {
            clearance: 2.4,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    for p in block(DVec2::new(3.0, 5.0), 6, 2, 0.9) {
        walk.add(
            p,
            Some(DVec2::new(27.0, 5.0)),
            BioOrder {
                group: Some(0),
                ..order(Way::AStar)
            },
        );
    }
    let mut held = 0;
    for _ in 0..3_000 {
        if walk.at.iter().all(Option::is_none) {
            break;
        }
        walk.step(&set);
        let points: Vec<DVec2> = walk.at.iter().flatten().copied().collect();
        for ids in personal::split(&set, &points, 1.2) {
            held += ids
                .iter()
                .filter(|id| set.marker(**id).unwrap().terrain == Terrain::Forbidden)
                .count();
        }
    }
    let route: Vec<DVec2> = walk
        .events
        .iter()
        .find_map(|e| match e {
            BioEvent::Routed { nodes, .. } => Some(nodes.iter().map(|n| n.truncate()).collect()),
            _ => None,
        })
        .unwrap();
    println!(
        "E4: {} of 6 arrived in {} frames over {} route nodes; forbidden markers held: {held}",
        walk.arrivals(),
        walk.frames,
        route.len()
    );
    assert!(route.iter().all(|p| region.distance(*p).unwrap() > 0.0));
    assert_eq!(walk.arrivals(), 6);
    assert_eq!(held, 0);
}

/// Digest 003 test 10: five marker layouts and spawn jitters, a round hole on the straight
/// line. With A* every run plans the same nodes and passes within r_sub of each; without, the
/// walks go either way round or stall before the hole (printed).
#[test]
fn t10_a_star_routes_are_predictable() {
    // On graph nodes (1.5 m apart): a jitter under 0.75 m keeps the nearest one.
    let start = DVec2::new(3.0, 7.5);
    let goal = DVec2::new(27.0, 7.5);
    let mut spread = Vec::new();
    for way in [Way::AStar, Way::Direct] {
        let mut trails = Vec::new();
        let mut routes = Vec::new();
        let mut arrived = 0;
        for seed in 0..5u64 {
            let mut set = MarkerSet::new(
                MarkerSettings {
                    min: DVec2::ZERO,
                    max: DVec2::new(30.0, 16.0),
                    forbidden_markers: true,
                    ..Default::default()
                },
                vec![],
            )
            .unwrap();
            set.paint(disc(15.0, 7.5, 3.0), Terrain::Forbidden).unwrap();
            set.paint(aabb(8.0, 0.0, 22.0, 3.0), Terrain::Avoid { intensity: 0.5 })
                .unwrap();
            set.generate(Generation::JitteredGrid, 60.0, seed).unwrap();
            let jitter = DVec2::new(
                ((seed * 7 % 5) as f64 - 2.0) * 0.15,
                ((seed * 3 % 5) as f64 - 2.0) * 0.15,
            );
            let mut walk = Walk::new(0.5);
            walk.add(start + jitter, Some(goal), order(way));
            walk.run(&set, 3_000);
            arrived += walk.arrivals();
            if way == Way::AStar {
                assert_eq!(walk.arrivals(), 1, "layout {seed}");
                let nodes: Vec<DVec2> = walk
                    .events
                    .iter()
                    .find_map(|e| match e {
                        BioEvent::Routed { nodes, .. } => {
                            Some(nodes.iter().map(|n| n.truncate()).collect())
                        }
                        _ => None,
                    })
                    .unwrap();
                for n in &nodes[1..] {
                    let near = walk.trails[0]
                        .iter()
                        .map(|p| p.distance(*n))
                        .fold(f64::INFINITY, f64::min);
                    assert!(
                        near <= 1.2 + 1e-9,
                        "layout {seed}: node {n} missed by {near}"
                    );
                }
                routes.push(nodes[1..].to_vec());
            }
            trails.push(walk.trails[0].clone());
        }
        for r in routes.iter().skip(1) {
            assert_eq!(*r, routes[0]);
        }
        let mut worst: f64 = 0.0;
        for i in 0..trails.len() {
            for j in i + 1..trails.len() {
                worst = worst.max(hausdorff(&trails[i], &trails[j]));
            }
        }
        println!(
            "T10 {way:?}: {arrived} of 5 arrived; the five walks lie within {worst:.2} m of each other (Hausdorff)"
        );
        spread.push(worst);
    }
    assert!(spread[0] < 1.2 && spread[0] < spread[1]);
}

/// Digest 003 test 11: fish with the inverted table cross a lake people may not enter, while
/// people walk round it: no fish-frame on land, no person-frame in the lake.
#[test]
fn t11_fish_stay_in_the_lake_and_people_out() {
    let lake = DVec2::new(15.0, 10.0);
    let mut set = ground(DVec2::new(30.0, 20.0), vec![], None);
    set.paint(disc(lake.x, lake.y, 5.0), Terrain::Forbidden)
        .unwrap();
    let mut walk = Walk::new(0.6);
    let fish = BioOrder {
        ft: FtTable::inverted(),
        way: Way::Direct,
        group: None,
    };
    let mut is_fish = Vec::new();
    for k in 0..6 {
        let y = lake.y - 2.5 + k as f64;
        walk.add(DVec2::new(11.5, y), Some(DVec2::new(18.5, y)), fish);
        is_fish.push(true);
    }
    for k in 0..10 {
        let y = 6.0 + k as f64 * 0.9;
        walk.add(
            DVec2::new(2.0, y),
            Some(DVec2::new(28.0, y)),
            order(Way::AStar),
        );
        is_fish.push(false);
    }
    walk.run(&set, 3_000);
    let (mut fish_out, mut people_in) = (0, 0);
    for (k, trail) in walk.trails.iter().enumerate() {
        for p in trail {
            let wet = p.distance(lake) <= 5.0;
            if is_fish[k] && !wet {
                fish_out += 1;
            }
            if !is_fish[k] && wet {
                people_in += 1;
            }
        }
    }
    let fish_home = (0..6).filter(|k| walk.arrived[*k].is_some()).count();
    println!(
        "T11: {} of 16 arrived ({fish_home} of 6 fish); fish-frames on land {fish_out}, person-frames in the lake {people_in}",
        walk.arrivals()
    );
    assert_eq!(walk.arrivals(), 16);
    assert_eq!((fish_out, people_in), (0, 0));
}

/// Digest 003 test 13: on gentle ground (slopes under 15°) an agent stays on the surface.
/// Ours re-projects every step (the height is the surface's by construction); the seed's
/// agent walks its 3D step without it, and its drift from the surface is measured: small on
/// gentle ground, larger on a steep hill (the seed's own limitation, §5.2.1, printed).
#[test]
fn t13_agents_follow_gentle_surfaces() {
    let drift = |height: f64, width: f64| {
        let hill = HeightMap::from_fn(DVec2::ZERO, DVec2::new(30.0, 12.0), 0.5, move |p| {
            height * (-(p - DVec2::new(15.0, 6.0)).length_squared() / (2.0 * width * width)).exp()
        })
        .unwrap();
        let set = ground(DVec2::new(30.0, 12.0), vec![], Some(hill));
        let goal = set.surface(DVec2::new(27.0, 6.5));
        let pace = (1.0 / 24.0) / 0.25;
        let mut free = set.surface(DVec2::new(3.0, 5.5));
        let mut worst: f64 = 0.0;
        let mut steepest: f64 = 0.0;
        for _ in 0..1_500 {
            let markers: Vec<(DVec3, f64)> = set
                .within(free.truncate(), 1.2)
                .into_iter()
                .map(|id| (set.surface(set.marker(id).unwrap().position), 1.0))
                .collect();
            let d = crowdfield_markers::biocrowds::motion(free, goal, &markers);
            let s = crowdfield_markers::biocrowds::step(d * pace, 1.3 / 24.0);
            let before = free.truncate();
            free += s;
            worst = worst.max((free.z - set.height(free.truncate())).abs());
            let run = free.truncate().distance(before);
            if run > 1e-6 {
                steepest = steepest
                    .max(((set.height(free.truncate()) - set.height(before)).abs() / run).atan());
            }
            if free.truncate().distance(goal.truncate()) < 0.5 {
                break;
            }
        }
        (worst, steepest.to_degrees())
    };
    let (gentle, gentle_slope) = drift(1.2, 3.0);
    let (steep, steep_slope) = drift(5.0, 1.5);
    println!(
        "T13: without re-projection the agent drifts {gentle:.3} m from the surface on slopes up to {gentle_slope:.0}°, {steep:.3} m on slopes up to {steep_slope:.0}°"
    );
    assert!(gentle_slope <= 15.0);
    assert!(gentle < 0.05);
    assert!(steep > gentle);
    // Ours: the height is the surface's, exactly.
    let hill = HeightMap::from_fn(DVec2::ZERO, DVec2::new(30.0, 12.0), 0.5, |p| {
        1.2 * (-(p - DVec2::new(15.0, 6.0)).length_squared() / 18.0).exp()
    })
    .unwrap();
    let set = ground(DVec2::new(30.0, 12.0), vec![], Some(hill));
    let mut walk = Walk::new(0.5);
    walk.add(
        DVec2::new(3.0, 5.5),
        Some(DVec2::new(27.0, 6.5)),
        order(Way::Direct),
    );
    walk.run(&set, 1_500);
    assert_eq!(walk.arrivals(), 1);
    let top = walk.trails[0]
        .iter()
        .map(|p| set.height(*p))
        .fold(0.0, f64::max);
    assert!(top > 1.0, "it walked over the hill ({top:.2} m)");
}

/// Digest 003 test 14: counter-flowing groups in a corridor: lanes form (the lane order of the crowd-mode tests above
/// the same agents' with directions shuffled), the mean speed and the markers each agent
/// holds fall as the groups grow.
#[test]
fn t14_lanes_and_speed_falling_with_density() {
    use rand::{Rng, SeedableRng};
    let set = ground(DVec2::new(30.0, 5.0), vec![], None);
    let mut figures = Vec::new();
    for n in [5usize, 20, 40] {
        let mut walk = Walk::new(0.8);
        let rows = 5;
        let mut place = rand_chacha::ChaCha8Rng::seed_from_u64(100 + n as u64);
        for k in 0..n {
            let c = (k / rows) as f64;
            for east in [true, false] {
                let y = 0.4 + ((k % rows) as f64 + place.random::<f64>()) * 0.84;
                let x = 1.0 + c * 1.0 + place.random::<f64>() * 0.3;
                let (from, to) = if east { (x, 29.0) } else { (30.0 - x, 1.0) };
                walk.add(
                    DVec2::new(from, y),
                    Some(DVec2::new(to, y)),
                    order(Way::Direct),
                );
            }
        }
        let (mut distance, mut frames, mut held, mut samples) = (0.0, 0usize, 0usize, 0usize);
        let (mut phi, mut shuffled, mut looks) = (0.0, 0.0, 0);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
        for f in 0..2_400u64 {
            if walk.at.iter().all(Option::is_none) {
                break;
            }
            let before = walk.at.clone();
            walk.step(&set);
            for (a, b) in before.iter().zip(&walk.at) {
                if let (Some(a), Some(b)) = (a, b) {
                    distance += a.distance(*b);
                    frames += 1;
                }
            }
            if f % 12 == 0 {
                let points: Vec<DVec2> = walk.at.iter().flatten().copied().collect();
                for ids in personal::split(&set, &points, 1.2) {
                    held += ids.len();
                    samples += 1;
                }
                let window: Vec<(DVec2, bool)> = walk
                    .at
                    .iter()
                    .enumerate()
                    .filter_map(|(k, p)| Some(((*p)?, k % 2 == 0)))
                    .filter(|(p, _)| (8.0..=22.0).contains(&p.x))
                    .collect();
                let east = window.iter().filter(|a| a.1).count();
                if east >= 2 && window.len() - east >= 2 {
                    phi += common::lane_order(&window).unwrap_or(0.0);
                    let mut labels: Vec<bool> = window.iter().map(|a| a.1).collect();
                    for k in (1..labels.len()).rev() {
                        labels.swap(k, rng.random_range(0..=k));
                    }
                    let relabelled: Vec<(DVec2, bool)> =
                        window.iter().zip(labels).map(|(a, l)| (a.0, l)).collect();
                    shuffled += common::lane_order(&relabelled).unwrap_or(0.0);
                    looks += 1;
                }
            }
        }
        let speed = distance / frames as f64 * 24.0;
        let markers = held as f64 / samples as f64;
        let (phi, base) = (phi / looks.max(1) as f64, shuffled / looks.max(1) as f64);
        println!(
            "T14: {n} a side: mean speed {speed:.2} m/s, {markers:.0} markers held each, lane order {phi:.2} (shuffled {base:.2}), {} of {} arrived in {} frames",
            walk.arrivals(),
            2 * n,
            walk.frames
        );
        figures.push((speed, markers, phi, base));
    }
    for w in figures.windows(2) {
        assert!(w[1].0 < w[0].0, "speed falls with density");
        assert!(w[1].1 < w[0].1, "personal space shrinks with density");
    }
    let (_, _, phi, base) = figures[2];
    assert!(phi > base + 0.1, "lanes: {phi:.2} against {base:.2}");
}

/// The test house: a living room and a kitchen below a hall, a bedroom, a bathroom and a
/// laundry above it; doors from the hall to each, and one between the living room and the
/// kitchen.
fn test_house() -> House {
    let room = |kind: RoomKind, x0: f64, y0: f64, x1: f64, y1: f64| Room {
        name: format!("{kind:?}"),
        kind,
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    };
    let door = |x: f64, y: f64, a: usize, b: usize| Door {
        position: DVec2::new(x, y),
        rooms: [a, b],
        width: 1.0,
    };
    House::new(
        vec![
            room(RoomKind::LivingRoom, 0.0, 0.0, 6.0, 4.0),
            room(RoomKind::Kitchen, 6.0, 0.0, 10.0, 4.0),
            room(RoomKind::Hall, 0.0, 4.0, 10.0, 6.0),
            room(RoomKind::Bedroom, 0.0, 6.0, 4.0, 10.0),
            room(RoomKind::Bathroom, 4.0, 6.0, 7.0, 10.0),
            room(RoomKind::Laundry, 7.0, 6.0, 10.0, 10.0),
        ],
        vec![
            door(3.0, 4.0, 0, 2),
            door(8.0, 4.0, 1, 2),
            door(6.0, 2.0, 0, 1),
            door(2.0, 6.0, 2, 3),
            door(5.5, 6.0, 2, 4),
            door(8.5, 6.0, 2, 5),
        ],
    )
    .unwrap()
}

/// Digest 003 test 12 (E5): three agents live the routine in the test house for 25 minutes:
/// each action's doors are passed in A* order, the agent ends on a marker of the action's
/// room, stays the action's duration (±1 step), then draws another; every room with actions
/// is visited; nobody walks through a wall.
#[test]
fn t12_the_indoor_routine() {
    let house = test_house();
    let walls = house.walls(0.1);
    let set = ground(DVec2::new(10.0, 10.0), walls.clone(), None);
    let mut walk = Walk::new(0.0);
    walk.bio.set_house(Some(house.clone()));
    for (k, p) in [(1.0, 1.0), (8.0, 2.0), (2.0, 8.0)].into_iter().enumerate() {
        walk.add(
            DVec2::new(p.0, p.1),
            None,
            order(Way::Routine { seed: k as u64 }),
        );
    }
    walk.run(&set, 36_000);
    let in_wall = walk.frames_where(|p| walls.iter().any(|w| w.distance(p).unwrap() < 0.0));
    assert_eq!(in_wall, 0);
    let dt = BioCrowdSettings::default().dt;
    let mut visited = std::collections::BTreeSet::new();
    let mut actions = 0;
    let mut replans = 0;
    for agent in 0..3u32 {
        let mine: Vec<&BioEvent> = walk
            .events
            .iter()
            .filter(|e| match e {
                BioEvent::ActionChosen { agent: a, .. }
                | BioEvent::DoorPassed { agent: a, .. }
                | BioEvent::DoorsReplanned { agent: a, .. }
                | BioEvent::ActionStarted { agent: a, .. }
                | BioEvent::ActionDone { agent: a, .. }
                | BioEvent::RouteRefused { agent: a, .. }
                | BioEvent::Routed { agent: a, .. } => a.0 == agent,
            })
            .collect();
        let mut k = 0;
        while k < mine.len() {
            let BioEvent::ActionChosen {
                room,
                action,
                doors,
                ..
            } = mine[k]
            else {
                panic!(
                    "agent {agent}: {:?} where an action should be chosen",
                    mine[k]
                );
            };
            k += 1;
            // The doors passed, against those planned (planned again where pushed off).
            let mut passed = Vec::new();
            let mut planned = doors.clone();
            loop {
                match mine.get(k) {
                    Some(BioEvent::DoorPassed { door, .. }) => passed.push(*door),
                    Some(BioEvent::DoorsReplanned { doors, .. }) => {
                        planned = passed
                            .iter()
                            .copied()
                            .chain(doors.iter().copied())
                            .collect();
                        replans += 1;
                    }
                    _ => break,
                }
                k += 1;
            }
            let doors = &planned;
            let Some(BioEvent::ActionStarted {
                room: started,
                place,
                step,
                ..
            }) = mine.get(k)
            else {
                // The run ended on the way.
                assert!(k == mine.len(), "agent {agent}: {:?}", mine.get(k));
                assert!(doors.starts_with(&passed));
                break;
            };
            k += 1;
            assert_eq!(passed, *doors, "agent {agent}: doors in A* order");
            assert_eq!(started, room);
            let nearest = set
                .within(*place, 1.0)
                .into_iter()
                .map(|id| set.marker(id).unwrap().position)
                .min_by(|a, b| a.distance(*place).total_cmp(&b.distance(*place)))
                .unwrap();
            assert_eq!(house.room_at(nearest), Some(*room), "l_k of the place");
            visited.insert(*room);
            actions += 1;
            let duration = house.rooms()[*room]
                .kind
                .actions()
                .iter()
                .find(|a| a.name == *action)
                .unwrap()
                .duration;
            match mine.get(k) {
                Some(BioEvent::ActionDone { step: done, .. }) => {
                    let want = (duration / dt).round() as i64;
                    assert!(((*done - *step) as i64 - want).abs() <= 1);
                    k += 1;
                }
                None => break,
                other => panic!("agent {agent}: {other:?} during an action"),
            }
        }
    }
    println!(
        "T12: {actions} actions done by 3 agents in {} frames ({replans} doors planned again); rooms visited {visited:?}",
        walk.frames
    );
    for (id, s) in walk.bio.states() {
        println!(
            "T12: agent {id:?} at {:?}: {:?}",
            walk.at[id.0 as usize],
            s.routine()
        );
    }
    let with_actions: Vec<usize> = (0..house.rooms().len())
        .filter(|r| !house.rooms()[*r].kind.actions().is_empty())
        .collect();
    assert_eq!(visited.iter().copied().collect::<Vec<_>>(), with_actions);
    assert!(walk.bio.states().all(|(_, s)| matches!(
        s.routine(),
        Some(RoutinePhase::Walking { .. } | RoutinePhase::Acting { .. })
    )));
}

/// Bad input: ft tables outside [0, 1], bad settings, a goal on forbidden ground (the agent
/// is told and stands), a routine outside the house, seed 002's back end on a set with
/// forbidden markers, height maps with NaN: typed errors or events, nothing panics.
#[test]
fn bad_input_is_refused_or_reported() {
    let mut bio = BioCrowd::new(BioCrowdSettings::default()).unwrap();
    let wrong = BioOrder {
        ft: FtTable {
            avoid: Some(1.5),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(matches!(
        bio.insert(AgentId(0), wrong),
        Err(MarkerError::BadSetting(_))
    ));
    assert!(
        BioCrowd::new(BioCrowdSettings {
            radius: f64::NAN,
            ..Default::default()
        })
        .is_err()
    );
    let mut set = ground(DVec2::new(20.0, 10.0), vec![], None);
    set.paint(disc(15.0, 5.0, 2.0), Terrain::Forbidden).unwrap();
    let mut walk = Walk::new(0.5);
    walk.add(
        DVec2::new(2.0, 5.0),
        Some(DVec2::new(15.0, 5.0)),
        order(Way::AStar),
    );
    walk.bio.set_house(Some(test_house()));
    walk.add(DVec2::new(30.0, 5.0), None, order(Way::Routine { seed: 1 }));
    for _ in 0..50 {
        walk.step(&set);
    }
    assert_eq!(walk.trails[0].len(), 51);
    assert!(walk.trails[0].iter().all(|p| *p == DVec2::new(2.0, 5.0)));
    let refused: Vec<&MarkerError> = walk
        .events
        .iter()
        .filter_map(|e| match e {
            BioEvent::RouteRefused { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 2, "once each: {refused:?}");
    assert!(matches!(refused[0], MarkerError::GoalNotWalkable { .. }));
    // Seed 002's back end keeps off sets with forbidden markers.
    let mut crowd = MarkerCrowd::new(MarkerCrowdSettings::default()).unwrap();
    assert!(crowd.insert(&set, AgentId(0), Order::Goals).is_err());
    // NaN heights.
    assert!(HeightMap::new(DVec2::ZERO, 1.0, 2, 2, vec![0.0, f64::NAN, 0.0, 0.0]).is_err());
}

/// The determinism contract: a BioCrowds step gives the same displacements bit for bit on one,
/// two and three threads (bands of the marker index are summed in band order).
#[test]
fn bio_steps_do_not_depend_on_the_thread_count() {
    let hill = HeightMap::from_fn(DVec2::ZERO, DVec2::new(40.0, 30.0), 1.0, |p| {
        (p.x / 5.0).sin() * (p.y / 4.0).cos()
    })
    .unwrap();
    let mut set = ground(DVec2::new(40.0, 30.0), vec![], Some(hill));
    set.paint(disc(20.0, 15.0, 3.0), Terrain::Avoid { intensity: 0.5 })
        .unwrap();
    let sensed: Vec<Sensed> = (0..300)
        .map(|k| Sensed {
            id: AgentId(k),
            position: DVec2::new(1.0 + (k % 30) as f64 * 1.3, 1.0 + (k / 30) as f64 * 2.8),
            goal: Some(DVec2::new(39.0 - (k % 7) as f64, 15.0)),
        })
        .collect();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut bio = BioCrowd::new(BioCrowdSettings::default()).unwrap();
        for a in &sensed {
            bio.insert(a.id, order(Way::Direct)).unwrap();
        }
        pool.install(|| bio.step(&set, &sensed).unwrap())
    };
    let one = run(1);
    assert!(one.iter().any(|(_, d)| d.length() > 0.0));
    for threads in [2, 3] {
        let other = run(threads);
        assert!(
            one.iter().zip(&other).all(|(a, b)| a.0 == b.0
                && a.1.x.to_bits() == b.1.x.to_bits()
                && a.1.y.to_bits() == b.1.y.to_bits()),
            "{threads} threads"
        );
    }
}
