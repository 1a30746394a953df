//! Mode B: a stroke turned into a field whose descent follows it (digest 004 §4.2, seed 004
//! Section 5.1; docs/sketch.md states it in full).
//!
//! The stroke is sampled into an ordered chain of cells C = q_1 … q_|C|. The **tube** u is every
//! cell closer than ζ_w to a cell of C, ω the cells off it, and three constants
//! 0 < α < γ < β < 1 fill and mask the two stages:
//!
//! ```text
//! stage 1: u at α, q_|C| = 0 (the goal), ω fixed at γ        → relax over u only
//! stage 2: ω at β, u fixed at γ (γ < β: the tube draws)      → relax over ω only
//! field  = stage 1 on u, stage 2 on ω
//! ```
//!
//! Obstacle cells inside u are masked to γ in stage 1 and are obstacles (1) in stage 2. Both
//! stages are solved with the O(N) multigrid solver in f64 ([`MultigridSolver`]).
//!
//! # Precision and sub-goals (digest 004 §10)
//!
//! Along a thin tube the stage-1 potential falls off exponentially, with a decay length of
//! about the tube's width over π: γ − p drops by a factor e for every third of a tube width
//! walked back from the goal, and some tens of tube widths back it is below what f64 can tell
//! from γ. The field is flat there and its descent is rounding. So the chain is cut into
//! **segments**, built from the goal backwards: stage 1 is solved over a window of the chain,
//! the values along C are read back from the goal, and the segment ends (upstream) where the
//! field stops being strictly monotone along C or γ − p falls below
//! [`StrokeFieldSettings::precision`]. The segment before it ends a little inside it (its goal is
//! a **sub-goal**, Dapper's remedy), so a walker switching goals there stands where the next
//! segment's field is well resolved. Each segment is its own field; the orders layer
//! ([`crate::follow`]) hands a walker the segments as successive crowd goals.
//!
//! # Where the stroke crosses an obstacle
//!
//! The chain is split into **pieces** at cells an obstacle covers (and where it leaves the
//! world). Between two pieces a walker takes a **bridge**: a plain crowd goal at the start of
//! the next piece, whose global map leads round the obstacle. (The seed's groups were blocked
//! by an obstacle larger than their map, digest 004 §9; a bridge is ours.)
//!
//! # The two ways of joining (digest 004 §4.2)
//!
//! - [`Joining::NearestPoint`]: stage 2 masks the tube to γ, so from anywhere the descent leads
//!   to the nearest part of the curve and then along it. A walker off the curve starts on the
//!   segment nearest it, whose field is then built over a box holding the tube, the walkers
//!   joining there and 8 m round them, or the whole world when that box leaves a walker no way
//!   ([`StrokeField::join_field`]); later segments cover their tube and a margin only.
//! - [`Joining::WholeCurve`]: the walker first goes to the start. Its first goal is the
//!   **approach** field ([`StrokeField::approach_field`]): stage 2 with the cells within
//!   `start_radius` ([`StrokeFieldSettings`]) of q_1 as the goal and the rest of the tube at 1,
//!   the seed's mask ("the q_1 cells behave as obstacles" read as goals, since γ < β). A walker
//!   that stands inside the tube when ordered would stand on the mask: it walks the tube back
//!   to the start instead, on the fields of the reversed stroke (see [`crate::follow`]).

use std::time::{Duration, Instant};

use glam::{DVec2, IVec2};

use crowdfield_field::{
    Bias, CellKind, Coverage, Field, GridGeometry, MultigridSolver, MultigridWorkspace, Shape,
};

use crate::{SketchError, Stroke};

/// Tube cells (world grid indices) with their stage-1 values.
type TubeValues = Vec<(usize, f64)>;

/// A box of the world grid: `(x0, y0, width, height)` in cells.
type CellBox = (usize, usize, usize, usize);

/// Residual stage 1 is solved to, at least: a thousandth of the smallest γ − p kept along the
/// curve, so that the values the cut is made on are right to a part in a thousand.
const STAGE_ONE_TOLERANCE: f64 = 1e-3;

/// The finest residual stage 1 is solved to (f64 and the solver go no finer).
const STAGE_ONE_FINEST: f64 = 1e-14;

/// The widest tube, in cells of half width (a wider one costs the square of it in every chain
/// cell's stamp).
const MAX_TUBE_CELLS: f64 = 64.0;

/// Below this γ − p is rounding and solver residual, whatever precision is asked for: values
/// that close to γ are not told apart, and a turn among them is noise, not a corner.
pub const NOISE_FLOOR: f64 = 1e-11;

/// Residual a segment's local stage 2 is solved to (values between γ and 1, read for their
/// direction only).
const STAGE_TWO_TOLERANCE: f64 = 1e-6;

/// Residual a segment's whole-world field (for walkers joining there) is solved to: its descent
/// far from the stroke is some 10⁻³ a cell on a 256-cell world, well above it. (The approach
/// field leads round the whole tube to q_1, where it is much flatter: it keeps the finer
/// residual.)
const WHOLE_WORLD_TOLERANCE: f64 = 1e-5;

/// How a walker ordered onto a stroke joins it (digest 004 §4.2, Fig 5.5).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Joining {
    /// Head for the nearest point of the curve, then follow it to its end.
    #[default]
    NearestPoint,
    /// Go to the curve's start first, then walk all of it.
    WholeCurve,
}

/// Settings of a stroke field. The seed gives no values for α, γ, β or ζ_w (digest 004 §6);
/// the defaults are the digest's numerical check (α = 0.3, γ = 0.5, β = 0.9) and a tube a
/// walker and a neighbour can walk side by side in.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[cfg_attr(feature = "serde", serde(default))]
#[derive(Debug, Clone, PartialEq)]
pub struct StrokeFieldSettings {
    /// Cell size, metres.
    pub cell_size: f64,
    /// ζ_w: the tube is every cell whose centre is closer than this to a cell of the stroke,
    /// metres. Followers stay within it (digest 004 §12 test 8).
    pub tube_half_width: f64,
    /// α: tube cells' starting value in stage 1.
    pub alpha: f64,
    /// γ: the mask value (off-tube cells in stage 1, the tube in stage 2).
    pub gamma: f64,
    /// β: off-tube cells' starting value in stage 2.
    pub beta: f64,
    /// Whole-curve joining: tube cells within this of q_1 are the approach's goal, metres
    /// (0: the tube's half width).
    pub start_radius: f64,
    /// The smallest γ − p kept along the curve before the chain is cut into a sub-goal
    /// (see the module doc). The default, 10⁻⁶, keeps the descent along the curve above
    /// 10⁻⁷ a cell, ten times the crowd's flatness threshold
    /// ([`FLATNESS_THRESHOLD`](crowdfield_field::FLATNESS_THRESHOLD)) below which a walker
    /// would take the field for flat.
    pub precision: f64,
    /// Metres of field kept round a later segment's tube (walkers pushed off the tube by others
    /// find their way back within it).
    pub margin: f64,
    /// Metres of field kept round a joining field's tube and walkers (and the approach's):
    /// room for a detour round what stands between them.
    pub join_margin: f64,
    /// Obstacles are grown by this, metres (the walkers' radius).
    pub inflation: f64,
    /// ε of the field's (v, ε) (with ε > 0 paths bend towards +v, as everywhere in crowdfield).
    pub epsilon: f64,
    /// v of the field's (v, ε).
    pub behaviour_vector: DVec2,
    /// Arrival radius at the stroke's end, metres (0: the tube's half width, room for a few
    /// followers to stand at the end).
    pub goal_radius: f64,
}

impl Default for StrokeFieldSettings {
    fn default() -> Self {
        Self {
            cell_size: 0.25,
            tube_half_width: 1.0,
            alpha: 0.3,
            gamma: 0.5,
            beta: 0.9,
            start_radius: 0.0,
            precision: 1e-6,
            margin: 2.0,
            join_margin: 8.0,
            inflation: 0.25,
            epsilon: 0.0,
            behaviour_vector: DVec2::X,
            goal_radius: 0.0,
        }
    }
}

impl StrokeFieldSettings {
    /// Checks the settings; returns the field's bias.
    pub fn validate(&self) -> Result<Bias, SketchError> {
        let finite_positive = |v: f64| v.is_finite() && v > 0.0;
        if !finite_positive(self.cell_size) {
            return Err(SketchError::BadSetting("cell size must be finite and > 0"));
        }
        if !(self.tube_half_width.is_finite()
            && self.tube_half_width >= self.cell_size
            && self.tube_half_width <= MAX_TUBE_CELLS * self.cell_size)
        {
            return Err(SketchError::BadSetting(
                "the tube's half width must be between one and 64 cells",
            ));
        }
        if !(0.0 < self.alpha
            && self.alpha < self.gamma
            && self.gamma < self.beta
            && self.beta < 1.0)
        {
            return Err(SketchError::BadSetting("need 0 < α < γ < β < 1"));
        }
        for v in [
            self.start_radius,
            self.margin,
            self.inflation,
            self.goal_radius,
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(SketchError::BadSetting(
                    "radii, margin and inflation must be finite and ≥ 0",
                ));
            }
        }
        if !(self.precision > 0.0 && self.precision < 0.01) {
            return Err(SketchError::BadSetting("precision must be in (0, 0.01)"));
        }
        let v = self.behaviour_vector.try_normalize().unwrap_or(DVec2::X);
        Ok(Bias::new(self.epsilon, v)?)
    }

    fn start_radius_or_default(&self) -> f64 {
        if self.start_radius > 0.0 {
            self.start_radius
        } else {
            self.tube_half_width
        }
    }

    /// The arrival radius at the stroke's end.
    pub fn goal_radius(&self) -> f64 {
        if self.goal_radius > 0.0 {
            self.goal_radius
        } else {
            self.tube_half_width
        }
    }
}

/// What building a stroke field has cost: solves and the time spent in them (the rest of a
/// build, tracing the chain and filling the grids, is small beside them).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BuildStats {
    /// Stage-1 solves (one or more per segment).
    pub stage_one_solves: usize,
    /// Time in stage-1 solves.
    pub stage_one: Duration,
    /// Stage-2 solves (one per segment, one per whole-world field).
    pub stage_two_solves: usize,
    /// Time in stage-2 solves.
    pub stage_two: Duration,
}

/// One cell of the stroke's chain C.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainCell {
    /// The cell, in the world grid.
    pub cell: (usize, usize),
    /// Its centre, world metres.
    pub centre: DVec2,
    /// Arc length along the stroke where it was first reached, metres.
    pub along: f64,
}

/// A stretch of the chain with a field of its own, ending at a sub-goal or the stroke's end.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Index of its first chain cell (upstream end).
    pub first: usize,
    /// Index of its last chain cell: its goal.
    pub last: usize,
    /// The goal, world metres.
    pub end: DVec2,
    /// The field over the segment's tube and [`StrokeFieldSettings::margin`]: stage 1 on the
    /// tube, stage 2 round it, obstacles and the box's border at 1, the goal cell at 0.
    pub field: Field<f64>,
    /// The tube's cells (world grid indices) and their stage-1 values.
    tube: TubeValues,
    /// The same field over a larger box (see [`StrokeField::join_field`]), built on demand for
    /// walkers joining here, with the box.
    join: Option<(CellBox, Field<f64>)>,
}

impl Segment {
    /// Stage-1 potentials along the segment's chain cells, goal last (for checks and plots).
    pub fn chain_values(&self, chain: &[ChainCell]) -> Vec<f64> {
        chain[self.first..=self.last]
            .iter()
            .map(|c| {
                self.field
                    .potential_at(c.centre)
                    .expect("chain cells lie in their segment's field")
            })
            .collect()
    }
}

/// What a walker does between two parts of its way along a stroke.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leg {
    /// Descend segment `k`'s field to its goal.
    Segment(usize),
    /// Walk to the start of the next piece on the crowd's own global map (round an obstacle
    /// that cuts the stroke, or back into the world).
    Bridge(DVec2),
}

/// A stroke's Mode B field: its chain, its segments and the legs a walker takes, with the
/// whole-world fields built on demand (see the module doc).
#[derive(Debug, Clone)]
pub struct StrokeField {
    settings: StrokeFieldSettings,
    bias: Bias,
    geometry: GridGeometry,
    /// World-grid cells a walker cannot stand in (grown obstacles; the border ring).
    blocked: Vec<bool>,
    chain: Vec<ChainCell>,
    /// Chain index ranges of the pieces (inclusive).
    pieces: Vec<(usize, usize)>,
    segments: Vec<Segment>,
    legs: Vec<Leg>,
    approach: Option<(CellBox, Field<f64>)>,
    /// What building it has cost so far.
    stats: BuildStats,
    /// Scratch marks over the world grid.
    marks: Marks,
    /// Where the build goes on: `None` once every segment is built.
    cursor: Option<Cursor>,
}

/// Where an unfinished build goes on: the piece, the chain cell the next segment starts at and
/// the reach learnt so far.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    piece: usize,
    first: usize,
    reach: usize,
}

/// Scratch marks over the world grid, cleared by generation.
#[derive(Debug, Clone, Default)]
struct Marks {
    stamp: Vec<u32>,
    generation: u32,
}

impl Marks {
    fn new(len: usize) -> Self {
        Self {
            stamp: vec![0; len],
            generation: 0,
        }
    }

    fn next(&mut self) -> u32 {
        self.generation += 1;
        self.generation
    }
}

impl StrokeField {
    /// Builds the field of `stroke` in the world `[min, max]` with static `obstacles`: chain,
    /// pieces, every segment (stage 1 and the local stage 2 of each), legs. Whole-world fields
    /// for joining walkers are built when first asked for.
    pub fn build(
        stroke: &Stroke,
        world: (DVec2, DVec2),
        obstacles: &[Shape],
        settings: StrokeFieldSettings,
    ) -> Result<Self, SketchError> {
        let mut field = Self::begin(stroke, world, obstacles, settings)?;
        field.advance(Duration::MAX)?;
        Ok(field)
    }

    /// Begins the field of `stroke` as [`StrokeField::build`] does, but builds only the first
    /// segment: enough for walkers near the stroke's start to set off. [`StrokeField::advance`]
    /// builds the rest (over later frames: long strokes are time-sliced this way).
    pub fn begin(
        stroke: &Stroke,
        (min, max): (DVec2, DVec2),
        obstacles: &[Shape],
        settings: StrokeFieldSettings,
    ) -> Result<Self, SketchError> {
        let bias = settings.validate()?;
        if stroke.is_empty() {
            return Err(SketchError::EmptyStroke);
        }
        let geometry = GridGeometry::covering(min, max, settings.cell_size)?;
        let mut blocked = vec![false; geometry.len()];
        for y in 0..geometry.height() {
            for x in 0..geometry.width() {
                blocked[geometry.index(x, y)] = geometry.is_border(x, y);
            }
        }
        for shape in obstacles {
            for (x, y) in shape.cells(&geometry, settings.inflation, Coverage::Touch)? {
                blocked[geometry.index(x, y)] = true;
            }
        }
        Self::on_ground(stroke, geometry, blocked, settings, bias)
    }

    /// The field of another stroke over the same world and obstacles (a reversed stroke, a
    /// redrawn one).
    pub fn for_stroke(&self, stroke: &Stroke) -> Result<Self, SketchError> {
        if stroke.is_empty() {
            return Err(SketchError::EmptyStroke);
        }
        let mut field = Self::on_ground(
            stroke,
            self.geometry,
            self.blocked.clone(),
            self.settings.clone(),
            self.bias,
        )?;
        field.advance(Duration::MAX)?;
        Ok(field)
    }

    fn on_ground(
        stroke: &Stroke,
        geometry: GridGeometry,
        blocked: Vec<bool>,
        settings: StrokeFieldSettings,
        bias: Bias,
    ) -> Result<Self, SketchError> {
        let mut field = Self {
            settings,
            bias,
            geometry,
            blocked,
            chain: Vec::new(),
            pieces: Vec::new(),
            segments: Vec::new(),
            legs: Vec::new(),
            approach: None,
            stats: BuildStats::default(),
            marks: Marks::new(0),
            cursor: None,
        };
        field.marks = Marks::new(field.geometry.len());
        field.trace(stroke)?;
        field.cursor = Some(Cursor {
            piece: 0,
            first: field.pieces[0].0,
            reach: field.expected_reach(),
        });
        field.next_segment(&mut MultigridWorkspace::new())?;
        Ok(field)
    }

    /// Builds more of a field begun with [`StrokeField::begin`]: a segment at least, more while
    /// `budget` lasts. Returns whether the field is complete. Walkers on the segments built so
    /// far are not disturbed: segments are only added.
    pub fn advance(&mut self, budget: Duration) -> Result<bool, SketchError> {
        let start = Instant::now();
        let mut ws = MultigridWorkspace::new();
        while self.cursor.is_some() {
            self.next_segment(&mut ws)?;
            if start.elapsed() >= budget {
                break;
            }
        }
        Ok(self.cursor.is_none())
    }

    /// Whether every segment is built.
    pub fn is_complete(&self) -> bool {
        self.cursor.is_none()
    }

    /// The settings it was built with.
    pub fn settings(&self) -> &StrokeFieldSettings {
        &self.settings
    }

    /// The world grid.
    pub fn geometry(&self) -> &GridGeometry {
        &self.geometry
    }

    /// The chain of cells C, in stroke order, on walkable ground only.
    pub fn chain(&self) -> &[ChainCell] {
        &self.chain
    }

    /// The pieces: inclusive chain index ranges the stroke is cut into by obstacles.
    pub fn pieces(&self) -> &[(usize, usize)] {
        &self.pieces
    }

    /// The segments, upstream first.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The legs of the whole way, start to end.
    pub fn legs(&self) -> &[Leg] {
        &self.legs
    }

    /// Multigrid solves run so far (build and on demand).
    pub fn solves(&self) -> usize {
        self.stats.stage_one_solves + self.stats.stage_two_solves
    }

    /// What building it has cost so far (build and on demand).
    pub fn stats(&self) -> &BuildStats {
        &self.stats
    }

    /// The end of the stroke's walkable part (known from [`StrokeField::begin`] on).
    pub fn end(&self) -> DVec2 {
        self.chain.last().expect("built with a chain").centre
    }

    /// The start of the stroke's walkable part (q_1).
    pub fn start(&self) -> DVec2 {
        self.chain[0].centre
    }

    /// Whether `p` lies in the tube of the stroke (closer than ζ_w to a chain cell).
    pub fn in_tube(&self, p: DVec2) -> bool {
        self.nearest_chain(p)
            .is_some_and(|(_, d)| d < self.settings.tube_half_width)
    }

    /// The chain cell nearest `p` and its distance.
    pub fn nearest_chain(&self, p: DVec2) -> Option<(usize, f64)> {
        self.chain
            .iter()
            .enumerate()
            .map(|(k, c)| (k, c.centre.distance(p)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The segment whose chain holds cell `k` (the last such: the one nearer the goal).
    pub fn segment_of(&self, k: usize) -> Option<usize> {
        self.segments
            .iter()
            .rposition(|s| s.first <= k && k <= s.last)
    }

    /// Segment `k`'s field over a box holding its tube, the points `around` (the walkers that
    /// join the stroke there) and [`StrokeFieldSettings::join_margin`] round them: stage 2 over
    /// all of it, so that from anywhere in the box the descent leads to the tube. Built on first
    /// use and grown when later walkers stand outside it; over the whole world when a walker
    /// finds no way to the tube inside the box (a large obstacle in the way).
    pub fn join_field(&mut self, k: usize, around: &[DVec2]) -> Result<&Field<f64>, SketchError> {
        if k >= self.segments.len() {
            return Err(SketchError::BadSetting("no such segment"));
        }
        let tube = std::mem::take(&mut self.segments[k].tube);
        let cells: Vec<usize> = tube.iter().map(|t| t.0).collect();
        let needed = self.bounds_around(&cells, around);
        let held = self.segments[k].join.as_ref().map(|(b, _)| *b);
        if held.is_none_or(|b| !box_holds(b, needed)) {
            let bounds = held.map_or(needed, |b| box_union(b, needed));
            let goal = self.chain[self.segments[k].last].cell;
            let mut ws = MultigridWorkspace::new();
            let built = self.stage_two(&tube, goal, bounds, &mut ws).and_then(|f| {
                if self.is_whole(bounds) || around.iter().all(|p| leads_somewhere(&f, *p)) {
                    Ok((bounds, f))
                } else {
                    let whole = self.whole();
                    self.stage_two(&tube, goal, whole, &mut ws)
                        .map(|f| (whole, f))
                }
            });
            match built {
                Ok(j) => self.segments[k].join = Some(j),
                Err(e) => {
                    self.segments[k].tube = tube;
                    return Err(e);
                }
            }
        }
        self.segments[k].tube = tube;
        Ok(&self.segments[k].join.as_ref().expect("just built").1)
    }

    /// The whole-curve approach field: goal cells within the start radius of q_1, the rest of
    /// the first piece's tube at 1, harmonic (with the field's bias) elsewhere, over a box
    /// holding the tube, the points `around` and the join margin (the whole world when a point
    /// finds no way inside it). Built on first use, grown as [`Self::join_field`] is.
    pub fn approach_field(&mut self, around: &[DVec2]) -> Result<&Field<f64>, SketchError> {
        let piece = self.pieces[0];
        let mut marks = std::mem::take(&mut self.marks);
        let tube = self.tube(piece.0, piece.1, &mut marks);
        self.marks = marks;
        let needed = self.bounds_around(&tube, around);
        let held = self.approach.as_ref().map(|(b, _)| *b);
        if held.is_none_or(|b| !box_holds(b, needed)) {
            let bounds = held.map_or(needed, |b| box_union(b, needed));
            let mut f = self.approach_in(&tube, bounds)?;
            if !self.is_whole(bounds) && !around.iter().all(|p| leads_somewhere(&f, *p)) {
                let whole = self.whole();
                f = self.approach_in(&tube, whole)?;
                self.approach = Some((whole, f));
            } else {
                self.approach = Some((bounds, f));
            }
        }
        Ok(&self.approach.as_ref().expect("just built").1)
    }

    fn approach_in(&mut self, tube: &[usize], bounds: CellBox) -> Result<Field<f64>, SketchError> {
        let (x0, y0, w, h) = bounds;
        let gw = self.geometry.width();
        let mut f = Field::new(self.sub_geometry(bounds), self.settings.beta);
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                if self.blocked[(y + y0) * gw + x + x0] {
                    f.set_obstacle(x, y)?;
                }
            }
        }
        let start = self.start();
        let radius = self.settings.start_radius_or_default();
        let mut goals = 0;
        for &i in tube {
            let (x, y) = (i % gw, i / gw);
            if x <= x0 || y <= y0 || x >= x0 + w - 1 || y >= y0 + h - 1 {
                continue;
            }
            if self.geometry.cell_centre(x, y).distance(start) <= radius {
                f.set_goal(x - x0, y - y0)?;
                goals += 1;
            } else {
                f.set_obstacle(x - x0, y - y0)?;
            }
        }
        if goals == 0 {
            let (x, y) = self.chain[0].cell;
            f.set_goal(x - x0, y - y0)?;
        }
        let t = Instant::now();
        MultigridSolver::new().solve(&mut f, &self.bias, STAGE_TWO_TOLERANCE)?;
        self.stats.stage_two += t.elapsed();
        self.stats.stage_two_solves += 1;
        clamp_unit(&mut f);
        Ok(f)
    }

    /// The world-grid box holding `cells`, the cells of `points` and the join margin.
    fn bounds_around(&self, cells: &[usize], points: &[DVec2]) -> CellBox {
        let g = self.geometry;
        let mut all: Vec<usize> = cells.to_vec();
        for p in points {
            let c = g.world_to_cell(*p);
            let x = (c.x.max(0) as usize).min(g.width() - 1);
            let y = (c.y.max(0) as usize).min(g.height() - 1);
            all.push(g.index(x, y));
        }
        let grow = (self.settings.join_margin / self.settings.cell_size).ceil() as usize + 1;
        self.bounding(&all, grow)
    }

    /// The whole world grid as a box.
    fn whole(&self) -> CellBox {
        (0, 0, self.geometry.width(), self.geometry.height())
    }

    fn is_whole(&self, b: CellBox) -> bool {
        b == self.whole()
    }

    /// Samples the stroke into the chain and cuts it into pieces.
    fn trace(&mut self, stroke: &Stroke) -> Result<(), SketchError> {
        let samples = stroke
            .simplified(self.settings.cell_size * 0.5)
            .rounded(self.settings.tube_half_width)
            .resampled(self.settings.cell_size * 0.5)?;
        let g = self.geometry;
        let mut along = 0.0;
        let mut last: Option<DVec2> = None;
        let mut previous: Option<(usize, usize)> = None;
        let mut open = false;
        for p in samples.points() {
            if let Some(q) = last {
                along += q.distance(p.position);
            }
            last = Some(p.position);
            let c: IVec2 = g.world_to_cell(p.position);
            let inside = g.contains_cell(c);
            let cell = (c.x.max(0) as usize, c.y.max(0) as usize);
            if !inside || self.blocked[g.index(cell.0, cell.1)] {
                open = false;
                previous = None;
                continue;
            }
            if previous == Some(cell) {
                continue;
            }
            if !open {
                self.pieces.push((self.chain.len(), self.chain.len()));
                open = true;
            }
            // A sample on a cell boundary may step into the next row and back: drop a cell
            // the chain can go round (the new cell touches the one before it), so the chain
            // never doubles back.
            let piece_start = self.pieces.last().expect("opened").0;
            while self.chain.len() >= piece_start + 2 {
                let before = self.chain[self.chain.len() - 2].cell;
                let touches = before.0.abs_diff(cell.0) <= 1 && before.1.abs_diff(cell.1) <= 1;
                if !touches {
                    break;
                }
                self.chain.pop();
            }
            self.chain.push(ChainCell {
                cell,
                centre: g.cell_centre(cell.0, cell.1),
                along,
            });
            self.pieces.last_mut().expect("opened").1 = self.chain.len() - 1;
            previous = Some(cell);
        }
        if self.chain.is_empty() {
            return Err(SketchError::NothingWalkable);
        }
        Ok(())
    }

    /// World-grid indices of the free cells closer than ζ_w to chain cells `first..=last`.
    fn tube(&self, first: usize, last: usize, marks: &mut Marks) -> Vec<usize> {
        let g = self.geometry;
        let r = self.settings.tube_half_width / self.settings.cell_size;
        let reach = r.ceil() as i64;
        let generation = marks.next();
        let mut out = Vec::new();
        for c in &self.chain[first..=last] {
            let (cx, cy) = (c.cell.0 as i64, c.cell.1 as i64);
            for dy in -reach..=reach {
                for dx in -reach..=reach {
                    if ((dx * dx + dy * dy) as f64) >= r * r {
                        continue;
                    }
                    let (x, y) = (cx + dx, cy + dy);
                    if x < 0 || y < 0 || x >= g.width() as i64 || y >= g.height() as i64 {
                        continue;
                    }
                    let i = g.index(x as usize, y as usize);
                    if marks.stamp[i] != generation && !self.blocked[i] {
                        marks.stamp[i] = generation;
                        out.push(i);
                    }
                }
            }
        }
        out
    }

    /// The box `(x0, y0, w, h)` round `cells` grown by `grow` cells, inside the world grid.
    fn bounding(&self, cells: &[usize], grow: usize) -> CellBox {
        let g = self.geometry;
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        for &i in cells {
            let (x, y) = (i % g.width(), i / g.width());
            (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
        }
        let x0 = x0.saturating_sub(grow);
        let y0 = y0.saturating_sub(grow);
        let x1 = (x1 + grow).min(g.width() - 1);
        let y1 = (y1 + grow).min(g.height() - 1);
        (x0, y0, (x1 - x0 + 1).max(3), (y1 - y0 + 1).max(3))
    }

    fn sub_geometry(&self, (x0, y0, w, h): CellBox) -> GridGeometry {
        let g = self.geometry;
        GridGeometry::new(
            g.origin() + DVec2::new(x0 as f64, y0 as f64) * g.cell_size(),
            g.cell_size(),
            w,
            h,
        )
        .expect("a box of the world grid is a valid grid")
    }

    /// Stage 1 over the tube of chain cells `first..=last`, goal at `last`: the tube's cells
    /// with their values, and the values along the chain.
    fn stage_one(
        &mut self,
        first: usize,
        last: usize,
        ws: &mut MultigridWorkspace,
    ) -> Result<(TubeValues, Vec<f64>), SketchError> {
        let s = &self.settings;
        let mut marks = std::mem::take(&mut self.marks);
        let tube = self.tube(first, last, &mut marks);
        self.marks = marks;
        let bounds = self.bounding(&tube, 1);
        let (x0, y0, w, h) = bounds;
        let mut f = Field::new(self.sub_geometry(bounds), s.gamma);
        for y in 0..h {
            for x in 0..w {
                f.set_fixed(x, y, s.gamma)?;
            }
        }
        let gw = self.geometry.width();
        let local = |i: usize| (i % gw - x0, i / gw - y0);
        for &i in &tube {
            let (x, y) = local(i);
            if x > 0 && y > 0 && x < w - 1 && y < h - 1 {
                f.set_free(x, y, s.alpha)?;
            }
        }
        let goal = self.chain[last].cell;
        f.set_goal(goal.0 - x0, goal.1 - y0)?;
        let tolerance = (self.settings.precision * STAGE_ONE_TOLERANCE).max(STAGE_ONE_FINEST);
        let t = Instant::now();
        MultigridSolver::new().solve_with(ws, &mut f, &self.bias, tolerance)?;
        self.stats.stage_one += t.elapsed();
        self.stats.stage_one_solves += 1;
        let values = tube
            .iter()
            .map(|&i| {
                let (x, y) = local(i);
                (i, f.potential(x, y).expect("inside the box"))
            })
            .collect();
        let along = self.chain[first..=last]
            .iter()
            .map(|c| f.potential(c.cell.0 - x0, c.cell.1 - y0).expect("inside"))
            .collect();
        Ok((values, along))
    }

    /// The lowest chain index from which the values `along` (chain cells `first..`, goal last)
    /// stay strictly monotone and resolved, and whether what stopped them there was precision
    /// (rather than a turn of the values).
    fn resolved_from(&self, first: usize, along: &[f64]) -> (usize, bool) {
        let gamma = self.settings.gamma;
        let mut k = along.len() - 1;
        while k > 0 {
            let (v, next) = (along[k - 1], along[k]);
            if gamma - v <= self.settings.precision.max(NOISE_FLOOR) {
                return (first + k, true);
            }
            if v <= next {
                return (first + k, false);
            }
            k -= 1;
        }
        (first, false)
    }

    /// How far one field is expected to reach along the chain before γ − p falls below the
    /// precision: the decay length is about the tube's width over π (module doc).
    fn expected_reach(&self) -> usize {
        let cells_per_width =
            (2.0 * self.settings.tube_half_width / self.settings.cell_size).max(1.0);
        ((cells_per_width / std::f64::consts::PI)
            * (self.settings.gamma / self.settings.precision).ln())
        .ceil() as usize
            + 2
    }

    /// Builds the next segment at the cursor (and the bridge before it when it starts a piece
    /// after the first) and moves the cursor on.
    fn next_segment(&mut self, ws: &mut MultigridWorkspace) -> Result<(), SketchError> {
        let Some(Cursor {
            piece,
            first,
            mut reach,
        }) = self.cursor
        else {
            return Ok(());
        };
        let (p0, p1) = self.pieces[piece];
        if first == p0 && piece > 0 {
            self.legs.push(Leg::Bridge(self.chain[p0].centre));
        }
        let overlap = (self.settings.tube_half_width / self.settings.cell_size).ceil() as usize + 1;
        let mut last = (first + reach).min(p1);
        // The goal moves back until the values are resolved and monotone all the way to
        // `first`.
        let mut turned = false;
        // The goals tried: a goal tried twice would repeat the search without end (the field
        // fuzz target found a stroke whose one-cell segment never resolved under a strong
        // bias, and the build never returned).
        let mut tried: Vec<usize> = Vec::new();
        let tube = loop {
            if tried.contains(&last) {
                return Err(SketchError::BadSetting(
                    "the stroke's field cannot be resolved along it with these settings \
                     (a smaller ε or a wider tube may)",
                ));
            }
            tried.push(last);
            let (tube, along) = self.stage_one(first, last, ws)?;
            let (resolved, lost) = self.resolved_from(first, &along);
            if resolved == first {
                break tube;
            }
            if lost {
                // Resolved over `last - resolved` cells: that long, from `first`.
                let good = (last - resolved).max(1);
                reach = good;
                last = first + good;
                turned = false;
            } else {
                // The values turned at `resolved` (a corner sharper than the tube, a stroke
                // that comes back near itself): the goal goes just before the turn.
                last = (resolved - 1).min(last - 1).max(first + 1);
                turned = true;
            }
            last = last.min(p1);
        };
        let grow = (self.settings.margin / self.settings.cell_size).ceil() as usize + 1;
        let cells: Vec<usize> = tube.iter().map(|t| t.0).collect();
        let bounds = self.bounding(&cells, grow);
        let field = self.stage_two(&tube, self.chain[last].cell, bounds, ws)?;
        let k = self.segments.len();
        self.segments.push(Segment {
            first,
            last,
            end: self.chain[last].centre,
            field,
            tube,
            join: None,
        });
        self.legs.push(Leg::Segment(k));
        self.cursor = if last < p1 {
            // After a turn the next segment starts at this one's goal; where precision ran out
            // it starts a little before it, so that the walker switching there stands well
            // inside the next segment's tube.
            let next = if turned {
                last
            } else {
                last.saturating_sub(overlap).max(first + 1)
            };
            Some(Cursor {
                piece,
                first: next,
                reach,
            })
        } else if piece + 1 < self.pieces.len() {
            Some(Cursor {
                piece: piece + 1,
                first: self.pieces[piece + 1].0,
                reach: self.expected_reach(),
            })
        } else {
            None
        };
        Ok(())
    }

    /// Stage 2 for segment `k` over the world-grid box `bounds`, merged with its stage 1.
    fn stage_two(
        &mut self,
        tube: &[(usize, f64)],
        goal: (usize, usize),
        bounds: CellBox,
        ws: &mut MultigridWorkspace,
    ) -> Result<Field<f64>, SketchError> {
        let s = &self.settings;
        let (x0, y0, w, h) = bounds;
        let gw = self.geometry.width();
        let mut f = Field::new(self.sub_geometry(bounds), s.beta);
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                if self.blocked[(y + y0) * gw + x + x0] {
                    f.set_obstacle(x, y)?;
                }
            }
        }
        let inside = |i: usize| -> Option<(usize, usize)> {
            let (x, y) = (i % gw, i / gw);
            (x > x0 && y > y0 && x < x0 + w - 1 && y < y0 + h - 1).then(|| (x - x0, y - y0))
        };
        for &(i, _) in tube {
            if let Some((x, y)) = inside(i) {
                f.set_fixed(x, y, s.gamma)?;
            }
        }
        let whole = (w, h) == (self.geometry.width(), self.geometry.height());
        let tolerance = if whole {
            WHOLE_WORLD_TOLERANCE
        } else {
            STAGE_TWO_TOLERANCE
        };
        let t = Instant::now();
        MultigridSolver::new().solve_with(ws, &mut f, &self.bias, tolerance)?;
        self.stats.stage_two += t.elapsed();
        self.stats.stage_two_solves += 1;
        clamp_unit(&mut f);
        for &(i, v) in tube {
            if let Some((x, y)) = inside(i) {
                f.set_free(x, y, v)?;
            }
        }
        f.set_goal(goal.0 - x0, goal.1 - y0)?;
        debug_assert!(f.kinds().iter().all(|k| *k != CellKind::Fixed));
        Ok(f)
    }
}

/// Keeps a solved field's potentials in [0, 1] (a solve stops at a residual, and rounding can
/// leave a free cell a hair above 1 next to obstacles).
fn clamp_unit(field: &mut Field<f64>) {
    for p in field.potentials_mut() {
        *p = p.clamp(0.0, 1.0);
    }
}

/// Whether box `outer` holds box `inner` (boxes as `(x0, y0, w, h)`).
fn box_holds(outer: CellBox, inner: CellBox) -> bool {
    outer.0 <= inner.0
        && outer.1 <= inner.1
        && outer.0 + outer.2 >= inner.0 + inner.2
        && outer.1 + outer.3 >= inner.1 + inner.3
}

/// The smallest box holding both.
fn box_union(a: CellBox, b: CellBox) -> CellBox {
    let (x0, y0) = (a.0.min(b.0), a.1.min(b.1));
    let (x1, y1) = ((a.0 + a.2).max(b.0 + b.2), (a.1 + a.3).max(b.1 + b.3));
    (x0, y0, x1 - x0, y1 - y0)
}

/// Whether a walker at `p` finds a descent in `field` (it is inside the field, and not in a
/// part of it that no goal cell reaches, where everything stands at 1).
fn leads_somewhere(field: &Field<f64>, p: DVec2) -> bool {
    field.potential_at(p).is_some_and(|v| v < 1.0 - 1e-9)
}
