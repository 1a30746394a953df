//! Headless app tests of terrain reasoning in the plugin (seed 003): BioCrowds agents on a
//! terrain in the x–z plane, fish in a lake, a routine in a house, terrain files, bad input.

mod common;

use bevy::prelude::*;
use bevy_crowdfield::markers::{
    Door, FtTable, HeightMap, House, Room, RoomKind, RoutinePhase, Terrain, TerrainRegion, Way,
};
use bevy_crowdfield::prelude::*;
use common::*;

fn hill() -> HeightMap {
    HeightMap::from_fn(DVec2::ZERO, DVec2::new(30.0, 12.0), 0.5, |p| {
        1.5 * (-(p - DVec2::new(15.0, 8.0)).length_squared() / 12.0).exp()
    })
    .unwrap()
}

fn pond() -> Shape {
    Shape::Disc {
        centre: DVec2::new(15.0, 4.0),
        radius: 2.0,
    }
}

#[derive(Resource, Default)]
struct Refused(Vec<BioOrderRejected>);

fn refused(mut seen: ResMut<Refused>, mut m: MessageReader<BioOrderRejected>) {
    seen.0.extend(m.read().cloned());
}

fn terrain_app(ground: TerrainGround, plane: GroundPlane) -> App {
    let mut app = app(30.0, 12.0);
    app.insert_resource(CrowdfieldSettings {
        planner_hz: HZ,
        world_min: Vec2::ZERO,
        world_max: Vec2::new(30.0, 12.0),
        plane,
        ..default()
    })
    .insert_resource(ground)
    .init_resource::<Refused>()
    .add_systems(FixedUpdate, refused.after(CrowdfieldSystems::Events));
    app
}

fn ground_of(t: &Transform, plane: GroundPlane) -> Vec2 {
    plane.to_ground(t.translation)
}

/// Walkers on A* routes in the x–z plane of a 3D game: they arrive, never stand on the
/// forbidden pond, and their Transforms stand on the hill's surface.
#[test]
fn bio_agents_walk_a_terrain_in_the_xz_plane() {
    let heights = hill();
    let mut app = terrain_app(
        TerrainGround {
            heights: Some(heights.clone()),
            regions: vec![TerrainRegion {
                shape: pond(),
                terrain: Terrain::Forbidden,
            }],
            ..default()
        },
        GroundPlane::XZ,
    );
    let walkers: Vec<Entity> = [3.0, 4.0, 5.0]
        .iter()
        .map(|y| {
            let at = Vec2::new(2.0, *y);
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_xyz(at.x, heights.height(at.as_dvec2()) as f32, -at.y),
                    AgentGoals::point(Vec2::new(28.0, 4.0)),
                    BioSteering {
                        group: Some(0),
                        ..default()
                    },
                ))
                .id()
        })
        .collect();
    let (mut off_surface, mut wet): (f32, usize) = (0.0, 0);
    let steps = run_until(&mut app, 600, |app| {
        for w in &walkers {
            let t = app.world().get::<Transform>(*w).unwrap();
            let p = ground_of(t, GroundPlane::XZ);
            off_surface =
                off_surface.max((t.translation.y - heights.height(p.as_dvec2()) as f32).abs());
            if p.distance(Vec2::new(15.0, 4.0)) < 2.0 {
                wet += 1;
            }
        }
        seen(app).arrived.len() == 3
    });
    println!("x–z terrain: 3 arrived in {steps} planner steps; off the surface by {off_surface}");
    assert!(steps < 600, "all arrived");
    assert_eq!(wet, 0);
    assert!(off_surface < 1e-4);
    assert!(
        app.world()
            .resource::<TerrainWorld>()
            .markers()
            .unwrap()
            .len()
            > 10_000
    );
    assert!(app.world().resource::<Refused>().0.is_empty());
    // The pond is a crowd obstacle spawned by the terrain.
    let mut obstacles = app
        .world_mut()
        .query::<(&CrowdObstacle, &bevy_crowdfield::FromTerrain)>();
    assert_eq!(
        obstacles
            .iter(app.world())
            .filter(|(_, f)| f.forbidden)
            .count(),
        1
    );
}

/// Fish (the inverted table) cross a lake people may not walk into, while people walk round
/// it; the lake is no crowd obstacle here (`forbidden_obstacles` off).
#[test]
fn fish_stay_in_their_lake() {
    let mut app = terrain_app(
        TerrainGround {
            regions: vec![TerrainRegion {
                shape: Shape::Disc {
                    centre: DVec2::new(15.0, 6.0),
                    radius: 4.0,
                },
                terrain: Terrain::Forbidden,
            }],
            forbidden_obstacles: false,
            ..default()
        },
        GroundPlane::XY,
    );
    let lake = Vec2::new(15.0, 6.0);
    let fish: Vec<Entity> = [5.0, 6.0, 7.0]
        .iter()
        .map(|y| {
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_xyz(12.0, *y, 0.0),
                    AgentGoals::point(Vec2::new(18.0, *y)),
                    BioSteering {
                        ft: FtTable::inverted(),
                        way: Way::Direct,
                        group: None,
                    },
                ))
                .id()
        })
        .collect();
    let walker = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(2.0, 6.0, 0.0),
            AgentGoals::point(Vec2::new(28.0, 6.0)),
            BioSteering::default(),
        ))
        .id();
    let (mut fish_out, mut walker_in) = (0, 0);
    let steps = run_until(&mut app, 600, |app| {
        for f in &fish {
            let p = app
                .world()
                .get::<Transform>(*f)
                .unwrap()
                .translation
                .truncate();
            if p.distance(lake) > 4.0 {
                fish_out += 1;
            }
        }
        let p = app
            .world()
            .get::<Transform>(walker)
            .unwrap()
            .translation
            .truncate();
        if p.distance(lake) < 4.0 {
            walker_in += 1;
        }
        seen(app).arrived.len() == 4
    });
    assert!(steps < 600, "all arrived");
    assert_eq!((fish_out, walker_in), (0, 0));
}

fn small_house() -> House {
    let room = |kind, x0: f64, x1: f64| Room {
        name: format!("{kind:?}"),
        kind,
        min: DVec2::new(x0, 2.0),
        max: DVec2::new(x1, 8.0),
    };
    House::new(
        vec![
            room(RoomKind::Kitchen, 2.0, 8.0),
            room(RoomKind::Hall, 8.0, 12.0),
            room(RoomKind::Bedroom, 12.0, 18.0),
        ],
        vec![
            Door {
                position: DVec2::new(8.0, 5.0),
                rooms: [0, 1],
                width: 1.0,
            },
            Door {
                position: DVec2::new(12.0, 4.0),
                rooms: [1, 2],
                width: 1.0,
            },
        ],
    )
    .unwrap()
}

/// An agent lives the routine in a house: its walls are obstacles, and it reaches rooms and
/// acts there.
#[test]
fn a_routine_in_a_house() {
    let mut app = terrain_app(
        TerrainGround {
            house: Some(small_house()),
            ..default()
        },
        GroundPlane::XY,
    );
    let dweller = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(4.0, 4.0, 0.0),
            BioSteering {
                way: Way::Routine { seed: 3 },
                ..default()
            },
        ))
        .id();
    let mut rooms = std::collections::BTreeSet::new();
    for _ in 0..1_500 {
        app.update();
        let agents = app.world().resource::<BioAgents>();
        if let Some(RoutinePhase::Acting { room, .. }) =
            agents.state(dweller).and_then(|s| s.routine())
        {
            rooms.insert(*room);
        }
    }
    println!(
        "routine: rooms acted in {rooms:?}; markers {:?}, agents {}, state {:?}, at {:?}, rejected {:?}",
        app.world()
            .resource::<TerrainWorld>()
            .markers()
            .map(|s| s.len()),
        app.world().resource::<BioAgents>().crowd().len(),
        app.world()
            .resource::<BioAgents>()
            .state(dweller)
            .map(|s| s.routine().cloned()),
        app.world().get::<Transform>(dweller).unwrap().translation,
        seen(&app).rejected,
    );
    assert!(rooms.contains(&0) && rooms.contains(&2), "{rooms:?}");
    let walls = app
        .world_mut()
        .query_filtered::<&CrowdObstacle, With<bevy_crowdfield::FromTerrain>>()
        .iter(app.world())
        .count();
    assert!(walls > 8);
}

/// Bad input: an ft table outside [0, 1] and a goal on forbidden ground (no crowd obstacle
/// here: the crowd itself would refuse a goal inside one) are told once each and the agents
/// stand; a density of 0 is told; terrain files round trip and bad text is refused.
#[test]
fn bad_terrain_input_is_told() {
    let ground = TerrainGround {
        regions: vec![TerrainRegion {
            shape: pond(),
            terrain: Terrain::Forbidden,
        }],
        forbidden_obstacles: false,
        ..default()
    };
    let text = ground.to_ron();
    assert_eq!(TerrainGround::from_ron(&text).unwrap(), ground);
    assert!(TerrainGround::from_ron("TerrainGround(density: \"many\")").is_err());
    let mut app = terrain_app(ground, GroundPlane::XY);
    let wrong = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(2.0, 8.0, 0.0),
            AgentGoals::point(Vec2::new(28.0, 8.0)),
            BioSteering {
                ft: FtTable {
                    walkable: 1.5,
                    ..default()
                },
                ..default()
            },
        ))
        .id();
    let wet = app
        .world_mut()
        .spawn((
            CrowdAgent,
            Transform::from_xyz(2.0, 4.0, 0.0),
            AgentGoals::point(Vec2::new(15.0, 4.0)),
            BioSteering::default(),
        ))
        .id();
    for _ in 0..40 {
        app.update();
    }
    let told: Vec<Option<Entity>> = app
        .world()
        .resource::<Refused>()
        .0
        .iter()
        .map(|m| m.entity)
        .collect();
    assert_eq!(told, vec![Some(wrong), Some(wet)]);
    for e in [wrong, wet] {
        let p = app
            .world()
            .get::<Transform>(e)
            .unwrap()
            .translation
            .truncate();
        assert!(p.x < 2.5, "{p}");
    }
    app.insert_resource(TerrainGround {
        density: 0.0,
        ..default()
    });
    let mut rejected = 0;
    for _ in 0..5 {
        app.update();
        rejected += app
            .world()
            .resource::<Messages<TerrainRejected>>()
            .iter_current_update_messages()
            .count();
    }
    assert!(rejected >= 1);
}

/// The shipped terrain scenario: the terrain and the BioCrowds orders reach the app, every
/// walker arrives, none walks into the pond; bad terrains and ft tables are refused on load.
#[test]
fn the_terrain_scenario_runs() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/scenarios/terrain.scenario.ron"
    );
    let scenario = Scenario::from_path(std::path::Path::new(path)).unwrap();
    scenario.check_world().unwrap();
    // The same file in a 2D game and on a 3D game's x–z ground.
    for plane in [GroundPlane::XY, GroundPlane::XZ] {
        let mut app = app(40.0, 20.0);
        app.world_mut().resource_mut::<CrowdfieldSettings>().plane = plane;
        scenario.apply_settings(&mut app.world_mut().resource_mut::<CrowdfieldSettings>());
        let mut queue = bevy::ecs::world::CommandQueue::default();
        let spawned = scenario.spawn_on(
            &mut Commands::new(&mut queue, app.world()),
            None,
            plane,
            &GroundHeight::default(),
        );
        queue.apply(app.world_mut());
        assert!(spawned.iter().all(|m| *m == 0));
        let mut steered = app.world_mut().query::<(Entity, &BioSteering)>();
        let walkers: Vec<Entity> = steered.iter(app.world()).map(|(e, _)| e).collect();
        assert_eq!(walkers.len(), 18);
        if plane == GroundPlane::XY {
            // A 2D game's depth is left alone, hills or not.
            for w in &walkers {
                assert_eq!(app.world().get::<Transform>(*w).unwrap().translation.z, 0.0);
            }
        }
        let heights = scenario
            .terrain
            .as_ref()
            .and_then(|t| t.heights.clone())
            .unwrap();
        let (mut wet, mut off_surface) = (0, 0.0f32);
        let steps = run_until(&mut app, 800, |app| {
            for w in &walkers {
                let Some(t) = app.world().get::<Transform>(*w) else {
                    continue;
                };
                let p = plane.to_ground(t.translation);
                if p.distance(Vec2::new(20.0, 10.0)) < 3.5 {
                    wet += 1;
                }
                if plane == GroundPlane::XZ {
                    let h = heights.height(p.as_dvec2()) as f32;
                    off_surface = off_surface.max((t.translation.y - h).abs());
                }
            }
            seen(app).arrived.len() == 18
        });
        println!(
            "terrain scenario on {plane:?}: 18 arrived in {steps} planner steps, \
             farthest off the surface {off_surface:.2e} m"
        );
        assert!(steps < 800);
        assert_eq!(wet, 0);
        assert!(off_surface < 1e-3, "{off_surface}");
    }
    let text = std::fs::read_to_string(path).unwrap();
    for (from, to) in [
        (
            "bio: Some((way: Direct))",
            "bio: Some((way: Direct, ft: (walkable: 2.0)))",
        ),
        ("intensity: 0.7", "intensity: 1.5"),
        ("cols: 9, rows: 5", "cols: 9, rows: 4"),
    ] {
        let bad = text.replace(from, to);
        let checked = Scenario::from_ron(&bad).and_then(|s| s.check_world());
        assert!(
            matches!(checked, Err(bevy_crowdfield::ScenarioError::Markers { .. })),
            "{to}: {checked:?}"
        );
    }
}

#[derive(Resource, Default)]
struct BrushesRefused(usize);

fn brushes_refused(mut seen: ResMut<BrushesRefused>, mut m: MessageReader<BrushRejected>) {
    seen.0 += m.read().count();
}

/// With a terrain and no seed 002 ground, the sketch tool's paint brush paints the terrain: a
/// forbidden stroke types its markers, becomes an obstacle, and no marker set of seed 002 is
/// made; sprays are refused; Undo takes the stroke back.
#[test]
fn brushes_paint_the_terrain() {
    use bevy_crowdfield::sketch::{Brush, BrushKind};
    let mut app = terrain_app(TerrainGround::default(), GroundPlane::XY);
    app.init_resource::<BrushesRefused>()
        .add_systems(Update, brushes_refused);
    let built = |app: &App| app.world().resource::<TerrainWorld>().version();
    run_until(&mut app, 20, |app| built(app) > 0);
    let before = built(&app);
    let stroke = |kind| MarkerBrush::Stroke {
        brush: Brush { kind, radius: 1.0 },
        points: vec![Vec2::new(10.0, 1.0), Vec2::new(10.0, 11.0)],
    };
    app.world_mut()
        .write_message(stroke(BrushKind::Paint(Terrain::Forbidden)));
    run_until(&mut app, 20, |app| built(app) > before);
    let regions = app.world().resource::<TerrainGround>().regions.clone();
    assert_eq!(regions.len(), 1);
    let set = app.world().resource::<TerrainWorld>().markers().unwrap();
    let (mut inside, mut typed) = (0, 0);
    for (_, m) in set.markers() {
        if (m.position.x - 10.0).abs() < 0.9 && m.position.y > 2.0 && m.position.y < 10.0 {
            inside += 1;
            typed += usize::from(m.terrain == Terrain::Forbidden);
        }
    }
    assert!(
        inside > 100 && typed == inside,
        "{typed} of {inside} typed forbidden"
    );
    let mut obstacles = app.world_mut().query::<&bevy_crowdfield::FromTerrain>();
    assert_eq!(
        obstacles.iter(app.world()).filter(|f| f.forbidden).count(),
        1
    );
    assert!(app.world().resource::<MarkerWorld>().markers().is_none());

    app.world_mut().write_message(stroke(BrushKind::Erase));
    app.update();
    assert_eq!(app.world().resource::<BrushesRefused>().0, 1);
    assert_eq!(app.world().resource::<TerrainGround>().regions.len(), 1);

    let before = built(&app);
    app.world_mut().write_message(MarkerBrush::Undo);
    run_until(&mut app, 20, |app| built(app) > before);
    assert!(app.world().resource::<TerrainGround>().regions.is_empty());
    let set = app.world().resource::<TerrainWorld>().markers().unwrap();
    assert!(set.markers().all(|(_, m)| m.terrain == Terrain::Walkable));
    assert_eq!(obstacles.iter(app.world()).count(), 0);
}

/// Counts (agent-frames on the patch's rectangle, walkers' and members', on the pond, walkers arrived, group arrived,
/// whether the walkers' goal follows the terrain) for ten BVP walkers and a group of six
/// crossing a 30 × 12 m field with a patch to avoid (ι = 0.9, x 12–18 up to y = 7.5) across
/// the straight way and a forbidden pond beyond it; the walkers head for the east edge's south,
/// the group for its north.
fn bvp_crossing(guide_goals: bool) -> ((usize, usize), usize, usize, bool, bool) {
    let aabb = |x0: f64, y0: f64, x1: f64, y1: f64| Shape::Aabb {
        min: DVec2::new(x0, y0),
        max: DVec2::new(x1, y1),
    };
    let pond = Shape::Disc {
        centre: DVec2::new(22.5, 5.0),
        radius: 2.0,
    };
    let mut app = terrain_app(
        TerrainGround {
            regions: vec![
                TerrainRegion {
                    shape: aabb(12.0, 0.0, 18.0, 7.5),
                    terrain: Terrain::Avoid { intensity: 0.9 },
                },
                TerrainRegion {
                    shape: pond.clone(),
                    terrain: Terrain::Forbidden,
                },
            ],
            guide_goals,
            ..default()
        },
        GroundPlane::XY,
    );
    let goal = Vec2::new(27.5, 3.5);
    let walkers: Vec<Entity> = (0..10)
        .map(|k| {
            let p = Vec2::new(2.0 + (k / 5) as f32 * 1.2, 2.5 + (k % 5) as f32);
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_translation(p.extend(0.0)),
                    AgentGoals::point(goal).then_despawn(),
                ))
                .id()
        })
        .collect();
    let group = app
        .world_mut()
        .spawn((
            CrowdGroup::in_formation(Formation::template(FormationTemplate::Box)),
            GroupOrder::MoveTo(Vec2::new(26.0, 9.5)),
        ))
        .id();
    let members: Vec<Entity> = (0..6)
        .map(|i| {
            let p = Vec2::new(6.0 + (i % 3) as f32 * 1.5, 3.0 + (i / 3) as f32 * 1.5);
            app.world_mut()
                .spawn((
                    CrowdAgent,
                    Transform::from_translation(p.extend(0.0)),
                    MemberOf(group),
                ))
                .id()
        })
        .collect();
    // A BioCrowds walker with a goal of its own: it steers by markers, its goal keeps the
    // crowd's map.
    let bio_goal = Vec2::new(28.0, 10.5);
    app.world_mut().spawn((
        CrowdAgent,
        Transform::from_xyz(2.0, 10.5, 0.0),
        AgentGoals::point(bio_goal),
        BioSteering::default(),
    ));
    let (mut on_patch, mut in_pond) = ((0, 0), 0);
    run_until(&mut app, 1_500, |app| {
        for e in walkers.iter().chain(&members) {
            if seen(app).arrived.contains(e) {
                continue;
            }
            let Some(t) = app.world().get::<Transform>(*e) else {
                continue;
            };
            let p = t.translation.truncate().as_dvec2();
            if (12.0..=18.0).contains(&p.x) && p.y <= 7.5 {
                on_patch.0 += usize::from(walkers.contains(e));
                on_patch.1 += usize::from(members.contains(e));
            }
            if pond.distance(p).is_ok_and(|d| d < 0.0) {
                in_pond += 1;
            }
        }
        let group_home = app
            .world()
            .get::<GroupStatus>(group)
            .is_some_and(|s| s.arrived);
        let home = walkers
            .iter()
            .filter(|w| seen(app).arrived.contains(w))
            .count();
        home == walkers.len() && group_home
    });
    let arrived = walkers
        .iter()
        .filter(|w| seen(&app).arrived.contains(w))
        .count();
    let group_home = app
        .world()
        .get::<GroupStatus>(group)
        .is_some_and(|s| s.arrived);
    let world = app.world().resource::<CrowdWorld>();
    let crowd = world.crowd().unwrap();
    let terrain = app.world().resource::<TerrainWorld>();
    let guided = crowd.goal_ids().any(|g| terrain.guides(g));
    let bio_guided = crowd.goal_ids().any(|g| {
        terrain.guides(g) && crowd.goal(g).unwrap().centre().as_vec2().distance(bio_goal) < 1e-3
    });
    assert!(
        !bio_guided,
        "a goal only a BioCrowds walker heads for keeps the crowd's map"
    );
    (on_patch, in_pond, arrived, group_home, guided)
}

/// BVP walkers and groups in the plugin follow the terrain's weighted maps: with
/// `guide_goals` on, fewer agent-frames on ground to avoid than with the crowd's own maps;
/// none on forbidden ground either way; everyone arrives.
#[test]
fn bvp_walkers_and_groups_follow_the_terrain() {
    let plain = bvp_crossing(false);
    let guided = bvp_crossing(true);
    println!(
        "agent-frames on the patch (walkers, members): crowd's maps {:?}, terrain maps {:?} \
         (pond {} / {}, walkers home {} / {}, group home {} / {})",
        plain.0, guided.0, plain.1, guided.1, plain.2, guided.2, plain.3, guided.3
    );
    assert!(
        !plain.4 && guided.4,
        "only the guided run's goals follow the terrain"
    );
    assert_eq!((plain.1, guided.1), (0, 0));
    assert_eq!((plain.2, guided.2), (10, 10));
    assert!(plain.3 && guided.3);
    assert!(
        (guided.0.0 as f64) < 0.75 * plain.0.0 as f64,
        "walkers: {:?} vs {:?}",
        guided.0,
        plain.0
    );
    assert!(
        (guided.0.1 as f64) < 0.75 * plain.0.1 as f64,
        "group: {:?} vs {:?}",
        guided.0,
        plain.0
    );
}
