//! Scenario files: parsing, errors with positions, asset loading, and replays.

mod common;

use std::path::PathBuf;

use bevy::prelude::*;
use bevy_crowdfield::prelude::*;
use bevy_crowdfield::scenario::{PLANNER_HZ_RANGE, ScenarioError, ScenarioSpawned};
use common::*;

fn assets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets")
}

fn scenario(name: &str) -> Scenario {
    Scenario::from_path(&assets().join(format!("scenarios/{name}.scenario.ron"))).unwrap()
}

#[test]
fn every_shipped_scenario_parses_and_round_trips() {
    let dir = assets().join("scenarios");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let s = Scenario::from_path(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        assert!(!s.name.is_empty());
        assert_eq!(Scenario::from_ron(&s.to_ron()).unwrap(), s, "{path:?} RON");
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(Scenario::from_json(&json).unwrap(), s, "{path:?} JSON");
        count += 1;
    }
    assert!(count >= 3);
}

fn parse_error(text: &str) -> (usize, usize, String) {
    match Scenario::from_ron(text) {
        Err(ScenarioError::Parse {
            line,
            column,
            message,
        }) => (line, column, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn malformed_files_name_the_position() {
    // A missing comma.
    let (line, _, _) = parse_error("(\n  bounds: (min: (0, 0), max: (10, 10))\n  agents: [],\n)");
    assert_eq!(line, 3);
    // An unknown field.
    let (line, _, message) =
        parse_error("(\n  bounds: (min: (0, 0), max: (10, 10)),\n  agnets: [],\n)");
    assert_eq!(line, 3);
    assert!(message.contains("agnets"), "{message}");
    // A bad value: a disc with a negative radius, on line 4.
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  obstacles: [\n    (shape: Disc(centre: (1, 1), radius: -2.0)),\n  ],\n)",
    );
    assert_eq!(line, 4, "{message}");
    // ε out of range in a style, on line 5.
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  agents: [\n    (position: (1, 1),\n     style: (behaviour: (clear: TowardsGoal(epsilon: 9.0), ahead: None, dvis: 0.0)))\n  ],\n)",
    );
    assert_eq!(line, 5, "{message}");
    // A NaN goal.
    let (_, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  agents: [(position: (1, 1), goals: (targets: [Point((NaN, 1.0))]))],\n)",
    );
    assert!(message.contains("finite"), "{message}");
    // A sweep count far past the seeds' 30–100, on line 4.
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  agents: [\n    (position: (1, 1), style: (local_map: (sweeps: 1000000)))\n  ],\n)",
    );
    assert_eq!(line, 4, "{message}");
    assert!(message.contains("sweeps"), "{message}");
    // A negative time limit, on line 3.
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  agents: [(position: (1, 1), goals: (targets: [Point((5.0, 1.0))], time_limits: [Some(-1.0)]))],\n)",
    );
    assert_eq!(line, 3, "{message}");
    assert!(message.contains("time limits"), "{message}");
    // Inverted bounds and a negative cell size.
    let (line, _, message) = parse_error("(\n  bounds: (min: (10, 0), max: (0, 10)),\n)");
    assert_eq!(line, 2, "{message}");
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  settings: (global_cell_size: Some(-0.5)),\n)",
    );
    assert_eq!(line, 3, "{message}");
    assert!(message.contains("global_cell_size"), "{message}");
    // Planner rates past either end of the range a headless run can turn into a time step.
    for hz in ["1e-300", "0.001", "1e300", "2000.0"] {
        let (line, _, message) = parse_error(&format!(
            "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  settings: (planner_hz: Some({hz})),\n)"
        ));
        assert_eq!(line, 3, "{message}");
        let asked: f64 = hz.parse().unwrap();
        assert!(message.contains("planner_hz must lie in"), "{message}");
        // In exponent form: not 10³⁰⁰ written out in 301 digits.
        assert!(message.contains(&format!("got {asked:e}")), "{message}");
    }
    for hz in [PLANNER_HZ_RANGE.start(), &3.5, PLANNER_HZ_RANGE.end()] {
        let text = format!(
            "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  settings: (planner_hz: Some({hz:?})),\n)"
        );
        assert!(Scenario::from_ron(&text).is_ok(), "{text}");
    }
    // A measurement area turned inside out (line 4) and a line of no length (line 5).
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  measurements: [\n    Area(min: (5, 1), max: (2, 4)),\n  ],\n)",
    );
    assert_eq!(line, 4, "{message}");
    assert!(message.contains("measurement area"), "{message}");
    // A measurement area longer than 200 m a side (its Voronoi lattice would not fit), line 4.
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (4000, 4000)),\n  measurements: [\n    Area(min: (0, 0), max: (4000, 10)),\n  ],\n)",
    );
    assert_eq!(line, 4, "{message}");
    assert!(message.contains("at most 200 m a side"), "{message}");
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  measurements: [\n    Area(min: (1, 1), max: (2, 2)),\n    Line(name: \"door\", a: (3, 3), b: (3, 3)),\n  ],\n)",
    );
    assert_eq!(line, 5, "{message}");
    assert!(message.contains("line ends"), "{message}");
    // A region asking for more agents than any crowd steps, on line 3.
    let (line, _, message) = parse_error(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  regions: [(min: (1, 1), max: (9, 9), count: 18446744073709551615)],\n)",
    );
    assert_eq!(line, 3, "{message}");
    assert!(message.contains("at most"), "{message}");
    // JSON too.
    match Scenario::from_json("{\"bounds\": {\"min\": [0, 0],\n \"max\": [1]}}") {
        Err(ScenarioError::Parse { line, .. }) => assert_eq!(line, 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_world_too_large_for_its_cells_is_refused_when_read() {
    use bevy_crowdfield::field::FieldError;
    use bevy_crowdfield::steer::SteerError;
    let too_large = |e: Result<Scenario, ScenarioError>| match e {
        Err(ScenarioError::World {
            error: SteerError::Field(FieldError::GridTooLarge { .. }),
            cell_size,
            ..
        }) => cell_size,
        other => panic!("expected a world too large, got {other:?}"),
    };
    // 30 m × 10⁹ m over the default 0.5 m cells, in RON and in JSON.
    let tall = too_large(Scenario::from_ron(
        "(\n  bounds: (min: (0, 0), max: (30, 1e9)),\n)",
    ));
    assert_eq!(tall, 0.5);
    too_large(Scenario::from_json(
        "{\"bounds\": {\"min\": [0, 0], \"max\": [30, 1e9]}}",
    ));
    // 10 m × 10 m over 0.1 mm cells: the scenario's own cell size counts.
    let fine = "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  settings: (global_cell_size: Some(1e-4)),\n)";
    assert_eq!(too_large(Scenario::from_ron(fine)), 1e-4);
    let message = Scenario::from_ron(fine).unwrap_err().to_string();
    assert!(
        message.contains("too large") && message.contains("(10, 10)"),
        "{message}"
    );
    // The largest world the default cells allow still reads.
    assert!(Scenario::from_ron("(\n  bounds: (min: (0, 0), max: (4000, 4000)),\n)").is_ok());
}

/// Runs a scenario for `steps` planner steps and returns every agent's planned position per
/// step, in spawn order (`None` once it left on arrival).
fn trajectories(s: &Scenario, steps: usize) -> Vec<Vec<Option<Vec2>>> {
    let mut app = app(1.0, 1.0);
    s.apply_settings(&mut app.world_mut().resource_mut::<CrowdfieldSettings>());
    // One planner step per update at the scenario's rate.
    let hz = app.world().resource::<CrowdfieldSettings>().planner_hz;
    app.insert_resource(Time::<Fixed>::from_hz(hz));
    app.insert_resource(bevy::time::TimeUpdateStrategy::ManualDuration(
        std::time::Duration::from_secs_f64(1.0 / hz),
    ));
    let mut commands = app.world_mut().commands();
    s.spawn(&mut commands, None);
    app.world_mut().flush();
    let mut agents: Vec<Entity> = app
        .world_mut()
        .query_filtered::<Entity, With<CrowdAgent>>()
        .iter(app.world())
        .collect();
    agents.sort();
    // Fixed time starts accumulating with the first frame; wait for the first planner step.
    for _ in 0..5 {
        if agents
            .iter()
            .all(|e| state(&app, *e) != AgentState::Pending)
        {
            break;
        }
        app.update();
    }
    let mut out = Vec::new();
    for _ in 0..steps {
        app.update();
        out.push(
            agents
                .iter()
                .map(|e| app.world().get::<AgentPlan>(*e).map(|p| p.to))
                .collect(),
        );
    }
    assert!(seen(&app).rejected.is_empty(), "{:?}", seen(&app).rejected);
    out
}

#[test]
fn the_same_scenario_gives_the_same_trajectories_twice() {
    let s = scenario("corridor");
    let a = trajectories(&s, 60);
    let b = trajectories(&s, 60);
    assert_eq!(a, b);
    // And they moved.
    let moved = a[0]
        .iter()
        .zip(&a[59])
        .filter(|(p, q)| (p.unwrap() - q.unwrap()).length() > 3.0)
        .count();
    assert!(moved >= 12, "{moved} of {} walked", a[0].len());
}

#[test]
fn the_corridor_scenario_completes_without_overlap() {
    let s = scenario("corridor");
    let run = trajectories(&s, 400);
    let radius = 0.25;
    let mut min_gap = f32::INFINITY;
    for step in &run {
        let here: Vec<Vec2> = step.iter().flatten().copied().collect();
        for (i, p) in here.iter().enumerate() {
            for q in &here[i + 1..] {
                min_gap = min_gap.min((*p - *q).length() - 2.0 * radius);
            }
        }
    }
    assert!(min_gap >= -1e-5, "agents overlapped: gap {min_gap}");
    // Everyone reached the far end and left.
    let left = run.iter().position(|step| step.iter().all(Option::is_none));
    assert!(left.is_some(), "still walking: {:?}", run.last().unwrap());
    println!(
        "all 16 crossed and left after {} planner steps",
        left.unwrap() + 1
    );
}

#[test]
fn a_scenario_asset_loads_and_spawns() {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        bevy::asset::AssetPlugin {
            file_path: assets().to_string_lossy().into_owned(),
            ..default()
        },
        CrowdfieldPlugins,
    ));
    let handle = app
        .world()
        .resource::<AssetServer>()
        .load::<Scenario>("scenarios/corridor.scenario.ron");
    let root = app.world_mut().spawn(ScenarioRoot(handle)).id();
    for _ in 0..2000 {
        app.update();
        if app.world().get::<ScenarioSpawned>(root).is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let spawned = app.world().get::<ScenarioSpawned>(root).expect("spawned");
    assert_eq!(spawned.missing, vec![0, 0]);
    let agents = app
        .world_mut()
        .query_filtered::<(), With<CrowdAgent>>()
        .iter(app.world())
        .count();
    assert_eq!(agents, 16);
    let settings = app.world().resource::<CrowdfieldSettings>();
    assert_eq!(settings.world_max, Vec2::new(30.0, 5.0));
}

#[test]
fn groups_in_scenario_files_are_checked_and_spawn_with_their_members() {
    let bad = |group: &str| {
        let text = format!("(bounds: (min: (0.0, 0.0), max: (30.0, 20.0)), groups: [{group}])");
        match Scenario::from_ron(&text) {
            Err(ScenarioError::Group { index: 0, message }) => message,
            other => panic!("{group}: {other:?}"),
        }
    };
    assert!(bad("(members: [])").contains("at least one member"));
    assert!(
        bad("(members: [(1.0, 1.0), (2.0, 1.0)], formation: Some(Points(points: [(0.0, 0.0)], resampling: Stride)))")
            .contains("1 point")
    );
    assert!(bad("(members: [(1.0, 1.0)], settings: (map_side: 3))").contains("side 3"));
    assert!(
        bad("(members: [(1.0, 1.0)], order: Follow(agent: 4, distance: 2.0))").contains("agent 4")
    );
    // A good one: the group entity with its order, and its members.
    let mut app = app(30.0, 20.0);
    let scenario = Scenario::from_ron(
        "(bounds: (min: (0.0, 0.0), max: (30.0, 20.0)),
          groups: [(name: \"squad\", members: [(3.0, 9.0), (3.0, 11.0), (5.0, 10.0)],
                    formation: Some(Template(template: Wedge, spacing: 0.0)),
                    order: MoveTo((25.0, 10.0)))])",
    )
    .unwrap();
    let root = app.world_mut().spawn_empty().id();
    let mut commands = app.world_mut().commands();
    scenario.spawn(&mut commands, Some(root));
    app.world_mut().flush();
    let groups: Vec<(Entity, GroupOrder)> = app
        .world_mut()
        .query::<(Entity, &GroupOrder)>()
        .iter(app.world())
        .map(|(e, o)| (e, o.clone()))
        .collect();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].1, GroupOrder::MoveTo(Vec2::new(25.0, 10.0)));
    let members = app.world().get::<GroupMembers>(groups[0].0).unwrap();
    assert_eq!(members.entities().len(), 3);
    for _ in 0..200 {
        app.update();
    }
    let status = app.world().get::<GroupStatus>(groups[0].0).unwrap();
    assert!(status.formed && status.arrived, "{status:?}");
}

#[test]
fn an_obstacle_marked_keep_together_in_a_scenario_spawns_tagged() {
    let scenario = Scenario::from_ron(
        "(bounds: (min: (0.0, 0.0), max: (30.0, 20.0)),
          obstacles: [(shape: Disc(centre: (10.0, 10.0), radius: 2.0), keep_together: true),
                      (shape: Disc(centre: (20.0, 10.0), radius: 1.0))])",
    )
    .unwrap();
    assert!(scenario.obstacles[0].keep_together && !scenario.obstacles[1].keep_together);
    // Written back only where set.
    let text = scenario.to_ron();
    assert_eq!(text.matches("keep_together").count(), 1, "{text}");
    let mut app = app(30.0, 20.0);
    let mut commands = app.world_mut().commands();
    scenario.spawn(&mut commands, None);
    app.world_mut().flush();
    let tagged: Vec<&CrowdObstacle> = app
        .world_mut()
        .query_filtered::<&CrowdObstacle, With<KeepTogether>>()
        .iter(app.world())
        .collect();
    assert_eq!(tagged.len(), 1);
    assert!(matches!(tagged[0].shape, Shape::Disc { radius, .. } if radius == 2.0));
}

#[test]
fn groups_along_drawn_paths_in_scenario_files_are_checked_and_walk_them() {
    let bad = Scenario::from_ron(
        "(bounds: (min: (0.0, 0.0), max: (30.0, 20.0)),
          groups: [(members: [(3.0, 9.0)], order: FollowPath(points: []))])",
    );
    assert!(bad.unwrap_err().to_string().contains("path"));
    let scenario = Scenario::from_ron(
        "(bounds: (min: (0.0, 0.0), max: (30.0, 20.0)),
          groups: [(members: [(3.0, 9.0), (3.0, 11.0)],
                    order: FollowPath(points: [(5.0, 10.0), (15.0, 4.0), (26.0, 10.0)])),
                   (members: [(3.0, 16.0)],
                    order: Waypoints([(5.0, 16.0), (26.0, 16.0)]))])",
    )
    .unwrap();
    assert_eq!(Scenario::from_ron(&scenario.to_ron()).unwrap(), scenario);
    let mut app = app(30.0, 20.0);
    let mut commands = app.world_mut().commands();
    scenario.spawn(&mut commands, None);
    app.world_mut().flush();
    for _ in 0..400 {
        app.update();
    }
    let statuses: Vec<GroupStatus> = app
        .world_mut()
        .query::<&GroupStatus>()
        .iter(app.world())
        .cloned()
        .collect();
    assert_eq!(statuses.len(), 2);
    assert!(statuses.iter().all(|s| s.arrived), "{statuses:?}");
}

#[test]
fn agents_and_regions_along_drawn_paths_in_scenario_files_are_checked_and_walk_them() {
    for bad in [
        "agents: [(position: (3.0, 9.0), path: Some(Waypoints([])))]",
        "regions: [(min: (1.0, 1.0), max: (4.0, 4.0), count: 2,
                    path: Some(Follow(points: [(1.0, 1.0), (NaN, 2.0)])))]",
    ] {
        let text = format!("(bounds: (min: (0.0, 0.0), max: (30.0, 20.0)), {bad})");
        let error = Scenario::from_ron(&text).unwrap_err().to_string();
        assert!(error.contains("path"), "{error}");
    }
    let scenario = Scenario::from_ron(
        "(bounds: (min: (0.0, 0.0), max: (30.0, 20.0)),
          agents: [(position: (3.0, 16.0),
                    path: Some(Waypoints([(5.0, 16.0), (26.0, 16.0)])))],
          regions: [(min: (1.0, 2.0), max: (5.0, 7.0), count: 3, seed: 4,
                     goals: (on_arrival: Settle),
                     path: Some(Follow(points: [(5.0, 5.0), (15.0, 3.0), (26.0, 10.0)])))])",
    )
    .unwrap();
    assert_eq!(Scenario::from_ron(&scenario.to_ron()).unwrap(), scenario);
    let mut app = app(30.0, 20.0);
    let mut commands = app.world_mut().commands();
    scenario.spawn(&mut commands, None);
    app.world_mut().flush();
    let walkers = app
        .world_mut()
        .query::<&AgentPath>()
        .iter(app.world())
        .count();
    assert_eq!(walkers, 4);
    let steps = run_until(&mut app, 600, |app| seen(app).arrived.len() == 4);
    let states: Vec<(AgentState, Vec2)> = app
        .world_mut()
        .query::<(&AgentState, &AgentPlan)>()
        .iter(app.world())
        .map(|(s, p)| (*s, p.to))
        .collect();
    assert!(
        steps < 600,
        "{} of 4 arrived: {states:?}",
        seen(&app).arrived.len()
    );
    // The region's walkers settle into the path's end, making room for each other.
    assert!(seen(&app).rejected.is_empty());
}
