//! How flat the walkers' local maps are where they stand, and where their local descents point:
//! the measurements behind docs/runner.md, *Fundamental diagram and flow* (why walkers loop rather
//! than queue).
//!
//! `cargo run --release -p crowdfield_cli --example flat_maps -- SCENARIO [X Y]`
//!
//! Steps the crowd the plugin built (as `crowd_steps` does, one thread, until every agent has
//! arrived or 5,000 steps) and looks at every decision: the walker's local map as it decided,
//! at the position it decided from. Per decision it reads the local potential there, whether the
//! local descent points away from the global map's descent (their dot product below zero),
//! whether the speed law stopped the walker, the lowest free potential of the window, and
//! whether any free cell path (4-connected) leads from the walker's cell to the intermediate
//! goal's cells. With a point `X Y`, the decisions are grouped by the walker's distance from it
//! (0–1, 1–2, 2–3, 3–5 and 5 m or more); without, they form one group.

use std::path::Path;

use bevy::math::{DVec2, IVec2};
use bevy_crowdfield::field::{CellKind, Field};
use bevy_crowdfield::steer::{AgentId, AgentState, Crowd};

/// One decision, as read after its step.
struct Decision {
    distance: f64,
    potential: f64,
    away: bool,
    stopped: bool,
    lowest_free: f64,
    no_route: bool,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: flat_maps SCENARIO [X Y]");
        std::process::exit(2);
    };
    let point = match &args[1..] {
        [] => None,
        [x, y] => match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(x), Ok(y)) if x.is_finite() && y.is_finite() => Some(DVec2::new(x, y)),
            _ => {
                eprintln!("not a point: {x} {y}");
                std::process::exit(2);
            }
        },
        _ => {
            eprintln!("usage: flat_maps SCENARIO [X Y]");
            std::process::exit(2);
        }
    };
    let scenario = match crowdfield_cli::load(Path::new(path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let Some((mut crowd, _)) = crowdfield_cli::initial_crowd(&scenario) else {
        eprintln!("{path}: the plugin built no crowd");
        std::process::exit(1);
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    let decisions = pool.install(|| run(&mut crowd, point));
    let groups: Vec<(String, Vec<&Decision>)> = match point {
        Some(_) => [
            (0.0, 1.0),
            (1.0, 2.0),
            (2.0, 3.0),
            (3.0, 5.0),
            (5.0, f64::INFINITY),
        ]
        .into_iter()
        .map(|(lo, hi)| {
            let name = if hi.is_finite() {
                format!("{lo}–{hi} m")
            } else {
                format!("≥ {lo} m")
            };
            let sel = decisions
                .iter()
                .filter(|d| d.distance >= lo && d.distance < hi)
                .collect();
            (name, sel)
        })
        .collect(),
        None => vec![("all".into(), decisions.iter().collect())],
    };
    println!(
        "{}: {} steps, {} decisions",
        scenario.name,
        crowd.step_count(),
        decisions.len()
    );
    println!(
        "| group | decisions | local potential at the walker (median) | descent away from the global one | stopped | lowest free potential (median) | no free route to the goal cells |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, sel) in groups {
        let n = sel.len().max(1) as f64;
        let share =
            |f: &dyn Fn(&Decision) -> bool| 100.0 * sel.iter().filter(|d| f(d)).count() as f64 / n;
        println!(
            "| {name} | {} | {:.3} | {:.1} % | {:.1} % | {:.2} | {:.1} % |",
            sel.len(),
            median(sel.iter().map(|d| d.potential)),
            share(&|d| d.away),
            share(&|d| d.stopped),
            median(sel.iter().map(|d| d.lowest_free)),
            share(&|d| d.no_route),
        );
    }
}

/// Steps `crowd` to the end and reads every decision after its step.
fn run(crowd: &mut Crowd, point: Option<DVec2>) -> Vec<Decision> {
    let mut decisions = Vec::new();
    for _ in 0..5_000 {
        // Where each walker stands as it decides.
        let before: Vec<(AgentId, DVec2)> = crowd
            .agents()
            .filter(|(_, a)| a.state() != AgentState::Arrived)
            .map(|(id, a)| (id, a.position()))
            .collect();
        if before.is_empty() {
            break;
        }
        crowd.step();
        for (id, at) in before {
            // Walkers removed on arrival have no map left to read.
            let Some(agent) = crowd.agent(id) else {
                continue;
            };
            let local = agent.local_map().field();
            let (Some(potential), Some(goal)) = (
                local.potential_at(at),
                agent
                    .params()
                    .goals
                    .get(agent.goal_index())
                    .and_then(|g| crowd.goal(*g)),
            ) else {
                continue;
            };
            let lowest_free = local
                .potentials()
                .iter()
                .zip(local.kinds())
                .filter(|(_, k)| **k == CellKind::Free)
                .map(|(p, _)| *p)
                .fold(f64::INFINITY, f64::min);
            decisions.push(Decision {
                distance: point.map_or(0.0, |p| (at - p).length()),
                potential,
                away: local.descent_at(at).dot(goal.map().descent_at(at)) < 0.0,
                stopped: agent.speed_factor() == 0.0,
                lowest_free,
                no_route: !route_to_goal(local, at),
            });
        }
    }
    decisions
}

/// Whether free cells (4-connected) lead from the cell holding `at` to a goal cell; the
/// walker's own cell counts as free whatever it holds.
fn route_to_goal(map: &Field<f64>, at: DVec2) -> bool {
    let g = map.geometry();
    let (w, h) = (g.width() as i32, g.height() as i32);
    let inside = |c: IVec2| c.x >= 0 && c.y >= 0 && c.x < w && c.y < h;
    let start = g.world_to_cell(at);
    let mut seen = vec![false; g.len()];
    let mut stack = vec![start];
    while let Some(c) = stack.pop() {
        if !inside(c) {
            continue;
        }
        let i = (c.y * w + c.x) as usize;
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        match map.kinds()[i] {
            CellKind::Goal => return true,
            CellKind::Obstacle if c != start => continue,
            _ => {}
        }
        stack.extend([IVec2::X, IVec2::NEG_X, IVec2::Y, IVec2::NEG_Y].map(|d| c + d));
    }
    false
}

/// The median (the upper one of an even count); NaN for none.
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
