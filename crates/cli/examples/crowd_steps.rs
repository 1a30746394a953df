//! Steps a scenario's crowd without the plugin and prints agent-steps per second: the crowd the
//! plugin built after its first planner step (the same start as `crowdfield bench`), stepped
//! with `Crowd::step` back to back until every agent has arrived, each step timed alone.
//! Used to compare builds of the steering crate where the plugin's own work would blur them.
//!
//! `cargo run --release -p crowdfield_cli --example crowd_steps -- SCENARIO [THREADS] [RUNS]`
//! (default 2 threads, 3 runs); every run starts from a fresh copy of the crowd and prints its
//! own figure, so the first ones also serve as warm-up. After the runs it prints the figure
//! the in-process comparisons of docs/performance.md use: each step's median time over the
//! runs, summed (a slow spell of the machine moves it less than a run's total).

use std::path::Path;
use std::time::Instant;

use bevy_crowdfield::steer::AgentState;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: crowd_steps SCENARIO [THREADS] [RUNS]");
        std::process::exit(2);
    };
    let number = |i: usize, default: usize| -> usize {
        args.get(i).map_or(default, |v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("not a count: {v}");
                std::process::exit(2)
            })
        })
    };
    let (threads, runs) = (number(1, 2).max(1), number(2, 3).max(1));
    let scenario = match crowdfield_cli::load(Path::new(path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let Some((start, _)) = crowdfield_cli::initial_crowd(&scenario) else {
        eprintln!("{path}: the plugin built no crowd");
        std::process::exit(1);
    };
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("thread pool: {e}");
            std::process::exit(1);
        }
    };
    pool.install(|| {
        // Each step's time in every run, and the walkers it moved.
        let mut times: Vec<Vec<f64>> = Vec::new();
        let mut walkers: Vec<u64> = Vec::new();
        for run in 1..=runs {
            let mut crowd = start.clone();
            let (mut seconds, mut agent_steps) = (0.0, 0u64);
            for k in 0..5_000 {
                let walking = crowd
                    .agents()
                    .filter(|(_, a)| !matches!(a.state(), AgentState::Arrived))
                    .count();
                if walking == 0 {
                    break;
                }
                let t = Instant::now();
                crowd.step();
                let took = t.elapsed().as_secs_f64();
                seconds += took;
                agent_steps += walking as u64;
                if times.len() == k {
                    times.push(Vec::new());
                    walkers.push(walking as u64);
                }
                times[k].push(took);
            }
            println!(
                "{}: run {run} of {runs}, {threads} threads, {} steps, {:.0} agent-steps/s",
                scenario.name,
                crowd.step_count(),
                agent_steps as f64 / seconds.max(f64::MIN_POSITIVE)
            );
        }
        let medians: f64 = times
            .iter_mut()
            .map(|t| {
                t.sort_by(f64::total_cmp);
                t[t.len() / 2]
            })
            .sum();
        println!(
            "{}: per-step medians summed over {runs} runs, {:.0} agent-steps/s",
            scenario.name,
            walkers.iter().sum::<u64>() as f64 / medians.max(f64::MIN_POSITIVE)
        );
    });
}
