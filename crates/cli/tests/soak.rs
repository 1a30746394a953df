//! Soak: the shipped scenarios' crowds, as the plugin builds them, stepped for a budget of
//! agent-steps while obstacles are added and removed, walkers spawned and removed, and goals
//! added, used and removed, at run time. After every step:
//!
//! - every position is finite;
//! - no agent reaches into a static or added obstacle, and no two agents overlap, beyond the
//!   contact tolerance ([`CONTACT_TOLERANCE`]);
//! - an agent that has not progressed for `stuck_after` steps is in state `Stuck` (or has
//!   arrived, or has no route): nobody stalls unreported.
//!
//! The long soak also runs the shipped scenarios with groups, drawn paths, marker crowds and
//! terrain through the plugin to the end and checks the same from the run's record.
//!
//! And memory stays flat: a cycle of adding a goal, spawning walkers to it, stepping, then
//! removing the walkers and the goal leaves the heap where the previous cycles left it (a
//! counting allocator measures the live bytes).
//!
//! Every scenario is soaked for at least 300 planner steps and its share of the agent-steps,
//! in proportion to the agents it places. `a_short_soak_keeps_every_invariant` runs in every
//! test run (a budget of 2·10⁵ agent-steps: about 4.8·10⁵ with the 300 steps of each);
//! `soak_ten_million_agent_steps` is ignored by default: `scripts/soak.sh` runs it in release
//! (README, *Errors, fuzzing, soak and determinism*, gives its last figures).
//! `CROWDFIELD_SOAK_AGENT_STEPS` sets its budget.
// The counting allocator implements `GlobalAlloc`, an unsafe trait.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicIsize, Ordering};

use bevy_crowdfield::Scenario;
use bevy_crowdfield::field::Shape;
use bevy_crowdfield::steer::{
    AgentId, AgentState, ArrivalAction, CONTACT_TOLERANCE, Crowd, GoalId, ObstacleId,
};
use glam::DVec2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The system allocator, counting the bytes it holds.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call forwards to `System` with the caller's arguments unchanged; the counter
// only reads the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_bytes() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// The shipped scenario files, sorted.
fn shipped_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".scenario.ron"))
        .collect();
    files.sort();
    files
}

/// The shipped scenarios whose agents the crowd steers on its own (groups, marker crowds and
/// terrains need their own crates stepped beside it; the determinism and fuzz tests cover
/// them), smallest first; `large` takes in the crowds of thousands.
fn shipped(large: bool) -> Vec<Scenario> {
    let mut scenarios: Vec<Scenario> = shipped_files()
        .iter()
        .map(|p| crowdfield_cli::load(p).unwrap())
        .filter(|s| s.groups.is_empty() && s.markers.is_none() && s.terrain.is_none())
        .filter(|s| {
            large || s.agents.len() + s.regions.iter().map(|r| r.count).sum::<usize>() <= 600
        })
        .collect();
    scenarios.sort_by_key(population);
    scenarios
}

/// What a soak did.
#[derive(Debug, Default)]
struct Totals {
    agent_steps: u64,
    steps: u64,
    spawned: u64,
    removed: u64,
    refused: u64,
    arrived: u64,
    reported_stuck: u64,
    unreachable: u64,
    obstacle_edits: u64,
    goal_edits: u64,
}

/// Checks every invariant of the crowd after a step; `added` are the obstacles added at run
/// time.
fn check(crowd: &Crowd, added: &[ObstacleId], name: &str) {
    let agents: Vec<(AgentId, DVec2, f64)> = crowd
        .agents()
        .map(|(id, a)| (id, a.position(), a.params().radius))
        .collect();
    let walls: Vec<&Shape> = crowd
        .statics()
        .iter()
        .chain(added.iter().filter_map(|id| crowd.obstacle(*id)))
        .collect();
    let step = crowd.step_count();
    let stuck_after = crowd.settings().stuck_after;
    let mut cells: std::collections::HashMap<(i64, i64), Vec<usize>> = Default::default();
    for (i, (id, p, r)) in agents.iter().enumerate() {
        assert!(p.is_finite(), "{name} step {step}: {id:?} at {p}");
        for wall in &walls {
            let d = wall.distance(*p).unwrap();
            assert!(
                d >= r - CONTACT_TOLERANCE,
                "{name} step {step}: {id:?} at {p} reaches {:.4} m into {wall:?}",
                r - d
            );
        }
        let cell = ((p.x / 1.5).floor() as i64, (p.y / 1.5).floor() as i64);
        for dx in -1..=1 {
            for dy in -1..=1 {
                for &j in cells.get(&(cell.0 + dx, cell.1 + dy)).into_iter().flatten() {
                    let (other, q, s) = agents[j];
                    let depth = r + s - (*p - q).length();
                    assert!(
                        depth <= CONTACT_TOLERANCE,
                        "{name} step {step}: {id:?} and {other:?} overlap by {depth:.4} m"
                    );
                }
            }
        }
        cells.entry(cell).or_default().push(i);
        let a = crowd.agent(*id).unwrap();
        assert!(
            a.stalled() < stuck_after.max(1)
                || matches!(
                    a.state(),
                    AgentState::Stuck | AgentState::Arrived | AgentState::Unreachable
                ),
            "{name} step {step}: {id:?} stalled {} steps in state {:?}",
            a.stalled(),
            a.state()
        );
    }
}

/// A free place for a disc of `radius` at least `margin` from every agent and wall, if one of
/// a few draws finds it.
fn free_place(
    crowd: &Crowd,
    added: &[ObstacleId],
    rng: &mut ChaCha8Rng,
    radius: f64,
    margin: f64,
) -> Option<DVec2> {
    let s = crowd.settings();
    (0..12).find_map(|_| {
        let p = DVec2::new(
            rng.random_range(s.min.x + radius..s.max.x - radius),
            rng.random_range(s.min.y + radius..s.max.y - radius),
        );
        let clear = crowd
            .agents()
            .all(|(_, a)| (a.position() - p).length() > a.params().radius + radius + margin)
            && crowd
                .statics()
                .iter()
                .chain(added.iter().filter_map(|id| crowd.obstacle(*id)))
                .all(|w| w.distance(p).unwrap() > radius + margin);
        clear.then_some(p)
    })
}

/// Steps `scenario`'s crowd for about `budget` agent-steps with run-time edits.
fn soak_scenario(scenario: &Scenario, budget: u64, seed: u64, totals: &mut Totals) {
    let name = scenario.name.as_str();
    let (mut crowd, _) = crowdfield_cli::initial_crowd(scenario).expect("the plugin built it");
    let Some((_, first)) = crowd.agents().next() else {
        return;
    };
    let template = first.params().clone();
    let goals: Vec<GoalId> = crowd.goal_ids().collect();
    let population = crowd.agents().count().max(8);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut added: Vec<ObstacleId> = Vec::new();
    let mut extra: Option<GoalId> = None;
    let mut spent = 0u64;
    let steps_before = totals.steps;
    while spent < budget || totals.steps - steps_before < MIN_STEPS {
        let report = crowd.step();
        let live = crowd.agents().count() as u64;
        spent += live;
        totals.agent_steps += live;
        totals.steps += 1;
        totals.arrived += report.arrived.len() as u64;
        totals.reported_stuck += report.stuck.len() as u64;
        totals.unreachable += report.unreachable.len() as u64;
        check(&crowd, &added, name);
        if crowd.step_count() % 10 != 0 {
            continue;
        }
        match rng.random_range(0..6) {
            // An obstacle dropped where nobody stands, or one taken away.
            0 if added.len() < 6 => {
                let radius = rng.random_range(0.3..0.8);
                if let Some(p) = free_place(&crowd, &added, &mut rng, radius, 1.0) {
                    let shape = Shape::Disc { centre: p, radius };
                    added.push(crowd.add_obstacle(shape).unwrap());
                    totals.obstacle_edits += 1;
                }
            }
            0 | 1 if !added.is_empty() => {
                let k = rng.random_range(0..added.len());
                crowd.remove_obstacle(added.swap_remove(k)).unwrap();
                totals.obstacle_edits += 1;
            }
            // Walkers spawned to the scenario's goals (or the extra one), back up towards its
            // population (a tenth of it at most, and at least a few, at a time).
            2 | 3 if crowd.agents().count() < population => {
                let short = population - crowd.agents().count();
                for _ in 0..short.min(population / 10 + 5) {
                    let Some(p) = free_place(&crowd, &added, &mut rng, template.radius, 0.05)
                    else {
                        continue;
                    };
                    let goal = match extra {
                        Some(g) if rng.random_bool(0.3) => g,
                        _ if goals.is_empty() => continue,
                        _ => goals[rng.random_range(0..goals.len())],
                    };
                    let mut params = template.clone();
                    params.position = p;
                    params.goals = vec![goal];
                    params.time_limits = Vec::new();
                    params.on_arrival = ArrivalAction::Despawn;
                    params.seed = rng.random();
                    match crowd.spawn(params) {
                        Ok(_) => totals.spawned += 1,
                        Err(e) => {
                            totals.refused += 1;
                            println!("{name}: a spawn at {p} refused: {e}");
                        }
                    }
                }
            }
            // A walker taken out.
            4 => {
                let ids: Vec<AgentId> = crowd.agents().map(|(id, _)| id).collect();
                if !ids.is_empty() {
                    crowd.remove(ids[rng.random_range(0..ids.len())]).unwrap();
                    totals.removed += 1;
                }
            }
            // A goal of its own added somewhere free, or removed once nobody walks to it
            // (those who do are taken out first now and then).
            _ => match extra {
                None => {
                    if let Some(p) = free_place(&crowd, &added, &mut rng, 1.0, 0.5) {
                        extra = Some(
                            crowd
                                .add_goal(Shape::Disc {
                                    centre: p,
                                    radius: 1.0,
                                })
                                .unwrap(),
                        );
                        totals.goal_edits += 1;
                    }
                }
                Some(goal) => {
                    if rng.random_bool(0.3) {
                        let walking: Vec<AgentId> = crowd
                            .agents()
                            .filter(|(_, a)| a.params().goals.contains(&goal))
                            .map(|(id, _)| id)
                            .collect();
                        for id in walking {
                            crowd.remove(id).unwrap();
                            totals.removed += 1;
                        }
                    }
                    if crowd.remove_goal(goal).is_ok() {
                        extra = None;
                        totals.goal_edits += 1;
                    }
                }
            },
        }
    }
    println!(
        "{name}: {spent} agent-steps in {} steps, {} agents at the end",
        totals.steps - steps_before,
        crowd.agents().count()
    );
}

/// Planner steps every scenario is soaked for at least, whatever its share of agent-steps
/// (thirty rounds of edits).
const MIN_STEPS: u64 = 300;

/// How many agents `s` places.
fn population(s: &Scenario) -> usize {
    s.agents.len() + s.regions.iter().map(|r| r.count).sum::<usize>()
}

/// Soaks every shipped scenario for at least [`MIN_STEPS`] steps and its share of `budget`
/// agent-steps, shared in proportion to the agents it places (a crowd of thousands takes most;
/// two walkers in a corridor their few hundred steps).
fn soak(budget: u64, large: bool) -> Totals {
    let scenarios = shipped(large);
    assert!(scenarios.len() >= 8, "{} scenarios", scenarios.len());
    let everyone: usize = scenarios.iter().map(population).sum();
    let mut totals = Totals::default();
    for (k, s) in scenarios.iter().enumerate() {
        let share = budget * population(s) as u64 / everyone as u64;
        soak_scenario(s, share, 1 + k as u64, &mut totals);
    }
    totals
}

/// The shipped scenarios with groups, drawn paths, marker crowds or terrain, which need their
/// crates stepped beside the crowd: run through the plugin (as `crowdfield run` runs them)
/// until everyone has arrived or `max_steps`, and checked from the run's record: every sample
/// finite, no agent overlap or wall penetration beyond the runner's tolerance, and nobody
/// left walking unreported (each agent arrived, timed out, stood, or was reported stuck or
/// unreachable). Returns the agent-steps run.
fn soak_through_the_plugin(max_steps: u64) -> u64 {
    use crowdfield_cli::{Outcome, RunOptions, Stop, run_scenario};
    let mut agent_steps = 0;
    let mut ran = 0;
    for file in shipped_files() {
        let s = crowdfield_cli::load(&file).unwrap();
        if s.groups.is_empty() && s.markers.is_none() && s.terrain.is_none() {
            continue;
        }
        let out = run_scenario(
            &s,
            RunOptions {
                stop: Stop::UntilArrived { max_steps },
                field_plots: 0,
                ..Default::default()
            },
        );
        let name = &s.name;
        assert!(
            out.trajectories.iter().all(|t| t.position.is_finite()),
            "{name}: a position that is not finite"
        );
        let m = &out.metrics;
        assert_eq!((m.agent_overlaps, m.wall_overlaps), (0, 0), "{name}: {m:?}");
        let walking: Vec<_> = out
            .agents
            .iter()
            .filter(|a| a.outcome == Outcome::Walking)
            .map(|a| a.agent)
            .collect();
        assert!(
            walking.is_empty(),
            "{name}: still walking, unreported: {walking:?}"
        );
        agent_steps += out.trajectories.len() as u64;
        ran += 1;
        println!(
            "{name} (through the plugin): {} agents, {} steps, {} arrived",
            m.agents, m.steps, m.arrived
        );
    }
    assert!(ran >= 3, "{ran} scenarios with groups, markers or terrain");
    agent_steps
}

/// Live bytes after each cycle of: a goal added, walkers spawned to it, steps, the walkers and
/// the goal removed.
fn churn(cycles: usize) -> Vec<isize> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenarios");
    let scenario = crowdfield_cli::load(&dir.join("forest.scenario.ron")).unwrap();
    let (mut crowd, _) = crowdfield_cli::initial_crowd(&scenario).unwrap();
    let template = crowd.agents().next().unwrap().1.params().clone();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    (0..cycles)
        .map(|_| {
            let centre = free_place(&crowd, &[], &mut rng, 1.0, 0.5).unwrap();
            let goal = crowd
                .add_goal(Shape::Disc {
                    centre,
                    radius: 1.0,
                })
                .unwrap();
            let mut ids = Vec::new();
            for _ in 0..20 {
                if let Some(p) = free_place(&crowd, &[], &mut rng, template.radius, 0.05) {
                    let mut params = template.clone();
                    params.position = p;
                    params.goals = vec![goal];
                    params.seed = rng.random();
                    ids.push(crowd.spawn(params).unwrap());
                }
            }
            for _ in 0..10 {
                crowd.step();
            }
            for id in ids {
                // Some arrived and left.
                let _ = crowd.remove(id);
            }
            crowd.remove_goal(goal).unwrap();
            crowd.step();
            live_bytes()
        })
        .collect()
}

/// The heap is flat over `live` (bytes after each churn cycle): the least it held in the last
/// quarter of the cycles is within 128 KiB of the least in the second quarter. Buffers that
/// grow to a new high-water mark and stay raise both alike once they have settled; a leak of
/// what a cycle adds raises the later one by a quarter of the cycles' worth.
fn flat(live: &[isize]) {
    let q = live.len() / 4;
    let second = live[q..2 * q].iter().min().unwrap();
    let last = live[3 * q..].iter().min().unwrap();
    assert!(
        last - second < 128 * 1024,
        "the heap grew by {} bytes from the second quarter of the cycles to the last: {live:?}",
        last - second
    );
}

fn report(t: &Totals) {
    println!("{t:#?}");
}

#[test]
fn a_short_soak_keeps_every_invariant() {
    let totals = soak(200_000, false);
    report(&totals);
    assert!(totals.agent_steps >= 200_000, "{totals:?}");
    assert!(
        totals.spawned > 0
            && totals.removed > 0
            && totals.obstacle_edits > 0
            && totals.goal_edits > 0,
        "every kind of edit happened: {totals:?}"
    );
    flat(&churn(60));
}

/// At least 10⁷ agent-steps over every shipped scenario, the crowds of thousands included.
#[test]
#[ignore = "long: scripts/soak.sh runs it in release"]
fn soak_ten_million_agent_steps() {
    let budget = std::env::var("CROWDFIELD_SOAK_AGENT_STEPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let totals = soak(budget, true);
    report(&totals);
    assert!(totals.agent_steps >= budget, "{totals:?}");
    let through_the_plugin = soak_through_the_plugin(5_000);
    println!("through the plugin: {through_the_plugin} agent-steps");
    flat(&churn(200));
}
