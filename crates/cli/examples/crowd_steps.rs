//! Steps a scenario's crowd without the plugin and prints agent-steps per second: the crowd the
//! plugin built after its first planner step (the same start as `crowdfield bench`), stepped
//! with `Crowd::step` back to back until every agent has arrived, each step timed alone.
//! Used to compare builds of the steering crate where the plugin's own work would blur them.
//!
//! `cargo run --release -p crowdfield_cli --example crowd_steps -- SCENARIO [THREADS] [RUNS]`
//! (default 2 threads, 3 runs); every run starts from a fresh copy of the crowd and prints its
//! own figure, so the first ones also serve as warm-up.

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
        for run in 1..=runs {
            let mut crowd = start.clone();
            let (mut seconds, mut agent_steps) = (0.0, 0u64);
            for _ in 0..5_000 {
                let walking = crowd
                    .agents()
                    .filter(|(_, a)| !matches!(a.state(), AgentState::Arrived))
                    .count();
                if walking == 0 {
                    break;
                }
                let t = Instant::now();
                crowd.step();
                seconds += t.elapsed().as_secs_f64();
                agent_steps += walking as u64;
            }
            println!(
                "{}: run {run} of {runs}, {threads} threads, {} steps, {:.0} agent-steps/s",
                scenario.name,
                crowd.step_count(),
                agent_steps as f64 / seconds.max(f64::MIN_POSITIVE)
            );
        }
    });
}
