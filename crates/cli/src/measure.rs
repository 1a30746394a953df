//! Measurements at the places a scenario names (`Scenario::measurements`): the fundamental
//! diagram in a measurement area and the flow through a line (after the methods of Zhang and
//! Seyfried that PedPy implements; docs/references.md cites them).
//!
//! **Area.** After every planner step, with `A` the walkable part of the area (static obstacles
//! and the world outside its bounds taken out):
//! - counted density `ρ = N / |A|`, N the agents whose centre lies in `A`;
//! - Voronoi density `ρ_V = Σᵢ |Vᵢ ∩ A| / (|Vᵢ|·|A|)`, `Vᵢ` agent i's Voronoi cell in the walkable
//!   plane, cut to the disc of radius [`VORONOI_CUTOFF`] around it (as PedPy's cut-off), so a
//!   lone agent's cell stays finite;
//! - Voronoi speed `v_V = Σᵢ |Vᵢ ∩ A|·|vᵢ| / Σᵢ |Vᵢ ∩ A|`, the speeds weighted by the part of
//!   `A` each cell covers (parts of `A` no cell reaches do not count, where PedPy divides by
//!   the whole of `|A|`: a sparse crowd then reads as slow);
//! - specific flow `J_s = ρ_V · v_V` (agents per second and metre).
//!
//!   `vᵢ` is the agent's displacement over the last step divided by the planner period; agents
//!   that stand (arrived, `Stop`) count with speed 0. The cells are rasterised on a lattice of
//!   [`VORONOI_RESOLUTION`]: every lattice point goes to the nearest agent within the cut-off
//!   (the lowest index on a tie), and an agent that gets no point (it stands on or next to
//!   another, as only overlapping steerings put agents) counts as a cell around its position,
//!   wholly in the area or out. A test checks agents on a square lattice of spacing d read
//!   `ρ_V = 1/d²` within 2 %; PedPy's polygons read the mean and highest densities of the
//!   bottleneck's and the hallway's runs, every steering, within 0.5 % (docs/runner.md,
//!   *Fundamental diagram and flow*).
//!
//! **Line.** Every crossing of the segment from `a` to `b` is counted with its time, linearly
//! interpolated within the step; forward is from the right of `a → b` to its left. The flow is
//! `J = (N − 1) / (t_N − t_1)` over the N crossings, both ways, and the specific flow `J / |ab|`.
//!
//! The speeds of [`weidmann_speed`] (Weidmann 1993: free speed 1.34 m/s, γ = 1.913 m⁻², jam
//! density 5.4 m⁻²) go beside each density bin as the usual empirical reference for
//! pedestrians on a plane.

use bevy::math::DVec2;
use bevy_crowdfield::ObstacleKind;
use bevy_crowdfield::Scenario;
use bevy_crowdfield::field::Shape;
use bevy_crowdfield::scenario::Measurement;
use serde::Serialize;

/// How far a Voronoi cell reaches from its agent (metres).
pub const VORONOI_CUTOFF: f64 = 1.0;

/// Spacing of the lattice the Voronoi cells are rasterised on (metres).
pub const VORONOI_RESOLUTION: f64 = 0.05;

/// Width of the density bins of [`AreaReport::bins`] (agents per m²).
pub const DENSITY_BIN: f64 = 0.25;

/// Weidmann's speed–density relation for pedestrians on a plane (m/s, density in agents per
/// m²): `1.34 · (1 − exp(−1.913 · (1/ρ − 1/5.4)))`, 1.34 at ρ = 0 and 0 from the jam density
/// 5.4 on.
pub fn weidmann_speed(density: f64) -> f64 {
    if density <= 0.0 {
        return 1.34;
    }
    (1.34 * (1.0 - (-1.913 * (1.0 / density - 1.0 / 5.4)).exp())).max(0.0)
}

/// One agent as the measurements see it after a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Observed {
    /// Where it stood before the step.
    pub(crate) previous: DVec2,
    /// Where it stands now.
    pub(crate) position: DVec2,
}

/// An area after one step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AreaSample {
    /// Planner step.
    pub step: u64,
    /// Seconds since the start.
    pub time_s: f64,
    /// Agents whose centre lies in the area.
    pub agents: usize,
    /// Counted density (agents per m² of the walkable area).
    pub density: f64,
    /// Voronoi density (agents per m²).
    pub voronoi_density: f64,
    /// Voronoi speed (m/s); 0 when no cell reaches the area.
    pub voronoi_speed_m_s: f64,
    /// `voronoi_density · voronoi_speed` (agents per second and metre).
    pub specific_flow: f64,
}

/// Mean speed of the samples whose Voronoi density falls in one bin.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DensityBin {
    /// Lower edge (agents per m²).
    pub density_min: f64,
    /// Upper edge.
    pub density_max: f64,
    /// Samples in the bin.
    pub samples: usize,
    /// Their mean Voronoi density.
    pub density_mean: f64,
    /// Mean Voronoi speed of those samples (m/s).
    pub speed_mean_m_s: f64,
    /// [`weidmann_speed`] at the bin's mean density, for comparison.
    pub weidmann_speed_m_s: f64,
}

/// The fundamental diagram measured in one area.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AreaReport {
    /// The area's label.
    pub name: String,
    /// Lower-left corner.
    pub min: [f64; 2],
    /// Upper-right corner.
    pub max: [f64; 2],
    /// Walkable area (m²).
    pub area_m2: f64,
    /// Steps in which some Voronoi cell reached the area.
    pub occupied_steps: usize,
    /// Mean Voronoi density over those steps.
    pub voronoi_density_mean: f64,
    /// Highest Voronoi density.
    pub voronoi_density_max: f64,
    /// Mean Voronoi speed over those steps.
    pub voronoi_speed_mean_m_s: f64,
    /// Speeds by density ([`DENSITY_BIN`] wide, empty bins left out).
    pub bins: Vec<DensityBin>,
    /// Every step's sample (written to `measurements.csv`, not to `metrics.json`).
    #[serde(skip)]
    pub samples: Vec<AreaSample>,
}

/// The flow measured through one line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineReport {
    /// The line's label.
    pub name: String,
    /// One end.
    pub a: [f64; 2],
    /// The other end.
    pub b: [f64; 2],
    /// Its length (m).
    pub width_m: f64,
    /// Crossings from the right of `a → b` to its left.
    pub forward: usize,
    /// Crossings the other way.
    pub backward: usize,
    /// Time of the first crossing (s).
    pub first_crossing_s: Option<f64>,
    /// Time of the last crossing (s).
    pub last_crossing_s: Option<f64>,
    /// `(N − 1) / (t_N − t_1)` over all N crossings (agents per second); needs two crossings
    /// at different times.
    pub flow_per_s: Option<f64>,
    /// `flow_per_s / width_m` (agents per second and metre).
    pub specific_flow: Option<f64>,
    /// Every crossing's time (s), both ways, in order (not in `metrics.json`).
    #[serde(skip)]
    pub crossing_times_s: Vec<f64>,
}

impl LineReport {
    /// The flow while the crowd streams through (agents per second): `(N − 1) / (t_N − t_1)`
    /// over the crossings left when the first and last `trim` of them (a share, 0 to 0.5) are
    /// dropped, so that the start-up and the stragglers do not count; `None` with fewer than
    /// two crossings left at different times.
    pub fn steady_flow(&self, trim: f64) -> Option<f64> {
        let n = self.crossing_times_s.len();
        let cut = ((n as f64) * trim.clamp(0.0, 0.5)).floor() as usize;
        let kept = self.crossing_times_s.get(cut..n.saturating_sub(cut))?;
        let (first, last) = (*kept.first()?, *kept.last()?);
        (kept.len() >= 2 && last > first).then(|| (kept.len() - 1) as f64 / (last - first))
    }
}

/// A measurement area with its lattice.
struct AreaProbe {
    name: String,
    min: DVec2,
    max: DVec2,
    /// Lattice points within twice the cut-off of the area (every cell reaching into the area
    /// lies within that distance of it).
    lattice: Lattice,
    /// Walkable lattice points in the area.
    inside: usize,
    samples: Vec<AreaSample>,
}

/// A measurement line with its crossings so far.
struct LineProbe {
    name: String,
    a: DVec2,
    b: DVec2,
    /// (time, forward) of every crossing.
    crossings: Vec<(f64, bool)>,
}

/// Takes the measurements of a scenario step by step.
pub(crate) struct Measurer {
    areas: Vec<AreaProbe>,
    lines: Vec<LineProbe>,
    period: f64,
    /// Every step's agents as observed, measured in [`Measurer::finish`]: after the run, not
    /// between its steps, so that the measuring (the Voronoi lattices above all) neither takes
    /// time between steps nor leaves the caches full of its own data when the next step is
    /// timed.
    observed: Vec<(u64, Vec<Observed>)>,
    /// Agents' observations in `observed`.
    kept: usize,
    /// Observations kept at most: past it, the kept steps are measured at once (in order, so
    /// the reports are the same), which bounds the memory a long run of a large crowd takes.
    keep_at_most: usize,
}

/// [`Measurer`]'s default bound on kept observations: 2²¹ agent-steps, 64 MiB (a run of the
/// 200-agent hallway keeps about 200,000).
const KEEP_AT_MOST: usize = 1 << 21;

impl Measurer {
    /// Probes for the measurements of `scenario`, in its bounds and around its static
    /// obstacles, stepped every `period` seconds.
    pub(crate) fn for_scenario(scenario: &Scenario, period: f64) -> Self {
        let statics: Vec<Shape> = scenario
            .obstacles
            .iter()
            .filter(|o| o.kind == ObstacleKind::Static)
            .map(|o| o.shape.clone())
            .collect();
        Self::new(
            &scenario.measurements,
            (
                scenario.bounds.min.as_dvec2(),
                scenario.bounds.max.as_dvec2(),
            ),
            &statics,
            period,
        )
    }

    /// Probes for `measurements` in a world of `bounds` with `statics`, stepped every `period`
    /// seconds.
    pub(crate) fn new(
        measurements: &[Measurement],
        bounds: (DVec2, DVec2),
        statics: &[Shape],
        period: f64,
    ) -> Self {
        let mut areas = Vec::new();
        let mut lines = Vec::new();
        for m in measurements {
            match m {
                Measurement::Area { name, min, max } => {
                    let (min, max) = (min.as_dvec2(), max.as_dvec2());
                    let lattice = Lattice::new(min, max, bounds, statics);
                    let inside = lattice
                        .kind
                        .iter()
                        .filter(|k| **k == Lattice::INSIDE)
                        .count();
                    areas.push(AreaProbe {
                        name: name.clone(),
                        min,
                        max,
                        lattice,
                        inside,
                        samples: Vec::new(),
                    });
                }
                Measurement::Line { name, a, b } => lines.push(LineProbe {
                    name: name.clone(),
                    a: a.as_dvec2(),
                    b: b.as_dvec2(),
                    crossings: Vec::new(),
                }),
            }
        }
        Self {
            areas,
            lines,
            period,
            observed: Vec::new(),
            kept: 0,
            keep_at_most: KEEP_AT_MOST,
        }
    }

    /// Keeps the crowd as it stands after planner step `step`, to be measured in
    /// [`Measurer::finish`] (nothing is kept without measurements), or now if more than the
    /// bound on kept observations would be waiting.
    pub(crate) fn observe(&mut self, step: u64, agents: &[Observed]) {
        if self.areas.is_empty() && self.lines.is_empty() {
            return;
        }
        self.observed.push((step, agents.to_vec()));
        self.kept += agents.len();
        if self.kept > self.keep_at_most {
            self.measure_kept();
        }
    }

    /// Measures the kept steps, in the order they were observed, and lets them go.
    fn measure_kept(&mut self) {
        for (step, agents) in std::mem::take(&mut self.observed) {
            self.measure(step, &agents);
        }
        self.kept = 0;
    }

    /// Measures the crowd after planner step `step`.
    fn measure(&mut self, step: u64, agents: &[Observed]) {
        let time = step as f64 * self.period;
        for line in &mut self.lines {
            for agent in agents {
                if let Some((t, forward)) = crossing(line.a, line.b, agent.previous, agent.position)
                {
                    line.crossings
                        .push(((step as f64 - 1.0 + t) * self.period, forward));
                }
            }
        }
        if self.areas.is_empty() {
            return;
        }
        let speeds: Vec<(DVec2, f64)> = agents
            .iter()
            .map(|a| (a.position, (a.position - a.previous).length() / self.period))
            .collect();
        for area in &mut self.areas {
            area.samples.push(area_sample(area, &speeds, step, time));
        }
    }

    /// Measures every step kept, then gives the reports, areas then lines, in the scenario's
    /// order.
    pub(crate) fn finish(mut self) -> (Vec<AreaReport>, Vec<LineReport>) {
        self.measure_kept();
        let h2 = VORONOI_RESOLUTION * VORONOI_RESOLUTION;
        let areas = self
            .areas
            .into_iter()
            .map(|area| {
                let occupied: Vec<&AreaSample> = area
                    .samples
                    .iter()
                    .filter(|s| s.voronoi_density > 0.0)
                    .collect();
                let mean = |f: fn(&AreaSample) -> f64| {
                    if occupied.is_empty() {
                        0.0
                    } else {
                        occupied.iter().map(|s| f(s)).sum::<f64>() / occupied.len() as f64
                    }
                };
                AreaReport {
                    name: area.name,
                    min: area.min.to_array(),
                    max: area.max.to_array(),
                    area_m2: area.inside as f64 * h2,
                    occupied_steps: occupied.len(),
                    voronoi_density_mean: mean(|s| s.voronoi_density),
                    voronoi_density_max: occupied
                        .iter()
                        .map(|s| s.voronoi_density)
                        .fold(0.0, f64::max),
                    voronoi_speed_mean_m_s: mean(|s| s.voronoi_speed_m_s),
                    bins: bins(&occupied),
                    samples: area.samples,
                }
            })
            .collect();
        let lines = self
            .lines
            .into_iter()
            .map(|line| {
                let mut times: Vec<f64> = line.crossings.iter().map(|(t, _)| *t).collect();
                times.sort_by(f64::total_cmp);
                let (first, last) = (times.first().copied(), times.last().copied());
                let width = line.a.distance(line.b);
                let flow = match (first, last) {
                    (Some(f), Some(l)) if times.len() >= 2 && l > f => {
                        Some((times.len() - 1) as f64 / (l - f))
                    }
                    _ => None,
                };
                LineReport {
                    name: line.name,
                    a: line.a.to_array(),
                    b: line.b.to_array(),
                    width_m: width,
                    forward: line.crossings.iter().filter(|(_, f)| *f).count(),
                    backward: line.crossings.iter().filter(|(_, f)| !*f).count(),
                    first_crossing_s: first,
                    last_crossing_s: last,
                    flow_per_s: flow,
                    specific_flow: flow.map(|j| j / width),
                    crossing_times_s: times,
                }
            })
            .collect();
        (areas, lines)
    }
}

/// A regular lattice of [`VORONOI_RESOLUTION`] around an area, each point blocked (outside the
/// world or in a static obstacle), walkable outside the area, or walkable inside it.
struct Lattice {
    /// Centre of point (0, 0).
    origin: DVec2,
    width: usize,
    height: usize,
    kind: Vec<u8>,
}

impl Lattice {
    const BLOCKED: u8 = 0;
    const OUTSIDE: u8 = 1;
    const INSIDE: u8 = 2;

    /// The lattice over `[min, max]` grown by twice the cut-off, cut to `bounds`.
    fn new(min: DVec2, max: DVec2, bounds: (DVec2, DVec2), statics: &[Shape]) -> Self {
        let h = VORONOI_RESOLUTION;
        let reach = 2.0 * VORONOI_CUTOFF;
        let lo = (min - reach).max(bounds.0);
        let hi = (max + reach).min(bounds.1);
        // A hair over whole multiples of h, so that rounding never drops a row.
        let n = ((hi - lo) / h + 1e-9).floor().max(DVec2::ZERO);
        let (width, height) = (n.x as usize, n.y as usize);
        let origin = lo + DVec2::splat(0.5 * h);
        // Only the shapes whose box reaches the lattice, each tested only inside its box.
        let near: Vec<(&Shape, (DVec2, DVec2))> = statics
            .iter()
            .filter_map(|s| s.bounds().ok().map(|b| (s, b)))
            .filter(|(_, (slo, shi))| slo.cmple(hi).all() && shi.cmpge(lo).all())
            .collect();
        let mut kind = Vec::with_capacity(width * height);
        for j in 0..height {
            for i in 0..width {
                let p = origin + DVec2::new(i as f64, j as f64) * h;
                kind.push(
                    if near.iter().any(|(s, (slo, shi))| {
                        p.cmpge(*slo).all()
                            && p.cmple(*shi).all()
                            && s.distance(p).map_or(true, |d| d <= 0.0)
                    }) {
                        Self::BLOCKED
                    } else if p.cmpge(min).all() && p.cmplt(max).all() {
                        Self::INSIDE
                    } else {
                        Self::OUTSIDE
                    },
                );
            }
        }
        Self {
            origin,
            width,
            height,
            kind,
        }
    }
}

/// One area's sample from the agents' positions and speeds.
fn area_sample(area: &AreaProbe, agents: &[(DVec2, f64)], step: u64, time: f64) -> AreaSample {
    let h2 = VORONOI_RESOLUTION * VORONOI_RESOLUTION;
    let walkable = area.inside as f64 * h2;
    let counted = agents
        .iter()
        .filter(|(p, _)| p.cmpge(area.min).all() && p.cmplt(area.max).all())
        .count();
    // Agents whose cells may reach the lattice (within the cut-off of a point of it).
    let near: Vec<(DVec2, f64)> = agents
        .iter()
        .copied()
        .filter(|(p, _)| {
            p.cmpge(area.min - 3.0 * VORONOI_CUTOFF).all()
                && p.cmple(area.max + 3.0 * VORONOI_CUTOFF).all()
        })
        .collect();
    let mut sample = AreaSample {
        step,
        time_s: time,
        agents: counted,
        density: if walkable > 0.0 {
            counted as f64 / walkable
        } else {
            0.0
        },
        voronoi_density: 0.0,
        voronoi_speed_m_s: 0.0,
        specific_flow: 0.0,
    };
    if near.is_empty() || area.inside == 0 {
        return sample;
    }
    // Each agent claims the walkable points within the cut-off that no earlier agent is
    // nearer to (or as near: the lowest index keeps a tie).
    let lattice = &area.lattice;
    let h = VORONOI_RESOLUTION;
    let cut2 = VORONOI_CUTOFF * VORONOI_CUTOFF;
    let mut owner = vec![u32::MAX; lattice.kind.len()];
    let mut nearest = vec![f64::INFINITY; lattice.kind.len()];
    let span = |c: f64, n: usize| {
        let first = ((c - VORONOI_CUTOFF) / h).ceil().max(0.0) as usize;
        let last = (((c + VORONOI_CUTOFF) / h).floor() + 1.0).clamp(0.0, n as f64) as usize;
        first..last.max(first)
    };
    for (i, (p, _)) in near.iter().enumerate() {
        let local = *p - lattice.origin;
        for y in span(local.y, lattice.height) {
            let dy = y as f64 * h - local.y;
            for x in span(local.x, lattice.width) {
                let k = y * lattice.width + x;
                if lattice.kind[k] == Lattice::BLOCKED {
                    continue;
                }
                let dx = x as f64 * h - local.x;
                let d2 = dx * dx + dy * dy;
                if d2 <= cut2 && d2 < nearest[k] {
                    nearest[k] = d2;
                    owner[k] = i as u32;
                }
            }
        }
    }
    let mut whole = vec![0usize; near.len()];
    let mut within = vec![0usize; near.len()];
    for (o, kind) in owner.iter().zip(&lattice.kind) {
        if *o != u32::MAX {
            whole[*o as usize] += 1;
            within[*o as usize] += usize::from(*kind == Lattice::INSIDE);
        }
    }
    // An agent that claims no lattice point has a cell smaller than the lattice resolves (it
    // stands on or next to another agent, which only overlapping steerings do): the cell lies
    // around its position, wholly in the walkable area or wholly out (as it is for one that
    // stands deep in an obstacle or beyond the cut-off of the lattice).
    let inside_at = |p: DVec2| {
        let cell = ((p - lattice.origin) / h).round();
        (cell.cmpge(DVec2::ZERO).all()
            && cell.x < lattice.width as f64
            && cell.y < lattice.height as f64)
            && lattice.kind[cell.y as usize * lattice.width + cell.x as usize] == Lattice::INSIDE
    };
    let share: f64 = whole
        .iter()
        .zip(&within)
        .zip(&near)
        .map(|((w, a), (p, _))| {
            if *w > 0 {
                *a as f64 / *w as f64
            } else if inside_at(*p) {
                1.0
            } else {
                0.0
            }
        })
        .sum();
    let covered: usize = within.iter().sum();
    sample.voronoi_density = share / walkable;
    if covered > 0 {
        sample.voronoi_speed_m_s = within
            .iter()
            .zip(&near)
            .map(|(a, (_, v))| *a as f64 * v)
            .sum::<f64>()
            / covered as f64;
    }
    sample.specific_flow = sample.voronoi_density * sample.voronoi_speed_m_s;
    sample
}

/// Where the move from `from` to `to` crosses the segment `a–b`: the fraction of the move and
/// whether it goes forward (from the segment's right to its left). A move that ends on the
/// line crosses it; one that starts there does not (so a walker stopping on the line is counted
/// once).
fn crossing(a: DVec2, b: DVec2, from: DVec2, to: DVec2) -> Option<(f64, bool)> {
    let ab = b - a;
    let s0 = ab.perp_dot(from - a);
    let s1 = ab.perp_dot(to - a);
    let forward = s0 < 0.0 && s1 >= 0.0;
    let backward = s0 > 0.0 && s1 <= 0.0;
    if !(forward || backward) {
        return None;
    }
    let t = s0 / (s0 - s1);
    let at = from + (to - from) * t;
    let along = (at - a).dot(ab) / ab.length_squared();
    (0.0..=1.0).contains(&along).then_some((t, forward))
}

/// Mean speeds of the occupied samples by Voronoi density.
fn bins(occupied: &[&AreaSample]) -> Vec<DensityBin> {
    let mut bins: Vec<(usize, f64, f64)> = Vec::new();
    for s in occupied {
        let k = (s.voronoi_density / DENSITY_BIN).floor() as usize;
        if bins.len() <= k {
            bins.resize(k + 1, (0, 0.0, 0.0));
        }
        bins[k].0 += 1;
        bins[k].1 += s.voronoi_speed_m_s;
        bins[k].2 += s.voronoi_density;
    }
    bins.into_iter()
        .enumerate()
        .filter(|(_, (n, _, _))| *n > 0)
        .map(|(k, (n, speed, density))| DensityBin {
            density_min: k as f64 * DENSITY_BIN,
            density_max: (k + 1) as f64 * DENSITY_BIN,
            samples: n,
            density_mean: density / n as f64,
            speed_mean_m_s: speed / n as f64,
            weidmann_speed_m_s: weidmann_speed(density / n as f64),
        })
        .collect()
}

/// The per-step samples of every area as CSV:
/// `area,step,time_s,agents,density,voronoi_density,voronoi_speed_m_s,specific_flow`.
pub fn measurements_csv(areas: &[AreaReport]) -> String {
    let mut out = String::from(
        "area,step,time_s,agents,density,voronoi_density,voronoi_speed_m_s,specific_flow\n",
    );
    for area in areas {
        for s in &area.samples {
            out.push_str(&format!(
                "{},{},{:.4},{},{:.4},{:.4},{:.4},{:.4}\n",
                csv_field(&area.name),
                s.step,
                s.time_s,
                s.agents,
                s.density,
                s.voronoi_density,
                s.voronoi_speed_m_s,
                s.specific_flow
            ));
        }
    }
    out
}

/// An area report with no measurements, for tests.
#[cfg(test)]
pub(crate) fn empty_area(name: &str) -> AreaReport {
    AreaReport {
        name: name.into(),
        min: [0.0; 2],
        max: [1.0; 2],
        area_m2: 1.0,
        occupied_steps: 0,
        voronoi_density_mean: 0.0,
        voronoi_density_max: 0.0,
        voronoi_speed_mean_m_s: 0.0,
        bins: Vec::new(),
        samples: Vec::new(),
    }
}

/// `text` as one CSV field: quoted, with its quotes doubled, where it holds a comma, a quote or
/// a line break.
fn csv_field(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\"")).into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_names_stay_one_csv_field() {
        assert_eq!(csv_field("before the door"), "before the door");
        assert_eq!(csv_field("a, \"b\""), "\"a, \"\"b\"\"\"");
        let report = AreaReport {
            samples: vec![AreaSample {
                step: 1,
                time_s: 0.5,
                agents: 0,
                density: 0.0,
                voronoi_density: 0.0,
                voronoi_speed_m_s: 0.0,
                specific_flow: 0.0,
            }],
            ..empty_area("left, front")
        };
        let csv = measurements_csv(&[report]);
        assert!(
            csv.lines()
                .nth(1)
                .unwrap()
                .starts_with("\"left, front\",1,"),
            "{csv}"
        );
    }

    fn probe(min: DVec2, max: DVec2) -> Measurer {
        Measurer::new(
            &[Measurement::Area {
                name: "a".into(),
                min: min.as_vec2(),
                max: max.as_vec2(),
            }],
            (DVec2::splat(-100.0), DVec2::splat(100.0)),
            &[],
            0.5,
        )
    }

    /// Agents on a square lattice of spacing d, covering the area and well beyond, each having
    /// moved by `step` over the last step.
    fn square_lattice(d: f64, step: DVec2) -> Vec<Observed> {
        let mut agents = Vec::new();
        for j in -20..=20 {
            for i in -20..=20 {
                let p = DVec2::new(i as f64, j as f64) * d + DVec2::new(0.013, 0.029);
                agents.push(Observed {
                    previous: p - step,
                    position: p,
                });
            }
        }
        agents
    }

    #[test]
    fn a_square_lattice_reads_its_density_and_speed() {
        for d in [0.45, 0.6, 0.8, 1.0, 1.3] {
            let mut m = probe(DVec2::new(-2.0, -1.5), DVec2::new(2.0, 1.5));
            // 0.4 m in a 0.5 s step: 0.8 m/s.
            m.observe(3, &square_lattice(d, DVec2::new(0.4, 0.0)));
            let (areas, _) = m.finish();
            let s = areas[0].samples[0];
            let expected = 1.0 / (d * d);
            assert!(
                (s.voronoi_density / expected - 1.0).abs() < 0.02,
                "spacing {d}: {s:?}, expected {expected}"
            );
            assert!((s.voronoi_speed_m_s - 0.8).abs() < 1e-9, "{s:?}");
            assert!((s.specific_flow - s.voronoi_density * 0.8).abs() < 1e-9);
            assert!((s.time_s - 1.5).abs() < 1e-12);
            assert!((s.density - s.agents as f64 / 12.0).abs() < 1e-9, "{s:?}");
        }
    }

    #[test]
    fn sparse_agents_are_cut_off_and_an_empty_area_reads_zero() {
        // One agent in the middle of a 4 × 4 m area: its cell is the cut-off disc, π m².
        let mut m = probe(DVec2::splat(-2.0), DVec2::splat(2.0));
        m.observe(
            1,
            &[Observed {
                previous: DVec2::ZERO,
                position: DVec2::ZERO,
            }],
        );
        m.observe(2, &[]);
        let (areas, _) = m.finish();
        let [one, none] = [areas[0].samples[0], areas[0].samples[1]];
        assert!((one.voronoi_density - 1.0 / 16.0).abs() < 1e-9, "{one:?}");
        assert_eq!((one.agents, one.voronoi_speed_m_s), (1, 0.0));
        assert_eq!(
            (none.voronoi_density, none.density, none.agents),
            (0.0, 0.0, 0)
        );
        assert_eq!(areas[0].occupied_steps, 1);
        assert!((areas[0].area_m2 - 16.0).abs() < 1e-9);
    }

    /// Agents on one spot (as overlapping steerings put them) each count once, as their cells
    /// around that spot do, though the lattice gives all its points to the first; one such
    /// pair outside the area counts nothing.
    #[test]
    fn agents_on_one_spot_each_count_once() {
        let mut m = probe(DVec2::splat(-2.0), DVec2::splat(2.0));
        let at = |p: DVec2| Observed {
            previous: p,
            position: p,
        };
        let inside = DVec2::new(0.5, 0.0);
        let outside = DVec2::new(2.6, 0.0);
        m.observe(1, &[at(inside), at(inside), at(outside), at(outside)]);
        let (areas, _) = m.finish();
        let s = areas[0].samples[0];
        // Both cells inside are whole (within the cut-off of 1 m); the pair outside reaches
        // in, but its second agent, which has no lattice point, adds nothing.
        let pair_outside: f64 = {
            let mut alone = probe(DVec2::splat(-2.0), DVec2::splat(2.0));
            alone.observe(1, &[at(outside)]);
            alone.finish().0[0].samples[0].voronoi_density * 16.0
        };
        assert!(pair_outside > 0.0 && pair_outside < 0.5, "{pair_outside}");
        let expected = (2.0 + pair_outside) / 16.0;
        assert!(
            (s.voronoi_density - expected).abs() < 0.01,
            "{s:?}, expected {expected}"
        );
        assert_eq!(s.agents, 2);

        // Two on one spot deep in a wall that fills the area's east half: no cell of theirs
        // reaches the walkable half, and neither counts.
        let mut m = half_walled_area();
        let deep = DVec2::new(1.5, 0.0);
        m.observe(1, &[at(deep), at(deep)]);
        let (areas, _) = m.finish();
        assert_eq!(areas[0].samples[0].voronoi_density, 0.0, "{:?}", areas[0]);
    }

    /// A measurer of the 4 m × 4 m area round the origin, whose east half (x ≥ 0) a wall fills.
    fn half_walled_area() -> Measurer {
        let wall = Shape::Aabb {
            min: DVec2::new(0.0, -10.0),
            max: DVec2::new(10.0, 10.0),
        };
        Measurer::new(
            &[Measurement::Area {
                name: String::new(),
                min: bevy::math::Vec2::splat(-2.0),
                max: bevy::math::Vec2::splat(2.0),
            }],
            (DVec2::splat(-100.0), DVec2::splat(100.0)),
            &[wall],
            0.5,
        )
    }

    #[test]
    fn obstacles_leave_the_walkable_area() {
        let m = half_walled_area();
        let (areas, _) = m.finish();
        assert!((areas[0].area_m2 - 8.0).abs() < 1e-9, "{:?}", areas[0]);
    }

    #[test]
    fn crossings_are_counted_each_way_with_their_times() {
        let mut m = Measurer::new(
            &[Measurement::Line {
                name: "door".into(),
                a: bevy::math::Vec2::new(0.0, -1.0),
                b: bevy::math::Vec2::new(0.0, 1.0),
            }],
            (DVec2::splat(-100.0), DVec2::splat(100.0)),
            &[],
            0.5,
        );
        let mv = |x0: f64, x1: f64, y: f64| Observed {
            previous: DVec2::new(x0, y),
            position: DVec2::new(x1, y),
        };
        // Step 1: one crosses east → west (forward: from the right of a → b, looking north,
        // to its left) a quarter of the way through the step; one passes beside the line.
        m.observe(1, &[mv(0.1, -0.3, 0.0), mv(0.1, -0.3, 1.5)]);
        // Step 2: one lands on the line going west, one crosses back east.
        m.observe(2, &[mv(0.4, 0.0, 0.5), mv(-0.3, 0.1, 0.0)]);
        // Step 3: the one on the line walks on west (no second count), one stands.
        m.observe(3, &[mv(0.0, -0.4, 0.5), mv(0.1, 0.1, 0.0)]);
        let (_, lines) = m.finish();
        let l = &lines[0];
        assert_eq!((l.forward, l.backward), (2, 1), "{l:?}");
        assert!((l.first_crossing_s.unwrap() - 0.125).abs() < 1e-12, "{l:?}");
        assert!((l.last_crossing_s.unwrap() - 1.0).abs() < 1e-12, "{l:?}");
        assert!((l.flow_per_s.unwrap() - 2.0 / 0.875).abs() < 1e-12);
        assert!((l.specific_flow.unwrap() - 1.0 / 0.875).abs() < 1e-12);
        assert_eq!(l.width_m, 2.0);
    }

    /// Measuring kept steps early, when more than the bound is waiting, gives the reports that
    /// measuring them all at the end gives: the same steps, in the same order.
    #[test]
    fn a_bound_on_kept_observations_changes_no_report() {
        let measurements = [
            Measurement::Area {
                name: "a".into(),
                min: bevy::math::Vec2::splat(-2.0),
                max: bevy::math::Vec2::splat(2.0),
            },
            Measurement::Line {
                name: "l".into(),
                a: bevy::math::Vec2::new(0.5, -3.0),
                b: bevy::math::Vec2::new(0.5, 3.0),
            },
        ];
        let new = || {
            Measurer::new(
                &measurements,
                (DVec2::splat(-100.0), DVec2::splat(100.0)),
                &[],
                0.5,
            )
        };
        let (mut all, mut bounded) = (new(), new());
        // Three steps of twelve go past it: measured every third step.
        bounded.keep_at_most = 30;
        // Twelve agents walking east across the line at different speeds, 20 steps.
        for step in 1..=20u64 {
            let agents: Vec<Observed> = (0..12)
                .map(|i| {
                    let speed = 0.1 + 0.03 * i as f64;
                    let x = |k: u64| -3.0 + speed * k as f64;
                    let y = -1.5 + 0.25 * i as f64;
                    Observed {
                        previous: DVec2::new(x(step - 1), y),
                        position: DVec2::new(x(step), y),
                    }
                })
                .collect();
            all.observe(step, &agents);
            bounded.observe(step, &agents);
            assert_eq!(bounded.kept, 12 * (step as usize % 3), "step {step}");
        }
        let (want, got) = (all.finish(), bounded.finish());
        assert_eq!(want.0[0].samples.len(), 20);
        assert!(want.1[0].backward > 0, "{:?}", want.1[0]);
        assert_eq!(got, want);
    }

    #[test]
    fn speeds_bin_by_density_beside_weidmann() {
        let sample = |density: f64, speed: f64| AreaSample {
            step: 1,
            time_s: 0.5,
            agents: 1,
            density,
            voronoi_density: density,
            voronoi_speed_m_s: speed,
            specific_flow: density * speed,
        };
        let samples = [sample(0.1, 1.2), sample(0.2, 1.0), sample(1.1, 0.5)];
        let b = bins(&samples.iter().collect::<Vec<_>>());
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].samples, b[1].samples), (2, 1));
        assert!((b[0].speed_mean_m_s - 1.1).abs() < 1e-12);
        assert_eq!((b[1].density_min, b[1].density_max), (1.0, 1.25));
        assert!((b[1].weidmann_speed_m_s - weidmann_speed(1.1)).abs() < 1e-12);
        // Weidmann: free speed at zero density, slower as it rises, stopped at jam density.
        assert_eq!(weidmann_speed(0.0), 1.34);
        assert!(weidmann_speed(1.0) < weidmann_speed(0.5));
        assert!(
            (weidmann_speed(1.0) - 1.34 * (1.0 - (-1.913f64 * (1.0 - 1.0 / 5.4)).exp())).abs()
                < 1e-12
        );
        assert_eq!(weidmann_speed(5.4), 0.0);
        assert_eq!(weidmann_speed(7.0), 0.0);
    }
}
