//! Exploration: searching an unknown world for a hidden target (seed 000 §6.11, seed 001 A3,
//! digest 000 §8.2 test 23, digest 001 T15).
//!
//! A search is a goal whose global map starts out knowing nothing. Every cell the searchers
//! have not sensed is fixed at a low potential ([`SearchSettings::unknown_value`], the seeds'
//! 0), so unexplored space attracts like a goal. Each planner step, before sensing their
//! neighbours, the agents heading for the search (in id order):
//!
//! 1. **sense** every global cell within [`SearchSettings::sensor_range`] that is in line of
//!    sight (a ray marched through the inflated static obstacles); a newly sensed cell becomes
//!    free (starting at the unknown value) or, if it is inside an obstacle, an obstacle;
//! 2. **relax** [`SearchSettings::sweeps`] Gauss–Seidel sweeps (seeds: 30) of the harmonic
//!    update over the sensed free cells of a window around themselves.
//!
//! The global descent of this evolving map then places each searcher's intermediate goal as
//! usual, so it heads for the nearest unexplored region, and its local map (30 more sweeps)
//! steers it there among neighbours. Searchers of one target share the map, so their coverage
//! is pooled (digest 001 G19).
//!
//! **Found.** Once a sensed cell lies in the target region the search ends (the seeds give no
//! rule; digest 001 A3 suggests this): sensing stops, unsensed cells stop attracting (they
//! become obstacles: the agent walks through space it knows), the target's sensed cells become
//! the goal at 0, and the map is solved to convergence once. From then on it is an ordinary
//! goal map.
//!
//! Until then the target stays hidden: its region is not stamped into local maps, and programs
//! that look at the goal's position (`TowardsGoal`) see the descent direction instead.

use glam::{DVec2, IVec2};

use crowdfield_field::{CellKind, Field};

use crate::SteerError;

/// How a search senses and relaxes.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[cfg_attr(feature = "serde", serde(default))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// Potential of cells never sensed, in [0, 1): low, so they attract (seeds: 0).
    pub unknown_value: f64,
    /// How far a searcher senses, in world units (seeds: its window; default 3 m, the half
    /// width of a 15-cell window of 0.4 m cells).
    pub sensor_range: f64,
    /// Gauss–Seidel sweeps of the global map per step around each searcher (seeds: 30).
    pub sweeps: usize,
}

impl Default for SearchSettings {
    fn default() -> Self {
        Self {
            unknown_value: 0.0,
            sensor_range: 3.0,
            sweeps: 30,
        }
    }
}

impl SearchSettings {
    /// Checks the values once, at the boundary.
    pub fn validate(&self) -> Result<(), SteerError> {
        if !(0.0..1.0).contains(&self.unknown_value) {
            return Err(SteerError::BadSearch("unknown value must be in [0, 1)"));
        }
        if !(self.sensor_range.is_finite() && self.sensor_range > 0.0) {
            return Err(SteerError::BadSearch(
                "sensor range must be finite and above 0",
            ));
        }
        Ok(())
    }
}

/// The state of one search, kept with its goal.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    pub(crate) settings: SearchSettings,
    /// Whether each global cell lies inside an (inflated) static obstacle: what sensing finds.
    pub(crate) truth: Vec<bool>,
    /// Whether each global cell was ever sensed.
    pub(crate) sensed: Vec<bool>,
    pub(crate) sensed_count: usize,
    /// Cells of the target region (free in `truth`).
    pub(crate) target: Vec<(usize, usize)>,
    /// The planner step the target was first sensed.
    pub(crate) found_at: Option<u64>,
}

impl Search {
    pub(crate) fn new(
        settings: SearchSettings,
        truth: Vec<bool>,
        target: Vec<(usize, usize)>,
    ) -> Self {
        let n = truth.len();
        Self {
            settings,
            truth,
            sensed: vec![false; n],
            sensed_count: 0,
            target,
            found_at: None,
        }
    }

    /// The initial map: border closed, every interior cell unknown (fixed at the unknown value).
    pub(crate) fn initial_map(&self, map: &mut Field<f64>) {
        let (w, h) = (map.width(), map.height());
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                let _ = map.set_fixed(x, y, self.settings.unknown_value);
            }
        }
    }

    /// Senses from `from`: every cell within range and in sight joins the map.
    pub(crate) fn sense(&mut self, map: &mut Field<f64>, from: DVec2) {
        let g = *map.geometry();
        let (w, h) = (g.width() as i32, g.height() as i32);
        let range = self.settings.sensor_range;
        let lo = g.world_to_cell(from - DVec2::splat(range));
        let hi = g.world_to_cell(from + DVec2::splat(range));
        for y in lo.y.max(1)..=hi.y.min(h - 2) {
            for x in lo.x.max(1)..=hi.x.min(w - 2) {
                let (ux, uy) = (x as usize, y as usize);
                let i = g.index(ux, uy);
                if self.sensed[i] {
                    continue;
                }
                let centre = g.cell_centre(ux, uy);
                if (centre - from).length() > range || !self.in_sight(map, from, IVec2::new(x, y)) {
                    continue;
                }
                self.sensed[i] = true;
                self.sensed_count += 1;
                if self.truth[i] {
                    let _ = map.set_obstacle(ux, uy);
                } else {
                    let _ = map.set_free(ux, uy, self.settings.unknown_value);
                }
            }
        }
    }

    /// Whether the ray from `from` to the centre of `cell` crosses no obstacle cell before it.
    fn in_sight(&self, map: &Field<f64>, from: DVec2, cell: IVec2) -> bool {
        let g = map.geometry();
        let to = g.cell_centre(cell.x as usize, cell.y as usize);
        let step = g.cell_size() * 0.25;
        let n = ((to - from).length() / step).ceil() as usize;
        let start = g.world_to_cell(from);
        (1..n).all(|k| {
            let c = g.world_to_cell(from + (to - from) * (k as f64 / n as f64));
            c == cell
                || c == start
                || !g.contains_cell(c)
                || !self.truth[g.index(c.x as usize, c.y as usize)]
        })
    }

    /// Whether a cell of the target has been sensed.
    pub(crate) fn target_sensed(&self, map: &Field<f64>) -> bool {
        let g = map.geometry();
        self.target.iter().any(|&(x, y)| self.sensed[g.index(x, y)])
    }

    /// The target is found: unsensed cells become obstacles, the sensed target cells goals.
    pub(crate) fn conclude(&mut self, map: &mut Field<f64>, step: u64) {
        self.found_at = Some(step);
        let g = *map.geometry();
        for y in 1..g.height() - 1 {
            for x in 1..g.width() - 1 {
                if !self.sensed[g.index(x, y)] {
                    let _ = map.set_obstacle(x, y);
                }
            }
        }
        for &(x, y) in &self.target {
            if self.sensed[g.index(x, y)] {
                let _ = map.set_goal(x, y);
            }
        }
    }

    /// `sweeps` lexicographic Gauss–Seidel sweeps of the harmonic update over the free cells
    /// within `reach` of `around`.
    pub(crate) fn relax_around(&self, map: &mut Field<f64>, around: DVec2, reach: f64) {
        let g = *map.geometry();
        let lo = g
            .world_to_cell(around - DVec2::splat(reach))
            .max(IVec2::ONE);
        let hi = g
            .world_to_cell(around + DVec2::splat(reach))
            .min(IVec2::new(g.width() as i32 - 2, g.height() as i32 - 2));
        if lo.x > hi.x || lo.y > hi.y {
            return;
        }
        let w = g.width();
        let free: Vec<usize> = (lo.y..=hi.y)
            .flat_map(|y| (lo.x..=hi.x).map(move |x| y as usize * w + x as usize))
            .filter(|&i| map.kinds()[i] == CellKind::Free)
            .collect();
        let p = map.potentials_mut();
        for _ in 0..self.settings.sweeps {
            for &i in &free {
                p[i] = 0.25 * (p[i - 1] + p[i + 1] + p[i - w] + p[i + w]);
            }
        }
    }
}
