//! `crowdfield`: run and check scenario files without a window.
//!
//! ```text
//! crowdfield validate assets/scenarios/corridor.scenario.ron
//! crowdfield run assets/scenarios/corridor.scenario.ron --until-arrived --out out/corridor
//! crowdfield run assets/scenarios/park.scenario.ron --steps 300 --seed 7 --out out/park
//! crowdfield run assets/scenarios/bottleneck.scenario.ron --local-cell-size 0.25 --planner-hz 7
//! crowdfield bench assets/scenarios/crossing.scenario.ron assets/scenarios/forest.scenario.ron
//! crowdfield convert steersuite/testcases/hallway-two-way.xml --out hallway.scenario.ron
//! crowdfield convert Menge/examples/core/bottleneck.xml --out bottleneck.scenario.ron
//! ```
//!
//! Exit status: 0 on success, 1 when a run's outputs cannot be written, 2 when the scenario
//! file (or the file to convert) cannot be read or is invalid (nothing is written then).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use bevy_crowdfield::field::Coverage;
use bevy_crowdfield::steer::{NeighbourStamping, Preset};
use bevy_crowdfield::{Scenario, ScenarioError};
use clap::{Args, Parser, Subcommand, ValueEnum};
use crowdfield_cli::bench::{
    BenchOptions, BenchRow, bench_scenario, markdown, not_registered, write_fundamental_diagrams,
    write_recordings,
};
use crowdfield_cli::menge::from_menge_files;
use crowdfield_cli::steersuite::from_steersuite;
use crowdfield_cli::{
    Metrics, NARROW_CELL_BUDGET, NARROW_GLOBAL_CELLS, NARROW_LOCAL_CELL, OutputOptions, RunOptions,
    Stop, Tuning, blocked_at_start, counted, load, narrow_passage_settings, rejection_lines,
    run_scenario_with_progress, write_outputs,
};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Parser)]
#[command(
    name = "crowdfield",
    version,
    about = "Run crowdfield scenarios headless"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read scenario files and report each file's first problem with its line and column; exit
    /// with status 2 if any file has one.
    Validate {
        /// `.scenario.ron` or `.scenario.json` files.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
    },
    /// Steer the same scenarios with crowdfield (through the plugin, and its crowd alone in the
    /// bench's loop), ORCA (dodgy_2d) and a seek baseline; write bench.md (the rows, ORCA's speed
    /// over crowdfield's, the measurements), bench.json (the rows) and, for scenarios with
    /// measurement areas, each area's fundamental diagram for crowdfield, ORCA and seek.
    Bench {
        /// Scenario files (default: the shipped comparison set).
        scenarios: Vec<PathBuf>,
        /// Planner steps at most per scenario and steering.
        #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(1..))]
        max_steps: u64,
        /// Threads for every steering (the same pool).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
        threads: u16,
        /// Runs of each steering, taken in turn; the table gives the median speed and the
        /// range.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
        repeat: u64,
        /// Where to write the tables.
        #[arg(long, default_value = "out/bench")]
        out: PathBuf,
        /// Keep crowdfield's other pool threads awake up to this many microseconds (at most
        /// one second) between planner steps (0: off). On our VM this also slowed the ORCA runs
        /// after it (docs/performance.md, *Two threads*).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
        worker_spin_us: u64,
        /// Also write each steering's first run for PedPy, into `OUT/pedpy/SCENARIO-STEERING/`:
        /// `trajectories.txt`, `geometry.wkt` and `row.json` (`scripts/pedpy_check.py` measures
        /// each folder).
        #[arg(long)]
        pedpy: bool,
        #[command(flatten)]
        tuning: TuningArgs,
    },
    /// The flow benchmark: bottlenecks 0.8 to 2.4 m wide, one-way and counterflow corridors,
    /// and the shipped plaza and hallway, each steered by crowdfield and by ORCA; write
    /// flow.md (specific flows beside the experimental band, speeds beside Weidmann's, lane
    /// order, steps to clear), flow.json and the plots flow-bottleneck.png and flow-speed.png.
    Flow {
        /// Where to write the tables and plots.
        #[arg(long, default_value = "out/flow")]
        out: PathBuf,
        /// Threads for both steerings (the same pool).
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
        threads: u16,
        /// Planner steps at most per case and steering.
        #[arg(long, default_value_t = 3_000, value_parser = clap::value_parser!(u64).range(1..))]
        max_steps: u64,
        /// Where the shipped `plaza` and `hallway-two-way` scenarios are.
        #[arg(long, default_value = "assets/scenarios")]
        scenarios: PathBuf,
        /// Leave the plaza of 2,000 out (its runs take most of the time).
        #[arg(long)]
        no_plaza: bool,
        /// Crowdfield's preset (default: `flow`, the preset this benchmark measures).
        #[arg(long, value_enum)]
        preset: Option<PresetArg>,
        /// Write the generated cases as scenario files into this folder and stop (each can then
        /// be run or benched on its own).
        #[arg(long)]
        write_scenarios: Option<PathBuf>,
    },
    /// Convert a SteerSuite test case (SteerBench XML) or a Menge project (or scene, with
    /// `--behaviour`) into a scenario file; what is dropped or approximated is listed on
    /// standard error.
    Convert {
        /// The test case or project, `.xml`: a `<SteerBenchTestCase>`, or Menge's `<Project>` (or
        /// `<Experiment>`, its scene).
        file: PathBuf,
        /// A Menge scene's behaviour file (`…B.xml`), when `FILE` is the scene rather than a
        /// project.
        #[arg(long)]
        behaviour: Option<PathBuf>,
        /// The scenario to write, `.ron` or `.json` (default: RON on standard output).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seeds every draw: SteerSuite's agent and obstacle regions, Menge's distributions,
        /// random goals and timers.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Stamp obstacles into the walkers' local maps on the cells whose centre they cover
        /// (`obstacle_coverage: Centre`), which keeps doors sized for wider agents (SteerSuite's
        /// are 0.5 m) open; without it, on every cell they touch (the default).
        #[arg(long)]
        centre_coverage: bool,
        /// Cell size of the global maps, in metres (the scenario's `global_cell_size`; default
        /// 0.5). Passages narrower than about two cells plus twice the inflation may close in
        /// them: a maze of 1 m corridors needs 0.25 with an inflation of 0.19.
        #[arg(long, value_parser = positive_metres)]
        global_cell_size: Option<f64>,
        /// Radius the global maps grow obstacles by, in metres (the scenario's
        /// `global_inflation`; default 0.25); the walkers' radius keeps the most room.
        #[arg(long, value_parser = non_negative_metres)]
        global_inflation: Option<f64>,
        /// Keep the default cells even where they leave walkers without a way. Without it (and
        /// without the three flags above), `convert` steps the scenario once through the
        /// plugin; if walkers are refused or have no route, it tries global cells of 0.25 m, then
        /// 0.125 m if someone is still left without a way (each where its goals' maps together
        /// hold at most 2^27 cells; with 0.125 m, local cells of 0.25 m at 7 planner steps a
        /// second), with obstacles grown by the widest
        /// walker's radius and `--centre-coverage`, and keeps the cells that leave fewest
        /// without a way when they leave fewer than the defaults (a note says so).
        #[arg(long)]
        keep_cells: bool,
    },
    /// Run a scenario through the plugin and write trajectories.csv, agents.csv, metrics.json and
    /// plots.
    Run {
        /// A `.scenario.ron` or `.scenario.json` file.
        scenario: PathBuf,
        /// Run exactly this many planner steps.
        #[arg(long, conflicts_with = "until_arrived", value_parser = clap::value_parser!(u64).range(1..))]
        steps: Option<u64>,
        /// Run until every agent has arrived (the default), at most `--max-steps`; agents with
        /// no route to their goal and no goal time limit are not waited for.
        #[arg(long)]
        until_arrived: bool,
        /// The cap for `--until-arrived`.
        #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
        max_steps: u64,
        /// Mixed into every region's seed for a different draw of the same file.
        #[arg(long)]
        seed: Option<u64>,
        /// Where to write the outputs.
        #[arg(long, default_value = "out")]
        out: PathBuf,
        /// Threads of the pool the run steps in (default: one per CPU). Results do not depend
        /// on it.
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS))]
        threads: Option<u16>,
        /// Keep the other pool threads awake up to this many microseconds (at most one second)
        /// between planner steps, which run back to back here (0: off; see docs/performance.md,
        /// *Two threads*).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
        worker_spin_us: u64,
        /// Plot the global maps of this many goals, in the crowd's goal order: `field.png` for
        /// the first, `field-1.png`, `field-2.png`, … for the others (0: none).
        #[arg(long, default_value_t = 1)]
        field_plots: u16,
        /// Also write `trajectories.txt`, the trajectories as PedPy's `load_trajectory` reads
        /// them (`ID frame x/m y/m z/m`, frame rate in the header), and `geometry.wkt`, the
        /// world's bounds and static obstacles for PedPy's walkable area
        /// (`scripts/pedpy_check.py` measures a run with them).
        #[arg(long)]
        pedpy: bool,
        #[command(flatten)]
        tuning: TuningArgs,
    },
}

/// Settings of `run` and `bench` that replace the scenario file's own for every walker.
#[derive(Args, Debug, Clone, Copy)]
struct TuningArgs {
    /// Every walker's local-map cell size in metres, in place of the file's. A planner step
    /// (`max_speed / planner_hz`) longer than one cell is refused: finer cells need
    /// `--planner-hz` raised with them (at the default 1.2 m/s, 0.25 m cells need 4.8 steps/s
    /// or more).
    #[arg(long, value_parser = positive_metres)]
    local_cell_size: Option<f64>,
    /// Every walker's local-map side in cells (odd, 5 to 101), in place of the file's.
    #[arg(long, value_parser = local_side)]
    local_side: Option<usize>,
    /// Planner steps a second (0.01 to 1,000), in place of the file's `planner_hz`. `bench`
    /// steps ORCA and seek at the same rate.
    #[arg(long, value_parser = planner_rate)]
    planner_hz: Option<f64>,
    /// Which neighbours every walker stamps into its local map, in place of the file's and the
    /// preset's: `all` (the seeds) or `except-same-way` (those walking the walker's way at its
    /// pace are left out; crowds clear doors and counterflows in far fewer steps).
    #[arg(long, value_enum)]
    neighbours: Option<NeighboursArg>,
    /// The steering preset, in place of the file's: `seeds` (the seeds' steering as written,
    /// the default for now) or `flow` (crowds that queue at doors and pass in counterflow).
    #[arg(long, value_enum)]
    preset: Option<PresetArg>,
}

/// `--preset`: [`Preset`]'s variants on the command line.
#[derive(ValueEnum, Debug, Clone, Copy)]
enum PresetArg {
    /// The seeds' steering as written.
    Seeds,
    /// Crowds that flow.
    Flow,
}

/// `--neighbours`: [`NeighbourStamping`]'s variants on the command line.
#[derive(ValueEnum, Debug, Clone, Copy)]
enum NeighboursArg {
    /// Every neighbour (the seeds).
    All,
    /// Every neighbour but those walking the walker's way.
    ExceptSameWay,
}

impl From<TuningArgs> for Tuning {
    fn from(a: TuningArgs) -> Self {
        Tuning {
            local_cell_size: a.local_cell_size,
            local_side: a.local_side,
            planner_hz: a.planner_hz,
            neighbours: a.neighbours.map(|n| match n {
                NeighboursArg::All => NeighbourStamping::All,
                NeighboursArg::ExceptSameWay => NeighbourStamping::ExceptSameWay,
            }),
            preset: a.preset.map(|p| match p {
                PresetArg::Seeds => Preset::Seeds,
                PresetArg::Flow => Preset::Flow,
            }),
        }
    }
}

/// A local-map side: odd, 5 to 101 cells (`--local-side`).
fn local_side(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n % 2 == 1 && (5..=101).contains(&n) => Ok(n),
        Ok(_) => Err("must be odd, from 5 to 101".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// A planner rate within the scenario format's range (`--planner-hz`).
fn planner_rate(text: &str) -> Result<f64, String> {
    let range = bevy_crowdfield::scenario::PLANNER_HZ_RANGE;
    match text.parse::<f64>() {
        Ok(v) if range.contains(&v) => Ok(v),
        Ok(_) => Err(format!(
            "must lie in {}..={} steps a second",
            range.start(),
            range.end()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Most threads `run` and `bench` start: far more than the CPUs any bench ran on. A pool that
/// still cannot start ends either command with status 1 and a message.
const MAX_THREADS: i64 = 1024;

/// The scenarios `bench` runs when none are named.
const BENCH_SET: [&str; 10] = [
    "oncoming",
    "overtake",
    "crossing",
    "four-way-confusion",
    "doorway-two-way",
    "bottleneck",
    "hallway-two-way",
    "concentric-circles-250",
    "concentric-circles-500",
    "forest",
];

fn bench(scenarios: Vec<PathBuf>, options: BenchOptions, tuning: Tuning, out: PathBuf) -> ExitCode {
    let default_set = scenarios.is_empty();
    let paths: Vec<PathBuf> = if default_set {
        BENCH_SET
            .iter()
            .map(|n| PathBuf::from(format!("assets/scenarios/{n}.scenario.ron")))
            .collect()
    } else {
        scenarios
    };
    let mut loaded = Vec::new();
    for path in &paths {
        match load(path) {
            Ok(mut s) => {
                tuning.apply(&mut s);
                loaded.push(s);
            }
            Err(e) => {
                eprintln!("{}", located(path, &e));
                if default_set && !path.exists() {
                    eprintln!(
                        "bench with no scenarios named reads the shipped set from assets/scenarios/: run it from the repository root, or name the scenarios"
                    );
                }
                return ExitCode::from(2);
            }
        }
    }
    if !usable_out(&out) {
        return ExitCode::from(1);
    }
    let bar = ProgressBar::new(loaded.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut rows: Vec<BenchRow> = Vec::new();
    // `loaded` holds every path's scenario, in order (a failed load returned above).
    for (index, (s, path)) in loaded.iter().zip(&paths).enumerate() {
        bar.set_message(s.name.clone());
        match bench_scenario(s, options) {
            Ok(r) => rows.extend(r.into_iter().map(|row| BenchRow {
                file: Some(path.display().to_string()),
                index,
                ..row
            })),
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("could not start the thread pool: {e}");
                return ExitCode::from(1);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Why some of crowdfield's walkers are missing from the other rows, where a user looks.
    eprint!("{}", not_registered(&rows).trim_start());
    let mut table = markdown(&rows);
    if !tuning.is_empty() {
        // Whoever reads the table later learns that the files were not run as written.
        table = format!(
            "Every walker with {} (command-line settings in place of the files').\n\n{table}",
            tuning.describe()
        );
    }
    print!("{table}");
    let json = match serde_json::to_string_pretty(&rows) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let written = std::fs::create_dir_all(&out)
        .and_then(|()| std::fs::write(out.join("bench.md"), &table))
        .and_then(|()| std::fs::write(out.join("bench.json"), json))
        .and_then(|()| {
            write_fundamental_diagrams(&out, &rows)
                .map(|_| ())
                .map_err(std::io::Error::other)
        })
        .and_then(|()| write_recordings(&out.join("pedpy"), &rows).map(|_| ()));
    if let Err(e) = written {
        eprintln!("could not write to {}: {e}", out.display());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

impl From<PresetArg> for Preset {
    fn from(p: PresetArg) -> Self {
        match p {
            PresetArg::Seeds => Preset::Seeds,
            PresetArg::Flow => Preset::Flow,
        }
    }
}

/// What `crowdfield flow` was asked.
struct FlowArgs {
    out: PathBuf,
    threads: usize,
    max_steps: u64,
    scenarios: PathBuf,
    no_plaza: bool,
    preset: Preset,
    write_scenarios: Option<PathBuf>,
}

/// `crowdfield flow`: runs [`crowdfield_cli::flow`]'s cases and the shipped plaza and hallway,
/// writes the report and the plots.
fn flow(args: FlowArgs) -> ExitCode {
    use crowdfield_cli::flow::{Case, FlowReport, cases, run_case, shipped, with_preset};
    let mut all: Vec<(Case, Scenario)> = cases();
    if let Some(dir) = &args.write_scenarios {
        let written = std::fs::create_dir_all(dir).and_then(|()| {
            all.iter().try_for_each(|(_, s)| {
                std::fs::write(dir.join(format!("{}.scenario.ron", s.name)), s.to_ron())
            })
        });
        return match written {
            Ok(()) => {
                println!("{} scenarios written to {}", all.len(), dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("could not write to {}: {e}", dir.display());
                ExitCode::from(1)
            }
        };
    }
    let mut names = vec!["hallway-two-way"];
    if !args.no_plaza {
        names.push("plaza");
    }
    for name in names {
        match shipped(&args.scenarios, name) {
            Ok(s) => all.push((Case::Clear, s)),
            Err(e) => eprintln!("{e} (left out; --scenarios names the folder)"),
        }
    }
    if !usable_out(&args.out) {
        return ExitCode::from(1);
    }
    let bar = ProgressBar::new(all.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut rows = Vec::new();
    for (case, scenario) in all {
        bar.set_message(scenario.name.clone());
        let scenario = with_preset(scenario, args.preset);
        match run_case(case, &scenario, args.threads, args.max_steps) {
            Ok(r) => rows.extend(r),
            Err(e) => {
                bar.finish_and_clear();
                eprintln!("could not start the thread pool: {e}");
                return ExitCode::from(1);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let report = FlowReport {
        preset: args.preset,
        rows,
    };
    let table = report.markdown();
    print!("{table}");
    let written = serde_json::to_string_pretty(&report)
        .map_err(std::io::Error::other)
        .and_then(|json| {
            std::fs::create_dir_all(&args.out)?;
            std::fs::write(args.out.join("flow.md"), &table)?;
            std::fs::write(args.out.join("flow.json"), json)
        })
        .and_then(|()| {
            crowdfield_cli::flow::write_plots(&args.out, &report).map_err(std::io::Error::other)
        });
    if let Err(e) = written {
        eprintln!("could not write to {}: {e}", args.out.display());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// Whether `out` can hold the outputs: a folder, or a path not taken yet. Says why not on
/// standard error, before a long run finds out.
fn usable_out(out: &Path) -> bool {
    if out.exists() && !out.is_dir() {
        eprintln!(
            "could not write to {}: it is a file, not a folder",
            out.display()
        );
        return false;
    }
    true
}

/// Reads one scenario file: prints a summary line when it loads, its first problem (with line
/// and column) otherwise. Returns whether it loaded.
fn validate(scenario: &Path) -> bool {
    match load(scenario) {
        Ok(s) => {
            let agents: usize = s.agents.len() + s.regions.iter().map(|r| r.count).sum::<usize>();
            println!(
                "{}: ok ({}; {}, {}, {})",
                scenario.display(),
                if s.name.is_empty() {
                    "unnamed"
                } else {
                    &s.name
                },
                counted(s.obstacles.len(), "obstacle"),
                counted(agents, "agent"),
                counted(s.measurements.len(), "measurement")
            );
            true
        }
        Err(e) => {
            eprintln!("{}", located(scenario, &e));
            false
        }
    }
}

/// A length in metres above 0 (`--global-cell-size`, `--local-cell-size`).
fn positive_metres(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("must be finite and above 0".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// A length in metres, 0 or more (`--global-inflation`).
fn non_negative_metres(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err("must be finite and 0 or more".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// What `convert` sets in the scenario besides what it reads.
struct ConvertOptions {
    centre_coverage: bool,
    keep_cells: bool,
    global_cell_size: Option<f64>,
    global_inflation: Option<f64>,
}

fn convert(
    path: PathBuf,
    behaviour: Option<PathBuf>,
    out: Option<PathBuf>,
    seed: u64,
    options: ConvertOptions,
) -> ExitCode {
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let coverage = if options.centre_coverage {
        Coverage::Centre
    } else {
        Coverage::Touch
    };
    // Menge's files open with <Project>, <Experiment> or <BFSM> (a behaviour given alone is
    // refused there, with a hint); SteerSuite's with <SteerBenchTestCase>, sometimes after a
    // comment.
    let menge = behaviour.is_some()
        || ["<Project", "<Experiment", "<BFSM"]
            .iter()
            .any(|tag| text.contains(tag) && !text.contains("<SteerBenchTestCase"));
    // Notes and errors name the file: Menge's converter names each file it reads itself.
    let conversion = |coverage| {
        if menge {
            from_menge_files(&path, behaviour.as_deref(), seed, coverage).map_err(|e| e.to_string())
        } else {
            from_steersuite(&text, seed, coverage)
                .map(|mut c| {
                    for note in &mut c.notes {
                        *note = format!("{}:{note}", path.display());
                    }
                    c
                })
                .map_err(|e| format!("{}:{e}", path.display()))
        }
    };
    let mut converted = match conversion(coverage) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    for note in &converted.notes {
        eprintln!("{note}");
    }
    let settings = &mut converted.scenario.settings;
    if options.global_cell_size.is_some() {
        settings.global_cell_size = options.global_cell_size;
    }
    if options.global_inflation.is_some() {
        settings.global_inflation = options.global_inflation;
    }
    // Finer cells may make the world's grid too large: refused here rather than at `run`.
    if let Err(e) = converted.scenario.check_world() {
        eprintln!("{}: {e}", path.display());
        return ExitCode::from(2);
    }
    let fit = !options.keep_cells
        && !options.centre_coverage
        && options.global_cell_size.is_none()
        && options.global_inflation.is_none();
    if fit {
        let blocked = blocked_at_start(&converted.scenario);
        let centred = (blocked > 0)
            .then(|| conversion(Coverage::Centre).ok())
            .flatten();
        if let Some(centred) = centred {
            // Finer and finer cells, until one leaves nobody without a way; the one that leaves
            // fewest is written, if it leaves fewer than the defaults.
            // Each size with the walkers it left without a way, `None` where it could not be
            // tried (see `narrow_passage_settings`).
            let mut tried: Vec<(f64, Option<usize>)> = Vec::new();
            let mut best: Option<(usize, Scenario)> = None;
            let mut inflation = None;
            for cell in NARROW_GLOBAL_CELLS {
                let Some(narrow) = narrow_passage_settings(centred.scenario.clone(), cell) else {
                    tried.push((cell, None));
                    break;
                };
                let left = blocked_at_start(&narrow);
                inflation = narrow.settings.global_inflation;
                tried.push((cell, Some(left)));
                if best.as_ref().is_none_or(|(fewest, _)| left < *fewest) {
                    best = Some((left, narrow));
                }
                if left == 0 {
                    break;
                }
            }
            if best.is_none() {
                eprintln!(
                    "{}: {} without a way with the default cells; finer cells could not be tried (no walker, a grid too large for the world or more than {NARROW_CELL_BUDGET} cells over its goals' maps): the defaults kept",
                    path.display(),
                    counted(blocked, "agent")
                );
            }
            if let Some((fewest, narrow)) = best {
                let what = tried
                    .iter()
                    .map(|(cell, left)| match left {
                        Some(left) => format!("{left} with global cells of {cell} m"),
                        None => format!("global cells of {cell} m not tried"),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let grown = format!(
                    "obstacles grown by {} m in them, obstacle_coverage: Centre",
                    inflation.unwrap_or_default()
                );
                let head = format!(
                    "{}: {} without a way with the default cells, {what}, {grown}",
                    path.display(),
                    counted(blocked, "agent")
                );
                if fewest < blocked {
                    let cell = narrow.settings.global_cell_size.unwrap_or_default();
                    // Passages that only cells finer than 0.25 m keep open in the global map
                    // may close in local maps of 0.5 m cells (`NARROW_LOCAL_CELL`).
                    let local_cells = |s: &Scenario| -> Vec<f64> {
                        s.agents
                            .iter()
                            .map(|a| a.style.local_map.cell_size)
                            .chain(s.regions.iter().map(|r| r.style.local_map.cell_size))
                            .collect()
                    };
                    let refined = local_cells(&narrow) != local_cells(&centred.scenario);
                    let local_too = match narrow.settings.planner_hz {
                        Some(hz) if refined => format!(
                            ", with local cells of {NARROW_LOCAL_CELL} m at {hz} planner steps a second (passages this narrow may close in local cells of 0.5 m)"
                        ),
                        _ => String::new(),
                    };
                    eprintln!(
                        "{head}: written with global cells of {cell} m{local_too} (--keep-cells keeps the defaults)"
                    );
                    converted.scenario = narrow;
                } else {
                    eprintln!("{head}: the defaults kept");
                }
            }
        }
    }
    let Some(out) = out else {
        println!("{}", converted.scenario.to_ron());
        return ExitCode::SUCCESS;
    };
    let text = if out.extension().is_some_and(|e| e == "json") {
        match serde_json::to_string_pretty(&converted.scenario) {
            Ok(j) => j,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
        }
    } else {
        converted.scenario.to_ron()
    };
    if let Err(e) = std::fs::write(&out, text) {
        eprintln!("could not write {}: {e}", out.display());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// A time given in milliseconds, in microseconds below one (`"8.6 µs"`, `"1.25 ms"`): small
/// crowds plan in a few microseconds, which two decimals of a millisecond would round to 0.01.
fn duration_text(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.1} µs", ms * 1e3)
    } else {
        format!("{ms:.2} ms")
    }
}

/// The agents a run summary must account for besides the arrived ones: `", 2 rejected, 1
/// unreachable, 1 stuck, 3 timed out"` (nothing when there are none); standing agents are not in the
/// walkers' count before it.
fn not_walking(m: &Metrics) -> String {
    [
        (m.standing, "standing"),
        (m.rejected, "rejected"),
        (m.unreachable, "unreachable"),
        (m.stuck, "stuck"),
        (m.timed_out, "timed out"),
        (m.not_placed, "not placed"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!(", {n} {what}"))
    .collect()
}

/// Tells on standard error which agents the plugin rejected and why (metrics.json lists all).
fn report_rejections(scenario: &Path, m: &Metrics) {
    for line in rejection_lines(&m.rejections, "metrics.json") {
        eprintln!("{}: {line}", scenario.display());
    }
}

/// A scenario file's error for standard error: `PATH:LINE:COLUMN: message` where the error has
/// a position in the file, `PATH: message` otherwise.
fn located(path: &Path, e: &ScenarioError) -> String {
    match e {
        ScenarioError::Parse { .. } => format!("{}:{e}", path.display()),
        _ => format!("{}: {e}", path.display()),
    }
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Convert {
            file,
            behaviour,
            out,
            seed,
            centre_coverage,
            global_cell_size,
            global_inflation,
            keep_cells,
        } => convert(
            file,
            behaviour,
            out,
            seed,
            ConvertOptions {
                centre_coverage,
                keep_cells,
                global_cell_size,
                global_inflation,
            },
        ),
        Command::Bench {
            scenarios,
            max_steps,
            threads,
            repeat,
            out,
            worker_spin_us,
            pedpy,
            tuning,
        } => bench(
            scenarios,
            BenchOptions {
                max_steps,
                threads: usize::from(threads),
                repeats: repeat as usize,
                worker_spin: Duration::from_micros(worker_spin_us),
                keep_trajectories: pedpy,
                all_steerings: true,
            },
            tuning.into(),
            out,
        ),
        Command::Flow {
            out,
            threads,
            max_steps,
            scenarios,
            no_plaza,
            preset,
            write_scenarios,
        } => flow(FlowArgs {
            out,
            threads: usize::from(threads),
            max_steps,
            scenarios,
            no_plaza,
            preset: preset.map_or(Preset::Flow, Preset::from),
            write_scenarios,
        }),
        Command::Validate { scenarios } => {
            let mut failed = 0;
            for scenario in &scenarios {
                if !validate(scenario) {
                    failed += 1;
                }
            }
            if failed == 0 {
                ExitCode::SUCCESS
            } else {
                if scenarios.len() > 1 {
                    eprintln!("problems in {failed} of {} files", scenarios.len());
                }
                ExitCode::from(2)
            }
        }
        Command::Run {
            scenario,
            steps,
            until_arrived: _,
            max_steps,
            seed,
            out,
            threads,
            worker_spin_us,
            field_plots,
            pedpy,
            tuning,
        } => {
            let tuning = Tuning::from(tuning);
            let loaded = match load(&scenario) {
                Ok(mut s) => {
                    tuning.apply(&mut s);
                    s
                }
                Err(e) => {
                    eprintln!("{}", located(&scenario, &e));
                    return ExitCode::from(2);
                }
            };
            if !usable_out(&out) {
                return ExitCode::from(1);
            }
            let stop = match steps {
                Some(n) => Stop::Steps(n),
                None => Stop::UntilArrived { max_steps },
            };
            let total = match stop {
                Stop::Steps(n) | Stop::UntilArrived { max_steps: n } => n,
            };
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{bar:40} step {pos}/{len} {msg} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let options = RunOptions {
                stop,
                seed,
                worker_spin: Duration::from_micros(worker_spin_us),
                field_plots: usize::from(field_plots),
            };
            // The app steps the crowd from a thread of the pool, so that crowds of more than 64
            // walkers commit while they plan and count the next step's discs meanwhile.
            let pool = match rayon::ThreadPoolBuilder::new()
                .num_threads(threads.map_or(0, usize::from))
                .build()
            {
                Ok(pool) => pool,
                Err(e) => {
                    eprintln!("could not start the thread pool: {e}");
                    return ExitCode::from(1);
                }
            };
            let output = pool.install(|| {
                run_scenario_with_progress(&loaded, options, |step, walking| {
                    bar.set_position(step);
                    bar.set_message(format!("{walking} walking"));
                })
            });
            bar.finish_and_clear();
            if let Err(e) = write_outputs(&out, &output, OutputOptions { pedpy }) {
                eprintln!("could not write to {}: {e}", out.display());
                return ExitCode::from(1);
            }
            let m = &output.metrics;
            println!(
                "{}: {}, {}/{} arrived{}{}, overlaps: {} agent-agent (max {:.3} m), {} agent-wall (max {:.3} m), planner {}/step (first step {}); written to {}",
                scenario.display(),
                counted(m.steps as usize, "step"),
                m.arrived,
                m.walkers(),
                // A fraction of no walkers is no figure.
                if m.walkers() == 0 {
                    String::new()
                } else {
                    format!(" ({:.1} %)", m.arrival_fraction * 100.0)
                },
                not_walking(m),
                m.agent_overlaps,
                m.agent_overlap_max_m,
                m.wall_overlaps,
                m.wall_overlap_max_m,
                duration_text(m.planner_ms_mean),
                duration_text(m.planner_first_ms),
                out.display()
            );
            if !tuning.is_empty() {
                println!(
                    "  every walker with {} (in place of the file's)",
                    tuning.describe()
                );
            }
            report_rejections(&scenario, m);
            for a in &m.areas {
                if a.area_m2 == 0.0 {
                    eprintln!(
                        "{}: measurement area {:?} holds no walkable ground (outside the world or inside obstacles): nothing measured there",
                        scenario.display(),
                        a.name
                    );
                }
                println!(
                    "  area {:?}: Voronoi density mean {:.2} / max {:.2} per m², speed mean {:.2} m/s over {} steps",
                    a.name,
                    a.voronoi_density_mean,
                    a.voronoi_density_max,
                    a.voronoi_speed_mean_m_s,
                    a.occupied_steps
                );
            }
            for l in &m.lines {
                println!(
                    "  line {:?}: {} forward, {} backward, flow {} per s ({} per s and m)",
                    l.name,
                    l.forward,
                    l.backward,
                    l.flow_per_s.map_or("-".into(), |j| format!("{j:.2}")),
                    l.specific_flow.map_or("-".into(), |j| format!("{j:.2}"))
                );
            }
            ExitCode::SUCCESS
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bench` with no scenarios named runs [`BENCH_SET`] from the repository root: every name
    /// must be a shipped scenario that loads.
    #[test]
    fn the_default_bench_set_names_shipped_scenarios() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for name in BENCH_SET {
            let path = root.join(format!("assets/scenarios/{name}.scenario.ron"));
            if let Err(e) = load(&path) {
                panic!("{}: {e}", path.display());
            }
        }
    }

    /// Planner times below a millisecond keep their digits in microseconds.
    #[test]
    fn planner_times_read_in_the_unit_that_keeps_their_digits() {
        assert_eq!(duration_text(0.0086), "8.6 µs");
        assert_eq!(duration_text(0.25349), "253.5 µs");
        assert_eq!(duration_text(1.0), "1.00 ms");
        assert_eq!(duration_text(12.345), "12.35 ms");
        assert_eq!(duration_text(0.0), "0.0 µs");
    }
}
