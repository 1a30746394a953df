//! The group map: one moving grid per group (seed 004 §5.2.2–§5.2.3, digest 004 §5.2 and §5.3).
//!
//! A `side × side` grid of square cells centred on the group's anchor, on a world lattice
//! (cell k covers `[k·c, (k + 1)·c)`) so that it moves by whole cells and keeps its potentials
//! from step to step (warm start, digest 004 §3.1). Its cells hold the potential of
//!
//! ```text
//! ∇²p + ε v·∇p = 0      border and obstacles p = 1, intermediate goal p = 0
//! ```
//!
//! with the group's own (v, ε), relaxed by lexicographic Gauss–Seidel. Each step:
//!
//! 1. **Re-centre** on the anchor: potentials carried, every interior cell free, cells that
//!    were stamped restart from the initial value (≈ 0.9, digest 004 §3.1).
//! 2. **Stamp** static and moving obstacles grown by the members' radius, and every agent that is
//!    not a member (other groups' members, individual walkers) as a disc of the summed radii.
//! 3. **Project the intermediate goal** on the border: the border cells nearest to where the
//!    ray from the centre along the group's guidance leaves the map. Where none of them opens
//!    onto a free cell the members can walk to (an obstacle larger than the map lies across
//!    the way), the goal slides along the border to the nearest cells that do, and the whole
//!    group goes round the obstacle (seed 004 §5.10; Algorithm 3: "on the border, or on the nearest free cells").
//!    Where no border cell opens at all, it is searched inwards along the ray, against the
//!    guidance, and set on the first free cell met and its free neighbours (the seed's
//!    "propagation in the direction opposite to the goal direction").
//! 4. **Measure clearance**: the ring (Chebyshev) distance of every cell from the nearest
//!    obstacle cell or the border, which gives the bands B_i (cells i rings away).
//! 5. **Stamp the members**, each as its one cell at 1 (its eight neighbours are then in
//!    B_1); the potential under it is kept to restore when it leaves.
//! 6. **Relax** (batched across groups, see [`crate::Groups`]).
//!
//! While members decide one after the other (Algorithm 3, lines 26–31), each frees its own
//! cell, reads the descent there, and is stamped again where it will stand; the cells it left
//! get their potential back and a few Gauss–Seidel sweeps smooth a small window around both
//! ([`GroupMap::move_member`]), instead of a full relaxation.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use glam::{DVec2, IVec2};

use crowdfield_field::{Bias, CellKind, Coverage, Field, GridGeometry, Shape, floor_i32};

use crate::GroupError;

/// The eight neighbours of a cell.
const NEIGHBOURS: [(isize, isize); 8] = [
    (1, 0),
    (-1, 0),
    (0, 1),
    (0, -1),
    (1, 1),
    (1, -1),
    (-1, 1),
    (-1, -1),
];

/// A way's length, ordered for the Dijkstra queue (lengths are finite and not NaN).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrderedLength(f64);

impl Eq for OrderedLength {}

impl PartialOrd for OrderedLength {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedLength {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Smallest side of a group map, in cells.
pub const MIN_MAP_SIDE: usize = 5;
/// Largest side of a group map, in cells.
pub const MAX_MAP_SIDE: usize = 255;

/// How far (in cells) around a moved member's old and new cells [`GroupMap::move_member`]
/// smooths.
const SMOOTH_REACH: usize = 2;

/// A group's moving map (see the module doc).
#[derive(Debug, Clone)]
pub struct GroupMap {
    field: Field<f64>,
    side: usize,
    cell: f64,
    /// Lattice cell of the map's centre cell.
    anchor: IVec2,
    initial_value: f64,
    /// Intermediate goal cells of the last projection.
    goal: Vec<(usize, usize)>,
    /// Ring distance of each cell from the nearest obstacle cell or the border (members not
    /// counted), as measured after the last stamping.
    clearance: Vec<u16>,
    /// Interior cells stamped as obstacles since the last re-centring.
    stamped: usize,
    /// Of those, the cells stamped before [`Self::note_walls`] was last called (walls and
    /// moving obstacles, not agents).
    walls: usize,
    /// Buffers kept from step to step: the cells the members reach, the flood's queue, and
    /// the border cells by distance from the exit.
    reached: Vec<bool>,
    todo: Vec<u32>,
    border: Vec<(f64, usize, usize)>,
    /// Length (metres) of the shortest way from each cell to the goal, walking free cells
    /// (members not counted); infinite where no way leads. Measured only where obstacles are
    /// stamped (empty otherwise).
    ways: Vec<f64>,
    /// Whether the last projection slid the goal along the border (the way ahead was blocked).
    slid: bool,
    /// Where (world) the goal slid to, while it keeps sliding.
    slid_to: Option<DVec2>,
}

impl GroupMap {
    /// A map of `side × side` cells of `cell` metres centred on `centre`, free cells at
    /// `initial_value`.
    pub fn new(
        side: usize,
        cell: f64,
        centre: DVec2,
        initial_value: f64,
    ) -> Result<Self, GroupError> {
        check_side(side)?;
        if !(cell.is_finite() && cell > 0.0) {
            return Err(GroupError::BadSettings("cell size must be finite and > 0"));
        }
        if !centre.is_finite() {
            return Err(GroupError::BadSettings("map centre must be finite"));
        }
        let anchor = lattice_cell(centre, cell);
        let field = Field::new(geometry(side, cell, anchor)?, initial_value);
        Ok(Self {
            field,
            side,
            cell,
            anchor,
            initial_value,
            goal: Vec::new(),
            clearance: vec![0; side * side],
            stamped: 0,
            walls: 0,
            reached: Vec::new(),
            todo: Vec::new(),
            border: Vec::new(),
            ways: Vec::new(),
            slid: false,
            slid_to: None,
        })
    }

    /// The potentials and kinds.
    pub fn field(&self) -> &Field<f64> {
        &self.field
    }

    pub(crate) fn field_mut(&mut self) -> &mut Field<f64> {
        &mut self.field
    }

    /// Cells per side.
    pub fn side(&self) -> usize {
        self.side
    }

    /// Cell size in metres.
    pub fn cell_size(&self) -> f64 {
        self.cell
    }

    /// Half the map's width in metres.
    pub fn half_size(&self) -> f64 {
        self.side as f64 * self.cell * 0.5
    }

    /// The world point at the map's centre.
    pub fn centre(&self) -> DVec2 {
        let (lo, hi) = self.field.geometry().world_bounds();
        (lo + hi) * 0.5
    }

    /// The intermediate goal cells of the last projection.
    pub fn goal_cells(&self) -> &[(usize, usize)] {
        &self.goal
    }

    /// Whether the last projection slid the goal along the border, away from where the
    /// guidance leaves the map (see the module doc, step 3).
    pub fn goal_slid(&self) -> bool {
        self.slid
    }

    /// The direction from the map's centre to its intermediate goal (the mean of its cells),
    /// zero without one.
    pub fn goal_direction(&self) -> DVec2 {
        if self.goal.is_empty() {
            return DVec2::ZERO;
        }
        let g = self.field.geometry();
        let mean = self
            .goal
            .iter()
            .map(|&(x, y)| g.cell_centre(x, y))
            .sum::<DVec2>()
            / self.goal.len() as f64;
        (mean - self.centre()).normalize_or_zero()
    }

    /// Moves the map onto the lattice cell holding `centre`, carrying potentials; a new side
    /// starts the map afresh.
    pub fn recentre(&mut self, centre: DVec2, side: usize) -> Result<(), GroupError> {
        if side != self.side {
            *self = GroupMap::new(side, self.cell, centre, self.initial_value)?;
            return Ok(());
        }
        let anchor = lattice_cell(centre, self.cell);
        let init = self.initial_value;
        self.field
            .translate_and_reopen(anchor - self.anchor, init, init);
        self.anchor = anchor;
        self.goal.clear();
        self.stamped = 0;
        self.walls = 0;
        Ok(())
    }

    /// Whether `(x, y)` lies inside the border ring.
    fn interior(&self, x: usize, y: usize) -> bool {
        x > 0 && y > 0 && x + 1 < self.side && y + 1 < self.side
    }

    /// The interior cell holding world point `p`, if any.
    pub fn interior_cell(&self, p: DVec2) -> Option<(usize, usize)> {
        let c = self.field.geometry().world_to_cell(p);
        if c.x <= 0 || c.y <= 0 || c.x as usize + 1 >= self.side || c.y as usize + 1 >= self.side {
            return None;
        }
        Some((c.x as usize, c.y as usize))
    }

    /// Stamps `shape` grown by `inflation` into the interior as obstacle; returns cells set.
    pub fn stamp_obstacle(&mut self, shape: &Shape, inflation: f64, coverage: Coverage) -> usize {
        let Ok(cells) = shape.cells(self.field.geometry(), inflation, coverage) else {
            return 0;
        };
        let mut n = 0;
        for (x, y) in cells {
            if self.interior(x, y) && self.field.set_obstacle(x, y).is_ok() {
                n += 1;
            }
        }
        self.stamped += n;
        n
    }

    /// Sets the intermediate goal for guidance along `direction` with `count` border cells
    /// (see the module doc, step 3), reachable from the interior cells `from` (the members'
    /// cells; none: any free cell counts as reachable). Returns the goal cells; none for a zero
    /// direction.
    pub fn project_goal(
        &mut self,
        direction: DVec2,
        count: usize,
        from: &[(usize, usize)],
    ) -> &[(usize, usize)] {
        self.goal.clear();
        self.slid = false;
        let Some(dir) = direction.try_normalize() else {
            return &self.goal;
        };
        let n = self.side;
        // The free interior cells the members can walk to (4-connected): all of them in a map
        // with no obstacle stamped (the common case in the open).
        let mut reached = std::mem::take(&mut self.reached);
        reached.clear();
        let everywhere = from.is_empty() || self.stamped == 0;
        reached.resize(n * n, everywhere);
        if !everywhere {
            let mut todo = std::mem::take(&mut self.todo);
            todo.clear();
            todo.extend(
                from.iter()
                    .filter(|&&(x, y)| self.interior(x, y))
                    .map(|&(x, y)| (y * n + x) as u32),
            );
            if todo.is_empty() {
                reached.fill(true);
            }
            let kinds = self.field.kinds();
            // Members' cells are reached even where an obstacle lies on them (a member
            // standing there still walks off it).
            for &i in &todo {
                reached[i as usize] = true;
            }
            let seeds: Vec<u32> = std::mem::take(&mut todo);
            for i in seeds {
                let i = i as usize;
                todo.extend([i + 1, i - 1, i + n, i - n].map(|j| j as u32));
            }
            while let Some(i) = todo.pop() {
                let i = i as usize;
                let (x, y) = (i % n, i / n);
                if reached[i]
                    || x == 0
                    || y == 0
                    || x + 1 == n
                    || y + 1 == n
                    || kinds[i] != CellKind::Free
                {
                    continue;
                }
                reached[i] = true;
                todo.extend([i + 1, i - 1, i + n, i - n].map(|j| j as u32));
            }
            self.todo = todo;
        }
        let h = (n as f64 - 1.0) * 0.5;
        let centre = DVec2::splat(h);
        let exit = centre + dir * (h / dir.x.abs().max(dir.y.abs()));
        // Border cells but the corners (which touch no interior cell), nearest the exit first,
        // ties by (y, x).
        let mut border = std::mem::take(&mut self.border);
        border.clear();
        for i in 1..n - 1 {
            for (x, y) in [(i, 0), (i, n - 1), (0, i), (n - 1, i)] {
                let d = (DVec2::new(x as f64, y as f64) - exit).length_squared();
                border.push((d, y, x));
            }
        }
        let order = |a: &(f64, usize, usize), b: &(f64, usize, usize)| {
            a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2)))
        };
        let count = count.max(1).min(border.len());
        // The `count` nearest first, in order; the rest are sorted only if the goal must slide.
        border.select_nth_unstable_by(count - 1, order);
        border[..count].sort_by(order);
        let inward = |x: usize, y: usize| -> (usize, usize) {
            let x = x.clamp(1, n - 2);
            let y = y.clamp(1, n - 2);
            (x, y)
        };
        let open = |x: usize, y: usize| {
            let (ix, iy) = inward(x, y);
            self.field.kind(ix, iy) == Some(CellKind::Free) && reached[iy * n + ix]
        };
        let opens = border.iter().take(count).any(|&(_, y, x)| open(x, y));
        // Blocked where the guidance leaves the map (an obstacle larger than the map lies
        // across it, and the members cannot reach that stretch of border): the goal slides
        // along the border to the nearest cells they can reach, so the whole group goes round
        // the obstacle (seed: "project the goal on the group-map border, or on the nearest
        // free cells").
        self.slid = !opens;
        if opens {
            self.slid_to = None;
        }
        let chosen: Vec<(usize, usize)> = if opens {
            border.iter().take(count).map(|&(_, y, x)| (x, y)).collect()
        } else {
            // The nearest reachable cell, then those nearest it: one stretch of border on one
            // side of the obstacle, never cells on both sides (the group would split). Where
            // it slid to last step, if it did, it slides again (the reachable cell nearest that
            // place): a goal that slid one way must not jump to the other side the next step,
            // or a group before an obstacle across the middle of its way turns to and fro.
            border.sort_by(order);
            let geometry = *self.field.geometry();
            let start = match self.slid_to {
                Some(at) => border
                    .iter()
                    .filter(|&&(_, y, x)| open(x, y))
                    .min_by(|a, b| {
                        let da = (geometry.cell_centre(a.2, a.1) - at).length_squared();
                        let db = (geometry.cell_centre(b.2, b.1) - at).length_squared();
                        da.total_cmp(&db).then((a.1, a.2).cmp(&(b.1, b.2)))
                    })
                    .copied(),
                None => border.iter().find(|&&(_, y, x)| open(x, y)).copied(),
            };
            match start {
                Some((_, y0, x0)) => {
                    self.slid_to = Some(geometry.cell_centre(x0, y0));
                    let first = DVec2::new(x0 as f64, y0 as f64);
                    let mut near: Vec<(f64, usize, usize)> = border
                        .iter()
                        .filter(|&&(_, y, x)| open(x, y))
                        .map(|&(_, y, x)| {
                            (
                                (DVec2::new(x as f64, y as f64) - first).length_squared(),
                                y,
                                x,
                            )
                        })
                        .collect();
                    near.sort_by(order);
                    near.iter().take(count).map(|&(_, y, x)| (x, y)).collect()
                }
                None => Vec::new(),
            }
        };
        self.border = border;
        self.reached = reached;
        if !chosen.is_empty() {
            for (x, y) in chosen {
                let _ = self.field.set_goal(x, y);
                self.goal.push((x, y));
            }
            return &self.goal;
        }
        // No border cell opens onto the map: search inwards against the guidance.
        let steps = (2.0 * h / 0.5).ceil() as usize;
        for k in 1..=steps {
            let p = exit - dir * (k as f64 * 0.5);
            let (x, y) = (p.x.round(), p.y.round());
            if x < 1.0 || y < 1.0 || x > (n - 2) as f64 || y > (n - 2) as f64 {
                continue;
            }
            let (x, y) = (x as usize, y as usize);
            if self.field.kind(x, y) != Some(CellKind::Free) {
                continue;
            }
            for (dx, dy) in [(0i32, 0i32), (1, 0), (-1, 0), (0, 1), (0, -1)] {
                let (cx, cy) = ((x as i32 + dx) as usize, (y as i32 + dy) as usize);
                if self.interior(cx, cy)
                    && self.field.kind(cx, cy) == Some(CellKind::Free)
                    && self.field.set_goal(cx, cy).is_ok()
                {
                    self.goal.push((cx, cy));
                }
            }
            break;
        }
        &self.goal
    }

    /// Measures every cell's ring distance from the nearest obstacle cell or the border (step
    /// 4 of the module doc; call it after stamping obstacles and before stamping members).
    pub fn measure_clearance(&mut self) {
        let n = self.side;
        self.ways.clear();
        if self.stamped == 0 {
            // Nothing stamped: the distance from the border.
            for (i, d) in self.clearance.iter_mut().enumerate() {
                let (x, y) = (i % n, i / n);
                *d = x.min(y).min(n - 1 - x).min(n - 1 - y) as u16;
            }
            return;
        }
        let far = u16::MAX / 2;
        let kinds = self.field.kinds();
        for (d, (k, i)) in self.clearance.iter_mut().zip(kinds.iter().zip(0..)) {
            let (x, y) = (i % n, i / n);
            let edge = x == 0 || y == 0 || x + 1 == n || y + 1 == n;
            *d = if edge || *k == CellKind::Obstacle {
                0
            } else {
                far
            };
        }
        // Two passes of the 8-neighbour chamfer: exact for the Chebyshev distance.
        let c = &mut self.clearance;
        for y in 1..n - 1 {
            for x in 1..n - 1 {
                let i = y * n + x;
                let m = c[i - 1].min(c[i - n - 1]).min(c[i - n]).min(c[i - n + 1]);
                c[i] = c[i].min(m + 1);
            }
        }
        for y in (1..n - 1).rev() {
            for x in (1..n - 1).rev() {
                let i = y * n + x;
                let m = c[i + 1].min(c[i + n + 1]).min(c[i + n]).min(c[i + n - 1]);
                c[i] = c[i].min(m + 1);
            }
        }
        // Ways are read round walls only (layer 2 near walls, members on flat ground behind
        // them); a map that holds none but other agents goes without.
        if self.walls > 0 {
            self.measure_ways();
        } else {
            self.ways.clear();
        }
    }

    /// The shortest ways to the goal over free cells (8-connected, no corner cut past an
    /// obstacle cell), by Dijkstra from the goal cells.
    fn measure_ways(&mut self) {
        let n = self.side;
        self.ways.clear();
        self.ways.resize(n * n, f64::INFINITY);
        let mut queue = BinaryHeap::new();
        for &(x, y) in &self.goal {
            let i = y * n + x;
            self.ways[i] = 0.0;
            queue.push(Reverse((OrderedLength(0.0), i as u32)));
        }
        let open = |c: &[u16], x: usize, y: usize| {
            x > 0 && y > 0 && x + 1 < n && y + 1 < n && c[y * n + x] > 0
        };
        while let Some(Reverse((OrderedLength(d), i))) = queue.pop() {
            let i = i as usize;
            if d > self.ways[i] {
                continue;
            }
            let (x, y) = ((i % n) as isize, (i / n) as isize);
            for (dx, dy) in NEIGHBOURS {
                let (nx, ny) = (x + dx, y + dy);
                if nx < 0 || ny < 0 {
                    continue;
                }
                let (nx, ny) = (nx as usize, ny as usize);
                if !open(&self.clearance, nx, ny) {
                    continue;
                }
                if dx != 0 && dy != 0 {
                    // No corner cut: both cells beside a diagonal are open or goal cells.
                    let a = ((x + dx) as usize, y as usize);
                    let b = (x as usize, (y + dy) as usize);
                    let passable = |(px, py): (usize, usize)| {
                        open(&self.clearance, px, py) || self.ways[py * n + px] == 0.0
                    };
                    if !passable(a) || !passable(b) {
                        continue;
                    }
                }
                // Cells beside a wall cost more: the way keeps a cell off walls where there is
                // room, as a member at a cell's centre beside a wall touches it.
                let wall = match self.clearance[ny * n + nx] {
                    1 => 3.0,
                    2 => 1.5,
                    _ => 1.0,
                };
                let step = if dx != 0 && dy != 0 {
                    std::f64::consts::SQRT_2
                } else {
                    1.0
                } * self.cell
                    * wall;
                let j = ny * n + nx;
                if d + step < self.ways[j] {
                    self.ways[j] = d + step;
                    queue.push(Reverse((OrderedLength(d + step), j as u32)));
                }
            }
        }
    }

    /// The length (metres) of the map's shortest way to its goal from the cell holding `p`,
    /// walking free cells; `None` off the interior, where no way leads, or in a map without
    /// obstacles (where the potential's descent is the way).
    pub fn way_length(&self, p: DVec2) -> Option<f64> {
        let (x, y) = self.interior_cell(p)?;
        let d = *self.ways.get(y * self.side + x)?;
        d.is_finite().then_some(d)
    }

    /// The unit direction of the map's shortest way to its goal at the cell holding `p` (a
    /// least-squares slope of the way's length over the cell's eight neighbours, sliding along
    /// walls beside the cell); `None` where [`Self::way_length`] is.
    pub fn way_at(&self, p: DVec2) -> Option<DVec2> {
        let (x, y) = self.interior_cell(p)?;
        let n = self.side;
        let here = *self.ways.get(y * n + x)?;
        if !here.is_finite() {
            return None;
        }
        let mut slope = DVec2::ZERO;
        for (dx, dy) in NEIGHBOURS {
            let (nx, ny) = ((x as isize + dx) as usize, (y as isize + dy) as usize);
            let there = self.ways[ny * n + nx];
            if there.is_finite() {
                let off = DVec2::new(dx as f64, dy as f64);
                slope += off * ((here - there) / off.length_squared());
            }
        }
        // Along a wall the shortest way hugs it, and its slope leans into the wall: the part
        // into a blocked side cell is dropped, so the way slides along the wall.
        let blocked = |dx: isize, dy: isize| {
            let (nx, ny) = ((x as isize + dx) as usize, (y as isize + dy) as usize);
            !self.ways[ny * n + nx].is_finite()
        };
        if (slope.x > 0.0 && blocked(1, 0)) || (slope.x < 0.0 && blocked(-1, 0)) {
            slope.x = 0.0;
        }
        if (slope.y > 0.0 && blocked(0, 1)) || (slope.y < 0.0 && blocked(0, -1)) {
            slope.y = 0.0;
        }
        slope.try_normalize()
    }

    /// Marks every cell stamped so far as a wall: call after stamping obstacles and before
    /// stamping other agents.
    pub fn note_walls(&mut self) {
        self.walls = self.stamped;
    }

    /// Whether the last stamping put a wall or moving obstacle (not an agent) inside the map
    /// (see [`Self::note_walls`]).
    pub fn holds_walls(&self) -> bool {
        self.walls > 0
    }

    /// Whether world point `p` lies on an interior cell stamped as an obstacle at the last
    /// stamping (members not counted).
    pub fn obstacle_at(&self, p: DVec2) -> bool {
        self.interior_cell(p)
            .is_some_and(|(x, y)| self.clearance(x, y) == 0)
    }

    /// The ring distance of cell `(x, y)` from the nearest obstacle or border cell, as last
    /// measured (members not counted).
    pub fn clearance(&self, x: usize, y: usize) -> usize {
        self.clearance[y * self.side + x] as usize
    }

    /// Stamps a member standing on interior cell `(x, y)`: the cell becomes an obstacle at 1.
    /// Returns false, changing nothing, where the cell was not free (the member stands on a
    /// stamped obstacle or another member).
    pub fn stamp_member(&mut self, (x, y): (usize, usize)) -> bool {
        if self.field.kind(x, y) != Some(CellKind::Free) {
            return false;
        }
        self.field.set_obstacle(x, y).is_ok()
    }

    /// Frees a member's cell (Algorithm 3, line 27): free again, at the weighted mean of its
    /// four neighbours under `bias` (one Gauss–Seidel update). The potential it held before
    /// it was stamped is no use: it is last step's, or the initial value where the map moved,
    /// and a cell well below its neighbours would draw every descent around it into it.
    pub fn free_member(&mut self, (x, y): (usize, usize), bias: &Bias) {
        if !self.interior(x, y) {
            return;
        }
        let n = self.side;
        let i = y * n + x;
        let p = self.field.potentials();
        let v = bias.weights().apply(p[i + 1], p[i - 1], p[i + n], p[i - n]);
        let _ = self.field.set_free(x, y, v.clamp(0.0, 1.0));
    }

    /// A member moves from `from` to `to` (interior cells; `from` already freed with
    /// [`Self::free_member`]): it is stamped on `to`, and `sweeps` Gauss–Seidel sweeps with
    /// `bias` smooth the cells within two of either (seed 004 §5.3: restore, restamp, "a few"
    /// iterations). Returns whether `to` was free and is now stamped.
    pub fn move_member(
        &mut self,
        from: (usize, usize),
        to: (usize, usize),
        bias: &Bias,
        sweeps: usize,
    ) -> bool {
        let stamped = self.stamp_member(to);
        let r = SMOOTH_REACH;
        let lo = (
            from.0.min(to.0).saturating_sub(r).max(1),
            from.1.min(to.1).saturating_sub(r).max(1),
        );
        let hi = (
            (from.0.max(to.0) + r).min(self.side - 2),
            (from.1.max(to.1) + r).min(self.side - 2),
        );
        self.smooth(lo, hi, bias, sweeps);
        stamped
    }

    /// `sweeps` lexicographic Gauss–Seidel sweeps of the whole map with `bias` (a group
    /// world relaxes its maps in SIMD batches instead, with the same result per map).
    pub fn relax(&mut self, bias: &Bias, sweeps: usize) {
        crowdfield_field::relax(
            &mut self.field,
            bias,
            &crowdfield_field::Relaxation::GAUSS_SEIDEL,
            sweeps,
        );
    }

    /// `sweeps` lexicographic Gauss–Seidel sweeps of the free cells in the window `lo..=hi`.
    pub fn smooth(&mut self, lo: (usize, usize), hi: (usize, usize), bias: &Bias, sweeps: usize) {
        let w = bias.weights();
        let n = self.side;
        let (_, kinds, p) = self.field.parts_mut();
        for _ in 0..sweeps {
            for y in lo.1..=hi.1 {
                let row = y * n;
                for i in row + lo.0..=row + hi.0 {
                    if kinds[i] == CellKind::Free {
                        p[i] = w.apply(p[i + 1], p[i - 1], p[i + n], p[i - n]);
                    }
                }
            }
        }
    }

    /// Stamps interior cell `(x, y)` as obstacle; false (nothing changed) for a border cell.
    pub fn stamp_cell(&mut self, x: usize, y: usize) -> bool {
        if !self.interior(x, y) || self.field.set_obstacle(x, y).is_err() {
            return false;
        }
        self.stamped += 1;
        true
    }

    /// Stamps a disc of `radius` metres about `centre` into the interior as obstacle: the
    /// cells whose centre it covers ([`Coverage::Centre`]), without building a shape. Returns
    /// the cells set.
    pub fn stamp_disc(&mut self, centre: DVec2, radius: f64) -> usize {
        let g = *self.field.geometry();
        let lo = g.world_to_cell(centre - DVec2::splat(radius));
        let hi = g.world_to_cell(centre + DVec2::splat(radius));
        let last = self.side as i32 - 2;
        let (x0, y0) = (lo.x.max(1), lo.y.max(1));
        let (x1, y1) = (hi.x.min(last), hi.y.min(last));
        let r2 = radius * radius;
        let mut n = 0;
        for y in y0..=y1 {
            for x in x0..=x1 {
                let (x, y) = (x as usize, y as usize);
                if (g.cell_centre(x, y) - centre).length_squared() <= r2
                    && self.field.set_obstacle(x, y).is_ok()
                {
                    n += 1;
                }
            }
        }
        self.stamped += n;
        n
    }

    /// The descent at interior cell `(x, y)` by central differences (seed 004 §5.3.1: the
    /// group-map gradient at the member's cell), in potential per cell.
    pub fn descent_at_cell(&self, (x, y): (usize, usize)) -> DVec2 {
        self.field.descent_at_cell(x, y)
    }

    /// Every cell's band weight μ with `members` stamped (for overlays): the weight of the
    /// band the cell lies in, `weights[i − 1]` for B_i, 1 on obstacle cells, 0 beyond the last
    /// band.
    pub fn band_weights(&self, members: &[(usize, usize)], weights: &[f64]) -> Vec<f64> {
        let n = self.side;
        (0..n * n)
            .map(|i| {
                let (x, y) = (i % n, i / n);
                let ring = members
                    .iter()
                    .map(|m| chebyshev(*m, (x, y)))
                    .fold(self.clearance(x, y), usize::min);
                band_weight(ring, weights)
            })
            .collect()
    }
}

/// The weight μ of band B_`ring` (`weights[ring − 1]`), 1 at ring 0 (on an obstacle), 0 beyond
/// the last band.
pub fn band_weight(ring: usize, weights: &[f64]) -> f64 {
    if ring == 0 {
        1.0
    } else {
        weights.get(ring - 1).copied().unwrap_or(0.0)
    }
}

/// The Chebyshev (ring) distance between two cells.
pub fn chebyshev(a: (usize, usize), b: (usize, usize)) -> usize {
    a.0.abs_diff(b.0).max(a.1.abs_diff(b.1))
}

fn check_side(side: usize) -> Result<(), GroupError> {
    if !(MIN_MAP_SIDE..=MAX_MAP_SIDE).contains(&side) {
        return Err(GroupError::BadMapSide(side));
    }
    Ok(())
}

/// The world-lattice cell of cell size `cell` holding `p`.
fn lattice_cell(p: DVec2, cell: f64) -> IVec2 {
    IVec2::new(floor_i32(p.x / cell), floor_i32(p.y / cell))
}

fn geometry(side: usize, cell: f64, anchor: IVec2) -> Result<GridGeometry, GroupError> {
    let half = (side / 2) as i32;
    let origin = (anchor - IVec2::splat(half)).as_dvec2() * cell;
    Ok(GridGeometry::new(origin, cell, side, side)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clearance_counts_rings_from_the_border_and_obstacles() {
        let mut map = GroupMap::new(11, 1.0, DVec2::new(5.5, 5.5), 0.9).unwrap();
        map.measure_clearance();
        assert_eq!(map.clearance(1, 1), 1);
        assert_eq!(map.clearance(5, 5), 5);
        assert!(map.stamp_cell(5, 5));
        map.measure_clearance();
        assert_eq!(map.clearance(5, 5), 0);
        assert_eq!(
            map.clearance(6, 6),
            1,
            "diagonal neighbours are one ring away"
        );
        assert_eq!(map.clearance(7, 5), 2);
        assert_eq!(map.clearance(3, 3), 2);
    }

    #[test]
    fn the_goal_is_projected_where_the_guidance_leaves_the_map() {
        let mut map = GroupMap::new(11, 1.0, DVec2::new(5.5, 5.5), 0.9).unwrap();
        let cells = map.project_goal(DVec2::X, 3, &[]).to_vec();
        assert_eq!(cells.len(), 3);
        for (x, y) in cells {
            assert_eq!(x, 10);
            assert!((4..=6).contains(&y));
        }
    }

    #[test]
    fn a_blocked_border_slides_the_goal_to_the_nearest_cells_the_members_reach() {
        let mut map = GroupMap::new(11, 1.0, DVec2::new(5.5, 5.5), 0.9).unwrap();
        // A wall two cells thick along the east border.
        for y in 1..10 {
            for x in 8..10 {
                map.stamp_cell(x, y);
            }
        }
        let cells = map.project_goal(DVec2::X, 3, &[(5, 5)]).to_vec();
        assert_eq!(cells.len(), 3);
        for (x, y) in &cells {
            assert!(
                *y == 0 || *y == 10,
                "on the north or south border: {cells:?}"
            );
            assert!(
                *x <= 7 && *x >= 5,
                "as near the east as the members reach: {cells:?}"
            );
        }
    }

    #[test]
    fn a_map_closed_all_round_puts_the_goal_on_the_first_free_cell_inwards() {
        let mut map = GroupMap::new(11, 1.0, DVec2::new(5.5, 5.5), 0.9).unwrap();
        // Every cell next to the border closed, and a wall from x = 7 on.
        for i in 1..10 {
            for (x, y) in [(i, 1), (i, 9), (1, i), (9, i), (7, i), (8, i)] {
                map.stamp_cell(x, y);
            }
        }
        let cells = map.project_goal(DVec2::X, 3, &[(4, 5)]).to_vec();
        assert!(cells.contains(&(6, 5)), "{cells:?}");
        for (x, _) in &cells {
            assert!(*x <= 6);
        }
    }

    #[test]
    fn a_fence_the_map_holds_leaves_the_goal_straight_behind_it() {
        // A 30-cell map; a fence across it with a free strip at each end.
        let mut map = GroupMap::new(30, 0.5, DVec2::new(17.0, 15.0), 0.9).unwrap();
        map.stamp_obstacle(
            &Shape::Aabb {
                min: DVec2::new(21.0, 9.5),
                max: DVec2::new(21.5, 20.5),
            },
            0.125,
            Coverage::Centre,
        );
        let members = [map.interior_cell(DVec2::new(15.0, 15.0)).unwrap()];
        let cells = map.project_goal(DVec2::X, 3, &members).to_vec();
        assert!(!map.goal_slid(), "{cells:?}");
        assert!(cells.iter().all(|&(x, _)| x == 29), "{cells:?}");
    }

    #[test]
    fn a_goal_that_slid_keeps_to_one_side() {
        // A fence across the whole 20-cell map: the goal slides, all of it to one side.
        let mut map = GroupMap::new(20, 0.5, DVec2::new(17.0, 15.0), 0.9).unwrap();
        map.stamp_obstacle(
            &Shape::Aabb {
                min: DVec2::new(19.0, 0.0),
                max: DVec2::new(19.5, 30.0),
            },
            0.125,
            Coverage::Centre,
        );
        let members = [map.interior_cell(DVec2::new(15.0, 15.0)).unwrap()];
        let cells = map.project_goal(DVec2::X, 3, &members).to_vec();
        assert!(map.goal_slid());
        let ys: Vec<usize> = cells.iter().map(|c| c.1).collect();
        assert!(
            ys.iter().all(|y| *y == 0) || ys.iter().all(|y| *y == 19),
            "{cells:?}"
        );
        // The next projection slides to the same side.
        let again = map.project_goal(DVec2::X, 3, &members).to_vec();
        assert_eq!(again[0].1, cells[0].1);
    }

    #[test]
    fn band_weights_fall_from_one_at_obstacles_to_zero_beyond_the_last_band() {
        let weights = [1.0, 0.5, 0.25];
        assert_eq!(band_weight(0, &weights), 1.0);
        assert_eq!(band_weight(1, &weights), 1.0);
        assert_eq!(band_weight(2, &weights), 0.5);
        assert_eq!(band_weight(3, &weights), 0.25);
        assert_eq!(band_weight(4, &weights), 0.0);
    }
}
