//! Headless app tests of the marker back end in the plugin: marker agents beside BVP agents
//! (same goals, states and messages; they never overlap), pursuit, handing an agent back,
//! bad orders.

mod common;

use bevy::prelude::*;
use bevy_crowdfield::markers::Generation;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::steer::Steering;
use common::*;

#[derive(Resource, Default)]
struct Refused(Vec<MarkerOrderRejected>);

fn collect(mut refused: ResMut<Refused>, mut orders: MessageReader<MarkerOrderRejected>) {
    refused.0.extend(orders.read().cloned());
}

fn marker_app() -> App {
    let mut app = app(30.0, 20.0);
    app.init_resource::<Refused>()
        .add_systems(Last, collect)
        .insert_resource(MarkerGround {
            generation: Generation::JitteredGrid,
            ..default()
        });
    app
}

fn walker(app: &mut App, from: Vec2, to: Vec2, markers: bool) -> Entity {
    let mut e = app.world_mut().spawn((
        CrowdAgent,
        AgentGoals::point(to),
        Transform::from_translation(from.extend(0.0)),
    ));
    if markers {
        e.insert(MarkerSteering::Goals);
    }
    e.id()
}

fn steering(app: &App, agent: Entity) -> Option<Steering> {
    let world = app.world().resource::<CrowdWorld>();
    let id = world.agent_id(agent)?;
    Some(world.crowd()?.agent(id)?.params().steering)
}

#[test]
fn marker_and_bvp_agents_walk_side_by_side_and_never_overlap() {
    let mut app = marker_app();
    // Head-on: a BVP walker and a marker walker on one line, and two more crossing it.
    let bvp = walker(&mut app, Vec2::new(2.0, 10.0), Vec2::new(28.0, 10.0), false);
    let marker = walker(&mut app, Vec2::new(28.0, 10.2), Vec2::new(2.0, 10.2), true);
    let crossing = walker(&mut app, Vec2::new(15.0, 2.0), Vec2::new(15.0, 18.0), true);
    let other = walker(&mut app, Vec2::new(14.0, 18.0), Vec2::new(14.0, 2.0), false);
    let all = [bvp, marker, crossing, other];
    let mut least = f32::INFINITY;
    run_until(&mut app, 2, |_| false);
    let steps = run_until(&mut app, 400, |app| {
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                least = least.min(planned(app, *a).distance(planned(app, *b)));
            }
        }
        all.iter().all(|a| seen(app).arrived.contains(a))
    });
    assert!(
        steps < 400,
        "not all arrived: {:?}",
        all.map(|a| state(&app, a))
    );
    assert_eq!(steering(&app, marker), Some(Steering::External));
    assert_eq!(steering(&app, bvp), Some(Steering::LocalMap));
    for a in all {
        assert_eq!(state(&app, a), AgentState::Arrived);
    }
    // Radii 0.25: the collision guard keeps every pair at least 0.5 apart.
    assert!(least >= 0.5 - 1e-3, "{least}");
    let agents = app.world().resource::<MarkerAgents>();
    assert!(agents.agent(marker).is_some() && agents.agent(bvp).is_none());
    assert!(app.world().resource::<Refused>().0.is_empty());
}

/// A walker from (4, 4) to (26, 16) and a marker agent at (4, 16) pursuing it.
fn pursuit() -> (App, Entity, Entity) {
    let mut app = marker_app();
    let target = walker(&mut app, Vec2::new(4.0, 4.0), Vec2::new(26.0, 16.0), false);
    let pursuer = app
        .world_mut()
        .spawn((
            CrowdAgent,
            MarkerSteering::Pursue(target),
            Transform::from_xyz(4.0, 16.0, 0.0),
        ))
        .id();
    (app, target, pursuer)
}

#[test]
fn a_marker_agent_pursues_a_walker() {
    let (mut app, target, pursuer) = pursuit();
    let mut closest = f32::INFINITY;
    run_until(&mut app, 200, |app| {
        closest = closest.min(planned(app, pursuer).distance(planned(app, target)));
        false
    });
    assert!(closest <= 1.0, "{closest}");
}

#[test]
fn an_agent_without_marker_steering_walks_its_own_map_again() {
    let mut app = marker_app();
    let agent = walker(&mut app, Vec2::new(2.0, 10.0), Vec2::new(28.0, 10.0), true);
    run_until(&mut app, 20, |_| false);
    assert_eq!(steering(&app, agent), Some(Steering::External));
    app.world_mut().entity_mut(agent).remove::<MarkerSteering>();
    run_until(&mut app, 2, |_| false);
    assert_eq!(steering(&app, agent), Some(Steering::LocalMap));
    assert!(
        app.world()
            .resource::<MarkerAgents>()
            .agent(agent)
            .is_none()
    );
    let steps = run_until(&mut app, 300, |app| seen(app).arrived.contains(&agent));
    assert!(steps < 300);
}

#[test]
fn bad_orders_get_a_message_and_the_agent_stands() {
    let mut app = marker_app();
    let nobody = app.world_mut().spawn(Transform::IDENTITY).id();
    let chaser = app
        .world_mut()
        .spawn((
            CrowdAgent,
            MarkerSteering::Pursue(nobody),
            Transform::from_xyz(5.0, 5.0, 0.0),
        ))
        .id();
    let aligner = app
        .world_mut()
        .spawn((
            CrowdAgent,
            MarkerSteering::Align(7),
            Transform::from_xyz(20.0, 5.0, 0.0),
        ))
        .id();
    let selfish = app
        .world_mut()
        .spawn((CrowdAgent, Transform::from_xyz(10.0, 15.0, 0.0)))
        .id();
    app.world_mut()
        .entity_mut(selfish)
        .insert(MarkerSteering::Pursue(selfish));
    run_until(&mut app, 10, |_| false);
    let refused = &app.world().resource::<Refused>().0;
    for e in [chaser, aligner, selfish] {
        assert_eq!(
            refused.iter().filter(|r| r.entity == Some(e)).count(),
            1,
            "{e}: {refused:?}"
        );
    }
    assert_eq!(planned(&app, chaser), Vec2::new(5.0, 5.0));
    // Bad settings: refused with a message, the old ones kept.
    app.world_mut()
        .resource_mut::<MarkerSteeringSettings>()
        .settings
        .w_max = f64::NAN;
    run_until(&mut app, 2, |_| false);
    assert!(
        app.world()
            .resource::<Refused>()
            .0
            .iter()
            .any(|r| r.entity.is_none())
    );
}

/// A pursuit whose target is despawned mid-order: the pursuer walks out the tree it had grown
/// towards where the target was last seen and then, with nothing left to aim at, stands (its order stays until the
/// game gives another; no message, since the order itself was good); nothing panics. Given a
/// new order it walks again.
#[test]
fn a_pursuer_whose_target_is_despawned_stops_until_given_another_order() {
    let (mut app, target, pursuer) = pursuit();
    run_until(&mut app, 15, |_| false);
    let before = planned(&app, pursuer);
    assert!(
        before.distance(Vec2::new(4.0, 16.0)) > 0.5,
        "it pursued: {before}"
    );
    let last_seen = planned(&app, target);
    app.world_mut().despawn(target);
    run_until(&mut app, 60, |_| false);
    assert!(app.world().resource::<Refused>().0.is_empty());
    let stood = planned(&app, pursuer);
    run_until(&mut app, 10, |_| false);
    assert_eq!(planned(&app, pursuer), stood, "it stands");
    // Where the target was last seen (0.3 m from it when this was written).
    assert!(
        stood.distance(last_seen) < 1.5,
        "{stood} against {last_seen}"
    );
    app.world_mut().entity_mut(pursuer).insert((
        AgentGoals::point(Vec2::new(26.0, 4.0)),
        MarkerSteering::Goals,
    ));
    let steps = run_until(&mut app, 400, |app| seen(app).arrived.contains(&pursuer));
    assert!(steps < 400, "walked again and arrived");
}

/// Marker walkers among the deadend scenario's crowd of BVP walkers, in its hall: they walk
/// to their goals beside them and arrive.
#[test]
fn marker_agents_walk_among_a_scenarios_crowd() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/scenarios/deadend.scenario.ron"
    );
    let scenario = Scenario::from_path(path.as_ref()).unwrap();
    let mut app = marker_app();
    scenario.apply_settings(&mut app.world_mut().resource_mut::<CrowdfieldSettings>());
    let mut queue = bevy::ecs::world::CommandQueue::default();
    scenario.spawn(&mut Commands::new(&mut queue, app.world()), None);
    queue.apply(app.world_mut());
    let walkers: Vec<Entity> = (0..3)
        .map(|i| {
            let y = 8.0 + i as f32;
            walker(&mut app, Vec2::new(16.0, y), Vec2::new(30.0, y - 4.0), true)
        })
        .collect();
    let steps = run_until(&mut app, 300, |app| {
        walkers.iter().all(|w| seen(app).arrived.contains(w))
    });
    assert!(
        steps < 300,
        "{:?}",
        walkers.iter().map(|w| state(&app, *w)).collect::<Vec<_>>()
    );
    assert!(app.world().resource::<Refused>().0.is_empty());
}

/// Eight marker walkers round a wall's corner (the seed's test room, in the plugin, with the
/// crowd's collision guard): pushed off their nodes by each other near the corner, they turn
/// their steps round it instead of standing against it, and all arrive.
#[test]
fn marker_walkers_round_a_wall_all_arrive() {
    let mut app = marker_app();
    app.world_mut().spawn((
        CrowdObstacle::fixed(Shape::Aabb {
            min: DVec2::new(14.0, 0.0),
            max: DVec2::new(16.0, 12.0),
        }),
        Transform::IDENTITY,
    ));
    let walkers: Vec<Entity> = (0..8)
        .map(|i| {
            let y = 2.0 + i as f32 * 1.2;
            walker(&mut app, Vec2::new(2.0, y), Vec2::new(28.0, y), true)
        })
        .collect();
    let steps = run_until(&mut app, 400, |app| {
        walkers.iter().all(|w| seen(app).arrived.contains(w))
    });
    assert!(
        steps < 400,
        "{:?}",
        walkers
            .iter()
            .map(|w| planned(&app, *w))
            .collect::<Vec<_>>()
    );
}

const MARKER_SCENARIO: &str = r#"(
    name: "markers",
    bounds: (min: (0.0, 0.0), max: (30.0, 20.0)),
    markers: Some((density: 40.0, seed: 3, sprays: [
        (shape: Aabb(min: (22.0, 14.0), max: (27.0, 18.0)), density: 60.0, tag: 2),
    ], masks: [Grid(origin: (0.0, 0.0), spacing: 2.5, width: 0.2)])),
    agents: [
        (position: (2.0, 4.0), goals: (targets: [Point((26.0, 4.0))]), markers: Some(Goals)),
        (position: (2.0, 10.0), markers: Some(Pursue(0))),
        (position: (4.0, 16.0), markers: Some(Formation(shape: 2))),
        (position: (13.1, 11.2), markers: Some(Align(0))),
    ],
)"#;

/// A scenario names marker orders (agents by index), the ground, a tagged spray and a mask:
/// the walker arrives, the pursuer closes in on it, the formation agent reaches the sprayed
/// box, the aligning agent stands on a line of the mask.
#[test]
fn scenario_files_give_marker_orders() {
    let scenario = Scenario::from_ron(MARKER_SCENARIO).unwrap();
    scenario.check_world().unwrap();
    let mut app = marker_app();
    scenario.apply_settings(&mut app.world_mut().resource_mut::<CrowdfieldSettings>());
    let mut queue = bevy::ecs::world::CommandQueue::default();
    scenario.spawn(&mut Commands::new(&mut queue, app.world()), None);
    queue.apply(app.world_mut());
    let mut agents = app
        .world_mut()
        .query_filtered::<Entity, With<MarkerSteering>>();
    let steered: Vec<Entity> = agents.iter(app.world()).collect();
    assert_eq!(steered.len(), 4);
    run_until(&mut app, 200, |_| false);
    let ground = app.world().resource::<MarkerGround>();
    assert_eq!((ground.density, ground.seed), (40.0, 3));
    let set = app.world().resource::<MarkerWorld>().markers().unwrap();
    assert!(set.markers().filter(|(_, m)| m.tag == Some(2)).count() > 1000);
    let positions: Vec<Vec2> = steered.iter().map(|e| planned(&app, *e)).collect();
    let walker = positions
        .iter()
        .find(|p| p.distance(Vec2::new(26.0, 4.0)) < 0.6);
    assert!(walker.is_some(), "{positions:?}");
    assert!(
        positions
            .iter()
            .any(|p| (22.0..27.0).contains(&p.x) && (14.0..18.0).contains(&p.y)),
        "{positions:?}"
    );
    let aligned = positions[3];
    let off_line = |v: f32| (v / 2.5 - (v / 2.5).round()).abs() * 2.5;
    assert!(
        off_line(aligned.x).min(off_line(aligned.y)) < 0.3,
        "{aligned:?} off the mask's lines"
    );
    // Orders naming agents that do not exist, or the agent itself, are refused on load.
    for bad in ["Pursue(7)", "Surround(1)", "Escape([])"] {
        let text = MARKER_SCENARIO.replace("Pursue(0)", bad);
        let checked = Scenario::from_ron(&text).and_then(|s| s.check_world());
        assert!(
            matches!(
                checked,
                Err(bevy_crowdfield::ScenarioError::Markers { index: 1, .. })
            ),
            "{bad}"
        );
    }
    // A mask that does not exist, or a bad one, is refused; crowd mode reaches the settings.
    let text = MARKER_SCENARIO.replace("Align(0)", "Align(1)");
    assert!(matches!(
        Scenario::from_ron(&text).and_then(|s| s.check_world()),
        Err(bevy_crowdfield::ScenarioError::Markers { index: 3, .. })
    ));
    let text = MARKER_SCENARIO.replace("spacing: 2.5", "spacing: -1.0");
    assert!(
        Scenario::from_ron(&text)
            .and_then(|s| s.check_world())
            .is_err()
    );
    let text = MARKER_SCENARIO.replace("masks: [", "mode: Crowd, masks: [");
    let crowd = Scenario::from_ron(&text).unwrap();
    let mut app = marker_app();
    let mut queue = bevy::ecs::world::CommandQueue::default();
    crowd.spawn(&mut Commands::new(&mut queue, app.world()), None);
    queue.apply(app.world_mut());
    let settings = app.world().resource::<MarkerSteeringSettings>();
    assert_eq!(
        settings.settings.mode,
        bevy_crowdfield::markers::Mode::Crowd
    );
    assert_eq!(settings.masks.len(), 1);
}

/// A marker set saved as a file and loaded as an asset in another app is the same set (ids,
/// positions, tags), a spray included; a file that is not one fails to load and leaves the
/// ground as it was.
#[test]
fn marker_files_load_as_assets_and_give_the_same_set() {
    // The set to save: the seed's ground at 40 per m² and a tagged spray.
    let mut first = marker_app();
    app_spray(&mut first);
    run_until(&mut first, 5, |_| false);
    let saved = first.world().resource::<MarkerWorld>().markers().unwrap();
    assert!(saved.markers().any(|(_, m)| m.tag == Some(4)));
    let dir = std::env::temp_dir().join(format!("crowdfield-markers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ground.markers.ron"),
        MarkerFile::of(saved).to_ron(),
    )
    .unwrap();
    std::fs::write(dir.join("bad.markers.ron"), "(edits: [Nonsense])").unwrap();
    std::fs::write(
        dir.join("refused.markers.ron"),
        "(edits: [Generate(generation: JitteredGrid, density: 0.0, seed: 1)])",
    )
    .unwrap();
    assert!(MarkerFile::from_ron("(edits: [Nonsense])").is_err());

    let load = |name: &str, ground: bool| {
        let mut app = App::new();
        app.add_plugins((
            MinimalPlugins,
            bevy::asset::AssetPlugin {
                file_path: dir.to_string_lossy().into_owned(),
                ..default()
            },
            CrowdfieldPlugins,
        ))
        .insert_resource(CrowdfieldSettings {
            world_min: Vec2::ZERO,
            world_max: Vec2::new(30.0, 20.0),
            ..default()
        });
        let handle = app
            .world()
            .resource::<AssetServer>()
            .load::<MarkerFile>(name.to_owned());
        app.insert_resource(MarkerGroundFile(handle.clone()));
        if ground {
            app.insert_resource(MarkerGround::default());
        }
        for _ in 0..2000 {
            app.update();
            let tried = app
                .world()
                .resource::<Assets<MarkerFile>>()
                .get(&handle)
                .is_some();
            if app.world().resource::<MarkerWorld>().markers().is_some() && (!ground || tried) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        app
    };
    let loaded = load("ground.markers.ron", false);
    let set = loaded
        .world()
        .resource::<MarkerWorld>()
        .markers()
        .expect("loaded");
    assert_eq!(set.len(), saved.len());
    assert!(
        set.markers()
            .zip(saved.markers())
            .all(|((a, m), (b, n))| a == b && m == n)
    );
    let bad = load("bad.markers.ron", false);
    assert!(bad.world().resource::<MarkerWorld>().markers().is_none());
    // A file the set refuses (a density of zero) leaves the ground's markers.
    let mut refused = load("refused.markers.ron", true);
    for _ in 0..3 {
        refused.update();
    }
    let set = refused.world().resource::<MarkerWorld>().markers().unwrap();
    assert!(set.len() > 10_000, "{}", set.len());
    std::fs::remove_dir_all(&dir).ok();
}

/// A tagged spray through the ground's scenario route (the plugin applies it once the set is
/// built).
fn app_spray(app: &mut App) {
    let scenario = Scenario::from_ron(
        r#"(bounds: (min: (0.0, 0.0), max: (30.0, 20.0)),
            markers: Some((density: 40.0, seed: 5, sprays: [
                (shape: Disc(centre: (10.0, 10.0), radius: 2.0), density: 80.0, tag: 4),
            ])))"#,
    )
    .unwrap();
    let mut queue = bevy::ecs::world::CommandQueue::default();
    scenario.spawn(&mut Commands::new(&mut queue, app.world()), None);
    queue.apply(app.world_mut());
}
