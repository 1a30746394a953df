//! Rasterising shapes into cells, inflated by an agent radius (digest 000 §3.2: "obstacles
//! should be grown by r", since agents are discs in the workspace and points on the grid).
//!
//! Every [`Shape`] is a convex *core* — a point, a segment or a convex polygon — plus a radius:
//! a disc is a point with its radius, a thick segment or polyline is segments with half their
//! thickness, boxes and polygons have radius 0. Rasterising with inflation `r` marks the cells
//! whose [`Coverage`] region lies within `radius + r` of the core.
//!
//! [`Coverage::Touch`] (the default) marks every cell whose square comes within that distance,
//! so a wall thinner than a cell still blocks the 4-neighbour flow. [`Coverage::Centre`] marks
//! only cells whose centre does, which is tighter but can leak through thin walls.

use glam::DVec2;

use crate::FieldError;
use crate::field::Field;
use crate::grid::{GridGeometry, check_finite};
use crate::scalar::Potential;

/// Which part of a cell must lie inside the inflated shape for the cell to be marked.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Coverage {
    /// Any point of the cell's square: conservative, never leaks through thin walls.
    #[default]
    Touch,
    /// The cell's centre.
    Centre,
}

/// A 2D shape in world coordinates.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A disc.
    Disc {
        /// Centre.
        centre: DVec2,
        /// Radius (≥ 0).
        radius: f64,
    },
    /// An axis-aligned box.
    Aabb {
        /// Lower-left corner.
        min: DVec2,
        /// Upper-right corner.
        max: DVec2,
    },
    /// A box rotated by `angle` radians (counter-clockwise) about its centre.
    RotatedBox {
        /// Centre.
        centre: DVec2,
        /// Half width and half height before rotation (≥ 0).
        half_extents: DVec2,
        /// Counter-clockwise rotation in radians.
        angle: f64,
    },
    /// A convex polygon, in either winding.
    Polygon(Vec<DVec2>),
    /// A segment with a thickness (its full width).
    Segment {
        /// One end.
        a: DVec2,
        /// The other end.
        b: DVec2,
        /// Full width (≥ 0).
        thickness: f64,
    },
    /// An open polyline with a thickness (its full width).
    Polyline {
        /// Vertices in order (at least one).
        points: Vec<DVec2>,
        /// Full width (≥ 0).
        thickness: f64,
    },
}

/// A convex core of a shape.
#[derive(Debug, Clone)]
enum Core {
    Point(DVec2),
    Segment(DVec2, DVec2),
    /// Counter-clockwise convex polygon with at least 3 vertices.
    Convex(Vec<DVec2>),
}

impl Shape {
    /// Checks that every number is finite, extents are non-negative and polygons are convex.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.cores().map(|_| ())
    }

    /// The axis-aligned box `(min, max)` containing the shape (thickness and radius included).
    pub fn bounds(&self) -> Result<(DVec2, DVec2), FieldError> {
        let (cores, radius) = self.cores()?;
        let (mut lo, mut hi) = (DVec2::INFINITY, DVec2::NEG_INFINITY);
        for core in &cores {
            let (a, b) = core_bounds(core);
            lo = lo.min(a);
            hi = hi.max(b);
        }
        Ok((lo - DVec2::splat(radius), hi + DVec2::splat(radius)))
    }

    /// The convex cores and the radius around them.
    fn cores(&self) -> Result<(Vec<Core>, f64), FieldError> {
        let finite = |p: DVec2| -> Result<DVec2, FieldError> {
            check_finite("shape x", p.x)?;
            check_finite("shape y", p.y)?;
            Ok(p)
        };
        let extent = |v: f64| -> Result<f64, FieldError> {
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(FieldError::BadExtent(v))
            }
        };
        Ok(match self {
            Shape::Disc { centre, radius } => {
                (vec![Core::Point(finite(*centre)?)], extent(*radius)?)
            }
            Shape::Aabb { min, max } => {
                let (lo, hi) = (finite(min.min(*max))?, finite(max.max(*min))?);
                let corners = vec![lo, DVec2::new(hi.x, lo.y), hi, DVec2::new(lo.x, hi.y)];
                (vec![convex_core(corners)?], 0.0)
            }
            Shape::RotatedBox {
                centre,
                half_extents,
                angle,
            } => {
                let c = finite(*centre)?;
                let (hx, hy) = (extent(half_extents.x)?, extent(half_extents.y)?);
                check_finite("angle", *angle)?;
                let rot = DVec2::from_angle(*angle);
                let corners = [(-hx, -hy), (hx, -hy), (hx, hy), (-hx, hy)]
                    .map(|(x, y)| c + rot.rotate(DVec2::new(x, y)))
                    .to_vec();
                (vec![convex_core(corners)?], 0.0)
            }
            Shape::Polygon(points) => {
                let pts = points
                    .iter()
                    .map(|p| finite(*p))
                    .collect::<Result<Vec<_>, _>>()?;
                (vec![convex_core(pts)?], 0.0)
            }
            Shape::Segment { a, b, thickness } => (
                vec![Core::Segment(finite(*a)?, finite(*b)?)],
                extent(*thickness)? * 0.5,
            ),
            Shape::Polyline { points, thickness } => {
                let pts = points
                    .iter()
                    .map(|p| finite(*p))
                    .collect::<Result<Vec<_>, _>>()?;
                let cores = match pts.len() {
                    0 => return Err(FieldError::BadExtent(0.0)),
                    1 => vec![Core::Point(pts[0])],
                    _ => pts.windows(2).map(|w| Core::Segment(w[0], w[1])).collect(),
                };
                (cores, extent(*thickness)? * 0.5)
            }
        })
    }

    /// The shape moved from its own frame into the world: scaled by `scale` (per axis),
    /// rotated by `angle` radians counter-clockwise, then translated by `offset` (the order of
    /// a 2D transform). Boxes that end up rotated become [`Shape::RotatedBox`]; radii and
    /// thicknesses scale by the larger axis factor, so the result never shrinks below the true
    /// shape. Non-uniform scales of discs give the enclosing disc.
    pub fn transformed(&self, offset: DVec2, angle: f64, scale: DVec2) -> Shape {
        let rot = DVec2::from_angle(angle);
        let map = |p: DVec2| offset + rot.rotate(p * scale);
        let grow = scale.x.abs().max(scale.y.abs());
        match self {
            Shape::Disc { centre, radius } => Shape::Disc {
                centre: map(*centre),
                radius: radius * grow,
            },
            Shape::Aabb { min, max } => {
                let half = ((*max - *min) * 0.5 * scale).abs();
                let centre = map((*min + *max) * 0.5);
                if angle == 0.0 {
                    Shape::Aabb {
                        min: centre - half,
                        max: centre + half,
                    }
                } else {
                    Shape::RotatedBox {
                        centre,
                        half_extents: half,
                        angle,
                    }
                }
            }
            Shape::RotatedBox {
                centre,
                half_extents,
                angle: own,
            } => {
                // Exact for uniform scales and for scales along the box's own axes.
                let local = DVec2::from_angle(*own);
                let sx = (local * scale).length();
                let sy = (local.perp() * scale).length();
                Shape::RotatedBox {
                    centre: map(*centre),
                    half_extents: *half_extents * DVec2::new(sx, sy),
                    angle: own + angle,
                }
            }
            Shape::Polygon(points) => Shape::Polygon(points.iter().map(|p| map(*p)).collect()),
            Shape::Segment { a, b, thickness } => Shape::Segment {
                a: map(*a),
                b: map(*b),
                thickness: thickness * grow,
            },
            Shape::Polyline { points, thickness } => Shape::Polyline {
                points: points.iter().map(|p| map(*p)).collect(),
                thickness: thickness * grow,
            },
        }
    }

    /// Distance from a world point to the shape (0 inside).
    pub fn distance(&self, point: DVec2) -> Result<f64, FieldError> {
        // Discs and boxes without building their cores (no allocation), for the shapes the
        // collision guard and the goal checks meet most: a disc with the arithmetic of the
        // general path below, a box by clamping the point into it (exact along each axis).
        match self {
            Shape::Disc { centre, radius }
                if centre.is_finite() && radius.is_finite() && *radius >= 0.0 =>
            {
                let d = f64::INFINITY.min((point - *centre).length());
                return Ok((d - radius).max(0.0));
            }
            Shape::Aabb { min, max } if min.is_finite() && max.is_finite() && point.is_finite() => {
                // The offset to the nearest point of the box: zero along an axis where the
                // point lies within the box's span.
                return Ok(point_box_distance(point, min.min(*max), max.max(*min)));
            }
            _ => {}
        }
        let (cores, radius) = self.cores()?;
        let d = cores
            .iter()
            .map(|c| point_core_distance(point, c))
            .fold(f64::INFINITY, f64::min);
        Ok((d - radius).max(0.0))
    }

    /// Distance from the segment `a`–`b` to the shape (0 when they touch or cross): a line of
    /// sight from `a` to `b` is blocked when this is 0. Exact for every shape.
    pub fn segment_distance(&self, a: DVec2, b: DVec2) -> Result<f64, FieldError> {
        if !(a.is_finite() && b.is_finite()) {
            return Err(FieldError::NonFinite {
                what: "segment end",
                value: if a.is_finite() { b.x + b.y } else { a.x + a.y },
            });
        }
        let (cores, radius) = self.cores()?;
        let d = cores
            .iter()
            .map(|c| segment_core_distance(a, b, c))
            .fold(f64::INFINITY, f64::min);
        Ok((d - radius).max(0.0))
    }

    /// The cells of `geometry` covered by the shape grown by `inflation` (typically the agent
    /// radius). Cells outside the grid are skipped.
    pub fn cells(
        &self,
        geometry: &GridGeometry,
        inflation: f64,
        coverage: Coverage,
    ) -> Result<Vec<(usize, usize)>, FieldError> {
        if !(inflation.is_finite() && inflation >= 0.0) {
            return Err(FieldError::BadExtent(inflation));
        }
        // A box's own cells (goals are often boxes, stamped into every window near them): the
        // cells whose centre lies in the closed box, which is what the distance test of the
        // general path finds at zero reach, without a distance per cell.
        if let (Shape::Aabb { min, max }, Coverage::Centre) = (self, coverage)
            && inflation == 0.0
            && min.is_finite()
            && max.is_finite()
        {
            let (lo, hi) = (min.min(*max), max.max(*min));
            // Wide enough that the general path's core keeps all four corners.
            if hi.x - lo.x > 1e-6 && hi.y - lo.y > 1e-6 {
                return Ok(box_centre_cells(geometry, lo, hi));
            }
        }
        self.cells_general(geometry, inflation, coverage)
    }

    /// [`Self::cells`] through the shape's cores, a distance test per cell near each core.
    fn cells_general(
        &self,
        geometry: &GridGeometry,
        inflation: f64,
        coverage: Coverage,
    ) -> Result<Vec<(usize, usize)>, FieldError> {
        let (cores, radius) = self.cores()?;
        let reach = radius + inflation;
        let half = DVec2::splat(geometry.cell_size() * 0.5);
        let mut out = Vec::new();
        for core in &cores {
            let (lo, hi) = core_bounds(core);
            let lo = geometry.world_to_cell(lo - DVec2::splat(reach) - half);
            let hi = geometry.world_to_cell(hi + DVec2::splat(reach) + half);
            let x0 = lo.x.max(0) as usize;
            let y0 = lo.y.max(0) as usize;
            let x1 = (hi.x.min(geometry.width() as i32 - 1)).max(-1);
            let y1 = (hi.y.min(geometry.height() as i32 - 1)).max(-1);
            if x1 < 0 || y1 < 0 {
                continue;
            }
            for y in y0..=y1 as usize {
                for x in x0..=x1 as usize {
                    let c = geometry.cell_centre(x, y);
                    let d = match coverage {
                        Coverage::Centre => point_core_distance(c, core),
                        Coverage::Touch => square_core_distance(c - half, c + half, core),
                    };
                    if d <= reach {
                        out.push((x, y));
                    }
                }
            }
        }
        out.sort_unstable_by_key(|&(x, y)| (y, x));
        out.dedup();
        Ok(out)
    }
}

/// The cells of `geometry` whose centre lies in the closed box `[lo, hi]`, in (y, x) order.
fn box_centre_cells(geometry: &GridGeometry, lo: DVec2, hi: DVec2) -> Vec<(usize, usize)> {
    let half = DVec2::splat(geometry.cell_size() * 0.5);
    let (a, b) = (
        geometry.world_to_cell(lo - half),
        geometry.world_to_cell(hi + half),
    );
    let (x0, y0) = (a.x.max(0) as usize, a.y.max(0) as usize);
    let (x1, y1) = (
        b.x.min(geometry.width() as i32 - 1),
        b.y.min(geometry.height() as i32 - 1),
    );
    let mut out = Vec::new();
    if x1 < 0 || y1 < 0 {
        return out;
    }
    for y in y0..=y1 as usize {
        for x in x0..=x1 as usize {
            let c = geometry.cell_centre(x, y);
            if c.cmpge(lo).all() && c.cmple(hi).all() {
                out.push((x, y));
            }
        }
    }
    out
}

/// Marks the cells covered by `shape` (grown by `inflation`) as obstacles. Returns how many
/// cells it marked. The field is untouched if the shape is invalid.
pub fn rasterise_obstacle<T: Potential>(
    field: &mut Field<T>,
    shape: &Shape,
    inflation: f64,
    coverage: Coverage,
) -> Result<usize, FieldError> {
    let cells = shape.cells(field.geometry(), inflation, coverage)?;
    for &(x, y) in &cells {
        field.set_obstacle(x, y)?;
    }
    Ok(cells.len())
}

/// Marks the cells covered by `shape` as goals (p = 0). Returns how many cells it marked.
pub fn rasterise_goal<T: Potential>(
    field: &mut Field<T>,
    shape: &Shape,
    coverage: Coverage,
) -> Result<usize, FieldError> {
    let cells = shape.cells(field.geometry(), 0.0, coverage)?;
    for &(x, y) in &cells {
        field.set_goal(x, y)?;
    }
    Ok(cells.len())
}

fn convex_core(mut pts: Vec<DVec2>) -> Result<Core, FieldError> {
    pts.dedup_by(|a, b| (*a - *b).length_squared() < 1e-24);
    while pts.len() > 1 && (pts[0] - pts[pts.len() - 1]).length_squared() < 1e-24 {
        pts.pop();
    }
    match pts.len() {
        0 => return Err(FieldError::NotConvex),
        1 => return Ok(Core::Point(pts[0])),
        2 => return Ok(Core::Segment(pts[0], pts[1])),
        _ => {}
    }
    let n = pts.len();
    let area: f64 = (0..n).map(|i| pts[i].perp_dot(pts[(i + 1) % n])).sum();
    if area.abs() < 1e-18 {
        // Degenerate (collinear): treat as the segment spanning the points.
        let (a, b) = extreme_pair(&pts);
        return Ok(Core::Segment(a, b));
    }
    if area < 0.0 {
        pts.reverse();
    }
    for i in 0..n {
        let (a, b, c) = (pts[i], pts[(i + 1) % n], pts[(i + 2) % n]);
        if (b - a).perp_dot(c - b) < -1e-12 {
            return Err(FieldError::NotConvex);
        }
    }
    Ok(Core::Convex(pts))
}

fn extreme_pair(pts: &[DVec2]) -> (DVec2, DVec2) {
    let mut best = (pts[0], pts[0], 0.0);
    for a in pts {
        for b in pts {
            let d = (*a - *b).length_squared();
            if d > best.2 {
                best = (*a, *b, d);
            }
        }
    }
    (best.0, best.1)
}

fn core_bounds(core: &Core) -> (DVec2, DVec2) {
    match core {
        Core::Point(p) => (*p, *p),
        Core::Segment(a, b) => (a.min(*b), a.max(*b)),
        Core::Convex(pts) => pts
            .iter()
            .fold((pts[0], pts[0]), |(lo, hi), p| (lo.min(*p), hi.max(*p))),
    }
}

fn point_segment_distance(p: DVec2, a: DVec2, b: DVec2) -> f64 {
    let ab = b - a;
    let len2 = ab.length_squared();
    let t = if len2 > 0.0 {
        ((p - a).dot(ab) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    (p - (a + ab * t)).length()
}

fn point_box_distance(p: DVec2, lo: DVec2, hi: DVec2) -> f64 {
    (p - p.clamp(lo, hi)).length()
}

fn point_core_distance(p: DVec2, core: &Core) -> f64 {
    match core {
        Core::Point(c) => (p - *c).length(),
        Core::Segment(a, b) => point_segment_distance(p, *a, *b),
        Core::Convex(pts) => point_convex_distance(p, pts),
    }
}

/// Distance from `p` to a counter-clockwise convex polygon (0 inside).
fn point_convex_distance(p: DVec2, pts: &[DVec2]) -> f64 {
    let n = pts.len();
    let inside = (0..n).all(|i| (pts[(i + 1) % n] - pts[i]).perp_dot(p - pts[i]) >= 0.0);
    if inside {
        0.0
    } else {
        (0..n)
            .map(|i| point_segment_distance(p, pts[i], pts[(i + 1) % n]))
            .fold(f64::INFINITY, f64::min)
    }
}

/// Distance between two segments (0 when they cross or touch).
fn segment_segment_distance(a: DVec2, b: DVec2, c: DVec2, d: DVec2) -> f64 {
    let (r, s) = (b - a, d - c);
    let denom = r.perp_dot(s);
    if denom != 0.0 {
        let t = (c - a).perp_dot(s) / denom;
        let u = (c - a).perp_dot(r) / denom;
        if (0.0..=1.0).contains(&t) && (0.0..=1.0).contains(&u) {
            return 0.0;
        }
    }
    point_segment_distance(a, c, d)
        .min(point_segment_distance(b, c, d))
        .min(point_segment_distance(c, a, b))
        .min(point_segment_distance(d, a, b))
}

/// Distance between the segment `a`–`b` and a convex core (0 when they overlap).
fn segment_core_distance(a: DVec2, b: DVec2, core: &Core) -> f64 {
    match core {
        Core::Point(p) => point_segment_distance(*p, a, b),
        Core::Segment(c, d) => segment_segment_distance(a, b, *c, *d),
        Core::Convex(pts) => {
            // Inside (either end) or crossing an edge: 0; otherwise the nearest edge.
            if point_core_distance(a, core) == 0.0 || point_core_distance(b, core) == 0.0 {
                return 0.0;
            }
            let n = pts.len();
            (0..n)
                .map(|i| segment_segment_distance(a, b, pts[i], pts[(i + 1) % n]))
                .fold(f64::INFINITY, f64::min)
        }
    }
}

/// Distance between an axis-aligned square `[lo, hi]` and a convex core (0 when they overlap).
fn square_core_distance(lo: DVec2, hi: DVec2, core: &Core) -> f64 {
    let corners = [lo, DVec2::new(hi.x, lo.y), hi, DVec2::new(lo.x, hi.y)];
    let (pts, edges): (&[DVec2], usize) = match core {
        Core::Point(p) => return point_box_distance(*p, lo, hi),
        Core::Segment(a, b) => {
            if segment_hits_box(*a, *b, lo, hi) {
                return 0.0;
            }
            return [*a, *b]
                .iter()
                .map(|p| point_box_distance(*p, lo, hi))
                .chain(corners.iter().map(|c| point_segment_distance(*c, *a, *b)))
                .fold(f64::INFINITY, f64::min);
        }
        Core::Convex(pts) => (pts.as_slice(), pts.len()),
    };
    if convex_overlaps_box(pts, lo, hi) {
        return 0.0;
    }
    let a = pts.iter().map(|p| point_box_distance(*p, lo, hi));
    let b = corners.iter().flat_map(|c| {
        (0..edges).map(move |i| point_segment_distance(*c, pts[i], pts[(i + 1) % edges]))
    });
    a.chain(b).fold(f64::INFINITY, f64::min)
}

/// Separating-axis test between a counter-clockwise convex polygon and a box.
fn convex_overlaps_box(pts: &[DVec2], lo: DVec2, hi: DVec2) -> bool {
    let (plo, phi) = pts
        .iter()
        .fold((pts[0], pts[0]), |(a, b), p| (a.min(*p), b.max(*p)));
    if phi.x < lo.x || plo.x > hi.x || phi.y < lo.y || plo.y > hi.y {
        return false;
    }
    let corners = [lo, DVec2::new(hi.x, lo.y), hi, DVec2::new(lo.x, hi.y)];
    let n = pts.len();
    for i in 0..n {
        let (a, b) = (pts[i], pts[(i + 1) % n]);
        // Outward normal side: all box corners strictly outside this edge → separated.
        if corners.iter().all(|c| (b - a).perp_dot(*c - a) < 0.0) {
            return false;
        }
    }
    true
}

/// Whether segment ab meets the box (slab clipping).
fn segment_hits_box(a: DVec2, b: DVec2, lo: DVec2, hi: DVec2) -> bool {
    let d = b - a;
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for axis in 0..2 {
        let (p, dp, l, h) = if axis == 0 {
            (a.x, d.x, lo.x, hi.x)
        } else {
            (a.y, d.y, lo.y, hi.y)
        };
        if dp.abs() < 1e-300 {
            if p < l || p > h {
                return false;
            }
        } else {
            let (mut ta, mut tb) = ((l - p) / dp, (h - p) / dp);
            if ta > tb {
                std::mem::swap(&mut ta, &mut tb);
            }
            t0 = t0.max(ta);
            t1 = t1.min(tb);
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The allocation-free distance of discs is the general path's, bit for bit (NaN and
    /// infinite points included); a box's is the exact clamped offset, within rounding of the
    /// general path (degenerate boxes included).
    #[test]
    fn disc_and_box_distances_match_the_general_path_bit_for_bit() {
        let general = |shape: &Shape, p: DVec2| {
            let (cores, radius) = shape.cores().unwrap();
            let d = cores
                .iter()
                .map(|c| point_core_distance(p, c))
                .fold(f64::INFINITY, f64::min);
            (d - radius).max(0.0)
        };
        let shapes = [
            Shape::Disc {
                centre: DVec2::new(0.3, -0.2),
                radius: 0.7,
            },
            Shape::Disc {
                centre: DVec2::ZERO,
                radius: 0.0,
            },
            Shape::Aabb {
                min: DVec2::new(-1.0, 0.5),
                max: DVec2::new(2.0, 1.25),
            },
            Shape::Aabb {
                min: DVec2::new(2.0, 1.25),
                max: DVec2::new(-1.0, 0.5),
            },
            Shape::Aabb {
                min: DVec2::new(0.0, 0.0),
                max: DVec2::new(0.0, 3.0),
            },
            Shape::Aabb {
                min: DVec2::new(0.0, 0.0),
                max: DVec2::new(1e-7, 3.0),
            },
        ];
        let mut points: Vec<DVec2> = (0..400)
            .map(|k| {
                DVec2::new(
                    -3.0 + 0.0173 * k as f64,
                    2.5 - 0.0131 * (k * 7 % 400) as f64,
                )
            })
            .collect();
        points.extend([
            DVec2::new(f64::NAN, 0.0),
            DVec2::new(f64::INFINITY, 1.0),
            DVec2::new(-1.0, 0.5),
        ]);
        for shape in &shapes {
            for p in &points {
                let fast = shape.distance(*p).unwrap();
                match shape {
                    Shape::Aabb { min, max } if p.is_finite() => {
                        // Exactly the clamped offset; the general path (a polygon of four
                        // corners, or a segment) agrees up to its rounding.
                        let want = point_box_distance(*p, min.min(*max), max.max(*min));
                        assert_eq!(fast.to_bits(), want.to_bits(), "{shape:?} at {p}");
                        assert!(
                            (fast - general(shape, *p)).abs() < 1e-12,
                            "{shape:?} at {p}"
                        );
                    }
                    _ => assert_eq!(
                        fast.to_bits(),
                        general(shape, *p).to_bits(),
                        "{shape:?} at {p}"
                    ),
                }
            }
        }
    }
    proptest::proptest! {
        /// A box's centre cells at zero reach are the general path's, for boxes inside, across
        /// and outside the grid, either way round.
        #[test]
        fn box_centre_cells_match_the_general_path(
            x in -4.0f64..24.0,
            y in -4.0f64..24.0,
            w in -9.0f64..9.0,
            h in -9.0f64..9.0,
            cell in 0.3f64..1.7,
        ) {
            let g = GridGeometry::new(DVec2::new(0.37, -0.21), cell, 15, 13).unwrap();
            let shape = Shape::Aabb {
                min: DVec2::new(x, y),
                max: DVec2::new(x + w, y + h),
            };
            proptest::prop_assert_eq!(
                shape.cells(&g, 0.0, Coverage::Centre).unwrap(),
                shape.cells_general(&g, 0.0, Coverage::Centre).unwrap()
            );
        }
    }

    /// Box edges through cell centres: those cells are the box's (closed box), as the general
    /// path has them.
    #[test]
    fn box_centre_cells_on_the_edges_match_the_general_path() {
        let g = GridGeometry::new(DVec2::ZERO, 1.0, 12, 12).unwrap();
        for (lo, hi) in [
            (DVec2::new(2.5, 3.5), DVec2::new(6.5, 3.5 + 4.0)),
            (DVec2::new(-3.0, 0.5), DVec2::new(0.5, 11.5)),
            (DVec2::new(11.5, 11.5), DVec2::new(20.0, 20.0)),
        ] {
            let shape = Shape::Aabb { min: lo, max: hi };
            let fast = shape.cells(&g, 0.0, Coverage::Centre).unwrap();
            assert_eq!(
                fast,
                shape.cells_general(&g, 0.0, Coverage::Centre).unwrap()
            );
            assert!(fast.contains(&(hi.x.min(11.5) as usize, hi.y.min(11.5) as usize)));
        }
    }

    use crate::field::CellKind;

    fn grid() -> GridGeometry {
        GridGeometry::new(DVec2::ZERO, 1.0, 20, 20).unwrap()
    }

    #[test]
    fn disc_centre_coverage_matches_the_distance_test() {
        let g = grid();
        let disc = Shape::Disc {
            centre: DVec2::new(10.0, 10.0),
            radius: 3.0,
        };
        let cells = disc.cells(&g, 0.0, Coverage::Centre).unwrap();
        for y in 0..20 {
            for x in 0..20 {
                let inside = (g.cell_centre(x, y) - DVec2::new(10.0, 10.0)).length() <= 3.0;
                assert_eq!(cells.contains(&(x, y)), inside, "({x}, {y})");
            }
        }
    }

    #[test]
    fn inflation_grows_every_shape() {
        let g = grid();
        let shapes = [
            Shape::Disc {
                centre: DVec2::new(10.0, 10.0),
                radius: 2.0,
            },
            Shape::Aabb {
                min: DVec2::new(6.0, 7.0),
                max: DVec2::new(12.0, 9.0),
            },
            Shape::RotatedBox {
                centre: DVec2::new(10.0, 10.0),
                half_extents: DVec2::new(4.0, 1.0),
                angle: 0.6,
            },
            Shape::Polygon(vec![
                DVec2::new(5.0, 5.0),
                DVec2::new(14.0, 6.0),
                DVec2::new(9.0, 13.0),
            ]),
            Shape::Segment {
                a: DVec2::new(4.0, 4.0),
                b: DVec2::new(15.0, 12.0),
                thickness: 0.2,
            },
            Shape::Polyline {
                points: vec![
                    DVec2::new(3.0, 3.0),
                    DVec2::new(10.0, 3.5),
                    DVec2::new(10.0, 15.0),
                ],
                thickness: 0.5,
            },
        ];
        for s in &shapes {
            for cov in [Coverage::Centre, Coverage::Touch] {
                let small = s.cells(&g, 0.0, cov).unwrap();
                let big = s.cells(&g, 1.5, cov).unwrap();
                assert!(small.iter().all(|c| big.contains(c)), "{s:?}");
                assert!(big.len() > small.len(), "{s:?} {cov:?}");
                // Every marked centre lies within the inflated distance (plus half a diagonal
                // for Touch), and every unmarked centre is farther than the inflation.
                for y in 0..20 {
                    for x in 0..20 {
                        let d = s.distance(g.cell_centre(x, y)).unwrap();
                        let marked = big.contains(&(x, y));
                        match cov {
                            Coverage::Centre => assert_eq!(marked, d <= 1.5, "{s:?} ({x},{y}) {d}"),
                            Coverage::Touch => {
                                if d <= 1.5 {
                                    assert!(marked);
                                }
                                if marked {
                                    assert!(d <= 1.5 + 0.5f64.sqrt() + 1e-9);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_thin_diagonal_wall_blocks_four_neighbour_flow_with_touch_coverage() {
        let g = grid();
        let wall = Shape::Segment {
            a: DVec2::new(0.0, 0.3),
            b: DVec2::new(19.7, 20.0),
            thickness: 0.05,
        };
        let cells = wall.cells(&g, 0.0, Coverage::Touch).unwrap();
        // Flood fill from below the wall, 4-connected, must not reach above it.
        let mut blocked = vec![false; 400];
        for (x, y) in cells {
            blocked[y * 20 + x] = true;
        }
        let mut seen = vec![false; 400];
        let mut stack = vec![(15usize, 2usize)];
        while let Some((x, y)) = stack.pop() {
            let i = y * 20 + x;
            if seen[i] || blocked[i] {
                continue;
            }
            seen[i] = true;
            if x > 0 {
                stack.push((x - 1, y));
            }
            if x < 19 {
                stack.push((x + 1, y));
            }
            if y > 0 {
                stack.push((x, y - 1));
            }
            if y < 19 {
                stack.push((x, y + 1));
            }
        }
        assert!(!seen[18 * 20 + 2], "flow leaked through the wall");
    }

    #[test]
    fn rasterising_marks_obstacles_and_goals() {
        let mut f = Field::<f64>::new(grid(), 1.0);
        let n = rasterise_obstacle(
            &mut f,
            &Shape::Aabb {
                min: DVec2::new(5.0, 5.0),
                max: DVec2::new(7.0, 6.0),
            },
            0.0,
            Coverage::Centre,
        )
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(f.kind(5, 5), Some(CellKind::Obstacle));
        assert_eq!(f.kind(6, 5), Some(CellKind::Obstacle));
        rasterise_goal(
            &mut f,
            &Shape::Disc {
                centre: DVec2::new(15.5, 15.5),
                radius: 0.2,
            },
            Coverage::Centre,
        )
        .unwrap();
        assert_eq!(f.kind(15, 15), Some(CellKind::Goal));
    }

    #[test]
    fn bad_shapes_are_typed_errors_and_change_nothing() {
        let mut f = Field::<f64>::new(grid(), 1.0);
        let before = f.clone();
        let concave = Shape::Polygon(vec![
            DVec2::new(2.0, 2.0),
            DVec2::new(8.0, 2.0),
            DVec2::new(5.0, 4.0),
            DVec2::new(8.0, 8.0),
            DVec2::new(2.0, 8.0),
        ]);
        assert_eq!(
            rasterise_obstacle(&mut f, &concave, 0.0, Coverage::Touch),
            Err(FieldError::NotConvex)
        );
        let nan = Shape::Disc {
            centre: DVec2::new(f64::NAN, 1.0),
            radius: 1.0,
        };
        assert!(matches!(nan.validate(), Err(FieldError::NonFinite { .. })));
        let negative = Shape::Segment {
            a: DVec2::ZERO,
            b: DVec2::ONE,
            thickness: -1.0,
        };
        assert_eq!(negative.validate(), Err(FieldError::BadExtent(-1.0)));
        assert!(
            Shape::Disc {
                centre: DVec2::ONE,
                radius: 1.0
            }
            .cells(&grid(), f64::NAN, Coverage::Touch)
            .is_err()
        );
        assert_eq!(f, before);
    }

    #[test]
    fn clockwise_polygons_and_shapes_off_the_grid_are_handled() {
        let g = grid();
        let ccw = Shape::Polygon(vec![
            DVec2::new(2.0, 2.0),
            DVec2::new(8.0, 2.0),
            DVec2::new(8.0, 8.0),
        ]);
        let cw = Shape::Polygon(vec![
            DVec2::new(8.0, 8.0),
            DVec2::new(8.0, 2.0),
            DVec2::new(2.0, 2.0),
        ]);
        assert_eq!(
            ccw.cells(&g, 0.3, Coverage::Touch).unwrap(),
            cw.cells(&g, 0.3, Coverage::Touch).unwrap()
        );
        let far = Shape::Disc {
            centre: DVec2::new(-100.0, -100.0),
            radius: 2.0,
        };
        assert!(far.cells(&g, 1.0, Coverage::Touch).unwrap().is_empty());
    }

    #[test]
    fn transformed_shapes_keep_their_points_where_the_transform_puts_them() {
        let (offset, angle, scale) = (DVec2::new(3.0, -2.0), 0.7, DVec2::new(2.0, 2.0));
        let map = |p: DVec2| offset + DVec2::from_angle(angle).rotate(p * scale);
        let shapes = [
            Shape::Disc {
                centre: DVec2::new(1.0, 0.5),
                radius: 0.5,
            },
            Shape::Aabb {
                min: DVec2::new(-1.0, -0.5),
                max: DVec2::new(2.0, 0.5),
            },
            Shape::RotatedBox {
                centre: DVec2::new(0.5, 0.5),
                half_extents: DVec2::new(1.0, 0.25),
                angle: 0.3,
            },
            Shape::Polygon(vec![
                DVec2::ZERO,
                DVec2::new(2.0, 0.0),
                DVec2::new(1.0, 1.5),
            ]),
            Shape::Segment {
                a: DVec2::ZERO,
                b: DVec2::new(1.0, 1.0),
                thickness: 0.2,
            },
        ];
        // Probe points in the shape's own frame: distances scale with the (uniform) scale.
        for shape in &shapes {
            let moved = shape.transformed(offset, angle, scale);
            moved.validate().unwrap();
            for k in 0..50 {
                let p = DVec2::new(-2.0 + 0.09 * k as f64, -1.5 + 0.063 * k as f64);
                let before = shape.distance(p).unwrap() * 2.0;
                let after = moved.distance(map(p)).unwrap();
                assert!(
                    (before - after).abs() < 1e-9,
                    "{shape:?} at {p}: {before} vs {after}"
                );
            }
        }
        // No rotation keeps an axis-aligned box axis-aligned.
        let b = Shape::Aabb {
            min: DVec2::ZERO,
            max: DVec2::ONE,
        };
        assert!(matches!(
            b.transformed(DVec2::X, 0.0, DVec2::ONE),
            Shape::Aabb { .. }
        ));
    }
}
