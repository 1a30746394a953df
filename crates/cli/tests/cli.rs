//! The runner end to end: a shipped scenario run to completion through the plugin, and the
//! binary's handling of good and malformed files.

use std::path::{Path, PathBuf};
use std::process::Command;

use bevy::math::Vec2;
use bevy_crowdfield::Scenario;
use bevy_crowdfield::field::Coverage;
use bevy_crowdfield::scenario::Measurement;
use bevy_crowdfield::steer::NeighbourStamping;
use crowdfield_cli::{
    Outcome, RowState, RunOptions, Stop, Tuning, agents_csv, load, run_scenario, trajectories_csv,
};

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/scenarios")
        .join(format!("{name}.scenario.ron"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `crowdfield run FILE FLAGS… --out OUT`, as the built binary runs it.
fn run_file(file: &Path, flags: &[&str], out: &Path) -> std::process::Output {
    command_file("run", file, flags, out)
}

/// What `crowdfield run` printed and wrote for a scenario given as text ([`run_text`]).
struct Ran {
    /// The scenario file written.
    file: PathBuf,
    stdout: String,
    stderr: String,
    metrics: serde_json::Value,
    /// agents.csv's rows, the header left out.
    agents: Vec<String>,
}

/// Writes `text` as `DIR/NAME.scenario.ron`, runs it with `flags` into `DIR/out` and reads
/// what the run printed and wrote; the run must succeed.
fn run_text(dir: &Path, name: &str, text: &str, flags: &[&str]) -> Ran {
    let file = dir.join(format!("{name}.scenario.ron"));
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out");
    let run = run_file(&file, flags, &out);
    assert!(run.status.success(), "{run:?}");
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    Ran {
        file,
        stdout: String::from_utf8_lossy(&run.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&run.stderr).into_owned(),
        metrics: serde_json::from_str(&read("metrics.json")).unwrap(),
        agents: read("agents.csv")
            .lines()
            .skip(1)
            .map(str::to_owned)
            .collect(),
    }
}

/// `crowdfield COMMAND FILE FLAGS… --out OUT`, as the built binary runs it.
fn command_file(command: &str, file: &Path, flags: &[&str], out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_crowdfield"))
        .arg(command)
        .arg(file)
        .args(flags)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn the_corridor_runs_to_completion_without_overlaps() {
    let corridor = load(&scenario("corridor")).unwrap();
    let output = run_scenario(
        &corridor,
        RunOptions {
            stop: Stop::UntilArrived { max_steps: 1_000 },
            seed: None,
            ..Default::default()
        },
    );
    let m = &output.metrics;
    assert_eq!(m.agents, 16);
    assert_eq!((m.not_placed, m.rejected), (0, 0));
    assert_eq!(m.arrived, 16, "{m:?}");
    assert_eq!(m.arrival_fraction, 1.0);
    assert!(m.steps < 1_000, "stopped once everyone arrived");
    assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{m:?}");
    // The corridor is 30 m long and walkers start within 5 m of their end: at least 23 m each.
    assert!(m.path_length_mean_m > 23.0, "{m:?}");
    let t = m.time_to_goal_max_s.unwrap();
    assert!(t > 0.0 && t <= m.steps as f64 * m.planner_period_s + 1e-9);
    let csv = trajectories_csv(&output.trajectories, m.planner_period_s);
    assert!(csv.starts_with("step,time_s,agent,x,y,state\n"));
    assert!(csv.lines().count() > 16 * 20);
    // Every agent appears, every position inside the world.
    for agent in 0..16 {
        assert!(output.trajectories.iter().any(|s| s.agent == agent));
    }
    assert!(
        output.trajectories.iter().all(|s| {
            (0.0..=30.0).contains(&s.position.x) && (0.0..=5.0).contains(&s.position.y)
        })
    );
    // The table is in step order, and each agent's first row is its start in the file. The
    // agent's own figures agree with its rows: the rows add up to its path length, and it
    // arrived (and left) in the step of its last row.
    assert!(output.trajectories.is_sorted_by_key(|s| s.step));
    assert_eq!(output.agents.len(), 16);
    let mut walked = 0.0;
    for (agent, record) in output.agents.iter().enumerate() {
        let rows: Vec<_> = output
            .trajectories
            .iter()
            .filter(|s| s.agent == agent)
            .collect();
        let start = rows[0];
        assert_eq!((start.step, start.state), (0, RowState::Pending));
        // Drawn in its region: the first eight at the west end, the others at the east.
        let region = &corridor.regions[agent / 8];
        assert!(
            start.position.cmpge(region.min).all() && start.position.cmple(region.max).all(),
            "{start:?}"
        );
        assert!(rows[1..].iter().all(|s| s.state != RowState::Pending));
        let length: f64 = rows
            .windows(2)
            .map(|w| f64::from(w[0].position.distance(w[1].position)))
            .sum();
        walked += length;
        assert_eq!((record.agent, record.outcome), (agent, Outcome::Arrived));
        assert!(
            (record.path_length_m.unwrap() - length).abs() < 1e-3,
            "{record:?}"
        );
        // Despawned on arrival: its last row is where it left, a step on from the row before.
        let last = rows.last().unwrap();
        assert_eq!(last.state, RowState::Arrived, "{last:?}");
        let before = rows[rows.len() - 2];
        assert!(
            last.position.distance(before.position) > 0.05,
            "{before:?} {last:?}"
        );
        let t = last.step as f64 * m.planner_period_s;
        assert!(
            (record.time_to_goal_s.unwrap() - t).abs() < 1e-9,
            "{record:?}"
        );
        let ratio = record.path_length_ratio().unwrap();
        assert!((0.9..2.0).contains(&ratio), "{record:?}");
        assert!(record.effort.unwrap() > 0.0, "{record:?}");
    }
    assert!(
        (walked / 16.0 - m.path_length_mean_m).abs() < 1e-3,
        "{walked} / {m:?}"
    );
    assert!(
        csv.lines().nth(1).unwrap().starts_with("0,0.0000,0,"),
        "{csv}"
    );
    let table = agents_csv(&output.agents);
    assert!(table.starts_with(
        "agent,outcome,time_to_goal_s,path_length_m,shortest_path_m,path_ratio,effort_j_per_kg\n0,Arrived,"
    ));
    assert_eq!(table.lines().count(), 17);
}

#[test]
fn a_seed_changes_the_draw_and_the_same_seed_repeats_it() {
    let corridor = load(&scenario("corridor")).unwrap();
    let run = |seed| {
        run_scenario(
            &corridor,
            RunOptions {
                stop: Stop::Steps(5),
                seed,
                ..Default::default()
            },
        )
        .trajectories
    };
    let (a, b, c) = (run(Some(3)), run(Some(3)), run(Some(4)));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn the_binary_validates_runs_and_refuses_bad_files_without_writing() {
    let exe = env!("CARGO_BIN_EXE_crowdfield");
    let ok = Command::new(exe)
        .args(["validate"])
        .arg(scenario("park"))
        .output()
        .unwrap();
    assert!(ok.status.success());
    assert!(String::from_utf8_lossy(&ok.stdout).contains(": ok (park;"));

    let dir = scratch("cli_bad");
    let bad = dir.join("bad.scenario.ron");
    std::fs::write(
        &bad,
        "(\n    bounds: (min: (0.0, 0.0), max: (10.0, 10.0)),\n    obstacles: [(shape: Disc(centre: (5.0, 5.0), radius: -1.0))],\n)\n",
    )
    .unwrap();
    let checked = Command::new(exe)
        .arg("validate")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(checked.status.code(), Some(2));
    let message = String::from_utf8_lossy(&checked.stderr);
    assert!(message.contains("bad.scenario.ron:3:"), "{message}");

    // Several files at once: each good one is summed up, each bad one named, and the status
    // says that one failed.
    let both = Command::new(exe)
        .arg("validate")
        .arg(scenario("park"))
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stdout).contains(": ok (park;"));
    let message = String::from_utf8_lossy(&both.stderr);
    assert!(
        message.contains("bad.scenario.ron:3:") && message.contains("problems in 1 of 2 files"),
        "{message}"
    );

    // An output path that is a file is refused before the run.
    let taken = dir.join("taken");
    std::fs::write(&taken, "keep").unwrap();
    let ran = run_file(&scenario("park"), &["--steps", "3"], &taken);
    assert_eq!(ran.status.code(), Some(1));
    let message = String::from_utf8_lossy(&ran.stderr);
    assert!(message.contains("it is a file, not a folder"), "{message}");
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "keep");

    let out = dir.join("out");
    let ran = run_file(&bad, &[], &out);
    assert_eq!(ran.status.code(), Some(2));
    assert!(!out.exists(), "a bad file must not leave outputs");

    // Well formed, but its world is too large for its cells (30 m × 10⁹ m over 0.5 m): refused
    // when read, before any crowd is built, where a run used to abort allocating its map.
    let vast = dir.join("vast.scenario.ron");
    std::fs::write(
        &vast,
        "(\n    bounds: (min: (0.0, 0.0), max: (30.0, 1e9)),\n    agents: [(position: (1.0, 1.0))],\n)\n",
    )
    .unwrap();
    for args in [&["validate"][..], &["run", "--steps", "3", "--out"][..]] {
        let out = dir.join("vast");
        let mut command = Command::new(exe);
        command.args(args);
        if args[0] == "run" {
            command.arg(&out);
        }
        let refused = command.arg(&vast).output().unwrap();
        assert_eq!(refused.status.code(), Some(2), "{args:?}");
        let message = String::from_utf8_lossy(&refused.stderr);
        assert!(
            message.contains("vast.scenario.ron: bounds (0, 0) to (30, 1000000000)")
                && message.contains("too large"),
            "{message}"
        );
        assert!(!out.exists(), "a refused world must not leave outputs");
    }

    let out = dir.join("good");
    let ran = run_file(&scenario("corridor"), &["--steps", "3"], &out);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["steps"], 3);
    assert_eq!(metrics["agents"], 16);
    let csv = std::fs::read_to_string(out.join("trajectories.csv")).unwrap();
    // A header, each agent's start and its three steps.
    assert_eq!(csv.lines().count(), 1 + 16 * 4);
    // Three steps are too few to arrive: everyone is still walking, with no time to goal.
    let agents = std::fs::read_to_string(out.join("agents.csv")).unwrap();
    assert_eq!(agents.lines().count(), 1 + 16);
    assert!(
        agents.lines().skip(1).all(|l| l.contains(",Walking,,")),
        "{agents}"
    );
    for png in ["trajectories.png", "field.png"] {
        let bytes = std::fs::read(out.join(png)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{png} is not a PNG");
    }
    assert!(
        !out.join("measurements.csv").exists() && !out.join("fundamental_diagram.png").exists(),
        "the corridor has no measurement area"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty());
    // With `--pedpy`, the same rows for PedPy and the geometry; a later run without it in the
    // same folder leaves neither behind.
    let out = dir.join("pedpy");
    let ran = run_file(&scenario("corridor"), &["--steps", "3", "--pedpy"], &out);
    assert!(ran.status.success(), "{ran:?}");
    let text = std::fs::read_to_string(out.join("trajectories.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[1].starts_with("# framerate: 3.5") && lines[2].contains("x/m"));
    assert_eq!(lines.len(), 3 + 16 * 4);
    let first: Vec<&str> = lines[3].split(' ').collect();
    assert_eq!(
        (first[0], first[1], first.len()),
        ("0", "0", 5),
        "{first:?}"
    );
    let csv_first: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!((first[2], first[3]), (csv_first[3], csv_first[4]));
    let geometry = std::fs::read_to_string(out.join("geometry.wkt")).unwrap();
    let geometry: Vec<&str> = geometry.lines().collect();
    assert!(geometry[0].starts_with("POLYGON (("), "{geometry:?}");
    assert_eq!(geometry[1].matches("POLYGON ((").count(), 2, "{geometry:?}");
    let ran = run_file(&scenario("corridor"), &["--steps", "1"], &out);
    assert!(ran.status.success(), "{ran:?}");
    assert!(!out.join("trajectories.txt").exists() && !out.join("geometry.wkt").exists());

    // One field plot by default; the corridor's two goals give two when asked for more, and
    // none when asked for none.
    assert!(!out.join("field-1.png").exists());
    // Both runs write into one folder: the second leaves none of the first's plots behind, and
    // a file of the user's that only looks like one stays.
    let out = dir.join("fields");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("field-notes.png"), b"mine").unwrap();
    for (plots, files) in [
        ("3", &["field-1.png", "field-notes.png", "field.png"][..]),
        ("0", &["field-notes.png"][..]),
    ] {
        let ran = run_file(
            &scenario("corridor"),
            &["--steps", "1", "--field-plots", plots],
            &out,
        );
        assert!(ran.status.success(), "{ran:?}");
        let mut drawn: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("field"))
            .collect();
        drawn.sort();
        assert_eq!(drawn, files, "--field-plots {plots}");
    }

    // A scenario with measurements adds their samples, their summaries and the diagram.
    let out = dir.join("measured");
    let ran = run_file(&scenario("bottleneck"), &["--steps", "20"], &out);
    assert!(ran.status.success());
    let said = String::from_utf8_lossy(&ran.stdout);
    assert!(
        said.contains("area \"before the door\"") && said.contains("line \"door\""),
        "{said}"
    );
    let csv = std::fs::read_to_string(out.join("measurements.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 20, "{csv}");
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("before the door,1,")
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["areas"][0]["name"], "before the door");
    assert_eq!(metrics["lines"][0]["name"], "door");
    assert!(
        metrics["areas"][0].get("samples").is_none(),
        "samples go to the CSV"
    );
    let bytes = std::fs::read(out.join("fundamental_diagram.png")).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"));
    // A run with no measurements in the same folder takes the measured run's away.
    let ran = run_file(&scenario("corridor"), &["--steps", "1"], &out);
    assert!(ran.status.success());
    assert!(!out.join("measurements.csv").exists());
    assert!(!out.join("fundamental_diagram.png").exists());

    // An area beyond the world's edge measures nothing, and says so.
    let away = dir.join("away.scenario.ron");
    std::fs::write(
        &away,
        std::fs::read_to_string(scenario("bottleneck")).unwrap().replace(
            "    measurements: [",
            "    measurements: [\n        Area(name: \"away\", min: (30.0, 4.0), max: (32.0, 6.0)),",
        ),
    )
    .unwrap();
    let ran = run_file(&away, &["--steps", "2"], &dir.join("away"));
    assert!(ran.status.success());
    let warned = String::from_utf8_lossy(&ran.stderr);
    assert!(
        warned.contains("\"away\" holds no walkable ground"),
        "{warned}"
    );

    // The bench's default set is read from the repository root: elsewhere it stops before
    // running anything, says where it looked, and writes nothing.
    let out = dir.join("bench");
    let benched = Command::new(exe)
        .current_dir(&dir)
        .arg("bench")
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(benched.status.code(), Some(2));
    let said = String::from_utf8_lossy(&benched.stderr);
    assert!(
        said.contains("assets/scenarios/oncoming.scenario.ron") && said.contains("repository root"),
        "{said}"
    );
    assert!(!out.exists(), "a bench that ran nothing must not write");

    // Counts of nothing are refused before anything runs: zero steps (a run took one), a zero
    // cap, and a bench on no threads (it ran on one).
    for (command, flags) in [
        ("run", ["--steps", "0"]),
        ("run", ["--max-steps", "0"]),
        ("bench", ["--threads", "0"]),
        ("bench", ["--max-steps", "0"]),
        ("run", ["--threads", "2000"]),
        ("bench", ["--threads", "2000"]),
    ] {
        let out = dir.join("zero");
        let refused = command_file(command, &scenario("oncoming"), &flags, &out);
        assert_eq!(refused.status.code(), Some(2), "{command} {flags:?}");
        assert!(!out.exists(), "{command} {flags:?}");
    }

    // A file with no name is read with its file's (`load`, which `run` and `bench` use), and
    // metrics.json carries it.
    let unnamed = dir.join("two-walkers.scenario.ron");
    std::fs::write(
        &unnamed,
        "(\n    bounds: (min: (0.0, 0.0), max: (10.0, 4.0)),\n    agents: [(position: (1.0, 2.0), goals: (targets: [Point((9.0, 2.0))]))],\n)\n",
    )
    .unwrap();
    assert_eq!(load(&unnamed).unwrap().name, "two-walkers");
    let out = dir.join("unnamed");
    assert!(run_file(&unnamed, &["--steps", "2"], &out).status.success());
    let metrics = std::fs::read_to_string(out.join("metrics.json")).unwrap();
    assert!(
        metrics.contains("\"scenario\": \"two-walkers\""),
        "{metrics}"
    );
}

/// `run` steps in a pool of `--threads` threads: with two, the hallway's 200 walkers commit while
/// they plan (more than 64 planners, stepped from a pool thread), and walk exactly as on one.
/// A pool of no threads is refused before anything runs.
#[test]
fn run_walks_the_same_on_any_number_of_threads() {
    let dir = scratch("threads");
    let mut walked = Vec::new();
    for threads in ["1", "2"] {
        let out = dir.join(threads);
        let ran = run_file(
            &scenario("hallway-two-way"),
            &["--steps", "12", "--threads", threads],
            &out,
        );
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        walked.push(std::fs::read_to_string(out.join("trajectories.csv")).unwrap());
    }
    assert_eq!(walked[0].lines().count(), 1 + 200 * 13);
    assert!(walked[0] == walked[1], "one thread and two walk alike");
    let out = dir.join("none");
    let refused = run_file(&scenario("oncoming"), &["--threads", "0"], &out);
    assert_eq!(refused.status.code(), Some(2));
    assert!(!out.exists());
}

/// Every shipped benchmark scenario runs to completion: everyone arrives, nobody overlaps
/// another agent or a wall at any step, the global maps are converged without interior local
/// minima, and walked paths are at least about as long as the shortest ones (the geodesic on the
/// 8-connected grid overestimates a straight line by up to 8 %). Only the two plazas (2,000 and
/// 10,000 agents, for the examples and benches) are left out.
#[test]
fn shipped_scenarios_run_to_completion_without_overlaps() {
    for name in [
        "oncoming",
        "overtake",
        "crossing",
        "four-way-confusion",
        "doorway-two-way",
        "bottleneck",
        "corridor",
        "park",
        "deadend",
        "ambush",
        "hallway-two-way",
        "concentric-circles-250",
        "concentric-circles-500",
        "forest",
    ] {
        let s = load(&scenario(name)).unwrap();
        let m = run_scenario(
            &s,
            RunOptions {
                stop: Stop::UntilArrived { max_steps: 2_000 },
                seed: None,
                ..Default::default()
            },
        )
        .metrics;
        assert_eq!(m.arrival_fraction, 1.0, "{name}: {m:?}");
        assert_eq!(m.not_placed + m.rejected, 0, "{name}: {m:?}");
        assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{name}: {m:?}");
        assert!(m.planner_ms_mean.is_finite(), "{name}: {m:?}");
        assert!(m.field_residual_max < 1e-6, "{name}: {m:?}");
        assert_eq!(m.field_local_minima, 0, "{name}: {m:?}");
        let ratio = m
            .path_length_ratio_mean
            .expect("arrived agents have a ratio");
        assert!((0.9..3.0).contains(&ratio), "{name}: {m:?}");
        assert!(m.effort_mean > 0.0, "{name}: {m:?}");
        check_measurements(name, &m);
        println!(
            "{name}: {} agents, {} steps, path ratio {ratio:.2}, effort {:.0} J/kg",
            m.agents - m.not_placed,
            m.steps,
            m.effort_mean
        );
    }
}

/// The shipped `overtake` overtakes: its fast walker (1.4 m/s), which keeps right as the slow
/// one (0.6 m/s) does, passes it on the left and arrives long before it (68 steps against 130).
/// With the plain harmonic field instead (ε = 0 for both) it follows the slow walker to the end:
/// right behind it on the corridor's axis, its descent points straight at it.
#[test]
fn the_shipped_overtake_overtakes_where_harmonic_walkers_follow() {
    let arrivals = |s: &Scenario| {
        let out = run_scenario(
            s,
            RunOptions {
                stop: Stop::UntilArrived { max_steps: 400 },
                ..Default::default()
            },
        );
        assert_eq!(
            (out.metrics.arrived, out.metrics.agent_overlaps),
            (2, 0),
            "{:?}",
            out.metrics
        );
        let first = |agent: usize| {
            out.trajectories
                .iter()
                .find(|t| t.agent == agent && t.state == RowState::Arrived)
                .map(|t| t.step)
                .unwrap()
        };
        (first(0), first(1))
    };
    let shipped = load(&scenario("overtake")).unwrap();
    let (slow, fast) = arrivals(&shipped);
    assert!(fast * 10 < slow * 6, "slow {slow}, fast {fast}");
    let mut harmonic = shipped.clone();
    for agent in &mut harmonic.agents {
        agent.style.behaviour = Default::default();
    }
    let (slow, fast) = arrivals(&harmonic);
    assert!(fast + 10 > slow, "slow {slow}, fast {fast}");
}

/// `--local-cell-size`, `--local-side` and `--planner-hz` replace the file's values for every
/// walker in `run` and `bench`, and both say so; a cell finer than a step is refused agent by
/// agent as in a file, and values out of range before anything runs.
#[test]
fn run_and_bench_take_local_maps_and_rate_from_the_command_line() {
    let dir = scratch("tuning");
    let file = scenario("oncoming");
    let out = dir.join("fine");
    let fine = run_file(
        &file,
        &[
            "--local-cell-size",
            "0.25",
            "--local-side",
            "11",
            "--planner-hz",
            "7",
            "--neighbours",
            "except-same-way",
            "--steps",
            "3",
        ],
        &out,
    );
    assert!(fine.status.success(), "{fine:?}");
    let stdout = String::from_utf8_lossy(&fine.stdout);
    assert!(
        stdout.contains(
            "every walker with local cells 0.25 m, local maps 11×11 cells, 7 planner steps/s, neighbours walking the same way left out (in place of the file's)"
        ),
        "{stdout}"
    );
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["rejected"], 0, "{metrics}");
    // Three steps at 7 a second.
    let trajectories = std::fs::read_to_string(out.join("trajectories.csv")).unwrap();
    let last = trajectories.lines().last().unwrap();
    let t: f64 = last.split(',').nth(1).unwrap().parse().unwrap();
    assert!((t - 3.0 / 7.0).abs() < 1e-4, "{last}");
    // 1.2 m/s at the file's 3.5 steps a second is 0.34 m a step: more than a 0.25 m cell.
    let coarse_rate = run_file(&file, &["--local-cell-size", "0.25", "--steps", "1"], &out);
    assert!(coarse_rate.status.success(), "{coarse_rate:?}");
    let stderr = String::from_utf8_lossy(&coarse_rate.stderr);
    assert!(stderr.contains("exceeds one local cell (0.25)"), "{stderr}");
    for bad in [
        ["--local-side", "4"],
        ["--local-cell-size", "0"],
        ["--planner-hz", "2000"],
        ["--neighbours", "some"],
    ] {
        let refused_out = dir.join("refused");
        let refused = run_file(&file, &bad, &refused_out);
        assert_eq!(refused.status.code(), Some(2), "{bad:?}: {refused:?}");
        assert!(!refused_out.exists());
    }
    let bench_out = dir.join("bench");
    let bench = command_file(
        "bench",
        &file,
        &[
            "--local-cell-size",
            "0.25",
            "--planner-hz",
            "7",
            "--repeat",
            "1",
            "--max-steps",
            "20",
            "--threads",
            "1",
        ],
        &bench_out,
    );
    assert!(bench.status.success(), "{bench:?}");
    let md = std::fs::read_to_string(bench_out.join("bench.md")).unwrap();
    assert!(
        md.starts_with("Every walker with local cells 0.25 m, 7 planner steps/s"),
        "{md}"
    );
}

/// docs/runner.md, *Finer local maps*: the bottleneck's forty walkers with local cells of
/// 0.25 m (the 15-cell window 3.75 m wide) at 7 planner steps a second, against the file's
/// 0.5 m cells at 3.5. The finer maps let them through the door well over half as fast again
/// (0.71 against 0.40 walkers a second when this was written) and bring them to the goal sooner
/// on average, every walker arriving without an overlap either way.
#[test]
fn finer_local_maps_let_the_bottleneck_flow_faster() {
    let run = |tuning: Tuning| {
        let mut s = load(&scenario("bottleneck")).unwrap();
        tuning.apply(&mut s);
        let m = run_scenario(
            &s,
            RunOptions {
                stop: Stop::UntilArrived { max_steps: 2_000 },
                field_plots: 0,
                ..Default::default()
            },
        )
        .metrics;
        assert_eq!(m.arrival_fraction, 1.0, "{m:?}");
        assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{m:?}");
        let flow = m.lines[0].flow_per_s.expect("forty crossings");
        (flow, m.time_to_goal_mean_s.expect("arrivals"))
    };
    let (coarse_flow, coarse_time) = run(Tuning::default());
    let (fine_flow, fine_time) = run(Tuning {
        local_cell_size: Some(0.25),
        planner_hz: Some(7.0),
        ..Default::default()
    });
    println!(
        "door flow {coarse_flow:.2} -> {fine_flow:.2} /s, mean time to goal {coarse_time:.1} -> {fine_time:.1} s"
    );
    assert!(
        fine_flow > 1.5 * coarse_flow,
        "{fine_flow} against {coarse_flow}"
    );
    assert!(
        fine_time < 0.8 * coarse_time,
        "{fine_time} against {coarse_time}"
    );
}

/// docs/steering.md, *Walkers going the same way*: the shipped hallway (two streams of 100
/// that keep right) with every walker leaving out the neighbours that walk its way
/// (`--neighbours except-same-way`). Where every neighbour is stamped the streams weave and
/// stall, and in the middle walkers go at a fifth to a half of Weidmann's speed for the
/// density; leaving those going their way out, the hallway clears in well under half the steps
/// and every density bin the middle area fills is walked at three quarters of Weidmann's speed
/// or more; no overlap either way.
#[test]
fn walkers_that_leave_out_their_own_stream_walk_the_hallway_at_pedestrian_speeds() {
    let run = |neighbours: NeighbourStamping| {
        let mut s = load(&scenario("hallway-two-way")).unwrap();
        Tuning {
            neighbours: Some(neighbours),
            ..Default::default()
        }
        .apply(&mut s);
        let m = run_scenario(
            &s,
            RunOptions {
                stop: Stop::UntilArrived { max_steps: 3_000 },
                field_plots: 0,
                ..Default::default()
            },
        )
        .metrics;
        assert_eq!(m.arrival_fraction, 1.0, "{m:?}");
        assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{m:?}");
        m
    };
    let all = run(NeighbourStamping::All);
    let same_way = run(NeighbourStamping::ExceptSameWay);
    let bins = &same_way.areas[0].bins;
    println!("{} -> {} steps; {bins:?}", all.steps, same_way.steps);
    assert!(
        (same_way.steps as f64) < 0.5 * all.steps as f64,
        "{} against {}",
        same_way.steps,
        all.steps
    );
    for bin in bins.iter().filter(|b| b.samples >= 30) {
        assert!(
            bin.speed_mean_m_s >= 0.75 * bin.weidmann_speed_m_s,
            "{bins:?}"
        );
    }
    // With every neighbour stamped, the middle's densest bins go below half.
    assert!(
        all.areas[0]
            .bins
            .iter()
            .any(|b| b.samples >= 30 && b.speed_mean_m_s < 0.5 * b.weidmann_speed_m_s),
        "{:?}",
        all.areas[0].bins
    );
}

/// The measurements of a shipped scenario: finite, within what walkers can do, and for the
/// bottleneck and the hallway what their walkers must show.
fn check_measurements(name: &str, m: &crowdfield_cli::Metrics) {
    for area in &m.areas {
        assert!(area.occupied_steps > 0, "{name}: {area:?}");
        for s in &area.samples {
            assert!(
                (0.0..6.0).contains(&s.voronoi_density) && s.density.is_finite(),
                "{name}: {s:?}"
            );
            // The measured scenarios' walkers go at most 1.2 m/s (the default).
            assert!(
                (0.0..=1.2 + 1e-9).contains(&s.voronoi_speed_m_s),
                "{name}: {s:?}"
            );
        }
    }
    match name {
        "bottleneck" => {
            // Everyone leaves through the door once, eastwards, one after another.
            let door = &m.lines[0];
            assert_eq!((door.forward, door.backward), (40, 0), "{door:?}");
            let flow = door.flow_per_s.expect("forty crossings");
            assert!(flow > 0.0 && flow.is_finite(), "{door:?}");
        }
        "hallway-two-way" => {
            // A hundred walk each way, so as many cross the middle westwards as eastwards,
            // at least a hundred each.
            let middle = &m.lines[0];
            assert!(middle.forward >= 100, "{middle:?}");
            assert_eq!(middle.forward, middle.backward, "{middle:?}");
            // Where the streams meet, denser means slower.
            let bins = &m.areas[0].bins;
            let (sparse, dense) = (bins.first().unwrap(), bins.last().unwrap());
            assert!(
                dense.density_min >= 0.5 && dense.speed_mean_m_s < 0.5 * sparse.speed_mean_m_s,
                "{bins:?}"
            );
        }
        _ => {}
    }
}

/// The side-by-side bench steers one scenario four ways from the same start: crowdfield
/// without overlaps, its crowd alone walking as the plugin does, ORCA and seek with finite
/// measurements and the same agents.
#[test]
fn the_bench_steers_a_scenario_four_ways() {
    let mut s = load(&scenario("crossing")).unwrap();
    // The west group's twelve walk east over x = 20 (a line drawn southwards: east is forward);
    // both groups cross the middle.
    s.measurements = vec![
        Measurement::Line {
            name: "east".into(),
            a: Vec2::new(20.0, 24.0),
            b: Vec2::new(20.0, 0.0),
        },
        Measurement::Area {
            name: "middle".into(),
            min: Vec2::new(8.0, 8.0),
            max: Vec2::new(16.0, 16.0),
        },
    ];
    let options = crowdfield_cli::bench::BenchOptions {
        max_steps: 600,
        threads: 2,
        repeats: 2,
        keep_trajectories: true,
        ..Default::default()
    };
    let rows = crowdfield_cli::bench::bench_scenario(&s, options).unwrap();
    assert_eq!(rows.len(), 4);
    let steerings: Vec<_> = rows.iter().map(|r| r.steering).collect();
    use crowdfield_cli::bench::{BenchRow, Steering};
    assert_eq!(
        steerings,
        [
            Steering::Crowdfield,
            Steering::CrowdStep,
            Steering::Orca,
            Steering::Seek
        ]
    );
    // The crowd stepped in the bench's loop walks every agent as the plugin does, measured by
    // the bench's own code: the same steps, arrivals, overlaps and crossings, the same densities
    // (up to the order of float sums) and the same path lengths (the plugin's run counts the
    // first step's too).
    let (plugin, crowd) = (&rows[0], &rows[1]);
    let walk = |r: &BenchRow| {
        (
            r.agents,
            r.steps,
            r.arrival_fraction,
            r.agent_overlaps,
            r.wall_overlaps,
            r.lines
                .iter()
                .map(|l| (l.forward, l.backward))
                .collect::<Vec<_>>(),
            r.areas.iter().map(|a| a.occupied_steps).collect::<Vec<_>>(),
        )
    };
    assert_eq!(walk(plugin), walk(crowd));
    for (a, b) in plugin.areas.iter().zip(&crowd.areas) {
        assert!(
            (a.voronoi_density_mean - b.voronoi_density_mean).abs() < 1e-9
                && (a.voronoi_speed_mean_m_s - b.voronoi_speed_mean_m_s).abs() < 1e-9,
            "{a:?} against {b:?}"
        );
    }
    let (a, b) = (
        plugin.path_length_ratio.unwrap(),
        crowd.path_length_ratio.unwrap(),
    );
    assert!((a - b).abs() < 1e-4, "{a} against {b}");
    // The kept trajectories say the same, step by step (the two number the agents
    // differently), and every steering starts where the plugin's agents started, in its world.
    fn recorded(r: &BenchRow) -> &crowdfield_cli::bench::Recording {
        r.recording.as_ref().expect("kept")
    }
    let at = |r: &BenchRow, step: u64| {
        let mut p: Vec<(u32, u32)> = recorded(r)
            .trajectories
            .iter()
            .filter(|t| t.step == step)
            .map(|t| (t.position.x.to_bits(), t.position.y.to_bits()))
            .collect();
        p.sort_unstable();
        p
    };
    for step in [0, 1, 2, plugin.steps / 2, plugin.steps] {
        assert_eq!(at(plugin, step), at(crowd, step), "step {step}");
    }
    for r in &rows[2..] {
        assert_eq!(at(r, 0), at(plugin, 0), "{:?}", r.steering);
        assert_eq!(recorded(r).scene, recorded(plugin).scene);
        assert!(recorded(r).scene.max.x > 0.0);
    }
    let dir = scratch("bench_recordings");
    let folders = crowdfield_cli::bench::write_recordings(&dir, &rows).unwrap();
    assert_eq!(folders.len(), 4);
    assert!(folders[2].ends_with("crossing-Orca"), "{folders:?}");
    // The same scenario benched twice keeps both runs.
    let twice: Vec<BenchRow> = rows.iter().chain(&rows[2..3]).cloned().collect();
    let again = crowdfield_cli::bench::write_recordings(&scratch("bench_twice"), &twice).unwrap();
    assert!(again[4].ends_with("crossing-Orca-2"), "{again:?}");
    for folder in &folders {
        let row: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(folder.join("row.json")).unwrap())
                .unwrap();
        assert_eq!(row["lines"][0]["name"], "east");
        let text = std::fs::read_to_string(folder.join("trajectories.txt")).unwrap();
        assert!(text.starts_with("# crowdfield trajectories"));
        assert!(folder.join("geometry.wkt").is_file());
    }
    for r in &rows {
        assert_eq!(r.agents, 24, "{r:?}");
        assert!(r.agent_steps_per_s > 0.0, "{r:?}");
        // The median of two runs lies between them.
        let [a, b] = r.runs_agent_steps_per_s[..] else {
            panic!("two runs: {r:?}")
        };
        assert!(
            a.min(b) <= r.agent_steps_per_s && r.agent_steps_per_s <= a.max(b),
            "{r:?}"
        );
        assert!(r.arrival_fraction > 0.5, "{r:?}");
        // Both runs walked every agent the same way.
        assert!(r.runs_agree, "{r:?}");
        // Every steering is measured alike: the west group over the line, once each net.
        let east = &r.lines[0];
        let net = east.forward as i64 - east.backward as i64;
        if r.arrival_fraction == 1.0 {
            assert_eq!(net, 12, "{r:?}");
        } else {
            assert!((0..=12).contains(&net), "{r:?}");
        }
        assert!(r.areas[0].occupied_steps > 0, "{r:?}");
    }
    assert_eq!((rows[0].agent_overlaps, rows[0].wall_overlaps), (0, 0));
    // Walking the descent with no avoidance makes the two groups run into each other.
    assert!(rows[3].agent_overlaps > 0, "{:?}", rows[3]);
    let table = crowdfield_cli::bench::markdown(&rows);
    // The main table, ORCA's speed over crowdfield's, then a blank line and the measurements:
    // an area and a line per steering.
    assert_eq!(
        table.lines().count(),
        2 + 4 + 1 + 2 + 1 + 1 + 2 + 8,
        "{table}"
    );
    assert_eq!(table.matches("| east (line) |").count(), 4, "{table}");
    let ratios = crowdfield_cli::bench::speed_ratios(&rows);
    let (name, plugin, crowd) = &ratios[0];
    assert_eq!((ratios.len(), name.as_str()), (1, "crossing"));
    let (plugin, crowd) = (plugin.unwrap(), crowd.unwrap());
    assert_eq!(
        plugin.median,
        rows[2].agent_steps_per_s / rows[0].agent_steps_per_s
    );
    assert_eq!(
        crowd.median,
        rows[2].agent_steps_per_s / rows[1].agent_steps_per_s
    );
    // Two rounds: the ratio of each round's runs, the lower first.
    let round = |k: usize, of: usize| {
        rows[2].runs_agent_steps_per_s[k] / rows[of].runs_agent_steps_per_s[k]
    };
    assert_eq!(plugin.rounds.0, round(0, 0).min(round(1, 0)));
    assert_eq!(plugin.rounds.1, round(0, 0).max(round(1, 0)));
    let verdict = if plugin.median <= 1.0 { "yes" } else { "no" };
    assert!(
        table.contains(&format!(
            "| crossing | {:.2} ({:.2}–{:.2}) | {:.2} ({:.2}–{:.2}) | {verdict} |",
            plugin.median,
            plugin.rounds.0,
            plugin.rounds.1,
            crowd.median,
            crowd.rounds.0,
            crowd.rounds.1
        )),
        "{table}"
    );
    // One diagram per area, the plugin, ORCA and seek in it.
    let dir = scratch("bench_diagrams");
    let drawn = crowdfield_cli::bench::write_fundamental_diagrams(&dir, &rows).unwrap();
    assert_eq!(drawn, [dir.join("crossing-middle.png")]);
    assert!(std::fs::read(&drawn[0]).unwrap().starts_with(b"\x89PNG"));
    assert!(!table.contains("runs differ"), "{table}");
    let mut differing = rows.clone();
    differing[1].runs_agree = false;
    assert_eq!(
        crowdfield_cli::bench::markdown(&differing)
            .matches("runs differ")
            .count(),
        1
    );
    // And a run on one thread walks every agent as the runs on two did.
    let again = crowdfield_cli::bench::bench_scenario(
        &s,
        crowdfield_cli::bench::BenchOptions {
            threads: 1,
            repeats: 1,
            ..options
        },
    )
    .unwrap();
    assert_eq!(rows.len(), again.len());
    for (r, a) in rows.iter().zip(&again) {
        assert!(r.same_walk(a), "{r:?} against {a:?}");
    }
    // So does one with crowdfield's pool threads kept awake between steps.
    let spun = crowdfield_cli::bench::bench_scenario(
        &s,
        crowdfield_cli::bench::BenchOptions {
            repeats: 1,
            worker_spin: std::time::Duration::from_millis(1),
            ..options
        },
    )
    .unwrap();
    assert_eq!(rows.len(), spun.len());
    for (r, a) in rows.iter().zip(&spun) {
        assert!(r.same_walk(a), "{r:?} against {a:?}");
    }
}

/// The JSON example in docs/scenario-format.md parses.
#[test]
fn the_documented_json_example_is_a_valid_scenario() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario-format.md"),
    )
    .unwrap();
    let start = doc.find("```json\n").expect("a JSON example") + "```json\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let scenario = bevy_crowdfield::Scenario::from_json(&doc[start..end]).unwrap();
    assert_eq!(scenario.name, "oncoming");
    assert_eq!(scenario.agents.len(), 1);
    assert_eq!(scenario.obstacles.len(), 1);
}

/// A walker whose only target has a time limit too short to reach it is counted as timed out,
/// not arrived, and the run ends once nobody walks any more, in `run` and in the bench.
#[test]
fn a_timed_out_walker_is_not_counted_as_arrived() {
    let s = bevy_crowdfield::Scenario::from_ron(
        "(\n  bounds: (min: (0, 0), max: (30, 6)),\n  agents: [\n    (position: (2, 3), goals: (targets: [Point((28, 3))], time_limits: [Some(3.0)])),\n    (position: (2, 5), goals: (targets: [Point((8, 5))])),\n  ],\n)",
    )
    .unwrap();
    let output = run_scenario(
        &s,
        RunOptions {
            stop: Stop::UntilArrived { max_steps: 500 },
            seed: None,
            ..Default::default()
        },
    );
    let m = &output.metrics;
    assert_eq!((m.arrived, m.timed_out), (1, 1), "{m:?}");
    // Each walker's last row says how it stopped: the plugin's state reads `Arrived` for both.
    let last_row = |agent| {
        *output
            .trajectories
            .iter()
            .rfind(|r| r.agent == agent)
            .unwrap()
    };
    // Three seconds of walking end far short of the target 26 m away.
    let gave_up = last_row(0);
    assert_eq!(gave_up.state, RowState::TimedOut, "{gave_up:?}");
    assert!(gave_up.position.x < 12.0, "{gave_up:?}");
    assert_eq!(last_row(1).state, RowState::Arrived);
    // Both still stand in the world when the run ends, and so have a row at its last step.
    assert_eq!((gave_up.step, last_row(1).step), (m.steps, m.steps));
    assert_eq!(m.arrival_fraction, 0.5);
    assert!(m.steps < 500, "{m:?}");
    // The bench's `CrowdStep` keeps the time limit as the plugin does (ORCA and seek ignore
    // it, and bring the first walker home).
    let rows = crowdfield_cli::bench::bench_scenario(
        &s,
        crowdfield_cli::bench::BenchOptions {
            max_steps: 500,
            threads: 1,
            repeats: 1,
            ..Default::default()
        },
    )
    .unwrap();
    let fractions: Vec<(f64, u64)> = rows.iter().map(|r| (r.arrival_fraction, r.steps)).collect();
    assert_eq!(fractions[0], (0.5, m.steps), "{rows:?}");
    assert_eq!(fractions[1], (0.5, m.steps), "{rows:?}");
    assert_eq!(fractions[2].0, 1.0, "{rows:?}");
}

/// Agents that never walk are accounted for: one standing in a wall is rejected, with the
/// plugin's reason in metrics.json and on standard error, and one walled off from its goal is
/// counted as unreachable; the summary line names both beside the one that arrived.
#[test]
fn rejected_and_unreachable_walkers_are_reported_with_their_reasons() {
    let dir = scratch("rejected_and_unreachable");
    // The first walker stands inside the box at x = 1–3; a wall across the whole world at
    // x = 10–11 cuts the second off from (18, 2); the third walks on its own side, to (8, 5).
    let Ran {
        file,
        stdout,
        stderr,
        metrics,
        agents,
    } = run_text(
        &dir,
        "stuck",
        "(\n  bounds: (min: (0, 0), max: (20, 6)),\n  obstacles: [\n    (shape: Aabb(min: (1, 1), max: (3, 2))),\n    (shape: Aabb(min: (10, -1), max: (11, 7))),\n  ],\n  agents: [\n    (position: (2, 1.5), goals: (targets: [Point((8, 3))])),\n    (position: (5, 3), goals: (targets: [Point((18, 2))])),\n    (position: (2, 5), goals: (targets: [Point((8, 5))])),\n  ],\n)",
        &["--max-steps", "60"],
    );
    assert!(
        stdout.contains("1/3 arrived (33.3 %), 1 rejected, 1 unreachable,"),
        "{stdout}"
    );
    assert!(stderr.contains("agent 0 was rejected: "), "{stderr}");
    assert_eq!(metrics["rejected"], 1);
    assert_eq!(metrics["unreachable"], 1);
    assert_eq!(metrics["arrived"], 1);
    // The run ended when the third walker arrived, not at the cap: nothing would ever open a
    // way for the second.
    let steps = metrics["steps"].as_u64().unwrap();
    assert!((5..60).contains(&steps), "{metrics}");
    let rejections = metrics["rejections"].as_array().unwrap();
    assert_eq!(rejections.len(), 1, "{rejections:?}");
    assert_eq!(rejections[0]["agent"], 0);
    // Each agent's outcome in agents.csv, with no figures for the rejected one and no time or
    // ratio for the one that never arrived.
    assert_eq!(agents.len(), 3, "{agents:?}");
    assert_eq!(agents[0], "0,Rejected,,,,,", "{agents:?}");
    assert!(agents[1].starts_with("1,Unreachable,,"), "{agents:?}");
    assert!(agents[2].starts_with("2,Arrived,"), "{agents:?}");
    assert!(!agents[2].contains(",,"), "{agents:?}");
    let reason = rejections[0]["reason"].as_str().unwrap();
    assert!(
        !reason.is_empty() && stderr.contains(reason),
        "{reason} / {stderr}"
    );
    // The bench says why a walker did not move in any row (ORCA starts from the agents the
    // plugin registered), on standard error and in bench.md.
    let bench_out = dir.join("bench");
    let bench = command_file(
        "bench",
        &file,
        &["--repeat", "1", "--max-steps", "60", "--threads", "1"],
        &bench_out,
    );
    assert!(bench.status.success(), "{bench:?}");
    // Rows are named by the scenario and the file it came from.
    let label = format!("stuck ({})", file.display());
    let line = format!("- {label}: agent 0 was rejected: {reason}");
    let stderr = String::from_utf8_lossy(&bench.stderr);
    assert!(stderr.contains(&line), "{stderr}");
    let md = std::fs::read_to_string(bench_out.join("bench.md")).unwrap();
    assert!(md.contains(&line), "{md}");
    assert!(
        md.contains(&format!("| {label} | Crowdfield | 3 |")),
        "{md}"
    );
    // Every row counts the same walkers: the rejected one as not arrived in ORCA's row too.
    assert!(md.contains(&format!("| {label} | Orca | 3 |")), "{md}");
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bench_out.join("bench.json")).unwrap())
            .unwrap();
    assert_eq!(rows[0]["rejections"][0]["agent"], 0, "{rows}");
    assert!(rows[2].get("rejections").is_none(), "{rows}");
    // No steering waits for the walled-off walker, and the crowd alone stops where the plugin
    // did.
    assert_eq!(rows[0]["steps"], rows[1]["steps"], "{rows}");
    for row in rows.as_array().unwrap() {
        assert!(row["steps"].as_u64().unwrap() < 60, "{rows}");
    }
    // A goal time limit moves a walled-off walker on to its next target, so the run waits for
    // it: it gives the first up after 3 s and arrives at the second.
    let timed = Scenario::from_ron(
        "(\n  bounds: (min: (0, 0), max: (20, 6)),\n  obstacles: [(shape: Aabb(min: (10, -1), max: (11, 7)))],\n  agents: [(position: (5, 3), goals: (targets: [Point((18, 2)), Point((8, 3))], time_limits: [Some(3.0)]))],\n)",
    )
    .unwrap();
    let output = run_scenario(
        &timed,
        RunOptions {
            stop: Stop::UntilArrived { max_steps: 200 },
            ..Default::default()
        },
    );
    assert_eq!(output.metrics.arrived, 1, "{:?}", output.metrics);
    assert!(output.metrics.steps > 10, "{:?}", output.metrics);
    // Two walkers placed on one spot: one is rejected, and its reason names the other by its
    // index in the file (not by the crowd's internal id, which follows the plugin's own
    // registration order).
    let twins = Scenario::from_ron(
        "(\n  bounds: (min: (0, 0), max: (20, 6)),\n  agents: [\n    (position: (2, 3), goals: (targets: [Point((18, 3))])),\n    (position: (2, 3), goals: (targets: [Point((18, 3))])),\n  ],\n)",
    )
    .unwrap();
    let options = RunOptions {
        stop: Stop::Steps(3),
        ..Default::default()
    };
    let m = run_scenario(&twins, options).metrics;
    assert_eq!(m.rejections.len(), 1, "{m:?}");
    // The earlier one is refused: Bevy 0.19 registers the later-spawned first (docs/plugin.md).
    let r = &m.rejections[0];
    assert_eq!(r.agent, 0);
    assert_eq!(r.reason, "agent at (2, 3) overlaps agent 1");
    // A run where everyone walks says nothing of the kind.
    let good = run_file(&scenario("oncoming"), &[], &dir.join("good"));
    let stdout = String::from_utf8_lossy(&good.stdout);
    let summary = stdout.split("; written to").next().unwrap();
    assert!(
        summary.contains("2/2 arrived (100.0 %), overlaps"),
        "{stdout}"
    );
    // Two walkers plan in microseconds, which the summary shows as such (not "0.01 ms"), and
    // the first step, which solves the global maps, is given apart from the mean.
    assert!(summary.contains(" µs/step (first step "), "{stdout}");
    let m = std::fs::read_to_string(dir.join("good/metrics.json")).unwrap();
    assert!(!m.contains("\"rejections\""), "{m}");
    assert!(m.contains("\"planner_first_ms\""), "{m}");
}

/// A walker that cannot get past a person standing across its corridor waits there and is
/// counted stuck at the end, in the summary line, metrics.json and agents.csv.
#[test]
fn a_walker_stuck_at_the_end_is_counted_stuck() {
    // A corridor 2 m wide (walls below y = 2 and above 4); a person of radius 0.95 stands in
    // it at x = 10, leaving 5 cm either side.
    let ran = run_text(
        &scratch("stuck_at_the_end"),
        "blocked",
        "(\n  bounds: (min: (0, 0), max: (20, 6)),\n  obstacles: [\n    (shape: Aabb(min: (0, 0), max: (20, 2))),\n    (shape: Aabb(min: (0, 4), max: (20, 6))),\n  ],\n  agents: [\n    (position: (10, 3), style: (radius: 0.95)),\n    (position: (2, 3), goals: (targets: [Point((18, 3))])),\n  ],\n)",
        &["--max-steps", "150"],
    );
    assert!(
        ran.stdout
            .contains("0/1 arrived (0.0 %), 1 standing, 1 stuck,"),
        "{}",
        ran.stdout
    );
    assert_eq!(ran.metrics["stuck"], 1, "{}", ran.metrics);
    assert_eq!(ran.metrics["steps"], 150, "{}", ran.metrics);
    assert!(ran.agents[1].starts_with("1,Stuck,,"), "{:?}", ran.agents);
}

/// People with no target stand all run long: they are counted as standing, and the arrival,
/// time, path and effort figures are the walkers' alone, in `run` and in every bench row (before,
/// the ambush's 34 standing people counted as arrived at the first step, which put its mean
/// time to goal at 1.1 s where its one walker took 28.6 s).
#[test]
fn standing_people_are_not_counted_as_walkers() {
    let s = Scenario::from_ron(
        "(\n  bounds: (min: (0, 0), max: (20, 8)),\n  agents: [\n    (position: (2, 1.5), goals: (targets: [Point((12, 1.5))])),\n    (position: (5, 7), goals: (targets: [])),\n    (position: (7, 7), goals: (targets: [])),\n    (position: (9, 7)),\n  ],\n)",
    )
    .unwrap();
    let options = RunOptions {
        stop: Stop::UntilArrived { max_steps: 200 },
        ..Default::default()
    };
    let output = run_scenario(&s, options);
    let outcomes: Vec<Outcome> = output.agents.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Arrived,
            Outcome::Standing,
            Outcome::Standing,
            Outcome::Standing
        ]
    );
    assert!(
        output.agents[1..]
            .iter()
            .all(|r| r.path_length_m.is_none() && r.effort.is_none() && r.time_to_goal_s.is_none())
    );
    let m = output.metrics;
    assert_eq!((m.agents, m.standing, m.arrived), (4, 3, 1), "{m:?}");
    assert_eq!(m.arrival_fraction, 1.0);
    // The walker's own figures: it walks about 10 m, so it needs several seconds.
    let time = m.time_to_goal_mean_s.unwrap();
    assert_eq!(Some(time), m.time_to_goal_max_s);
    assert!(time > 5.0, "{m:?}");
    assert!(m.path_length_mean_m > 9.0, "{m:?}");
    let alone = Scenario::from_ron(
        "(\n  bounds: (min: (0, 0), max: (20, 8)),\n  agents: [(position: (2, 1.5), goals: (targets: [Point((12, 1.5))]))],\n)",
    )
    .unwrap();
    let a = run_scenario(&alone, options).metrics;
    assert_eq!((a.standing, a.arrived, a.steps), (0, 1, m.steps), "{a:?}");
    // The same walk, to rounding: the people stand beyond the walker's local map.
    assert_eq!(a.time_to_goal_mean_s, m.time_to_goal_mean_s);
    assert!(
        (a.path_length_mean_m - m.path_length_mean_m).abs() < 1e-9,
        "{a:?}"
    );
    assert!((a.effort_mean - m.effort_mean).abs() < 1e-9, "{a:?}");
    let rows = crowdfield_cli::bench::bench_scenario(
        &s,
        crowdfield_cli::bench::BenchOptions {
            max_steps: 200,
            threads: 1,
            repeats: 1,
            ..Default::default()
        },
    )
    .unwrap();
    for row in &rows {
        assert_eq!((row.agents, row.arrival_fraction), (1, 1.0), "{row:?}");
    }
    // The ambush's summary line counts its one walker and names the people standing.
    let dir = scratch("standing_people");
    let run = run_file(&scenario("ambush"), &[], &dir);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains(" 1/1 arrived (100.0 %), 34 standing, overlaps"),
        "{stdout}"
    );
    // A person with no target placed in a wall is rejected, not standing: the file asked for
    // an agent the plugin refused, which counts among the walkers as not arrived.
    let walled = Scenario::from_ron(
        "(\n  bounds: (min: (0, 0), max: (10, 10)),\n  obstacles: [(shape: Aabb(min: (1, 1), max: (3, 3)))],\n  agents: [(position: (2, 2)), (position: (6, 2), goals: (targets: [Point((8, 8))]))],\n)",
    )
    .unwrap();
    let output = run_scenario(&walled, options);
    let m = &output.metrics;
    assert_eq!(
        (m.standing, m.rejected, m.walkers(), m.arrived),
        (0, 1, 2, 1),
        "{m:?}"
    );
    assert_eq!(output.agents[0].outcome, Outcome::Rejected);
    // With nobody to walk, the run ends after its first step and gives no arrival percentage.
    let file = dir.join("still.scenario.ron");
    std::fs::write(
        &file,
        "(bounds: (min: (0, 0), max: (10, 10)), agents: [(position: (2, 2)), (position: (5, 5))])",
    )
    .unwrap();
    let run = run_file(&file, &[], &dir.join("still"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains(": 1 step, 0/0 arrived, 2 standing, overlaps"),
        "{stdout}"
    );
}

/// A SteerSuite test case converts into a scenario that runs: two walkers swap ends of a
/// 6 m-wide street between two blocks, and a bad case writes nothing.
#[test]
fn a_steersuite_test_case_converts_and_runs() {
    let dir = scratch("steersuite");
    let case = dir.join("swap.xml");
    let walker = |x: f64, to: f64| {
        format!(
            "<agent><name>w{x}</name><initialConditions><radius>0.4</radius>\
             <position><x>{x}</x><y>0</y><z>0.5</z></position>\
             <direction><x>1</x><y>0</y><z>0</z></direction><speed>1.0</speed></initialConditions>\
             <goalSequence><seekStaticTarget><targetLocation><x>{to}</x><y>0</y><z>0.5</z></targetLocation>\
             <desiredSpeed>1.2</desiredSpeed><timeDuration>1000</timeDuration></seekStaticTarget></goalSequence></agent>\n"
        )
    };
    std::fs::write(
        &case,
        format!(
            "<SteerBenchTestCase xmlns=\"http://www.magix.ucla.edu/steerbench\">\n\
             <header><version>1.0</version><name>swap</name><worldBounds><xmin>-15</xmin><xmax>15</xmax>\
             <ymin>0</ymin><ymax>0</ymax><zmin>-8</zmin><zmax>8</zmax></worldBounds></header>\n\
             <obstacle><xmin>-15</xmin><xmax>15</xmax><ymin>0</ymin><ymax>1</ymax><zmin>3</zmin><zmax>8</zmax></obstacle>\n\
             <obstacle><xmin>-15</xmin><xmax>15</xmax><ymin>0</ymin><ymax>1</ymax><zmin>-8</zmin><zmax>-3</zmax></obstacle>\n\
             {}{}</SteerBenchTestCase>\n",
            walker(-10.0, 10.0),
            walker(10.0, -10.0)
        ),
    )
    .unwrap();
    let exe = env!("CARGO_BIN_EXE_crowdfield");
    let out = dir.join("swap.scenario.ron");
    let converted = command_file("convert", &case, &[], &out);
    assert!(converted.status.success(), "{converted:?}");
    let notes = String::from_utf8_lossy(&converted.stderr);
    assert_eq!(notes.matches("initial speed").count(), 2, "{notes}");
    let s = load(&out).unwrap();
    assert_eq!((s.obstacles.len(), s.agents.len()), (2, 2));
    let m = run_scenario(&s, RunOptions::default()).metrics;
    assert_eq!(m.arrival_fraction, 1.0, "{m:?}");
    assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{m:?}");

    // A goal with no counterpart: exit status 2, its position, no file.
    std::fs::write(
        &case,
        std::fs::read_to_string(&case)
            .unwrap()
            .replace("seekStaticTarget>", "fleeStaticTarget>"),
    )
    .unwrap();
    let refused_out = dir.join("refused.scenario.ron");
    let refused = Command::new(exe)
        .arg("convert")
        .arg(&case)
        .arg("--out")
        .arg(&refused_out)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("swap.xml:5:") && said.contains("fleeStaticTarget"),
        "{said}"
    );
    assert!(!refused_out.exists());
}

/// A 1.4 m door for walkers of 0.5 m radius (as in SteerSuite's `bottleneck-evacuation-2`):
/// grown by the radius, it leaves a 0.4 m band that holds no whole 0.25 m cell of the global
/// lattice, so `convert` goes on to 0.125 m cells, which give the walkers a route, and gives
/// them local cells of 0.25 m at 7 planner steps a second: all three walk through, touching
/// nothing. Local maps of 0.5 m cells would close the door (no cell centre lies in the band).
#[test]
fn convert_goes_to_finer_global_cells_for_a_door_sized_to_its_walkers() {
    let dir = scratch("steersuite-door");
    let case = dir.join("door.xml");
    let wall = |x0: f64, x1: f64, z0: f64, z1: f64| {
        format!(
            "<obstacle><xmin>{x0}</xmin><xmax>{x1}</xmax><ymin>0</ymin><ymax>1</ymax>\
             <zmin>{z0}</zmin><zmax>{z1}</zmax></obstacle>\n"
        )
    };
    let walker = |z: f64| {
        format!(
            "<agent><name>w{z}</name><initialConditions><radius>0.5</radius>\
             <position><x>5</x><y>0</y><z>{z}</z></position>\
             <direction><x>-1</x><y>0</y><z>0</z></direction><speed>0</speed></initialConditions>\
             <goalSequence><seekStaticTarget><targetLocation><x>-3</x><y>0</y><z>0</z></targetLocation>\
             <desiredSpeed>1.2</desiredSpeed><timeDuration>1000</timeDuration></seekStaticTarget></goalSequence></agent>\n"
        )
    };
    // A room x 1..8, z -4..4, walled all round, its west wall opened at z -0.7..0.7.
    let walls = [
        wall(0.0, 1.0, -5.0, -0.7),
        wall(0.0, 1.0, 0.7, 5.0),
        wall(1.0, 8.0, 4.0, 5.0),
        wall(1.0, 8.0, -5.0, -4.0),
        wall(8.0, 9.0, -5.0, 5.0),
    ]
    .concat();
    std::fs::write(
        &case,
        format!(
            "<SteerBenchTestCase xmlns=\"http://www.magix.ucla.edu/steerbench\">\n\
             <header><version>1.0</version><name>door</name><worldBounds><xmin>-6</xmin><xmax>10</xmax>\
             <ymin>0</ymin><ymax>0</ymax><zmin>-6</zmin><zmax>6</zmax></worldBounds></header>\n\
             {walls}{}{}{}</SteerBenchTestCase>\n",
            walker(-2.0),
            walker(0.0),
            walker(2.0)
        ),
    )
    .unwrap();
    let out = dir.join("door.scenario.ron");
    let converted = command_file("convert", &case, &[], &out);
    assert!(converted.status.success(), "{converted:?}");
    let said = String::from_utf8_lossy(&converted.stderr);
    assert!(
        said.contains("3 agents without a way with the default cells, 3 with global cells of 0.25 m, 0 with global cells of 0.125 m, obstacles grown by 0.5 m in them, obstacle_coverage: Centre: written with global cells of 0.125 m, with local cells of 0.25 m at 7 planner steps a second (passages this narrow may close in local cells of 0.5 m) (--keep-cells keeps the defaults)"),
        "{said}"
    );
    let door = load(&out).unwrap();
    assert_eq!(
        (
            door.settings.global_cell_size,
            door.settings.global_inflation,
            door.settings.planner_hz
        ),
        (Some(0.125), Some(0.5), Some(7.0))
    );
    assert!(
        door.agents
            .iter()
            .all(|a| a.style.local_map.cell_size == 0.25)
    );
    let run = |s: &Scenario, max_steps: u64| {
        run_scenario(
            s,
            RunOptions {
                stop: Stop::UntilArrived { max_steps },
                ..Default::default()
            },
        )
        .metrics
    };
    let m = run(&door, 600);
    assert_eq!(m.arrival_fraction, 1.0, "{m:?}");
    assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{m:?}");
    let mut coarse = door.clone();
    Tuning {
        local_cell_size: Some(0.5),
        planner_hz: Some(3.5),
        ..Default::default()
    }
    .apply(&mut coarse);
    let m = run(&coarse, 150);
    assert_eq!((m.unreachable, m.arrived), (0, 0), "{m:?}");
}

/// A Menge project converts and runs: five walkers in a row south of a wall cross it through a
/// 2 m gap to a box on the north side and stop there; a scene given without its behaviour, or
/// a project naming a missing file, writes nothing.
#[test]
fn a_menge_project_converts_and_runs() {
    let dir = scratch("menge");
    std::fs::create_dir_all(dir.join("gap")).unwrap();
    std::fs::write(
        dir.join("gap.xml"),
        r#"<?xml version="1.0"?>
<Project scene="gap/gapS.xml" behavior="gap/gapB.xml" view="gap/gapV.xml" model="orca" />
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("gap/gapS.xml"),
        r#"<?xml version="1.0"?>
<Experiment version="2.0">
  <Common time_step="0.1" />
  <AgentProfile name="walker">
    <Common r="0.19" pref_speed="1.04" max_speed="2" />
    <ORCA tau="3.0" tauObst="0.15" />
  </AgentProfile>
  <AgentGroup>
    <ProfileSelector type="const" name="walker" />
    <StateSelector type="const" name="Walk" />
    <Generator type="rect_grid" anchor_x="-12" anchor_y="-6" offset_x="1" offset_y="0" count_x="5" count_y="1" />
  </AgentGroup>
  <ObstacleSet type="explicit" class="1">
    <Obstacle closed="1">
      <Vertex p_x="-20" p_y="-1" /><Vertex p_x="-1" p_y="-1" />
      <Vertex p_x="-1" p_y="1" /><Vertex p_x="-20" p_y="1" />
    </Obstacle>
    <Obstacle closed="1">
      <Vertex p_x="20" p_y="-1" /><Vertex p_x="20" p_y="1" />
      <Vertex p_x="1" p_y="1" /><Vertex p_x="1" p_y="-1" />
    </Obstacle>
  </ObstacleSet>
</Experiment>
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("gap/gapB.xml"),
        r#"<?xml version="1.0"?>
<BFSM>
  <GoalSet id="0">
    <Goal type="AABB" id="0" min_x="-14" min_y="5" max_x="-2" max_y="8" />
  </GoalSet>
  <State name="Walk" final="0">
    <GoalSelector type="explicit" goal_set="0" goal="0" />
    <VelComponent type="road_map" file_name="gapMap.txt" />
  </State>
  <State name="Wait" final="1">
    <GoalSelector type="identity" />
    <VelComponent type="zero" />
  </State>
  <Transition from="Walk" to="Wait">
    <Condition type="goal_reached" distance="0.25" />
  </Transition>
</BFSM>
"#,
    )
    .unwrap();
    let exe = env!("CARGO_BIN_EXE_crowdfield");
    let convert = |args: &[&std::ffi::OsStr]| {
        Command::new(exe)
            .arg("convert")
            .args(args)
            .output()
            .unwrap()
    };
    let out = dir.join("gap.scenario.ron");
    let converted = convert(&[
        dir.join("gap.xml").as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert!(converted.status.success(), "{converted:?}");
    let notes = String::from_utf8_lossy(&converted.stderr);
    assert!(
        notes.contains("gapB.xml:8:5: a road_map velocity") && notes.contains("(<ORCA>)"),
        "{notes}"
    );
    let s = load(&out).unwrap();
    assert_eq!((s.obstacles.len(), s.agents.len()), (2, 5));
    assert_eq!(s.agents[0].style.radius, 0.19);
    let m = run_scenario(&s, RunOptions::default()).metrics;
    assert_eq!(m.arrival_fraction, 1.0, "{m:?}");
    assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{m:?}");

    // The scene with --behaviour gives the same scenario; without it, an error and no file.
    let again = dir.join("again.scenario.ron");
    let scene = dir.join("gap/gapS.xml");
    let behaviour = dir.join("gap/gapB.xml");
    let with = convert(&[
        scene.as_os_str(),
        "--behaviour".as_ref(),
        behaviour.as_os_str(),
        "--out".as_ref(),
        again.as_os_str(),
    ]);
    assert!(with.status.success(), "{with:?}");
    assert_eq!(load(&again).unwrap(), s);
    let refused_out = dir.join("refused.scenario.ron");
    let without = convert(&[scene.as_os_str(), "--out".as_ref(), refused_out.as_os_str()]);
    assert_eq!(without.status.code(), Some(2));
    let said = String::from_utf8_lossy(&without.stderr);
    assert!(
        said.contains("gapS.xml:2:1:") && said.contains("--behaviour"),
        "{said}"
    );
    std::fs::remove_file(&behaviour).unwrap();
    let missing = convert(&[
        dir.join("gap.xml").as_os_str(),
        "--out".as_ref(),
        refused_out.as_os_str(),
    ]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("gapB.xml"),
        "{missing:?}"
    );
    assert!(!refused_out.exists());
}

/// Two walkers of 0.5 m radius swap sides through a 1.6 m door in a wall across the room: with
/// obstacles stamped on the cells whose centre they cover the door stays open and both arrive
/// without touching each other or the wall; stamped on every cell they touch (the default), it
/// is closed in their local maps and neither gets through.
#[test]
fn centre_coverage_lets_wide_walkers_through_a_door() {
    let door = |coverage: &str| {
        Scenario::from_ron(&format!(
            "(
                bounds: (min: (0.0, 0.0), max: (20.0, 10.0)),
                obstacles: [
                    (shape: Aabb(min: (9.9, 0.0), max: (10.1, 4.2))),
                    (shape: Aabb(min: (9.9, 5.8), max: (10.1, 10.0))),
                ],
                agents: [
                    (position: (3.0, 5.0), goals: (targets: [Point((17.0, 5.0))]),
                     style: (radius: 0.5, local_map: (obstacle_coverage: {coverage}))),
                    (position: (17.0, 4.0), goals: (targets: [Point((3.0, 4.0))]),
                     style: (radius: 0.5, local_map: (obstacle_coverage: {coverage}))),
                ],
            )"
        ))
        .unwrap()
    };
    let run = |s: &Scenario| {
        run_scenario(
            s,
            RunOptions {
                stop: Stop::UntilArrived { max_steps: 300 },
                ..Default::default()
            },
        )
        .metrics
    };
    let open = run(&door("Centre"));
    assert_eq!(open.arrival_fraction, 1.0, "{open:?}");
    assert_eq!(
        (open.agent_overlaps, open.wall_overlaps),
        (0, 0),
        "{open:?}"
    );
    assert!(open.path_length_ratio_mean.unwrap() < 1.3, "{open:?}");
    let closed = run(&door("Touch"));
    assert_eq!(closed.arrived, 0, "{closed:?}");
}

/// Three walkers of 0.19 m radius leave a room through a 1 m corridor with two bends, as in
/// Menge's maze: with the default global cells (0.5 m, obstacles grown by 0.25 m) the corridor
/// is closed in the global map and nobody has a route; `convert --global-cell-size 0.25
/// --global-inflation 0.19 --centre-coverage` keeps it open and all three arrive, touching
/// nothing. Cells too fine for the world's grid are refused without writing a file.
#[test]
fn convert_sets_global_cells_fine_enough_for_a_narrow_corridor() {
    let dir = scratch("menge-corridor");
    std::fs::create_dir_all(dir.join("zz")).unwrap();
    std::fs::write(
        dir.join("zz.xml"),
        r#"<Project scene="zz/zzS.xml" behavior="zz/zzB.xml" />"#,
    )
    .unwrap();
    // The walkable ground's outline, clockwise: an enclosure (left room, corridor, right room).
    let outline: [(f64, f64); 16] = [
        (-12.0, 3.0),
        (-8.0, 3.0),
        (-8.0, 0.5),
        (-0.5, 0.5),
        (-0.5, 6.5),
        (8.0, 6.5),
        (8.0, 9.0),
        (12.0, 9.0),
        (12.0, 3.0),
        (8.0, 3.0),
        (8.0, 5.5),
        (0.5, 5.5),
        (0.5, -0.5),
        (-8.0, -0.5),
        (-8.0, -3.0),
        (-12.0, -3.0),
    ];
    let vertices: String = outline
        .iter()
        .map(|(x, y)| format!(r#"<Vertex p_x="{x}" p_y="{y}" />"#))
        .collect();
    std::fs::write(
        dir.join("zz/zzS.xml"),
        format!(
            r#"<Experiment version="2.0">
  <AgentProfile name="walker"><Common r="0.19" pref_speed="1.04" /></AgentProfile>
  <AgentGroup>
    <ProfileSelector type="const" name="walker" />
    <StateSelector type="const" name="Walk" />
    <Generator type="rect_grid" anchor_x="-11" anchor_y="-1" offset_x="0" offset_y="1" count_x="1" count_y="3" />
  </AgentGroup>
  <ObstacleSet type="explicit" class="1"><Obstacle closed="1">{vertices}</Obstacle></ObstacleSet>
</Experiment>"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("zz/zzB.xml"),
        r#"<BFSM>
  <GoalSet id="0"><Goal type="AABB" id="0" min_x="9.5" min_y="4" max_x="11.5" max_y="8" /></GoalSet>
  <State name="Walk" final="0">
    <GoalSelector type="explicit" goal_set="0" goal="0" /><VelComponent type="goal" />
  </State>
  <State name="Stop" final="1"><GoalSelector type="identity" /><VelComponent type="zero" /></State>
  <Transition from="Walk" to="Stop"><Condition type="goal_reached" distance="0.25" /></Transition>
</BFSM>"#,
    )
    .unwrap();
    let convert = |out: &Path, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_crowdfield"))
            .arg("convert")
            .arg(dir.join("zz.xml"))
            .arg("--out")
            .arg(out)
            .args(extra)
            .output()
            .unwrap()
    };
    let run = |s: &Scenario| {
        run_scenario(
            s,
            RunOptions {
                stop: Stop::UntilArrived { max_steps: 400 },
                ..Default::default()
            },
        )
        .metrics
    };
    let coarse_out = dir.join("coarse.scenario.ron");
    assert!(convert(&coarse_out, &["--keep-cells"]).status.success());
    let coarse = load(&coarse_out).unwrap();
    assert_eq!(coarse.settings.global_cell_size, None);
    let m = run(&coarse);
    assert_eq!((m.arrived, m.unreachable), (0, 3), "{m:?}");

    // Without flags, convert finds the walkers without a way and fits the cells itself.
    let fitted_out = dir.join("fitted.scenario.ron");
    let fitted_run = convert(&fitted_out, &[]);
    assert!(fitted_run.status.success(), "{fitted_run:?}");
    let said = String::from_utf8_lossy(&fitted_run.stderr);
    assert!(
        said.contains("3 agents without a way with the default cells, 0 with global cells of 0.25 m, obstacles grown by 0.19 m in them, obstacle_coverage: Centre: written with global cells of 0.25 m"),
        "{said}"
    );
    assert!(!said.contains("local cells"), "{said}");
    let fitted = load(&fitted_out).unwrap();
    assert_eq!(
        (
            fitted.settings.global_cell_size,
            fitted.settings.global_inflation
        ),
        (Some(0.25), Some(0.19))
    );
    assert!(
        fitted
            .agents
            .iter()
            .map(|a| &a.style)
            .chain(fitted.regions.iter().map(|r| &r.style))
            .all(|s| s.local_map.obstacle_coverage == Some(Coverage::Centre))
    );
    let m = run(&fitted);
    assert_eq!(m.arrival_fraction, 1.0, "{m:?}");

    // A box across the corridor shuts the goal off at any cell size: the defaults are kept,
    // and the note says why.
    let scene = std::fs::read_to_string(dir.join("zz/zzS.xml")).unwrap();
    let shut = scene.replace(
        "</ObstacleSet>",
        r#"<Obstacle closed="1"><Vertex p_x="-1" p_y="2" /><Vertex p_x="-1" p_y="3" /><Vertex p_x="1" p_y="3" /><Vertex p_x="1" p_y="2" /></Obstacle></ObstacleSet>"#,
    );
    std::fs::write(dir.join("zz/zzS.xml"), shut).unwrap();
    let kept_out = dir.join("kept.scenario.ron");
    let kept_run = convert(&kept_out, &[]);
    assert!(kept_run.status.success(), "{kept_run:?}");
    let said = String::from_utf8_lossy(&kept_run.stderr);
    assert!(
        said.contains("3 agents without a way with the default cells, 3 with global cells of 0.25 m, 3 with global cells of 0.125 m, obstacles grown by 0.19 m in them, obstacle_coverage: Centre: the defaults kept"),
        "{said}"
    );
    assert_eq!(load(&kept_out).unwrap().settings.global_cell_size, None);
    std::fs::write(dir.join("zz/zzS.xml"), scene).unwrap();

    let fine_out = dir.join("fine.scenario.ron");
    let fine_args = [
        "--global-cell-size",
        "0.25",
        "--global-inflation",
        "0.19",
        "--centre-coverage",
    ];
    let converted = convert(&fine_out, &fine_args);
    assert!(converted.status.success(), "{converted:?}");
    let fine = load(&fine_out).unwrap();
    assert_eq!(
        (
            fine.settings.global_cell_size,
            fine.settings.global_inflation
        ),
        (Some(0.25), Some(0.19))
    );
    let m = run(&fine);
    assert_eq!(m.arrival_fraction, 1.0, "{m:?}");
    assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{m:?}");

    // Too fine for the world's grid, or not a length: refused, nothing written.
    let refused = dir.join("refused.scenario.ron");
    for bad in [
        ["--global-cell-size", "0.0001"],
        ["--global-inflation", "-1"],
    ] {
        let said = convert(&refused, &bad);
        assert_eq!(said.status.code(), Some(2), "{bad:?}: {said:?}");
        assert!(!refused.exists(), "{bad:?}");
    }
}

/// The shipped group scenario: the wedge files through the corridor and forms again, the run
/// stops once the group has arrived, and `groups.csv`, `groups.png` and the metrics' group
/// summary are written.
#[test]
fn a_group_scenario_writes_the_groups_measures_over_time() {
    let dir = scratch("wedge-corridor");
    let run = run_file(&scenario("wedge-corridor"), &["--until-arrived"], &dir);
    assert!(run.status.success(), "{run:?}");
    let metrics: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(metrics["agent_overlaps"], 0);
    assert_eq!(metrics["wall_overlaps"], 0);
    assert_eq!(metrics["standing"], 7, "the members");
    let group = &metrics["groups"][0];
    assert!(group["arrived_step"].as_u64().is_some(), "{group}");
    assert!(
        group["parts_max"].as_u64().unwrap() >= 2,
        "it filed through: {group}"
    );
    assert_eq!(group["parts_last"], 1);
    let csv = std::fs::read_to_string(dir.join("groups.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert_eq!(
        header,
        "step,time_s,group,formation_error,slot_distance_m,cohesion,parts,arrived"
    );
    assert!(csv.lines().count() > 50);
    assert!(dir.join("groups.png").is_file());
}

/// Two files whose scenarios carry the same name (SteerSuite's
/// `4-way-oncomming-circle-obstacle` calls itself `simple-1`) are benched as two scenarios:
/// each keeps its rows, named with its file, and its own line of speed ratios, and
/// `bench.json` gives each row's file and place.
#[test]
fn bench_names_rows_by_their_file() {
    let dir = scratch("bench-same-name");
    let text = |x: f64| {
        format!(
            "(\n  name: \"simple-1\",\n  bounds: (min: (0, 0), max: (20, 6)),\n  agents: [(position: ({x}, 3), goals: (targets: [Point((18, 3))]))],\n)"
        )
    };
    let (a, b) = (dir.join("a.scenario.ron"), dir.join("b.scenario.ron"));
    std::fs::write(&a, text(2.0)).unwrap();
    std::fs::write(&b, text(4.0)).unwrap();
    let out = dir.join("bench");
    let bench = Command::new(env!("CARGO_BIN_EXE_crowdfield"))
        .arg("bench")
        .arg(&a)
        .arg(&b)
        .args([
            "--repeat",
            "1",
            "--max-steps",
            "100",
            "--threads",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(bench.status.success(), "{bench:?}");
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    for file in [&a, &b] {
        let label = format!("simple-1 ({})", file.display());
        // Crowdfield, CrowdStep, ORCA and seek, then the line of speed ratios.
        assert_eq!(md.matches(&format!("| {label} |")).count(), 5, "{md}");
    }
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    let places: Vec<(u64, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().unwrap(),
                r["file"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(places.len(), 8, "{rows}");
    assert!(
        places[..4]
            .iter()
            .all(|p| p == &(0, a.display().to_string()))
    );
    assert!(
        places[4..]
            .iter()
            .all(|p| p == &(1, b.display().to_string()))
    );
}

/// A walker spawned inside its goal that leaves on arrival leaves in the first step, before
/// the run ever sees it in the crowd: it still has its rows, its start and where it left, as
/// every agent `agents.csv` lists does.
#[test]
fn a_walker_that_leaves_in_the_first_step_has_its_rows() {
    let scenario = Scenario::from_ron(
        "(\n  bounds: (min: (0, 0), max: (20, 6)),\n  agents: [\n    (position: (17.5, 3), goals: (targets: [Region(Aabb(min: (16, 1), max: (19, 5)))], on_arrival: Despawn)),\n    (position: (2, 3), goals: (targets: [Region(Aabb(min: (16, 1), max: (19, 5)))])),\n  ],\n)",
    )
    .unwrap();
    let output = run_scenario(&scenario, RunOptions::default());
    let rows: Vec<(u64, RowState, Vec2)> = output
        .trajectories
        .iter()
        .filter(|s| s.agent == 0)
        .map(|s| (s.step, s.state, s.position))
        .collect();
    assert_eq!(
        rows,
        vec![
            (0, RowState::Pending, Vec2::new(17.5, 3.0)),
            (1, RowState::Arrived, Vec2::new(17.5, 3.0)),
        ]
    );
    assert_eq!(output.metrics.arrived, 2);
    // Rows stay in step order.
    assert!(
        output
            .trajectories
            .windows(2)
            .all(|w| w[0].step <= w[1].step)
    );
}
