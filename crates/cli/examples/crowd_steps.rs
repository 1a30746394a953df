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
//!
//! A fourth argument, microseconds separated by commas (`0,100,1000`), keeps the stepping thread
//! busy that long before each step, as a host's own work between planner steps would, the gaps
//! taken in turn run by run; it then prints each gap's median of its runs' totals instead
//! (docs/performance.md, *Two threads*).
//!
//! A fifth argument, `outside`, steps the crowd from the main thread, outside rayon's pool (the
//! global pool, of THREADS threads), as a game's plugin does from Bevy's threads; by default it
//! steps from a thread of its pool, as `crowdfield run` and `bench` do. From outside, since
//! 5b69860, a crowd of more than 64 planners moves each step onto a thread of the global pool
//! itself (`Crowd::advance_to`); the earlier `outside` figures in docs/performance.md were taken
//! before that.

use std::path::Path;
use std::time::Instant;

use bevy_crowdfield::steer::AgentState;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: crowd_steps SCENARIO [THREADS] [RUNS] [GAP_US,...] [outside]");
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
    let gaps: Vec<u64> = match args.get(3) {
        None => vec![0],
        Some(list) => list
            .split(',')
            .map(|v| {
                v.trim().parse().unwrap_or_else(|_| {
                    eprintln!("not a gap in microseconds: {v}");
                    std::process::exit(2)
                })
            })
            .collect(),
    };
    let outside = match args.get(4).map(String::as_str) {
        None => false,
        Some("outside") => true,
        Some(other) => {
            eprintln!("not `outside`: {other}");
            std::process::exit(2)
        }
    };
    // Stepping from outside the pool uses the global one: sized before anything uses it.
    if outside
        && let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
    {
        eprintln!("global thread pool: {e}");
        std::process::exit(1);
    }
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
    let body = || {
        // Each step's time in every run, and the walkers it moved.
        let mut times: Vec<Vec<f64>> = Vec::new();
        let mut walkers: Vec<u64> = Vec::new();
        // Each gap's runs' totals, agent-steps per second.
        let mut totals: Vec<Vec<f64>> = vec![Vec::new(); gaps.len()];
        for run in 1..=runs {
            let which = (run - 1) % gaps.len();
            let gap = std::time::Duration::from_micros(gaps[which]);
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
                let busy = Instant::now();
                while busy.elapsed() < gap {
                    std::hint::spin_loop();
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
            let speed = agent_steps as f64 / seconds.max(f64::MIN_POSITIVE);
            totals[which].push(speed);
            println!(
                "{}: run {run} of {runs}, {threads} threads{}, gap {} µs, {} steps, {speed:.0} agent-steps/s",
                scenario.name,
                if outside { " (from outside)" } else { "" },
                gap.as_micros(),
                crowd.step_count(),
            );
        }
        if gaps.len() > 1 {
            for (gap, speeds) in gaps.iter().zip(&mut totals) {
                speeds.sort_by(f64::total_cmp);
                if let Some(m) = speeds.get(speeds.len() / 2) {
                    println!(
                        "{}: gap {gap} µs, median of {} runs' totals, {m:.0} agent-steps/s",
                        scenario.name,
                        speeds.len()
                    );
                }
            }
            return;
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
    };
    if outside {
        body();
        return;
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(body),
        Err(e) => {
            eprintln!("thread pool: {e}");
            std::process::exit(1);
        }
    }
}
