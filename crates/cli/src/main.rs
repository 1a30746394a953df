//! `crowdfield`: run and check scenario files without a window.
//!
//! ```text
//! crowdfield validate assets/scenarios/corridor.scenario.ron
//! crowdfield run assets/scenarios/corridor.scenario.ron --until-arrived --out out/corridor
//! crowdfield run assets/scenarios/park.scenario.ron --steps 300 --seed 7 --out out/park
//! ```
//!
//! Exit status: 0 on success, 1 when a run's outputs cannot be written, 2 when the scenario
//! file cannot be read or is invalid (nothing is written then).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use crowdfield_cli::{RunOptions, Stop, load, run_scenario_with_progress, write_outputs};
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
    /// Read a scenario file and report the first problem with its line and column.
    Validate {
        /// A `.scenario.ron` or `.scenario.json` file.
        scenario: PathBuf,
    },
    /// Run a scenario through the plugin and write trajectories.csv and metrics.json.
    Run {
        /// A `.scenario.ron` or `.scenario.json` file.
        scenario: PathBuf,
        /// Run exactly this many planner steps.
        #[arg(long, conflicts_with = "until_arrived")]
        steps: Option<u64>,
        /// Run until every agent has arrived (the default), at most `--max-steps`.
        #[arg(long)]
        until_arrived: bool,
        /// The cap for `--until-arrived`.
        #[arg(long, default_value_t = 5_000)]
        max_steps: u64,
        /// Mixed into every region's seed for a different draw of the same file.
        #[arg(long)]
        seed: Option<u64>,
        /// Where to write the outputs.
        #[arg(long, default_value = "out")]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Validate { scenario } => match load(&scenario) {
            Ok(s) => {
                let agents: usize =
                    s.agents.len() + s.regions.iter().map(|r| r.count).sum::<usize>();
                println!(
                    "{}: ok ({}; {} obstacles, {} agents)",
                    scenario.display(),
                    if s.name.is_empty() {
                        "unnamed"
                    } else {
                        &s.name
                    },
                    s.obstacles.len(),
                    agents
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{}:{e}", scenario.display());
                ExitCode::from(2)
            }
        },
        Command::Run {
            scenario,
            steps,
            until_arrived: _,
            max_steps,
            seed,
            out,
        } => {
            let loaded = match load(&scenario) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("{}:{e}", scenario.display());
                    return ExitCode::from(2);
                }
            };
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
            let output =
                run_scenario_with_progress(&loaded, RunOptions { stop, seed }, |step, walking| {
                    bar.set_position(step);
                    bar.set_message(format!("{walking} walking"));
                });
            bar.finish_and_clear();
            if let Err(e) = write_outputs(&out, &output) {
                eprintln!("could not write to {}: {e}", out.display());
                return ExitCode::from(1);
            }
            let m = &output.metrics;
            println!(
                "{}: {} steps, {}/{} arrived ({:.1} %), overlaps: {} agent-agent (max {:.3} m), {} agent-wall (max {:.3} m), planner {:.2} ms/step; written to {}",
                scenario.display(),
                m.steps,
                m.arrived,
                m.agents - m.not_placed,
                m.arrival_fraction * 100.0,
                m.agent_overlaps,
                m.agent_overlap_max_m,
                m.wall_overlaps,
                m.wall_overlap_max_m,
                m.planner_ms_mean,
                out.display()
            );
            ExitCode::SUCCESS
        }
    }
}
