//! Heights and the terrain graph A* routes over (digest 003 §2.10, Table 4.1, Fig. 4.5, §8).
//!
//! - [`HeightMap`]: ground heights on a regular grid, read on its triangles (each cell split
//!   along its rising diagonal: the terrain mesh markers come from, [`crate::TerrainMesh`]);
//!   the graph's nodes and edge lengths are 3D, so climbing costs (the seed's only use of
//!   relief in route choice).
//! - [`TerrainGraph`]: nodes on a regular grid over the marker set's world (the seed casts a
//!   ray per grid point onto the terrain), none on ground a marker may not lie on (forbidden
//!   terrain, obstacles, outside the world); edges to the 4 or 8 grid neighbours
//!   ([`Connectivity`]), tested every [`GraphSettings::sample`] metres along the segment: none
//!   across forbidden ground or an obstacle; over walkable ground the 3D length; over ground to
//!   be avoided the 3D length times (1 + k·ι), ι the mean avoid intensity of the samples and k
//!   [`GraphSettings::avoid_penalty`] (digest 003 §8's suggestion: a multiplicative penalty
//!   keeps the straight-line heuristic admissible).
//! - [`TerrainGraph::route`]: A* (the `pathfinding` crate) from the node nearest the start that
//!   it sees to the one nearest the goal, the straight 3D distance as heuristic; the nodes,
//!   then the goal, are the agent's sub-goals.
//!
//! Choices where the seed is silent (§2.10, §8): grid spacing 1.5 m, 8-neighbour edges,
//! samples every 0.1 m (half the spacing of markers at 60 per m² or less), k = 2, the mean
//! intensity along the edge (so a short brush with an avoided patch costs less than a long
//! one), start and goal snapped to the nearest node in sight within two grid spacings.

use glam::{DVec2, DVec3};

use crate::{MarkerError, MarkerSet, Terrain};

/// Ground heights on a regular grid: `heights[row * cols + col]` at
/// `min + (col, row) · cell`. Between grid points the ground is the grid's triangle mesh:
/// each cell is split along the diagonal from its lower-left to its upper-right corner and
/// read linearly on each half (so markers at mesh centroids lie exactly on it); outside the
/// grid the nearest edge's height holds.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct HeightMap {
    min: DVec2,
    cell: f64,
    cols: usize,
    rows: usize,
    heights: Vec<f64>,
}

impl HeightMap {
    /// A height map of `cols` × `rows` points `cell` apart from `min`. Refuses a cell that is
    /// not positive and finite, fewer than 2 × 2 points, a list of the wrong length, and
    /// heights that are not finite.
    pub fn new(
        min: DVec2,
        cell: f64,
        cols: usize,
        rows: usize,
        heights: Vec<f64>,
    ) -> Result<Self, MarkerError> {
        check_grid(min, cell, cols, rows, &heights)?;
        Ok(Self {
            min,
            cell,
            cols,
            rows,
            heights,
        })
    }

    /// A height map sampled from `f` over `min`–`max` every `cell` metres (the upper edge
    /// included).
    pub fn from_fn(
        min: DVec2,
        max: DVec2,
        cell: f64,
        f: impl Fn(DVec2) -> f64,
    ) -> Result<Self, MarkerError> {
        if !(min.is_finite() && max.is_finite() && max.cmpgt(min).all()) {
            return Err(MarkerError::BadSetting("a height map needs min < max"));
        }
        if !(cell.is_finite() && cell > 0.0) {
            return Err(MarkerError::BadSetting(
                "a height map's cell must be positive",
            ));
        }
        let size = ((max - min) / cell).ceil();
        if size.x * size.y > 16_777_216.0 {
            return Err(MarkerError::BadSetting(
                "a height map of more than 2^24 points",
            ));
        }
        let (cols, rows) = (size.x as usize + 1, size.y as usize + 1);
        let heights = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (c, r)))
            .map(|(c, r)| f(min + DVec2::new(c as f64, r as f64) * cell))
            .collect();
        Self::new(min, cell, cols, rows, heights)
    }

    /// The height at `p` (on the grid's triangles; the nearest edge's outside the map).
    pub fn height(&self, p: DVec2) -> f64 {
        let q = ((p - self.min) / self.cell)
            .max(DVec2::ZERO)
            .min(DVec2::new((self.cols - 1) as f64, (self.rows - 1) as f64));
        if !q.is_finite() {
            return self.heights[0];
        }
        let (c, r) = (
            (q.x.floor() as usize).min(self.cols - 2),
            (q.y.floor() as usize).min(self.rows - 2),
        );
        let (fx, fy) = (q.x - c as f64, q.y - r as f64);
        let at = |c: usize, r: usize| self.heights[r * self.cols + c];
        let (h00, h11) = (at(c, r), at(c + 1, r + 1));
        if fx >= fy {
            // The lower-right half: (c, r), (c + 1, r), (c + 1, r + 1).
            let h10 = at(c + 1, r);
            h00 + fx * (h10 - h00) + fy * (h11 - h10)
        } else {
            // The upper-left half: (c, r), (c + 1, r + 1), (c, r + 1).
            let h01 = at(c, r + 1);
            h00 + fy * (h01 - h00) + fx * (h11 - h01)
        }
    }

    /// The grid's lower-left corner.
    pub fn min(&self) -> DVec2 {
        self.min
    }

    /// Metres between grid points.
    pub fn cell(&self) -> f64 {
        self.cell
    }

    /// Grid points across and up.
    pub fn size(&self) -> (usize, usize) {
        (self.cols, self.rows)
    }

    /// The grid point `(col, row)` on the surface (clamped to the grid).
    pub fn point(&self, col: usize, row: usize) -> DVec3 {
        let (c, r) = (col.min(self.cols - 1), row.min(self.rows - 1));
        (self.min + DVec2::new(c as f64, r as f64) * self.cell)
            .extend(self.heights[r * self.cols + c])
    }

    /// The point of the surface over `p`.
    pub fn surface(&self, p: DVec2) -> DVec3 {
        p.extend(self.height(p))
    }

    /// Checks what [`new`](Self::new) checks (for a map read from a file).
    pub fn validate(&self) -> Result<(), MarkerError> {
        check_grid(self.min, self.cell, self.cols, self.rows, &self.heights)
    }
}

/// A height grid's checks: a finite corner, a positive cell, at least 2 × 2 points, as many
/// heights as points, all finite.
fn check_grid(
    min: DVec2,
    cell: f64,
    cols: usize,
    rows: usize,
    heights: &[f64],
) -> Result<(), MarkerError> {
    if !min.is_finite() {
        return Err(MarkerError::NonFinite("a height map's corner"));
    }
    if !(cell.is_finite() && cell > 0.0) {
        return Err(MarkerError::BadSetting(
            "a height map's cell must be positive",
        ));
    }
    if cols < 2 || rows < 2 || cols.checked_mul(rows) != Some(heights.len()) {
        return Err(MarkerError::BadSetting(
            "a height map needs cols × rows heights, at least 2 × 2",
        ));
    }
    if heights.iter().any(|h| !h.is_finite()) {
        return Err(MarkerError::NonFinite("a height"));
    }
    Ok(())
}

/// Which grid neighbours a node links to.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Connectivity {
    /// Left, right, up, down (the seed's figure reads so).
    Four,
    /// And the diagonals (the default: routes less blocky).
    #[default]
    Eight,
}

/// How a [`TerrainGraph`] is built (digest 003 §8's suggested defaults).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphSettings {
    /// Metres between grid nodes (1.5).
    pub spacing: f64,
    /// 4 or 8 neighbours.
    pub connectivity: Connectivity,
    /// k in cost = length · (1 + k·ι) over avoided ground (2).
    pub avoid_penalty: f64,
    /// Metres between the samples that test an edge's ground (0.1).
    pub sample: f64,
    /// Metres nodes and edges keep from forbidden ground and obstacles (0: the seed's graph;
    /// tested at eight points round each node and sample). With a clearance of the
    /// perception radius R, agents on a route hold no forbidden marker (digest 003 test 8).
    #[cfg_attr(feature = "serde", serde(default))]
    pub clearance: f64,
}

impl Default for GraphSettings {
    fn default() -> Self {
        Self {
            spacing: 1.5,
            connectivity: Connectivity::Eight,
            avoid_penalty: 2.0,
            sample: 0.1,
            clearance: 0.0,
        }
    }
}

impl GraphSettings {
    fn validate(&self) -> Result<(), MarkerError> {
        if !(self.spacing.is_finite() && self.spacing > 0.0) {
            return Err(MarkerError::BadSetting(
                "the graph spacing must be positive",
            ));
        }
        if !(self.sample.is_finite() && self.sample > 0.0) {
            return Err(MarkerError::BadSetting(
                "the graph's edge sample must be positive",
            ));
        }
        if !(self.clearance.is_finite() && self.clearance >= 0.0) {
            return Err(MarkerError::BadSetting(
                "the graph's clearance must be finite and not negative",
            ));
        }
        if !(self.avoid_penalty.is_finite() && self.avoid_penalty >= 0.0) {
            return Err(MarkerError::BadSetting(
                "the avoid penalty must be finite and not negative",
            ));
        }
        Ok(())
    }
}

/// A node of the terrain graph: its id is its index in [`TerrainGraph::nodes`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphNode {
    /// Where it lies, on the surface.
    pub position: DVec3,
}

/// The terrain graph (see the module doc).
#[derive(Debug, Clone)]
pub struct TerrainGraph {
    settings: GraphSettings,
    min: DVec2,
    cols: usize,
    rows: usize,
    /// Grid point → node, `u32::MAX` where there is none.
    grid: Vec<u32>,
    nodes: Vec<GraphNode>,
    /// Each node's edges: (other node, cost).
    edges: Vec<Vec<(u32, f64)>>,
}

/// Costs go to A* in micrometres (it needs an ordered cost).
const COST_UNIT: f64 = 1e6;

impl TerrainGraph {
    /// The graph over `set`'s world, its obstacles, painted terrain and heights
    /// ([`MarkerSet::heights`]; flat ground at height 0 without). Refuses bad settings and
    /// grids of more than 2²⁴ points.
    pub fn build(set: &MarkerSet, settings: GraphSettings) -> Result<Self, MarkerError> {
        settings.validate()?;
        let (min, max) = (set.settings().min, set.settings().max);
        let size = ((max - min) / settings.spacing).floor();
        if size.x * size.y > 16_777_216.0 {
            return Err(MarkerError::BadSetting(
                "a terrain graph of more than 2^24 nodes",
            ));
        }
        let (cols, rows) = (size.x as usize + 1, size.y as usize + 1);
        let mut grid = vec![u32::MAX; cols * rows];
        let mut nodes = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                let p = min + DVec2::new(c as f64, r as f64) * settings.spacing;
                if roomy(set, p, settings.clearance) {
                    grid[r * cols + c] = nodes.len() as u32;
                    nodes.push(GraphNode {
                        position: set.surface(p),
                    });
                }
            }
        }
        let mut edges = vec![Vec::new(); nodes.len()];
        let steps: &[(isize, isize)] = match settings.connectivity {
            Connectivity::Four => &[(1, 0), (0, 1)],
            Connectivity::Eight => &[(1, 0), (0, 1), (1, 1), (-1, 1)],
        };
        for r in 0..rows {
            for c in 0..cols {
                let a = grid[r * cols + c];
                if a == u32::MAX {
                    continue;
                }
                for &(dc, dr) in steps {
                    let (c2, r2) = (c as isize + dc, r as isize + dr);
                    if c2 < 0 || c2 >= cols as isize || r2 >= rows as isize {
                        continue;
                    }
                    let b = grid[r2 as usize * cols + c2 as usize];
                    if b == u32::MAX {
                        continue;
                    }
                    let (pa, pb) = (nodes[a as usize].position, nodes[b as usize].position);
                    if let Some(cost) = edge_cost(set, pa, pb, &settings) {
                        edges[a as usize].push((b, cost));
                        edges[b as usize].push((a, cost));
                    }
                }
            }
        }
        Ok(Self {
            settings,
            min,
            cols,
            rows,
            grid,
            nodes,
            edges,
        })
    }

    /// The settings it was built with.
    pub fn settings(&self) -> &GraphSettings {
        &self.settings
    }

    /// The nodes, by id.
    pub fn nodes(&self) -> &[GraphNode] {
        &self.nodes
    }

    /// Node `id`'s edges: (other node, cost).
    pub fn edges(&self, id: u32) -> &[(u32, f64)] {
        self.edges.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// The cost of the edge between `a` and `b`, if there is one.
    pub fn edge(&self, a: u32, b: u32) -> Option<f64> {
        self.edges(a).iter().find(|(n, _)| *n == b).map(|(_, c)| *c)
    }

    /// The node at grid point (`col`, `row`), if the ground there holds one.
    pub fn node_at(&self, col: usize, row: usize) -> Option<u32> {
        (col < self.cols && row < self.rows)
            .then(|| self.grid[row * self.cols + col])
            .filter(|n| *n != u32::MAX)
    }

    /// The node nearest `p` (in the plane) within two grid spacings that `p` sees in
    /// `set` (no obstacle or forbidden ground between them).
    pub fn nearest(&self, set: &MarkerSet, p: DVec2) -> Option<u32> {
        if !p.is_finite() {
            return None;
        }
        let k = ((p - self.min) / self.settings.spacing).round();
        let mut best: Option<(f64, u32)> = None;
        for dr in -2..=2 {
            for dc in -2..=2 {
                let (c, r) = (k.x as i64 + dc, k.y as i64 + dr);
                if c < 0 || r < 0 {
                    continue;
                }
                let Some(n) = self.node_at(c as usize, r as usize) else {
                    continue;
                };
                let q = self.nodes[n as usize].position.truncate();
                let d = q.distance(p);
                if best.is_none_or(|(b, id)| d < b || (d == b && n < id))
                    && clear(set, p, q, self.settings.sample)
                {
                    best = Some((d, n));
                }
            }
        }
        best.map(|(_, n)| n)
    }

    /// The least-cost route from `from` to `to` (A*): the nodes' positions on the surface,
    /// the start's node first; the agent walks them as sub-goals, then to `to`. Refuses a goal
    /// (or start) not on walkable ground ([`MarkerError::GoalNotWalkable`]) or with no node in
    /// sight, and goals the graph does not connect ([`MarkerError::NoRoute`]).
    pub fn route(
        &self,
        set: &MarkerSet,
        from: DVec2,
        to: DVec2,
    ) -> Result<Vec<DVec3>, MarkerError> {
        for p in [from, to] {
            if !p.is_finite() {
                return Err(MarkerError::NonFinite("a route's end"));
            }
            if !set.is_walkable(p) {
                return Err(MarkerError::GoalNotWalkable { x: p.x, y: p.y });
            }
        }
        let (Some(start), Some(goal)) = (self.nearest(set, from), self.nearest(set, to)) else {
            return Err(MarkerError::NoRoute);
        };
        let target = self.nodes[goal as usize].position;
        let found = pathfinding::prelude::astar(
            &start,
            |&n| {
                self.edges[n as usize]
                    .iter()
                    .map(|&(m, c)| (m, (c * COST_UNIT).round() as u64))
                    .collect::<Vec<_>>()
            },
            |&n| (self.nodes[n as usize].position.distance(target) * COST_UNIT).floor() as u64,
            |&n| n == goal,
        );
        let (path, _) = found.ok_or(MarkerError::NoRoute)?;
        Ok(path
            .into_iter()
            .map(|n| self.nodes[n as usize].position)
            .collect())
    }
}

/// Whether the segment `a`–`b` stays on ground a marker may lie on (tested every `sample`
/// metres, both ends included) and crosses no obstacle.
fn clear(set: &MarkerSet, a: DVec2, b: DVec2, sample: f64) -> bool {
    if !set.sees(a, b) {
        return false;
    }
    let n = ((a.distance(b) / sample).ceil() as usize).max(1);
    (0..=n).all(|k| set.is_walkable(a.lerp(b, k as f64 / n as f64)))
}

/// Whether `p` is walkable with `clearance` round it: walkable at eight points that far off
/// and no obstacle nearer.
fn roomy(set: &MarkerSet, p: DVec2, clearance: f64) -> bool {
    if !set.is_walkable(p) {
        return false;
    }
    if clearance <= 0.0 {
        return true;
    }
    set.obstacle_distance(p, clearance) >= clearance
        && (0..8).all(|k| {
            let q = p + DVec2::from_angle(k as f64 * std::f64::consts::FRAC_PI_4) * clearance;
            set.is_walkable(q)
        })
}

/// An edge's cost (see the module doc), `None` across forbidden ground or an obstacle.
fn edge_cost(set: &MarkerSet, a: DVec3, b: DVec3, settings: &GraphSettings) -> Option<f64> {
    let (a2, b2) = (a.truncate(), b.truncate());
    if !set.sees(a2, b2) {
        return None;
    }
    let n = ((a2.distance(b2) / settings.sample).ceil() as usize).max(1);
    let mut intensity = 0.0;
    let mut length = 0.0;
    let mut last = a;
    for k in 0..=n {
        let p = a2.lerp(b2, k as f64 / n as f64);
        if !roomy(set, p, settings.clearance) {
            return None;
        }
        if let Terrain::Avoid { intensity: i } = set.terrain().terrain_at(p) {
            intensity += i;
        }
        // The 3D length follows the surface between samples.
        let here = set.surface(p);
        length += here.distance(last);
        last = here;
    }
    let mean = intensity / (n + 1) as f64;
    Some(length * (1.0 + settings.avoid_penalty * mean))
}
