//! Painted terrain for the BVP back end (ours; seed 003's regions, §2.2, read by seed 000's
//! potential fields): BVP walkers and groups keep off forbidden ground and prefer walkable
//! ground to ground they should avoid, as marker agents do.
//!
//! - Forbidden ground is an obstacle: [`forbidden_shapes`] gives the painted forbidden regions
//!   for the crowd's static obstacles (its solved maps and every local map then treat them as
//!   walls, so no walker enters them).
//! - Ground to avoid conducts less: [`terrain_map`] solves ∇·(k∇p) = 0 over the set's world
//!   with p = 1 on obstacles and forbidden ground, p = 0 on the goal, and conductivity k = 1 on
//!   walkable ground, k = ftⁿ on ground avoided with intensity ι (ft = 1 − ι, the factor the
//!   seed's motion rule gives it; n = [`TerrainMapSettings::avoid_exponent`], 3). Walkers
//!   descend p; its flow lines, those of the flux −k∇p, bend round
//!   regions of low k as a current does round a resistor, the more the lower k. The operator is
//!   elliptic with k > 0, so the maximum principle keeps the harmonic map's promise: no local
//!   minimum inside the free cells. The map is handed to the crowd as a goal's guidance
//!   (`crowdfield_steer::Guidance::Map`).
//!
//! Discretisation: the five-point stencil with each face's conductivity the harmonic mean of
//! its two cells' (the series resistance of the two half-cells); an obstacle or goal neighbour
//! couples with the free cell's own k. Solved by successive over-relaxation in f64 (ω =
//! 2 / (1 + sin(π/n)), n the grid's longer side) until no update moves a potential more than
//! the tolerance; a map is solved once per goal.

use crate::{MarkerError, MarkerSet, Terrain};
use crowdfield_field::{CellKind, Coverage, Field, GridGeometry, Shape};

/// How [`terrain_map`] solves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TerrainMapSettings {
    /// The map's cell side, metres (0.25).
    pub cell: f64,
    /// Stop when no update moves a potential more than this (1e-10).
    pub tolerance: f64,
    /// Stop after this many sweeps (20,000).
    pub max_sweeps: usize,
    /// n in k = ftⁿ on ground to avoid (3).
    pub avoid_exponent: i32,
    /// Obstacles (the set's, not forbidden ground) grow by this much on the map, metres (0;
    /// the plugin gives the crowd's global inflation, as its own maps have).
    pub inflation: f64,
}

impl Default for TerrainMapSettings {
    fn default() -> Self {
        Self {
            cell: 0.25,
            tolerance: 1e-10,
            max_sweeps: 20_000,
            avoid_exponent: 3,
            inflation: 0.0,
        }
    }
}

/// The painted forbidden regions of `set`, as obstacle shapes, in paint order. A forbidden
/// region painted over later with another terrain stays a whole obstacle (on the safe side).
pub fn forbidden_shapes(set: &MarkerSet) -> Vec<Shape> {
    set.terrain()
        .regions()
        .iter()
        .filter(|r| r.terrain == Terrain::Forbidden)
        .map(|r| r.shape.clone())
        .collect()
}

/// The conductivity of ground: 1 walkable, (1 − ι)ⁿ avoided, 0 forbidden (an obstacle).
pub fn conductivity(terrain: Terrain, exponent: i32) -> f64 {
    terrain.ft().powi(exponent)
}

/// The weighted harmonic map towards `goal` over `set`'s world (see the module doc). Refuses
/// bad settings, a goal with no free cell, and grids the field crate refuses.
pub fn terrain_map(
    set: &MarkerSet,
    goal: &Shape,
    settings: &TerrainMapSettings,
) -> Result<Field<f64>, MarkerError> {
    if !(settings.tolerance.is_finite() && settings.tolerance > 0.0) {
        return Err(MarkerError::BadSetting(
            "a terrain map's tolerance must be positive",
        ));
    }
    if !(0..=16).contains(&settings.avoid_exponent) {
        return Err(MarkerError::BadSetting(
            "a terrain map's avoid exponent must lie in 0..=16",
        ));
    }
    let geometry = GridGeometry::covering(set.settings().min, set.settings().max, settings.cell)?;
    let mut map = Field::new(geometry, 1.0);
    let (w, h) = (geometry.width(), geometry.height());
    let mut k = vec![0.0; w * h];
    for y in 0..h {
        for x in 0..w {
            if map.kind(x, y) != Some(CellKind::Free) {
                continue;
            }
            let c = geometry.cell_centre(x, y);
            if set.is_walkable(c) {
                k[y * w + x] = conductivity(set.terrain().terrain_at(c), settings.avoid_exponent);
            } else {
                map.set_obstacle(x, y)?;
            }
        }
    }
    if !(settings.inflation.is_finite() && settings.inflation >= 0.0) {
        return Err(MarkerError::BadSetting(
            "a terrain map's inflation must be finite, not negative",
        ));
    }
    for shape in set.obstacles() {
        for (x, y) in shape.cells(&geometry, settings.inflation, Coverage::Touch)? {
            map.set_obstacle(x, y)?;
        }
    }
    let mut any = false;
    for (x, y) in goal.cells(&geometry, 0.0, Coverage::Touch)? {
        if map.kind(x, y) == Some(CellKind::Free) {
            map.set_goal(x, y)?;
            any = true;
        }
    }
    if !any {
        return Err(MarkerError::GoalNotWalkable {
            x: goal.bounds()?.0.x,
            y: goal.bounds()?.0.y,
        });
    }
    solve(&mut map, &k, settings);
    Ok(map)
}

/// A free cell's row: its index, its four couplings (neighbour, face conductivity) and their
/// sum.
type Row = (usize, [(usize, f64); 4], f64);

/// SOR on ∇·(k∇p) = 0 (see the module doc).
fn solve(map: &mut Field<f64>, k: &[f64], settings: &TerrainMapSettings) {
    let (w, h) = (map.width(), map.height());
    let n = w.max(h) as f64;
    let omega = 2.0 / (1.0 + (std::f64::consts::PI / n).sin());
    let (_, kinds, p) = map.parts_mut();
    let free: Vec<bool> = kinds.iter().map(|c| *c == CellKind::Free).collect();
    // Each free cell's four couplings (E, W, N, S), their neighbours and sum.
    let mut rows: Vec<Row> = Vec::new();
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let i = y * w + x;
            if !free[i] {
                continue;
            }
            let face = |j: usize| {
                if free[j] {
                    2.0 * k[i] * k[j] / (k[i] + k[j]).max(f64::MIN_POSITIVE)
                } else {
                    k[i]
                }
            };
            let c = [i + 1, i - 1, i + w, i - w].map(|j| (j, face(j)));
            let sum: f64 = c.iter().map(|(_, a)| a).sum();
            rows.push((i, c, sum));
        }
    }
    for _ in 0..settings.max_sweeps {
        let mut worst: f64 = 0.0;
        for (i, c, sum) in &rows {
            if *sum <= 0.0 {
                continue;
            }
            let target = c.iter().map(|(j, a)| a * p[*j]).sum::<f64>() / sum;
            let change = omega * (target - p[*i]);
            p[*i] += change;
            worst = worst.max(change.abs());
        }
        if worst <= settings.tolerance {
            break;
        }
    }
    // SOR may overshoot by rounding at the end: keep the potentials in [0, 1].
    for (i, _, _) in &rows {
        p[*i] = p[*i].clamp(0.0, 1.0);
    }
}
