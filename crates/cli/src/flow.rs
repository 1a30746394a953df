//! The flow benchmark (`crowdfield flow`): how crowds walk where pedestrian experiments measure
//! people (docs/runner.md, *Fundamental diagram and flow*), crowdfield beside ORCA in the same run.
//!
//! - **Bottlenecks** ([`bottleneck`]): a 10 m wide room packed at about two walkers per m²
//!   empties through a door 0.8 to 2.4 m wide ([`BOTTLENECK_WIDTHS`]) in a 0.4 m wall. The
//!   specific flow is the flow through the door while the crowd streams through
//!   ([`LineReport::steady_flow`](crate::measure::LineReport::steady_flow), the first and last
//!   [`STEADY_TRIM`] of the crossings left out) over the door's width, set beside the band
//!   that laboratory bottleneck experiments
//!   (Seyfried, Liddle, Kretz and others) report, [`EXPERIMENTAL_BAND`].
//! - **Corridors** ([`corridor`]): a 4 m wide corridor filled over 30 m at 0.5 to 2.5 walkers
//!   per m² ([`CORRIDOR_DENSITIES`]), all walking one way. Voronoi speed against Voronoi
//!   density in a 6 × 4 m area in the block's middle ([`crate::measure`]), after the first
//!   [`WARM_UP_S`] seconds (walkers start from rest), in bins of [`DENSITY_BIN`], pooled over
//!   the runs, beside Weidmann's speed.
//! - **Counterflow** ([`bidirectional`]): the same corridor with two blocks of 20 m at 0.5 to
//!   1.5 per m² ([`BIDIRECTIONAL_DENSITIES`]) walking at each other. The lane order parameter
//!   (seed 002 C4) in the middle 20 m ([`lane_order`]) where the streams overlap most.
//! - **Plaza and hallway**: the shipped `plaza` (2,000 walkers in two opposite streams) and
//!   `hallway-two-way` (200) scenarios, the planner steps until everyone is out.
//!
//! Walkers of the generated cases are discs of [`WALKER_RADIUS`] at Weidmann's free speed
//! [`WALKER_SPEED`], placed on a jittered triangular lattice ([`lattice`]) with a fixed seed;
//! the global maps use 0.2 m cells, so that the narrowest door stays open in them.

use std::fmt::Write as _;
use std::path::Path;

use bevy::math::DVec2;
use bevy_crowdfield::steer::Preset;
use bevy_crowdfield::{Scenario, ScenarioError};
use plotters::prelude::*;
use serde::Serialize;

use crate::bench::{BenchOptions, BenchRow, Steering, bench_scenario};
use crate::measure::{AreaReport, DENSITY_BIN, weidmann_speed};

/// Door widths of the bottleneck cases (m).
pub const BOTTLENECK_WIDTHS: [f64; 6] = [0.8, 1.0, 1.2, 1.6, 2.0, 2.4];

/// Initial densities of the one-way corridor cases (walkers per m²).
pub const CORRIDOR_DENSITIES: [f64; 5] = [0.5, 1.0, 1.5, 2.0, 2.5];

/// Initial densities of each block of the counterflow cases (walkers per m²).
pub const BIDIRECTIONAL_DENSITIES: [f64; 3] = [0.5, 1.0, 1.5];

/// Specific flows through bottlenecks reported by laboratory experiments (per second and
/// metre): about 1.5 to 2.0 for doors 0.8 to 2.5 m wide.
pub const EXPERIMENTAL_BAND: (f64, f64) = (1.5, 2.0);

/// Radius of the generated cases' walkers (m).
pub const WALKER_RADIUS: f64 = 0.2;

/// Top speed of the generated cases' walkers: Weidmann's free speed (m/s).
pub const WALKER_SPEED: f64 = 1.34;

/// Share of the door crossings left out at each end for the steady flow.
pub const STEADY_TRIM: f64 = 0.1;

/// Seconds from the start before corridor samples count (walkers start from rest).
pub const WARM_UP_S: f64 = 2.0;

/// Density bins with fewer samples than this are left out of the speed table.
pub const MIN_BIN_SAMPLES: usize = 5;

/// Which case a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Case {
    /// A bottleneck with a door this wide (m).
    Bottleneck(f64),
    /// A one-way corridor at this initial density.
    Corridor(f64),
    /// A counterflow corridor, each block at this initial density.
    Bidirectional(f64),
    /// A shipped scenario, run until everyone is out.
    Clear,
}

/// One case steered one way, with what the flow benchmark reads of it.
#[derive(Debug, Clone, Serialize)]
pub struct FlowRow {
    /// The case.
    pub case: Case,
    /// The scenario's name.
    pub scenario: String,
    /// Who steered.
    pub steering: Steering,
    /// Walkers.
    pub agents: usize,
    /// Planner steps run (to the last arrival, or the cap).
    pub steps: u64,
    /// Share of walkers that arrived.
    pub arrived: f64,
    /// Agent pairs overlapping beyond the tolerance, summed over steps.
    pub agent_overlaps: usize,
    /// Agents reaching into a wall, summed over steps.
    pub wall_overlaps: usize,
    /// Bottlenecks: the steady specific flow through the door (per second and metre).
    pub specific_flow: Option<f64>,
    /// Corridors: the measurement area's samples after the warm-up, as (Voronoi density,
    /// Voronoi speed).
    #[serde(skip)]
    pub samples: Vec<(f64, f64)>,
    /// Counterflow: the lane order parameter where the streams overlap most.
    pub lane_order: Option<f64>,
}

/// The benchmark's cases: bottlenecks, one-way corridors, counterflow corridors.
pub fn cases() -> Vec<(Case, Scenario)> {
    let valid = |s: Result<Scenario, ScenarioError>| {
        s.expect("the benchmark's own widths and densities make valid scenarios")
    };
    let mut cases: Vec<(Case, Scenario)> = Vec::new();
    for w in BOTTLENECK_WIDTHS {
        cases.push((Case::Bottleneck(w), valid(bottleneck(w, 2.0))));
    }
    for d in CORRIDOR_DENSITIES {
        cases.push((Case::Corridor(d), valid(corridor(d))));
    }
    for d in BIDIRECTIONAL_DENSITIES {
        cases.push((Case::Bidirectional(d), valid(bidirectional(d))));
    }
    cases
}

/// Points on a triangular lattice at `density` per m² filling `min..max` with a walker's
/// clearance from its edges, each moved by up to a fifth of the lattice's free gap in x and y
/// (a fixed stream of `seed`), so that no row walks in perfect step.
pub fn lattice(min: DVec2, max: DVec2, density: f64, seed: u64) -> Vec<DVec2> {
    if !(density > 0.0 && density.is_finite()) {
        return Vec::new();
    }
    let spacing = (2.0 / (3f64.sqrt() * density)).sqrt();
    let row_step = spacing * 3f64.sqrt() * 0.5;
    let edge = WALKER_RADIUS + 0.05;
    let jitter = ((spacing - 2.0 * WALKER_RADIUS - 0.02) * 0.2).max(0.0);
    let mut state = seed;
    let mut uniform = move || {
        // SplitMix64.
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let (lo, hi) = (min + DVec2::splat(edge), max - DVec2::splat(edge));
    let mut points = Vec::new();
    let mut y = lo.y;
    let mut row = 0;
    while y <= hi.y {
        let mut x = lo.x + if row % 2 == 1 { spacing * 0.5 } else { 0.0 };
        while x <= hi.x {
            let p = DVec2::new(x + jitter * uniform(), y + jitter * uniform());
            points.push(p.clamp(lo, hi));
            x += spacing;
        }
        y += row_step;
        row += 1;
    }
    points
}

/// A walker of the generated cases at `p` heading for the box `goal`.
fn walker(p: DVec2, goal: (DVec2, DVec2)) -> String {
    format!(
        "(position: ({:.4}, {:.4}), goals: (targets: [Region(Aabb(min: ({}, {}), max: ({}, {})))], \
         on_arrival: Despawn), style: (radius: {WALKER_RADIUS}, max_speed: {WALKER_SPEED})),\n",
        p.x, p.y, goal.0.x, goal.0.y, goal.1.x, goal.1.y
    )
}

/// A bottleneck: a 10 × 10 m room (x 0 to 10) filled at `density` over x 1 to 9.6, a 0.4 m
/// wall at x 10 with a door of `width` centred at y 5, and a corridor beyond to the goal at
/// x 24 to 25.5. Measures the door (line, forward = east) and the 2 m before it (area). A
/// width that makes no valid scenario (NaN, infinite) is refused with the scenario's own
/// error; a density that is not positive places no walkers (the same in [`corridor`] and
/// [`bidirectional`]).
pub fn bottleneck(width: f64, density: f64) -> Result<Scenario, ScenarioError> {
    let (y0, y1) = (5.0 - width / 2.0, 5.0 + width / 2.0);
    let mut text = format!(
        "(name: \"bottleneck-{width:.1}\", description: \"A room empties through a {width} m door.\",
        bounds: (min: (0.0, 0.0), max: (26.0, 10.0)),
        settings: (global_inflation: Some({WALKER_RADIUS}), global_cell_size: Some(0.2)),
        obstacles: [
            (shape: Aabb(min: (10.0, 0.0), max: (10.4, {y0}))),
            (shape: Aabb(min: (10.0, {y1}), max: (10.4, 10.0))),
        ],
        measurements: [
            Line(name: \"door\", a: (10.2, {y1}), b: (10.2, {y0})),
            Area(name: \"before the door\", min: (8.0, {a}), max: (10.0, {b})),
        ],
        agents: [\n",
        a = (y0 - 1.0).max(0.0),
        b = (y1 + 1.0).min(10.0),
    );
    let goal = (DVec2::new(24.0, 0.5), DVec2::new(25.5, 9.5));
    for p in lattice(DVec2::new(1.0, 0.3), DVec2::new(9.6, 9.7), density, 7) {
        text.push_str(&walker(p, goal));
    }
    text.push_str("])");
    Scenario::from_ron(&text)
}

/// The corridor of the corridor cases: 60 m long, 4 m wide (y 0 to 4), walls beside it.
fn corridor_text(name: &str, description: &str, area: (f64, f64)) -> String {
    format!(
        "(name: \"{name}\", description: \"{description}\",
        bounds: (min: (0.0, -0.5), max: (60.0, 4.5)),
        settings: (global_inflation: Some({WALKER_RADIUS}), global_cell_size: Some(0.2)),
        obstacles: [
            (shape: Aabb(min: (0.0, -0.5), max: (60.0, 0.0))),
            (shape: Aabb(min: (0.0, 4.0), max: (60.0, 4.5))),
        ],
        measurements: [Area(name: \"middle\", min: ({}, 0.0), max: ({}, 4.0))],
        agents: [\n",
        area.0, area.1
    )
}

/// A one-way corridor: walkers fill x 2 to 32 at `density` and walk to x 57 to 59; the area
/// x 14 to 20 lies in the block's middle.
pub fn corridor(density: f64) -> Result<Scenario, ScenarioError> {
    let mut text = corridor_text(
        &format!("corridor-{density:.1}"),
        "A block of walkers walks down a corridor.",
        (14.0, 20.0),
    );
    let goal = (DVec2::new(57.0, 0.3), DVec2::new(59.0, 3.7));
    for p in lattice(DVec2::new(2.0, 0.0), DVec2::new(32.0, 4.0), density, 11) {
        text.push_str(&walker(p, goal));
    }
    text.push_str("])");
    Scenario::from_ron(&text)
}

/// A counterflow corridor: one block over x 2 to 22 walks east, its mirror over x 38 to 58
/// walks west, each at `density`; the area x 27 to 33 is where they meet.
pub fn bidirectional(density: f64) -> Result<Scenario, ScenarioError> {
    let mut text = corridor_text(
        &format!("bidirectional-{density:.1}"),
        "Two blocks of walkers meet head-on in a corridor.",
        (27.0, 33.0),
    );
    let east = (DVec2::new(57.0, 0.3), DVec2::new(59.0, 3.7));
    let west = (DVec2::new(1.0, 0.3), DVec2::new(3.0, 3.7));
    let block = |seed| lattice(DVec2::new(2.0, 0.0), DVec2::new(22.0, 4.0), density, seed);
    for p in block(13) {
        text.push_str(&walker(p, east));
    }
    for p in block(17) {
        text.push_str(&walker(DVec2::new(60.0 - p.x, p.y), west));
    }
    text.push_str("])");
    Scenario::from_ron(&text)
}

/// The lane order parameter of seed 002 C4 over `walkers` (position, walking east): for each
/// walker, the neighbours within 0.4 m across and 5 m along count as going its way or the
/// other; Φ is the mean over walkers with neighbours of `((same − other) / (same + other))²`
/// (1 in perfect lanes, near 0.3 for shuffled labels at these densities). `None` when no
/// walker has a neighbour.
pub fn lane_order(walkers: &[(DVec2, bool)]) -> Option<f64> {
    let mut sum = 0.0;
    let mut counted = 0usize;
    for (i, (p, east)) in walkers.iter().enumerate() {
        let (mut same, mut other) = (0u32, 0u32);
        for (j, (q, e)) in walkers.iter().enumerate() {
            let d = (*q - *p).abs();
            if i != j && d.y < 0.4 && d.x < 5.0 {
                if e == east {
                    same += 1;
                } else {
                    other += 1;
                }
            }
        }
        if same + other > 0 {
            let r = (f64::from(same) - f64::from(other)) / f64::from(same + other);
            sum += r * r;
            counted += 1;
        }
    }
    (counted > 0).then(|| sum / counted as f64)
}

/// The lane order of a counterflow run's recording: walkers in the middle 20 m (x 20 to 40)
/// labelled by where they started (west of the middle: walking east); Φ averaged over the
/// steps where the smaller of the two streams in the window is at least 80 % of its largest.
fn recorded_lane_order(row: &BenchRow) -> Option<f64> {
    let recording = row.recording.as_ref()?;
    let mut start: std::collections::HashMap<usize, bool> = Default::default();
    let mut steps: std::collections::BTreeMap<u64, Vec<(DVec2, usize)>> = Default::default();
    for s in &recording.trajectories {
        start.entry(s.agent).or_insert(s.position.x < 30.0);
        if s.step > 0 && (20.0..=40.0).contains(&s.position.x) {
            steps
                .entry(s.step)
                .or_default()
                .push((s.position.as_dvec2(), s.agent));
        }
    }
    let labelled: Vec<(u64, Vec<(DVec2, bool)>)> = steps
        .into_iter()
        .map(|(step, walkers)| {
            let w = walkers.into_iter().map(|(p, a)| (p, start[&a])).collect();
            (step, w)
        })
        .collect();
    let overlap = |w: &[(DVec2, bool)]| {
        let east = w.iter().filter(|(_, e)| *e).count();
        east.min(w.len() - east)
    };
    let most = labelled.iter().map(|(_, w)| overlap(w)).max()?;
    if most == 0 {
        return None;
    }
    let phis: Vec<f64> = labelled
        .iter()
        .filter(|(_, w)| overlap(w) * 5 >= most * 4)
        .filter_map(|(_, w)| lane_order(w))
        .collect();
    (!phis.is_empty()).then(|| phis.iter().sum::<f64>() / phis.len() as f64)
}

/// The area samples after the warm-up, as (Voronoi density, Voronoi speed).
fn warm_samples(areas: &[AreaReport]) -> Vec<(f64, f64)> {
    areas
        .iter()
        .flat_map(|a| &a.samples)
        .filter(|s| s.time_s >= WARM_UP_S && s.voronoi_density > 0.0)
        .map(|s| (s.voronoi_density, s.voronoi_speed_m_s))
        .collect()
}

/// Runs `scenario` with crowdfield (through the plugin) and ORCA, once each, on `threads`
/// threads, at most `max_steps` planner steps, and reads what `case` measures.
pub fn run_case(
    case: Case,
    scenario: &Scenario,
    threads: usize,
    max_steps: u64,
) -> Result<Vec<FlowRow>, rayon::ThreadPoolBuildError> {
    let options = BenchOptions {
        max_steps,
        threads,
        repeats: 1,
        keep_trajectories: matches!(case, Case::Bidirectional(_)),
        all_steerings: false,
        ..Default::default()
    };
    let rows = bench_scenario(scenario, options)?;
    Ok(rows
        .into_iter()
        .map(|row| FlowRow {
            case,
            scenario: row.scenario.clone(),
            steering: row.steering,
            agents: row.agents,
            steps: row.steps,
            arrived: row.arrival_fraction,
            agent_overlaps: row.agent_overlaps,
            wall_overlaps: row.wall_overlaps,
            specific_flow: match case {
                Case::Bottleneck(width) => row
                    .lines
                    .first()
                    .and_then(|l| l.steady_flow(STEADY_TRIM))
                    .map(|j| j / width),
                _ => None,
            },
            samples: match case {
                Case::Corridor(_) | Case::Bidirectional(_) => warm_samples(&row.areas),
                _ => Vec::new(),
            },
            lane_order: match case {
                Case::Bidirectional(_) => recorded_lane_order(&row),
                _ => None,
            },
        })
        .collect())
}

/// One density bin of the pooled one-way corridor samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpeedBin {
    /// Lower edge (walkers per m²).
    pub density_min: f64,
    /// Samples in it.
    pub samples: usize,
    /// Their mean density.
    pub density_mean: f64,
    /// Their mean speed (m/s).
    pub speed_mean: f64,
    /// Weidmann's speed at the mean density.
    pub weidmann: f64,
}

/// `samples` in bins of [`DENSITY_BIN`], the bins with at least [`MIN_BIN_SAMPLES`].
pub fn speed_bins(samples: &[(f64, f64)]) -> Vec<SpeedBin> {
    let mut bins: std::collections::BTreeMap<i64, (usize, f64, f64)> = Default::default();
    for &(d, v) in samples {
        let b = bins.entry((d / DENSITY_BIN).floor() as i64).or_default();
        b.0 += 1;
        b.1 += d;
        b.2 += v;
    }
    bins.into_iter()
        .filter(|(_, (n, _, _))| *n >= MIN_BIN_SAMPLES)
        .map(|(k, (n, d, v))| {
            let density_mean = d / n as f64;
            SpeedBin {
                density_min: k as f64 * DENSITY_BIN,
                samples: n,
                density_mean,
                speed_mean: v / n as f64,
                weidmann: weidmann_speed(density_mean),
            }
        })
        .collect()
}

/// The whole benchmark's rows, with the goals' verdicts ([`FlowReport::markdown`]).
#[derive(Debug, Clone, Serialize)]
pub struct FlowReport {
    /// The preset crowdfield ran on.
    pub preset: Preset,
    /// Every case, crowdfield's row then ORCA's.
    pub rows: Vec<FlowRow>,
}

impl FlowReport {
    /// The rows of one steering for cases that `keep` selects.
    fn of(&self, steering: Steering, keep: impl Fn(Case) -> bool) -> Vec<&FlowRow> {
        self.rows
            .iter()
            .filter(|r| r.steering == steering && keep(r.case))
            .collect()
    }

    /// The pooled speed bins of one steering's one-way corridors.
    pub fn corridor_bins(&self, steering: Steering) -> Vec<SpeedBin> {
        let samples: Vec<(f64, f64)> = self
            .of(steering, |c| matches!(c, Case::Corridor(_)))
            .iter()
            .flat_map(|r| r.samples.iter().copied())
            .collect();
        speed_bins(&samples)
    }

    /// The report as Markdown: one table per kind of case, and the goals.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let cf = Steering::Crowdfield;
        let pair = |case: Case| {
            let get = |s| self.rows.iter().find(|r| r.case == case && r.steering == s);
            (get(cf), get(Steering::Orca))
        };
        let fmt = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.2}"));
        let overlaps = |r: Option<&FlowRow>| {
            r.map_or("–".into(), |r| {
                format!("{} / {}", r.agent_overlaps, r.wall_overlaps)
            })
        };
        let arrived =
            |r: Option<&FlowRow>| r.map_or("–".into(), |r| format!("{:.0} %", r.arrived * 100.0));
        let _ = writeln!(md, "Crowdfield on the `{:?}` preset.\n", self.preset);
        let _ = writeln!(
            md,
            "| door (m) | crowdfield J_s (/(m·s)) | ORCA J_s | experiments | crowdfield arrived | crowdfield overlaps (agents / walls) | ORCA overlaps |\n|---|---|---|---|---|---|---|"
        );
        for w in BOTTLENECK_WIDTHS {
            let (c, o) = pair(Case::Bottleneck(w));
            let _ = writeln!(
                md,
                "| {w:.1} | {} | {} | {:.1}–{:.1} | {} | {} | {} |",
                fmt(c.and_then(|r| r.specific_flow)),
                fmt(o.and_then(|r| r.specific_flow)),
                EXPERIMENTAL_BAND.0,
                EXPERIMENTAL_BAND.1,
                arrived(c),
                overlaps(c),
                overlaps(o),
            );
        }
        let _ = writeln!(
            md,
            "\n| density bin (/m²) | crowdfield speed (m/s) | ORCA speed | Weidmann | crowdfield − Weidmann |\n|---|---|---|---|---|"
        );
        let ours = self.corridor_bins(cf);
        let orca = self.corridor_bins(Steering::Orca);
        for b in &ours {
            let o = orca.iter().find(|x| x.density_min == b.density_min);
            let _ = writeln!(
                md,
                "| {:.2}–{:.2} | {:.2} ({} samples) | {} | {:.2} | {:+.2} |",
                b.density_min,
                b.density_min + DENSITY_BIN,
                b.speed_mean,
                b.samples,
                fmt(o.map(|o| o.speed_mean)),
                b.weidmann,
                b.speed_mean - b.weidmann,
            );
        }
        let _ = writeln!(
            md,
            "\n| corridor | crowdfield steps | ORCA steps | crowdfield arrived | crowdfield overlaps | ORCA overlaps |\n|---|---|---|---|---|---|"
        );
        for d in CORRIDOR_DENSITIES {
            let (c, o) = pair(Case::Corridor(d));
            let _ = writeln!(
                md,
                "| one way, {d:.1} /m² | {} | {} | {} | {} | {} |",
                c.map_or("–".into(), |r| r.steps.to_string()),
                o.map_or("–".into(), |r| r.steps.to_string()),
                arrived(c),
                overlaps(c),
                overlaps(o)
            );
        }
        let _ = writeln!(
            md,
            "\n| counterflow (each block) | crowdfield lane order Φ | ORCA Φ | crowdfield steps | ORCA steps | crowdfield arrived | crowdfield overlaps | ORCA overlaps |\n|---|---|---|---|---|---|---|---|"
        );
        for d in BIDIRECTIONAL_DENSITIES {
            let (c, o) = pair(Case::Bidirectional(d));
            let _ = writeln!(
                md,
                "| {d:.1} /m² | {} | {} | {} | {} | {} | {} | {} |",
                fmt(c.and_then(|r| r.lane_order)),
                fmt(o.and_then(|r| r.lane_order)),
                c.map_or("–".into(), |r| r.steps.to_string()),
                o.map_or("–".into(), |r| r.steps.to_string()),
                arrived(c),
                overlaps(c),
                overlaps(o)
            );
        }
        let cleared: Vec<&FlowRow> = self.of(cf, |c| c == Case::Clear);
        if !cleared.is_empty() {
            let _ = writeln!(
                md,
                "\n| scenario | crowdfield steps to clear | ORCA steps | ratio | crowdfield arrived | crowdfield overlaps | ORCA overlaps |\n|---|---|---|---|---|---|---|"
            );
            for c in cleared {
                let o = self
                    .rows
                    .iter()
                    .find(|r| r.scenario == c.scenario && r.steering == Steering::Orca);
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    c.scenario,
                    c.steps,
                    o.map_or("–".into(), |o| o.steps.to_string()),
                    o.filter(|o| o.steps > 0).map_or("–".into(), |o| format!(
                        "{:.2}",
                        c.steps as f64 / o.steps as f64
                    )),
                    arrived(Some(c)),
                    overlaps(Some(c)),
                    overlaps(o)
                );
            }
        }
        md
    }
}

/// Writes `flow-bottleneck.png` (specific flow against door width: crowdfield dark blue, ORCA
/// orange, the experimental band shaded grey; x 0.6 to 2.6 m, grid every 0.2 m; y 0 to 3.5,
/// grid every 0.5) and `flow-speed.png` (speed against density: the one-way corridors' bins,
/// crowdfield dark blue, ORCA orange, counterflow bins of crowdfield green; Weidmann's speed
/// black, with a grey band 0.2 m/s either side; x 0 to 3 per m², grid every 0.5; y 0 to 1.6 m/s,
/// grid every 0.2) into `dir`.
pub fn write_plots(dir: &Path, report: &FlowReport) -> Result<(), crate::plot::PlotError> {
    let blue = RGBColor(30, 60, 180);
    let orange = RGBColor(230, 120, 20);
    let green = RGBColor(40, 160, 60);
    let grey = RGBColor(215, 215, 215);
    let band = RGBColor(225, 225, 225);
    let flows = |s: Steering| -> Vec<(f64, f64)> {
        report
            .rows
            .iter()
            .filter(|r| r.steering == s)
            .filter_map(|r| match r.case {
                Case::Bottleneck(w) => r.specific_flow.map(|j| (w, j)),
                _ => None,
            })
            .collect()
    };
    crate::plot::chart(
        &dir.join("flow-bottleneck.png"),
        (0.6, 2.6, 0.2),
        (0.0, 3.5, 0.5),
        |chart| {
            chart.draw_series([Rectangle::new(
                [(0.6, EXPERIMENTAL_BAND.0), (2.6, EXPERIMENTAL_BAND.1)],
                band.filled(),
            )])?;
            for (s, colour) in [(Steering::Orca, orange), (Steering::Crowdfield, blue)] {
                let points = flows(s);
                chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(3)))?;
                chart.draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 6, colour.filled())),
                )?;
            }
            Ok(())
        },
        grey,
    )?;
    let bidirectional: Vec<(f64, f64)> = report
        .of(Steering::Crowdfield, |c| {
            matches!(c, Case::Bidirectional(_))
        })
        .iter()
        .flat_map(|r| r.samples.iter().copied())
        .collect();
    let bidirectional = speed_bins(&bidirectional);
    crate::plot::chart(
        &dir.join("flow-speed.png"),
        (0.0, 3.0, 0.5),
        (0.0, 1.6, 0.2),
        |chart| {
            let curve = |shift: f64| {
                (5..=300).map(move |i| {
                    let d = i as f64 / 100.0;
                    (d, (weidmann_speed(d) + shift).max(0.0))
                })
            };
            let mut polygon: Vec<(f64, f64)> = curve(0.2).collect();
            polygon.extend(curve(-0.2).collect::<Vec<_>>().into_iter().rev());
            chart.draw_series([Polygon::new(polygon, band.filled())])?;
            chart.draw_series(LineSeries::new(curve(0.0), BLACK.stroke_width(2)))?;
            for (bins, colour) in [
                (report.corridor_bins(Steering::Orca), orange),
                (bidirectional.clone(), green),
                (report.corridor_bins(Steering::Crowdfield), blue),
            ] {
                let points: Vec<(f64, f64)> = bins
                    .iter()
                    .map(|b| (b.density_mean, b.speed_mean))
                    .collect();
                chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?;
                chart.draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 6, colour.filled())),
                )?;
            }
            Ok(())
        },
        grey,
    )
}

/// Reads a shipped scenario for the steps-to-clear table, or says why it is left out.
pub fn shipped(dir: &Path, name: &str) -> Result<Scenario, String> {
    let path = dir.join(format!("{name}.scenario.ron"));
    crate::load(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Puts `preset` into every case's settings.
pub fn with_preset(mut scenario: Scenario, preset: Preset) -> Scenario {
    scenario.settings.preset = Some(preset);
    scenario
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lattice_holds_its_density_and_keeps_walkers_apart() {
        let (min, max) = (DVec2::new(0.0, 0.0), DVec2::new(20.0, 10.0));
        for density in [0.5, 1.0, 2.0, 2.5] {
            let points = lattice(min, max, density, 3);
            // The lattice fills the box less its edge strip.
            let inner =
                (20.0 - 2.0 * (WALKER_RADIUS + 0.05)) * (10.0 - 2.0 * (WALKER_RADIUS + 0.05));
            let got = points.len() as f64 / inner;
            assert!((got - density).abs() < 0.2 * density, "{density}: {got}");
            for (i, p) in points.iter().enumerate() {
                for q in &points[i + 1..] {
                    assert!(p.distance(*q) >= 2.0 * WALKER_RADIUS, "{p} {q}");
                }
            }
        }
    }

    #[test]
    fn lanes_order_one_and_mixed_streams_less() {
        // Two lanes 1 m apart: everyone's neighbours go its way.
        let lanes: Vec<(DVec2, bool)> = (0..20)
            .map(|k| {
                (
                    DVec2::new(k as f64 * 0.5, if k % 2 == 0 { 1.0 } else { 2.0 }),
                    k % 2 == 0,
                )
            })
            .collect();
        assert_eq!(lane_order(&lanes), Some(1.0));
        // One lane, alternating: every neighbour within 5 m is as likely either way.
        let mixed: Vec<(DVec2, bool)> = (0..40)
            .map(|k| (DVec2::new(k as f64 * 0.5, 1.0), k % 2 == 0))
            .collect();
        assert!(lane_order(&mixed).unwrap() < 0.05);
        assert_eq!(lane_order(&[(DVec2::ZERO, true)]), None);
    }

    #[test]
    fn the_steady_flow_leaves_out_the_first_and_last_crossings() {
        let mut line = crate::measure::LineReport {
            name: "door".into(),
            a: [0.0, 1.0],
            b: [0.0, 0.0],
            width_m: 1.0,
            forward: 12,
            backward: 0,
            first_crossing_s: Some(0.0),
            last_crossing_s: Some(100.0),
            flow_per_s: None,
            specific_flow: None,
            // A slow start and a straggler around ten crossings a second apart.
            crossing_times_s: vec![
                0.0, 5.0, 6.0, 6.5, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 10.0, 100.0,
            ],
        };
        // One crossing off each end: ten from 5 s to 10 s.
        assert_eq!(line.steady_flow(0.1), Some(9.0 / 5.0));
        assert_eq!(line.steady_flow(0.0), Some(11.0 / 100.0));
        line.crossing_times_s.truncate(1);
        assert_eq!(line.steady_flow(0.1), None);
    }

    #[test]
    fn a_door_or_density_that_makes_no_scenario_is_refused() {
        assert!(bottleneck(f64::NAN, 2.0).is_err());
        assert!(bottleneck(f64::INFINITY, 2.0).is_err());
        // A density that is not positive places no walkers (the lattice is empty).
        for density in [f64::NAN, -1.0, 0.0] {
            assert!(lattice(DVec2::ZERO, DVec2::splat(10.0), density, 1).is_empty());
            assert!(corridor(density).unwrap().agents().0.is_empty());
        }
    }

    #[test]
    fn every_case_is_a_valid_scenario_of_walkers() {
        let cases = cases();
        assert_eq!(
            cases.len(),
            BOTTLENECK_WIDTHS.len() + CORRIDOR_DENSITIES.len() + BIDIRECTIONAL_DENSITIES.len()
        );
        for (_, s) in &cases {
            let (agents, missing) = s.agents();
            assert!(agents.len() >= 50, "{}", s.name);
            assert!(missing.iter().all(|&m| m == 0));
        }
    }
}
