//! The per-agent local map (seed 000 §3.2, seed 001 A2; docs/steering.md).
//!
//! An odd `side × side` window of cells of its own size, centred on the agent's cell of a world
//! lattice (cell k covers `[k·c, (k + 1)·c)`), so that the window moves by whole cells and the
//! previous potentials carry over (warm start, digest 004 §3.1). Zones, from the outside in:
//!
//! - **border** (outer ring): fixed at 1 except the intermediate goal cells, fixed at 0;
//! - **free** (`free_zone` rings, default 1): never stamped, so obstacles cannot cut the agent
//!   off from the intermediate goal (seed 000 §3.2);
//! - **update** (the rest): static obstacles, grown by the agent's radius, and other agents,
//!   as discs of the summed radii, are stamped at 1; the real goal, when inside, at 0.
//!
//! The agent's own cell is never stamped. The intermediate goal is the `goal_cells` border cells
//! nearest to where the ray from the centre along the global descent leaves the window; it is
//! always projected, even when the real goal is inside (seed 000 §3.2). Each step relaxes
//! `sweeps` lexicographic Gauss–Seidel sweeps with the agent's own bias.

use glam::{DVec2, IVec2};

use crowdfield_field::{
    Bias, CellKind, Coverage, Field, GridGeometry, Relaxation, Shape, floor_i32, relax,
};

use crate::SteerError;
use crate::disc_raster::DiscRaster;
use crate::static_raster::StaticRaster;

/// Shape and effort of a local map.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[cfg_attr(feature = "serde", serde(default))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalMapSettings {
    /// Cells per side; odd, default 15 (seeds: 11–35).
    pub side: usize,
    /// Cell size in world units (seeds: 0.42–0.8 m).
    pub cell_size: f64,
    /// Gauss–Seidel sweeps per planner step (seeds: 30 for side ≤ 17, ~100 for 35).
    pub sweeps: usize,
    /// Width of the always-free ring inside the border, in cells.
    pub free_zone: usize,
    /// Border cells set to 0 for the intermediate goal ("a couple", default 3).
    pub goal_cells: usize,
    /// Potential of free cells that enter the window (and of all free cells at first).
    pub initial_value: f64,
    /// Aperture of the view cone in radians, around the agent's heading: obstacles and agents
    /// are stamped only where the direction from the agent lies within half of it. The seeds'
    /// final design maps the whole window (the default, 2π); seed 000 \[P1\] and seed 001 used
    /// a cone (digest 001 G13 suggests π), which the seed reports made agents collide from
    /// behind and oscillate when several met.
    pub view_angle: f64,
    /// Arithmetic of the relaxation sweeps (the map itself is always `f64`).
    pub precision: LocalPrecision,
    /// Which cells a static or moving obstacle, grown by the agent's radius, closes:
    /// [`Coverage::Touch`] (the default) every cell it reaches into, so any point of a free
    /// cell clears the obstacle; [`Coverage::Centre`] the cells whose centre it covers, which
    /// keeps gaps up to a cell wider open (a 1.6 m door stays two 0.5 m cells wide for agents
    /// of 0.5 m radius, where `Touch` closes it), and leaves the clearance to the collision
    /// guard. The seeds grow obstacles by the radius without saying which cells that marks.
    /// `None` (the default): as the crowd's [`Preset`](crate::Preset) says
    /// ([`Preset::obstacle_coverage`](crate::Preset::obstacle_coverage)); the crowd fills it in
    /// when the agent spawns.
    pub obstacle_coverage: Option<Coverage>,
    /// Which neighbours are stamped: all of them, as the seeds do, or all but those walking the
    /// agent's way ([`NeighbourStamping::ExceptSameWay`]). `None` (the default): as the crowd's
    /// [`Preset`](crate::Preset) says ([`Preset::neighbours`](crate::Preset::neighbours)); the
    /// crowd fills it in when the agent spawns.
    pub neighbours: Option<NeighbourStamping>,
}

/// Which neighbours an agent stamps into its local map (seed 000 §3.2 stamps every agent in
/// the window, as a disc of the summed radii).
///
/// Inside a crowd, stamping everyone closes the window: the intermediate goal lies behind
/// several discs, the potential at the agent comes within 10⁻³ of 1, and the descent follows
/// the gaps between neighbours, backwards as often as not, so walkers behind others loop
/// instead of following them (docs/runner.md, *Fundamental diagram and flow*). A neighbour that
/// walks the agent's way at the agent's pace is no obstacle over the next steps: it moves on
/// as the agent would, so their relative motion is about nil. Leaving such neighbours out
/// ([`NeighbourStamping::ExceptSameWay`]) is our option, not the seeds'; the collision guard
/// still keeps the two apart, so a walker follows one that stops rather than walking round it.
/// Crowds then clear bottlenecks and counterflows in far fewer steps, but each step costs more
/// (a neighbour query per agent and the left-out discs taken back out of the step's raster):
/// docs/steering.md, *Walkers going the same way*.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NeighbourStamping {
    /// Every neighbour whose disc reaches into the window (the seeds; [`Preset::Seeds`], the
    /// default preset).
    ///
    /// [`Preset::Seeds`]: crate::Preset::Seeds
    #[default]
    All,
    /// Every neighbour but those walking the agent's way: planning towards a goal, heading
    /// within 45° of the agent's own way (its global map's descent, sub-goals included),
    /// wanting to walk (by its own map, at its last planning) less than 90° from it, and with
    /// a top speed at least 90 % of the agent's ([`SAME_WAY_COS`], [`SAME_WAY_PACE`]), and
    /// not held up: it progressed within the last [`SAME_WAY_STALL`] planner steps. A slower
    /// one stays stamped, so the agent overtakes it where there is room; so does one that is
    /// backing away to let the agent by, headed its way but wanting the other, and one that
    /// has stood too long, so that walkers jammed abreast before a door find ways round each
    /// other as the seeds' stamping lets them.
    ExceptSameWay,
}

/// Cosine of the largest angle (45°) between a neighbour's heading and the agent's way for
/// [`NeighbourStamping::ExceptSameWay`] to leave the neighbour out.
pub const SAME_WAY_COS: f64 = std::f64::consts::FRAC_1_SQRT_2;

/// Planner steps without progress (about 7 s at the default 3.5 steps a second) after which a
/// neighbour is stamped again by [`NeighbourStamping::ExceptSameWay`], whatever its way: it is
/// no longer moving on as the agent would.
///
/// Without it, two walkers abreast before a door one walker wide leave each other out, both
/// press into the door, the collision guard holds both, and the crowd behind them freezes
/// (SteerSuite's `bottleneck-evacuation-2` with 0.25 m local cells: 2 and 14 of 100 out in
/// 6,000 steps, seeds 1 and 2; with it, all 100 in 2,133 and 2,505 steps). Progress is what
/// [`CrowdSettings::stuck_after`](crate::CrowdSettings::stuck_after) counts: half a local cell
/// down the followed field.
pub const SAME_WAY_STALL: u32 = 24;

/// Smallest ratio of a neighbour's top speed to the agent's for
/// [`NeighbourStamping::ExceptSameWay`] to leave the neighbour out.
pub const SAME_WAY_PACE: f64 = 0.9;

impl NeighbourStamping {
    /// Whether a neighbour that heads along `heading`, wants to walk along `wants` (unit
    /// vectors, or zero where it has none), walks at a top speed of `pace` and has gone
    /// `stalled` planner steps without progress is left out of the map of an agent whose own
    /// way is `way` (unit or zero) and top speed `own_pace`.
    pub fn leaves_out(
        self,
        way: DVec2,
        own_pace: f64,
        heading: DVec2,
        wants: DVec2,
        pace: f64,
        stalled: u32,
    ) -> bool {
        match self {
            NeighbourStamping::All => false,
            // Every condition is evaluated (`&`, not `&&`): a crowd's query sorts dozens of
            // neighbours an agent, each as likely left out as not, and branches on them
            // would mispredict about half the time.
            NeighbourStamping::ExceptSameWay => {
                (heading.dot(way) > SAME_WAY_COS)
                    & (wants.dot(way) > 0.0)
                    & (pace >= SAME_WAY_PACE * own_pace)
                    & (stalled < SAME_WAY_STALL)
            }
        }
    }
}

/// How a local map's sweeps are computed.
///
/// Both keep the seeds' lexicographic order and are deterministic and thread-count independent.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum LocalPrecision {
    /// Single precision on the complement `1 − p` (`FieldBatchF32`): 32 maps per batch instead
    /// of 16, about twice the sweep rate. The complement keeps its relative precision where
    /// `p` goes flat; the test `f32_complement_sweeps_make_the_f64_decisions` compares the
    /// headings both give in a crowd (docs/field.md, "Precision").
    #[default]
    F32Complement,
    /// Double precision on `p` (`FieldBatch`), bit-identical to relaxing each map alone with
    /// `relax`.
    F64,
}

impl Default for LocalMapSettings {
    fn default() -> Self {
        Self {
            side: 15,
            cell_size: 0.5,
            sweeps: 30,
            free_zone: 1,
            goal_cells: 3,
            initial_value: 0.9,
            view_angle: std::f64::consts::TAU,
            precision: LocalPrecision::default(),
            obstacle_coverage: None,
            neighbours: None,
        }
    }
}

/// Most Gauss–Seidel sweeps a local map takes a step: the seeds use 30–100, and a count far
/// beyond them is a mistake that would stall every step rather than a choice.
pub const MAX_LOCAL_SWEEPS: usize = 10_000;

impl LocalMapSettings {
    /// Checks side (odd, 5..=101), sweeps (at most [`MAX_LOCAL_SWEEPS`]), cell size, zone
    /// widths, the initial value and the view angle.
    pub fn validate(&self) -> Result<(), SteerError> {
        if self.side.is_multiple_of(2)
            || !(5..=101).contains(&self.side)
            || 2 * self.free_zone + 3 > self.side
        {
            return Err(SteerError::BadLocalMapSide(self.side));
        }
        if self.sweeps > MAX_LOCAL_SWEEPS {
            return Err(SteerError::TooManySweeps(self.sweeps));
        }
        GridGeometry::new(DVec2::ZERO, self.cell_size, self.side, self.side)?;
        if !(0.0..=1.0).contains(&self.initial_value) {
            return Err(
                crowdfield_field::FieldError::FixedValueOutOfRange(self.initial_value).into(),
            );
        }
        if !(self.view_angle > 0.0 && self.view_angle <= std::f64::consts::TAU) {
            return Err(SteerError::BadViewAngle(self.view_angle));
        }
        Ok(())
    }

    /// These settings with the choices left to the preset (`None`) filled in from `preset`.
    pub fn resolved(mut self, preset: crate::Preset) -> Self {
        self.obstacle_coverage = Some(self.coverage_in(preset));
        self.neighbours = Some(self.neighbours_in(preset));
        self
    }

    /// The obstacle coverage, or `preset`'s where none is set.
    pub fn coverage_in(&self, preset: crate::Preset) -> Coverage {
        self.obstacle_coverage
            .unwrap_or_else(|| preset.obstacle_coverage())
    }

    /// The neighbour stamping, or `preset`'s where none is set.
    pub fn neighbours_in(&self, preset: crate::Preset) -> NeighbourStamping {
        self.neighbours.unwrap_or_else(|| preset.neighbours())
    }

    /// Width of the window in world units.
    pub fn width(&self) -> f64 {
        self.side as f64 * self.cell_size
    }
}

/// One agent's local map.
#[derive(Debug, Clone)]
pub struct LocalMap {
    settings: LocalMapSettings,
    field: Field<f64>,
    anchor: IVec2,
    /// The intermediate goal's cells of the last projection, nearest first.
    goal: Vec<(usize, usize)>,
    /// The same ranked while projecting, each keyed by its squared distance to the exit (as
    /// bits), then y, then x, packed into one integer: a buffer kept from step to step.
    ranked: Vec<u128>,
    /// How many left-out discs cover each update-zone cell while stamping from a raster
    /// (zero between stamps): a buffer kept from step to step.
    left_out: Vec<u16>,
}

impl LocalMap {
    /// A map centred on `position`.
    pub fn new(settings: LocalMapSettings, position: DVec2) -> Result<Self, SteerError> {
        settings.validate()?;
        let anchor = lattice_cell(position, settings.cell_size);
        let field = Field::new(geometry(&settings, anchor)?, settings.initial_value);
        Ok(Self {
            settings,
            field,
            anchor,
            goal: Vec::new(),
            ranked: Vec::new(),
            left_out: Vec::new(),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &LocalMapSettings {
        &self.settings
    }

    /// The potentials and kinds as of the last step.
    pub fn field(&self) -> &Field<f64> {
        &self.field
    }

    /// The potentials and kinds, for batched relaxation.
    pub(crate) fn field_mut(&mut self) -> &mut Field<f64> {
        &mut self.field
    }

    /// Moves the window onto the lattice cell containing `position`, carrying potentials.
    pub fn recentre(&mut self, position: DVec2) {
        let anchor = lattice_cell(position, self.settings.cell_size);
        // Potentials carried, cells stamped last step restarted from the initial value, every
        // interior cell free and the border at 1.
        let init = self.settings.initial_value;
        self.field
            .translate_and_reopen(anchor - self.anchor, init, init);
        self.anchor = anchor;
    }

    fn in_update_zone(&self, x: usize, y: usize) -> bool {
        let lo = 1 + self.settings.free_zone;
        let hi = self.settings.side - 1 - self.settings.free_zone;
        (lo..hi).contains(&x) && (lo..hi).contains(&y)
    }

    fn centre(&self) -> (usize, usize) {
        (self.settings.side / 2, self.settings.side / 2)
    }

    /// Stamps `shape` grown by `inflation` as obstacle into the update zone; returns cells set.
    pub fn stamp_obstacle(&mut self, shape: &Shape, inflation: f64, coverage: Coverage) -> usize {
        let Ok(cells) = shape.cells(self.field.geometry(), inflation, coverage) else {
            return 0;
        };
        let centre = self.centre();
        let mut n = 0;
        for (x, y) in cells {
            if (x, y) != centre && self.in_update_zone(x, y) {
                let _ = self.field.set_obstacle(x, y);
                n += 1;
            }
        }
        n
    }

    /// Stamps every update-zone cell (but the agent's own) whose world-lattice cell `raster`
    /// covers; returns cells set.
    pub(crate) fn stamp_lattice(&mut self, raster: &StaticRaster) -> usize {
        let lo = 1 + self.settings.free_zone;
        let hi = self.settings.side - 1 - self.settings.free_zone;
        let half = (self.settings.side / 2) as i32;
        let centre = self.centre();
        let mut n = 0;
        for y in lo..hi {
            let start = self.anchor + IVec2::new(lo as i32 - half, y as i32 - half);
            let field = &mut self.field;
            raster.for_each_blocked_in_row(start, hi - lo, |k| {
                let x = lo + k;
                if (x, y) != centre {
                    let _ = field.set_obstacle(x, y);
                    n += 1;
                }
            });
        }
        n
    }

    /// Stamps the other agents' discs from `raster` (every disc of the step, grown by this
    /// agent's radius) into the update zone, never the agent's own cell: a cell is stamped when
    /// more discs cover it than those left out, which are the agent's own (`own` centre and
    /// radius, as counted) and `skipped` (neighbours' discs of the same step that the agent
    /// does not stamp, [`NeighbourStamping`]). Returns cells set.
    pub(crate) fn stamp_raster_discs(
        &mut self,
        raster: &DiscRaster,
        own: (DVec2, f64),
        skipped: &[(DVec2, f64)],
    ) -> usize {
        let lo = 1 + self.settings.free_zone;
        let hi = self.settings.side - 1 - self.settings.free_zone;
        let half = (self.settings.side / 2) as i32;
        let centre = self.centre();
        let inflation = raster.inflation();
        // Lattice cell of the update zone's first cell.
        let origin = self.anchor + IVec2::splat(lo as i32 - half);
        let len = hi - lo;
        let c = raster.cell();
        // A left-out disc's cells, as zone offsets: the cells its reach's box touches (a
        // cell beyond has its centre at least half a cell outside the box, so no rounding of
        // the raster's test lets it in; empty when not finite).
        let zone_box = |(q, r): (DVec2, f64)| {
            let reach = r + inflation;
            if !(q.is_finite() && reach.is_finite()) {
                return (0..0, 0..0);
            }
            let span = |a: f64, b: f64, o: i32| {
                let a = f64::from(floor_i32(a / c)) - f64::from(o);
                let b = f64::from(floor_i32(b / c)) - f64::from(o);
                if a.is_finite() && b.is_finite() && b >= 0.0 && a < len as f64 {
                    a.max(0.0) as usize..(b as usize + 1).min(len)
                } else {
                    0..0
                }
            };
            (
                span(q.x - reach, q.x + reach, origin.x),
                span(q.y - reach, q.y + reach, origin.y),
            )
        };
        // How many left-out discs cover each zone cell, counted as the raster counted them,
        // over the box of all their cells; a cell they cover is stamped only where more discs
        // count it than they are.
        // With its own disc alone left out (every neighbour stamped, the seeds' way), the one
        // disc is tested cell by cell instead.
        let alone = skipped.is_empty();
        let mut left = std::mem::take(&mut self.left_out);
        left.clear();
        if !alone {
            left.resize(len * len, 0);
        }
        let (mut xs_all, mut ys_all) = (len..0, len..0);
        for (q, r) in std::iter::once(own).chain(skipped.iter().copied()) {
            let (xs, ys) = zone_box((q, r));
            if xs.is_empty() || ys.is_empty() {
                continue;
            }
            xs_all = xs_all.start.min(xs.start)..xs_all.end.max(xs.end);
            ys_all = ys_all.start.min(ys.start)..ys_all.end.max(ys.end);
            if alone {
                break;
            }
            for j in ys.clone() {
                // A word of cells at a time (a disc may span more than 64 in a wide window).
                for first in xs.clone().step_by(64) {
                    let mut run = raster.covered_run(
                        origin.x + first as i32,
                        origin.y + j as i32,
                        (xs.end - first).min(64),
                        q,
                        r + inflation,
                    );
                    while run != 0 {
                        left[j * len + first + run.trailing_zeros() as usize] += 1;
                        run &= run - 1;
                    }
                }
            }
        }
        let own_reach = own.1 + inflation;
        let others_cover = |g: IVec2, j: usize, k: usize| {
            let covering = if alone {
                u16::from(raster.covers(g, own.0, own_reach))
            } else {
                left[j * len + k]
            };
            raster.count(g) > covering
        };
        // The usual case: the whole zone inside the grid and at most 64 cells wide (side ≤ 65),
        // one word of bits per row.
        let mut bits = [0u64; 64];
        let n = if len <= 64 && raster.covered_rows(origin, len, &mut bits[..len]) {
            let bits = &mut bits[..len];
            // Never the agent's own cell.
            bits[centre.1 - lo] &= !(1 << (centre.0 - lo));
            if !xs_all.is_empty() {
                let columns = (u64::MAX >> (64 - xs_all.len().min(64))) << xs_all.start.min(63);
                for j in ys_all {
                    // Only covered cells in the left-out discs' columns can be theirs alone.
                    let mut candidates = bits[j] & columns;
                    while candidates != 0 {
                        let k = candidates.trailing_zeros() as usize;
                        let g = origin + IVec2::new(k as i32, j as i32);
                        bits[j] &= !(u64::from(!others_cover(g, j, k)) << k);
                        candidates &= candidates - 1;
                    }
                }
            }
            self.field.set_obstacles_by_bit_rows(lo, lo, bits)
        } else {
            // Partly outside the grid, or a zone wider than 64 cells: cell by cell, 64 cells a
            // word.
            let mut n = 0;
            for j in 0..len {
                let y = lo + j;
                for first in (0..len).step_by(64) {
                    let mut bits = 0u64;
                    for k in first..len.min(first + 64) {
                        let g = origin + IVec2::new(k as i32, j as i32);
                        let stamp = (k + lo, y) != centre && others_cover(g, j, k);
                        bits |= u64::from(stamp) << (k - first);
                    }
                    n += self.field.set_obstacles_by_bits(lo + first, y, bits);
                }
            }
            n
        };
        self.left_out = left;
        n
    }

    /// Stamps a disc of radius `reach` around `centre` with centre coverage (a cell is covered
    /// when its centre lies in the disc) into the update zone, never the agent's own cell:
    /// the same cells as [`Self::stamp_obstacle`] with a [`Shape::Disc`] and
    /// [`Coverage::Centre`] (up to rounding at the rim: squared distances are compared),
    /// without building the shape's cell list.
    #[inline]
    pub(crate) fn stamp_disc(&mut self, centre: DVec2, radius: f64, inflation: f64) -> usize {
        let reach = radius + inflation;
        let g = *self.field.geometry();
        let (c, origin) = (g.cell_size(), g.origin());
        let span = c * self.settings.side as f64;
        // Most neighbours found by the spatial query lie beyond the window.
        if centre.x + reach < origin.x
            || centre.y + reach < origin.y
            || centre.x - reach > origin.x + span
            || centre.y - reach > origin.y + span
        {
            return 0;
        }
        let half = DVec2::splat(c * 0.5);
        let lo = g.world_to_cell(centre - DVec2::splat(reach) - half);
        let hi = g.world_to_cell(centre + DVec2::splat(reach) + half);
        let zone_lo = (1 + self.settings.free_zone) as i32;
        let zone_hi = (self.settings.side - 1 - self.settings.free_zone) as i32 - 1;
        let own = self.centre();
        let mut n = 0;
        let reach2 = reach * reach;
        for y in lo.y.max(zone_lo)..=hi.y.min(zone_hi) {
            // Cell centres as `GridGeometry::cell_centre` computes them.
            let dy = origin.y + (y as f64 + 0.5) * c - centre.y;
            let rest = reach2 - dy * dy;
            if rest < 0.0 {
                continue;
            }
            for x in lo.x.max(zone_lo)..=hi.x.min(zone_hi) {
                let dx = origin.x + (x as f64 + 0.5) * c - centre.x;
                let (x, y) = (x as usize, y as usize);
                if dx * dx <= rest && (x, y) != own {
                    let _ = self.field.set_obstacle(x, y);
                    n += 1;
                }
            }
        }
        n
    }

    /// Whether the map sees the whole window (no view cone).
    pub fn sees_all_around(&self) -> bool {
        self.settings.view_angle >= std::f64::consts::TAU
    }

    /// Frees the stamped update-zone cells whose direction from the window's centre lies
    /// outside the view cone around `axis` (digest 001 A2, T9): what the agent does not look at
    /// is not mapped. Does nothing with a full view or a zero axis; returns the cells freed.
    pub fn clear_outside_view(&mut self, axis: DVec2) -> usize {
        let Some(axis) = axis.try_normalize() else {
            return 0;
        };
        if self.sees_all_around() {
            return 0;
        }
        let cos_half = (self.settings.view_angle * 0.5).cos();
        let (cx, cy) = self.centre();
        let lo = 1 + self.settings.free_zone;
        let hi = self.settings.side - 1 - self.settings.free_zone;
        let init = self.settings.initial_value;
        let mut n = 0;
        for y in lo..hi {
            for x in lo..hi {
                if self.field.kind(x, y) != Some(CellKind::Obstacle) {
                    continue;
                }
                let d = DVec2::new(x as f64 - cx as f64, y as f64 - cy as f64);
                if d.normalize_or_zero().dot(axis) < cos_half {
                    let _ = self.field.set_free(x, y, init);
                    n += 1;
                }
            }
        }
        n
    }

    /// Sets the real goal's cells inside the window (border excluded) to 0.
    pub fn stamp_goal(&mut self, shape: &Shape) {
        let Ok(cells) = shape.cells(self.field.geometry(), 0.0, Coverage::Centre) else {
            return;
        };
        let n = self.settings.side;
        for (x, y) in cells {
            if x > 0
                && y > 0
                && x < n - 1
                && y < n - 1
                && self.field.kind(x, y) == Some(CellKind::Free)
            {
                let _ = self.field.set_goal(x, y);
            }
        }
    }

    /// Sets to 0 the free cells nearest to `target` among those the agent can reach from the
    /// window's centre cell through free interior cells and whose centre `allowed` accepts (a
    /// settling agent's goal, see [`ArrivalAction::Settle`](crate::ArrivalAction::Settle)):
    /// those within half a cell beyond the nearest one's distance. Agents standing round the
    /// target push the goal out to
    /// the nearest place still open; a pocket walled in by them is left out, since the agent
    /// could not walk into it. Where no reachable cell is allowed, the agent's own cell is the
    /// goal: it stays. Returns the cells set (none where its own cell is an obstacle).
    pub fn stamp_nearest_free(&mut self, target: DVec2, allowed: impl Fn(DVec2) -> bool) -> usize {
        let n = self.settings.side;
        let geometry = *self.field.geometry();
        let open = |field: &Field<f64>, x: usize, y: usize| {
            x > 0 && y > 0 && x < n - 1 && y < n - 1 && field.kind(x, y) == Some(CellKind::Free)
        };
        let (cx, cy) = self.centre();
        if !open(&self.field, cx, cy) {
            return 0;
        }
        // The interior cells reachable from the centre, 4-connected; those allowed are kept
        // with their distance to the target (the others are walked through all the same).
        let mut reached = vec![false; n * n];
        let mut todo = vec![(cx, cy)];
        let mut allowed_cells: Vec<(usize, usize, f64)> = Vec::new();
        while let Some((x, y)) = todo.pop() {
            if !open(&self.field, x, y) || std::mem::replace(&mut reached[y * n + x], true) {
                continue;
            }
            let centre = geometry.cell_centre(x, y);
            if allowed(centre) {
                allowed_cells.push((x, y, (centre - target).length()));
            }
            todo.extend([(x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)]);
        }
        let nearest = allowed_cells
            .iter()
            .map(|c| c.2)
            .fold(f64::INFINITY, f64::min);
        if !nearest.is_finite() {
            let _ = self.field.set_goal(cx, cy);
            return 1;
        }
        let reach = nearest + geometry.cell_size() * 0.5;
        let mut set = 0;
        for (x, y, d) in allowed_cells {
            if d <= reach && self.field.set_goal(x, y).is_ok() {
                set += 1;
            }
        }
        set
    }

    /// Whether `position` lies on one of the window's goal cells.
    pub fn is_goal_at(&self, position: DVec2) -> bool {
        let geometry = self.field.geometry();
        let cell = geometry.world_to_cell(position);
        geometry.contains_cell(cell)
            && self.field.kind(cell.x as usize, cell.y as usize) == Some(CellKind::Goal)
    }

    /// Sets the intermediate goal: the border cells nearest to where the ray from the centre
    /// along `direction` leaves the window. Returns the cells set (none for a zero direction).
    pub fn project_goal(&mut self, direction: DVec2) -> &[(usize, usize)] {
        self.goal.clear();
        self.ranked.clear();
        let Some(dir) = direction.try_normalize() else {
            return &self.goal;
        };
        let n = self.settings.side;
        let h = (n / 2) as f64;
        let exit = DVec2::splat(h) + dir * (h / dir.x.abs().max(dir.y.abs()));
        // The `goal_cells` border cells nearest to the exit, ties broken by (y, x): kept in a
        // small sorted list while walking the border near the exit (corners touch no interior
        // cell and never carry the goal). Squared distances are finite and not negative, so
        // their bits order as the numbers do.
        let k = self.settings.goal_cells.max(1);
        // The k nearest border cells lie within (k + 1) / 2 cells of the exit along each axis:
        // the exit is on the border, and a stretch of border k + 1 long around it holds k
        // cells, a corner cutting one side short and the next side making it up (checked for
        // sides 5 to 101 and 1 to 8 goal cells at 4,000 exits around the border each). Only
        // border cells in that box, with a cell of margin, are offered; the test
        // `the_intermediate_goal_equals_the_nearest_cells_of_the_whole_border` compares with
        // the whole border.
        let reach = (k + 1) as f64 / 2.0 + 1.0;
        let near = |v: usize, e: f64| (v as f64 - e).abs() <= reach;
        // The border indices `near` e (a cell wider either way, then tested, so rounding at the
        // ends cannot drop one).
        let span = move |e: f64| {
            // Ceil and floor by casts (`e` lies on the window's border, so in range).
            let from = (-floor_i32(-(e - reach - 1.0))).max(1) as usize;
            let to = floor_i32(e + reach + 1.0).clamp(0, n as i32 - 2) as usize;
            (from..to + 1).filter(move |&i| near(i, e))
        };
        let best = &mut self.ranked;
        let mut offer = |x: usize, y: usize| {
            let d = (DVec2::new(x as f64, y as f64) - exit).length_squared();
            let e = (u128::from(d.to_bits()) << 64) | ((y as u128) << 32) | x as u128;
            if best.len() == k {
                if e >= best[k - 1] {
                    return;
                }
                best.pop();
            }
            // Insertion into the sorted list.
            best.push(e);
            let mut at = best.len() - 1;
            while at > 0 && best[at - 1] > e {
                best[at] = best[at - 1];
                at -= 1;
            }
            best[at] = e;
        };
        for i in span(exit.x) {
            for y in [0, n - 1] {
                if near(y, exit.y) {
                    offer(i, y);
                }
            }
        }
        for i in span(exit.y) {
            for x in [0, n - 1] {
                if near(x, exit.x) {
                    offer(x, i);
                }
            }
        }
        for &e in &self.ranked {
            let (y, x) = ((e >> 32) as u32 as usize, e as u32 as usize);
            let _ = self.field.set_goal(x, y);
            self.goal.push((x, y));
        }
        &self.goal
    }

    /// `sweeps` lexicographic Gauss–Seidel sweeps with `bias`.
    pub fn relax(&mut self, bias: &Bias) {
        relax(
            &mut self.field,
            bias,
            &Relaxation::GAUSS_SEIDEL,
            self.settings.sweeps,
        );
    }

    /// Descent at a world point, interpolated between the cell centres around it that are not
    /// obstacles ([`Field::free_descent_at`]).
    pub fn descent_at(&self, position: DVec2) -> DVec2 {
        self.field.free_descent_at(position)
    }
}

/// The world-lattice cell of cell size `cell` holding `p`.
pub(crate) fn lattice_cell(p: DVec2, cell: f64) -> IVec2 {
    IVec2::new(floor_i32(p.x / cell), floor_i32(p.y / cell))
}

fn geometry(s: &LocalMapSettings, anchor: IVec2) -> Result<GridGeometry, SteerError> {
    let half = (s.side / 2) as i32;
    let origin = (anchor - IVec2::splat(half)).as_dvec2() * s.cell_size;
    Ok(GridGeometry::new(origin, s.cell_size, s.side, s.side)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The intermediate goal offered only border cells near the exit picks exactly the cells a
    /// walk over the whole border picks: the `goal_cells` nearest to the exit, ties by (y, x).
    #[test]
    fn the_intermediate_goal_equals_the_nearest_cells_of_the_whole_border() {
        for side in [5usize, 9, 15, 21, 35] {
            for goal_cells in [1usize, 2, 3, 5, 8] {
                let settings = LocalMapSettings {
                    side,
                    goal_cells,
                    ..Default::default()
                };
                let n = side;
                let h = (n / 2) as f64;
                let border: Vec<(usize, usize)> = (1..n - 1)
                    .flat_map(|i| [(i, 0), (i, n - 1), (0, i), (n - 1, i)])
                    .collect();
                for k in 0..720 {
                    let dir = DVec2::from_angle(k as f64 * std::f64::consts::TAU / 720.0 + 0.001);
                    let mut map = LocalMap::new(settings, DVec2::ZERO).unwrap();
                    let got = map.project_goal(dir);
                    let exit = DVec2::splat(h) + dir * (h / dir.x.abs().max(dir.y.abs()));
                    let mut all: Vec<(f64, usize, usize)> = border
                        .iter()
                        .map(|&(x, y)| {
                            (
                                (DVec2::new(x as f64, y as f64) - exit).length_squared(),
                                x,
                                y,
                            )
                        })
                        .collect();
                    all.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.2, a.1).cmp(&(b.2, b.1))));
                    let want: Vec<(usize, usize)> = all
                        .iter()
                        .take(goal_cells)
                        .map(|&(_, x, y)| (x, y))
                        .collect();
                    assert_eq!(
                        got, want,
                        "side {side}, {goal_cells} cells, direction {dir}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_agent_sits_in_the_centre_cell_and_the_window_moves_by_whole_cells() {
        let s = LocalMapSettings::default();
        let mut m = LocalMap::new(s, DVec2::new(3.2, -1.7)).unwrap();
        let c = m.field().geometry().world_to_cell(DVec2::new(3.2, -1.7));
        assert_eq!(c, IVec2::new(7, 7));
        m.field.potentials_mut()[7 * 15 + 8] = 0.123;
        m.recentre(DVec2::new(3.7, -1.7));
        assert_eq!(
            m.field().geometry().world_to_cell(DVec2::new(3.7, -1.7)),
            IVec2::new(7, 7)
        );
        assert_eq!(
            m.field().potential(7, 7),
            Some(0.123),
            "warm start carried the value"
        );
    }

    #[test]
    fn intermediate_goal_lies_on_the_ray_exit() {
        let mut m = LocalMap::new(LocalMapSettings::default(), DVec2::new(0.25, 0.25)).unwrap();
        m.recentre(DVec2::new(0.25, 0.25));
        let cells = m.project_goal(DVec2::X);
        assert_eq!(cells.len(), 3);
        assert!(
            cells.iter().all(|&(x, y)| x == 14 && (6..=8).contains(&y)),
            "{cells:?}"
        );
        m.recentre(DVec2::new(0.25, 0.25));
        let cells = m.project_goal(DVec2::new(-1.0, -1.0));
        assert!(cells.iter().all(|&(x, y)| x + y <= 2), "{cells:?}");
        // All other border cells stay 1.
        let n = 15;
        let goals = (0..n * n)
            .filter(|i| m.field().kinds()[*i] == CellKind::Goal)
            .count();
        assert_eq!(goals, 3);
    }

    /// A settling agent's goal is the nearest open place it can walk to: the target's own
    /// cell while open, a ring round a pocket that obstacles shut, the nearest cells allowed,
    /// its own cell when it is shut in itself or no cell is allowed.
    #[test]
    fn the_nearest_free_goal_leaves_out_what_the_agent_cannot_reach() {
        let at = DVec2::new(0.25, 0.25);
        let goals = |m: &LocalMap| -> Vec<(usize, usize)> {
            (0..15 * 15)
                .filter(|i| m.field().kinds()[*i] == CellKind::Goal)
                .map(|i| (i % 15, i / 15))
                .collect()
        };
        let mut m = LocalMap::new(LocalMapSettings::default(), at).unwrap();
        // Cell (11, 7)'s centre: the window's origin is at -3.5 m, its cells 0.5 m.
        let target = DVec2::new(2.25, 0.25);
        assert_eq!(m.stamp_nearest_free(target, |_| true), 1);
        assert_eq!(goals(&m), vec![(11, 7)]);
        assert!(m.is_goal_at(target) && !m.is_goal_at(at));
        // Shut the target's cell in: the goal is the nearest open cells round the ring.
        m.recentre(at);
        for (x, y) in (10..=12).flat_map(|x| (6..=8).map(move |y| (x, y))) {
            if (x, y) != (11, 7) {
                m.field_mut().set_obstacle(x, y).unwrap();
            }
        }
        let set = m.stamp_nearest_free(target, |_| true);
        let cells = goals(&m);
        assert_eq!(set, cells.len());
        assert!(!cells.contains(&(11, 7)), "the pocket");
        assert!(cells.contains(&(9, 7)) && cells.contains(&(11, 5)));
        for (x, y) in cells {
            let d = (m.field().geometry().cell_centre(x, y) - target).length();
            assert!(
                (1.0 - 1e-9..=1.25 + 1e-9).contains(&d),
                "({x}, {y}) at {d} m"
            );
        }
        // The agent shut in itself: the nearest place it can reach is where it stands.
        m.recentre(at);
        for (x, y) in [(6, 7), (8, 7), (7, 6), (7, 8)] {
            m.field_mut().set_obstacle(x, y).unwrap();
        }
        assert_eq!(m.stamp_nearest_free(target, |_| true), 1);
        assert_eq!(goals(&m), vec![(7, 7)]);
        assert!(m.is_goal_at(at));
        // Only cells west of x = 0 allowed: those of column x = -0.25 m within 2.75 m of it.
        m.recentre(at);
        m.stamp_nearest_free(target, |c| c.x < 0.0);
        assert_eq!(goals(&m), vec![(6, 5), (6, 6), (6, 7), (6, 8), (6, 9)]);
        // None allowed: it stays where it stands.
        m.recentre(at);
        assert_eq!(m.stamp_nearest_free(target, |_| false), 1);
        assert_eq!(goals(&m), vec![(7, 7)]);
        // Its own cell an obstacle (a neighbour's disc stamped over it): no goal at all.
        m.recentre(at);
        m.field_mut().set_obstacle(7, 7).unwrap();
        assert_eq!(m.stamp_nearest_free(target, |_| true), 0);
    }

    #[test]
    fn the_free_zone_is_never_stamped() {
        let mut m = LocalMap::new(LocalMapSettings::default(), DVec2::new(0.25, 0.25)).unwrap();
        m.recentre(DVec2::new(0.25, 0.25));
        // x = 3.05..3.45 m lies in local column 13 only (origin −3.5 m): the free ring.
        let wall = Shape::Aabb {
            min: DVec2::new(3.05, -5.0),
            max: DVec2::new(3.45, 5.0),
        };
        assert_eq!(m.stamp_obstacle(&wall, 0.0, Coverage::Touch), 0);
        assert_eq!(m.field().kind(13, 7), Some(CellKind::Free));
        assert_eq!(m.field().kind(12, 7), Some(CellKind::Free));
        let wall = Shape::Aabb {
            min: DVec2::new(2.05, -5.0),
            max: DVec2::new(2.45, 5.0),
        };
        m.stamp_obstacle(&wall, 0.0, Coverage::Touch);
        assert_eq!(m.field().kind(11, 7), Some(CellKind::Obstacle));
        assert_eq!(m.field().kind(11, 1), Some(CellKind::Free), "free ring row");
    }

    /// The fast stamping paths cover exactly the cells the general rasteriser covers.
    #[test]
    fn lattice_and_disc_stamps_match_shape_stamps() {
        let statics = vec![
            Shape::RotatedBox {
                centre: DVec2::new(1.3, 0.7),
                half_extents: DVec2::new(1.5, 0.2),
                angle: 0.6,
            },
            Shape::Disc {
                centre: DVec2::new(-1.9, -1.1),
                radius: 0.7,
            },
            Shape::Segment {
                a: DVec2::new(-3.0, 2.0),
                b: DVec2::new(0.5, 2.9),
                thickness: 0.1,
            },
        ];
        for coverage in [Coverage::Touch, Coverage::Centre] {
            let s = LocalMapSettings::default();
            let radius = 0.27;
            let raster = StaticRaster::build(
                &statics,
                s.cell_size,
                radius,
                coverage,
                DVec2::splat(-20.0),
                DVec2::splat(20.0),
            )
            .unwrap();
            for k in 0..40 {
                let pos = DVec2::new(-2.0 + 0.137 * k as f64, 1.5 - 0.091 * k as f64);
                let mut slow = LocalMap::new(s, pos).unwrap();
                let mut fast = slow.clone();
                for shape in &statics {
                    slow.stamp_obstacle(shape, radius, coverage);
                }
                fast.stamp_lattice(&raster);
                let other = pos + DVec2::new(0.9 - 0.05 * k as f64, 0.4);
                slow.stamp_obstacle(
                    &Shape::Disc {
                        centre: other,
                        radius: 0.3,
                    },
                    radius,
                    Coverage::Centre,
                );
                fast.stamp_disc(other, 0.3, radius);
                assert_eq!(
                    slow.field().kinds(),
                    fast.field().kinds(),
                    "position {pos}, {coverage:?}"
                );
            }
        }
    }

    /// A 1.6 m door for an agent of 0.5 m radius, 0.5 m cells: walls grown by the radius and
    /// stamped on every cell they touch leave no free cell in the doorway; stamped on the cells
    /// whose centre they cover, they leave the door two cells wide.
    #[test]
    fn centre_coverage_keeps_a_door_open_that_touch_closes() {
        // A wall along x = 0 (0.2 m thick), the door between y = −0.3 and 1.3.
        let walls = [
            Shape::Aabb {
                min: DVec2::new(-0.2, -9.0),
                max: DVec2::new(0.0, -0.3),
            },
            Shape::Aabb {
                min: DVec2::new(-0.2, 1.3),
                max: DVec2::new(0.0, 9.0),
            },
        ];
        let open = |coverage: Coverage| {
            let mut m =
                LocalMap::new(LocalMapSettings::default(), DVec2::new(-1.75, 0.25)).unwrap();
            for wall in &walls {
                m.stamp_obstacle(wall, 0.5, coverage);
            }
            // The window's column holding x ∈ [−0.5, 0), the doorway in the wall's middle,
            // over the update zone (rows 2 to 12; the free ring is never stamped).
            let x = m.field().geometry().world_to_cell(DVec2::new(-0.25, 0.0)).x as usize;
            (2..13)
                .filter(|&y| m.field().kind(x, y) == Some(CellKind::Free))
                .count()
        };
        assert_eq!(open(Coverage::Touch), 0);
        assert_eq!(open(Coverage::Centre), 2);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// Reading the other agents' discs out of a lattice count stamps exactly the cells that
        /// stamping each neighbour's disc does, the agent's own disc and the skipped ones left
        /// out (also when another agent stands on the same spot, skipped or not, and with an
        /// absent slot in the snapshot); with the static raster counted in, one read stamps
        /// what the two rasters stamp apart.
        #[test]
        fn raster_discs_stamp_what_disc_by_disc_stamping_does(
            placed in proptest::collection::vec(
                (-12.0f64..12.0, -12.0f64..12.0, 0.1f64..0.6),
                60..240,
            ),
            radius in 0.1f64..0.6,
            wide: bool,
            every in 1usize..6,
        ) {
            // Default windows (update zones of 11 cells, read a word per row where inside the
            // grid), or 81 cells wide (zones of 79, read cell by cell, two words a row).
            let s = LocalMapSettings {
                side: if wide { 81 } else { 15 },
                ..Default::default()
            };
            // The first 20 agents, whose windows are checked, carry the raster's radius.
            let mut discs: Vec<Option<(DVec2, f64)>> = placed
                .iter()
                .enumerate()
                .map(|(k, &(x, y, r))| Some((DVec2::new(x, y), if k < 20 { radius } else { r })))
                .collect();
            discs[1] = discs[0];
            discs[2] = None;
            let raster = DiscRaster::build(&discs, s.cell_size, radius, None, f64::INFINITY).unwrap();
            // Static shapes rasterised on the same lattice, and the discs counted over them.
            let statics = [
                Shape::Disc { centre: placed[3].0 * DVec2::X + placed[4].1 * DVec2::Y, radius: 1.3 },
                Shape::Aabb { min: DVec2::new(-4.0, -2.0), max: DVec2::new(-1.0, 3.0) },
            ];
            let lattice = StaticRaster::build(
                &statics,
                s.cell_size,
                radius,
                Coverage::Touch,
                DVec2::splat(-25.0),
                DVec2::splat(25.0),
            )
            .unwrap();
            // Kept as far round the discs as the crowd keeps it for these windows (a part of
            // the lattice's frame for the default windows, all of it for the wide ones).
            let window = s.width() * 0.5 * std::f64::consts::SQRT_2 + 2.0;
            let both = DiscRaster::build(&discs, s.cell_size, radius, Some(&lattice), window)
                .unwrap();
            proptest::prop_assert!(both.has_statics());
            for (i, disc) in discs.iter().enumerate().take(20) {
                let Some((pos, own)) = *disc else { continue };
                // A share of the other discs is skipped: none with `every` = 1, about one in
                // `every` otherwise (agent 1, on agent 0's spot, is skipped for some).
                let skips = |j: usize| every > 1 && j != i && (j + i).is_multiple_of(every);
                let skipped: Vec<(DVec2, f64)> = discs
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| skips(*j))
                    .filter_map(|(_, d)| *d)
                    .collect();
                let mut by_raster = LocalMap::new(s, pos).unwrap();
                let mut one_by_one = by_raster.clone();
                let mut in_one_read = by_raster.clone();
                by_raster.stamp_raster_discs(&raster, (pos, own), &skipped);
                in_one_read.stamp_raster_discs(&both, (pos, own), &skipped);
                let mut apart = by_raster.clone();
                apart.stamp_lattice(&lattice);
                proptest::prop_assert_eq!(
                    in_one_read.field().kinds(),
                    apart.field().kinds(),
                    "statics counted in, agent {} at {}",
                    i,
                    pos
                );
                for (q, r) in discs
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i && !skips(*j))
                    .filter_map(|(_, d)| *d)
                {
                    one_by_one.stamp_disc(q, r, radius);
                }
                proptest::prop_assert_eq!(
                    by_raster.field().kinds(),
                    one_by_one.field().kinds(),
                    "agent {} at {}",
                    i,
                    pos
                );
            }
        }
    }

    /// Discs with no finite centre, radius or reach count nowhere; a snapshot without any
    /// gives no raster, and the agents then stamp their neighbours one by one.
    #[test]
    fn bad_discs_are_left_out_of_the_raster() {
        let bad = [
            Some((DVec2::NAN, 0.3)),
            Some((DVec2::new(1.0, 1.0), f64::INFINITY)),
            Some((DVec2::new(1.0, 1.0), -5.0)),
            None,
        ];
        assert!(DiscRaster::build(&bad, 0.5, 0.25, None, f64::INFINITY).is_none());
        assert!(DiscRaster::build(&[], 0.5, 0.25, None, f64::INFINITY).is_none());
        let mut mixed = bad.to_vec();
        mixed.push(Some((DVec2::new(3.0, 3.0), 0.3)));
        let raster = DiscRaster::build(&mixed, 0.5, 0.25, None, f64::INFINITY).unwrap();
        let mut map = LocalMap::new(LocalMapSettings::default(), DVec2::new(1.0, 1.0)).unwrap();
        let mut alone = map.clone();
        map.stamp_raster_discs(&raster, (DVec2::new(1.0, 1.0), 0.25), &[]);
        alone.stamp_disc(DVec2::new(3.0, 3.0), 0.3, 0.25);
        assert_eq!(map.field().kinds(), alone.field().kinds());
    }

    /// A skipped disc wider than a word of cells (here 40 m across, in a window 81 cells wide
    /// read cell by cell) is taken out of the raster's counts over all its cells.
    #[test]
    fn a_skipped_disc_wider_than_64_cells_is_taken_out_whole() {
        let s = LocalMapSettings {
            side: 81,
            ..Default::default()
        };
        let (pos, own) = (DVec2::new(1.0, 1.0), 0.25);
        let wide = (DVec2::new(3.0, 2.0), 20.0);
        let discs = [Some((pos, own)), Some(wide)];
        let raster = DiscRaster::build(&discs, s.cell_size, own, None, f64::INFINITY).unwrap();
        let mut map = LocalMap::new(s, pos).unwrap();
        let untouched = map.clone();
        map.stamp_raster_discs(&raster, (pos, own), &[wide]);
        assert_eq!(map.field().kinds(), untouched.field().kinds());
    }

    /// A neighbour is left out only when it heads within 45° of the agent's way, wants to walk
    /// less than 90° from it, is at least 90 % as fast and has progressed within the last
    /// [`SAME_WAY_STALL`] planner steps; never with `All`.
    #[test]
    fn only_neighbours_walking_the_agents_way_are_left_out() {
        let way = DVec2::X;
        let turned = |deg: f64| DVec2::from_angle(deg.to_radians());
        let leaves = |heading: DVec2, wants: DVec2, pace: f64| {
            NeighbourStamping::ExceptSameWay.leaves_out(way, 0.35, heading, wants, pace, 0)
        };
        assert!(leaves(turned(44.0), turned(-80.0), 0.35 * 0.9));
        assert!(leaves(way, way, 1.0));
        // Headed too far off, or backing away (headed the agent's way, wanting the other).
        assert!(!leaves(turned(46.0), way, 0.35));
        assert!(!leaves(way, turned(91.0), 0.35));
        assert!(!leaves(way, -way, 0.35));
        // Slower: the agent overtakes it where it can.
        assert!(!leaves(way, way, 0.35 * 0.89));
        // Not moved yet, or no way of its own.
        assert!(!leaves(DVec2::ZERO, way, 0.35));
        let except = NeighbourStamping::ExceptSameWay;
        assert!(!except.leaves_out(DVec2::ZERO, 0.35, way, way, 0.35, 0));
        assert!(!NeighbourStamping::All.leaves_out(way, 0.35, way, way, 0.35, 0));
        // Held up too long: stamped again.
        assert!(except.leaves_out(way, 0.35, way, way, 0.35, SAME_WAY_STALL - 1));
        assert!(!except.leaves_out(way, 0.35, way, way, 0.35, SAME_WAY_STALL));
        assert_eq!(LocalMapSettings::default().neighbours, None);
        let default = LocalMapSettings::default();
        assert_eq!(
            default.neighbours_in(crate::Preset::Seeds),
            NeighbourStamping::All
        );
        assert_eq!(
            default.neighbours_in(crate::Preset::Flow),
            NeighbourStamping::ExceptSameWay
        );
    }

    #[test]
    fn bad_settings_are_rejected() {
        for side in [4, 14, 3, 103] {
            let s = LocalMapSettings {
                side,
                ..Default::default()
            };
            assert_eq!(
                LocalMap::new(s, DVec2::ZERO).err(),
                Some(SteerError::BadLocalMapSide(side))
            );
        }
        let s = LocalMapSettings {
            cell_size: 0.0,
            ..Default::default()
        };
        assert!(LocalMap::new(s, DVec2::ZERO).is_err());
        for (sweeps, ok) in [
            (0, true),
            (MAX_LOCAL_SWEEPS, true),
            (MAX_LOCAL_SWEEPS + 1, false),
        ] {
            let s = LocalMapSettings {
                sweeps,
                ..Default::default()
            };
            let want = if ok {
                Ok(())
            } else {
                Err(SteerError::TooManySweeps(sweeps))
            };
            assert_eq!(s.validate(), want, "{sweeps} sweeps");
        }
    }
}
