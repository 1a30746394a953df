//! The commit's collision guard (step 3 of the crowd's step, see the parent module): each
//! agent's displacement, in id order, is shortened so that it stays the sum of radii from every
//! agent's committed position and its own radius from every static and moving shape. The seeds
//! rely on the speed law alone (seed 000 §4.4); the guard makes "no overlap" an invariant.

use glam::DVec2;

use crowdfield_field::{Shape, floor_i64};

use super::AgentGrid;

/// The shapes the collision guard keeps agents out of.
#[derive(Clone, Copy)]
pub(super) struct Obstacles<'a> {
    pub(super) statics: &'a [Shape],
    pub(super) static_bounds: &'a [(DVec2, DVec2)],
    pub(super) moving: &'a [(Shape, (DVec2, DVec2))],
    /// The static boxes on a grid, where there are many.
    pub(super) grid: Option<&'a ShapeGrid>,
    /// The moving boxes on a grid, where there are many.
    pub(super) moving_grid: Option<&'a ShapeGrid>,
}

/// Static (or moving) shapes from which on the collision guard and sensing look them up on a
/// [`ShapeGrid`] instead of scanning them all.
pub(super) const SHAPE_GRID_MIN: usize = 24;

/// Static shapes' boxes bucketed on a uniform grid over the world (a counting sort: each cell's
/// shapes are one slice, in increasing index order); boxes beyond the world count in its
/// border cells, and queries are clamped the same way, so a box that meets a query's box is
/// always among the cells the query visits.
#[derive(Debug, Clone)]
pub(super) struct ShapeGrid {
    origin: DVec2,
    inv_cell: f64,
    cols: usize,
    rows: usize,
    /// Cell `c`'s shapes are `items[starts[c]..starts[c + 1]]`.
    starts: Vec<u32>,
    items: Vec<u32>,
}

impl ShapeGrid {
    pub(super) fn new(bounds: &[(DVec2, DVec2)], min: DVec2, max: DVec2) -> Self {
        let extent = (max - min).max(DVec2::splat(1e-9));
        // About 4 m cells, at most 128 a side.
        let cell = (extent.x.max(extent.y) / 128.0).max(4.0);
        let cols = ((extent.x / cell).ceil() as usize).clamp(1, 128);
        let rows = ((extent.y / cell).ceil() as usize).clamp(1, 128);
        let mut grid = Self {
            origin: min,
            inv_cell: 1.0 / cell,
            cols,
            rows,
            starts: vec![0; cols * rows + 1],
            items: Vec::new(),
        };
        for pass in 0..2 {
            let mut fill = grid.starts.clone();
            for (k, (lo, hi)) in bounds.iter().enumerate() {
                let ((x0, y0), (x1, y1)) = (grid.cell(*lo), grid.cell(*hi));
                for y in y0..=y1 {
                    for x in x0..=x1 {
                        let c = y * cols + x;
                        if pass == 0 {
                            grid.starts[c + 1] += 1;
                        } else {
                            grid.items[fill[c] as usize] = k as u32;
                            fill[c] += 1;
                        }
                    }
                }
            }
            if pass == 0 {
                for c in 0..cols * rows {
                    grid.starts[c + 1] += grid.starts[c];
                }
                grid.items = vec![0; grid.starts[cols * rows] as usize];
            }
        }
        grid
    }

    /// The grid cell holding `p`, clamped to the grid (NaN to the first cell).
    pub(super) fn cell(&self, p: DVec2) -> (usize, usize) {
        let g = (p - self.origin) * self.inv_cell;
        let clamp = |v: f64, n: usize| (floor_i64(v).max(0) as usize).min(n - 1);
        (clamp(g.x, self.cols), clamp(g.y, self.rows))
    }

    /// Every shape in the cells the box `lo..hi` visits, cell by cell: each shape whose box
    /// meets it among them, and a shape that spans several cells once per cell.
    pub(super) fn candidates(&self, lo: DVec2, hi: DVec2) -> impl Iterator<Item = usize> + '_ {
        let ((x0, y0), (x1, y1)) = (self.cell(lo), self.cell(hi));
        (y0..=y1)
            .flat_map(move |y| (x0..=x1).map(move |x| y * self.cols + x))
            .flat_map(move |c| {
                self.items[self.starts[c] as usize..self.starts[c + 1] as usize]
                    .iter()
                    .map(|&k| k as usize)
            })
    }

    /// Every shape whose box may meet the box `lo..hi`, in increasing order, into `out`.
    pub(super) fn near(&self, lo: DVec2, hi: DVec2, out: &mut Vec<u32>) {
        out.clear();
        let ((x0, y0), (x1, y1)) = (self.cell(lo), self.cell(hi));
        for y in y0..=y1 {
            for x in x0..=x1 {
                let c = y * self.cols + x;
                out.extend_from_slice(
                    &self.items[self.starts[c] as usize..self.starts[c + 1] as usize],
                );
            }
        }
        out.sort_unstable();
        out.dedup();
    }
}

/// Appends to `close` the shapes of one kind (`count` of them, their indices shifted by
/// `offset`) that `keep` keeps, with the distance it gives (0 where the distance is an error),
/// in increasing index order: the candidates `grid` offers for the box `query` where there is a
/// grid (a superset of the shapes whose boxes meet it, in increasing order; `keep` picks among
/// them as among all), all of them otherwise.
fn add_close(
    close: &mut Vec<(usize, f64)>,
    offered: &mut Vec<u32>,
    grid: Option<&ShapeGrid>,
    (count, offset): (usize, usize),
    (lo, hi): (DVec2, DVec2),
    keep: impl Fn(usize) -> Option<Result<f64, crowdfield_field::FieldError>>,
) {
    let kept = |k: usize| keep(k).map(|d| (offset + k, d.unwrap_or(0.0)));
    match grid {
        Some(grid) => {
            grid.near(lo, hi, offered);
            close.extend(offered.iter().filter_map(|&k| kept(k as usize)));
        }
        None => close.extend((0..count).filter_map(kept)),
    }
}

/// The collision guard's buffers, reused from agent to agent through a commit.
#[derive(Default)]
pub(super) struct GuardScratch {
    /// Committed agents (position, radius) that could touch the agent's step.
    near: Vec<(DVec2, f64)>,
    /// Index (statics, then moving) and clearance at the start of shapes within reach.
    close: Vec<(usize, f64)>,
    /// Static shapes a [`ShapeGrid`] offers.
    offered: Vec<u32>,
}

/// Shortens `displacement` so the agent keeps clear of committed agents, static shapes and
/// moving obstacles. `hash` indexes the snapshot; `others` bounds how far beyond its indexed
/// centre another agent's committed disc reaches. `late` lists agents spawned during the step
/// (not in `hash`).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn guard_step(
    start: DVec2,
    displacement: DVec2,
    radius: f64,
    me: usize,
    committed: &[Option<(DVec2, f64)>],
    hash: &AgentGrid,
    others: f64,
    late: &[usize],
    obstacles: Obstacles<'_>,
    slides: bool,
    scratch: &mut GuardScratch,
) -> DVec2 {
    let len = displacement.length();
    if len == 0.0 {
        return DVec2::ZERO;
    }
    // Every tried position lies within `len` of the start, so an agent further than
    // `len + radius + r` (plus a margin for rounding) clears it from all of them: keep only
    // the others.
    let could_touch = |(q, r): (DVec2, f64)| {
        let reach = len + radius + r + 1e-6;
        (q - start).length_squared() <= reach * reach
    };
    let near = &mut scratch.near;
    near.clear();
    // The hash indexes the snapshot, and a committed disc reaches at most `others` beyond its
    // indexed centre: agents indexed further away cannot touch.
    hash.for_each_near(start, len + radius + others + 1e-6, |j| {
        if j != me
            && let Some(c) = committed[j]
            && could_touch(c)
        {
            near.push(c);
        }
    });
    near.extend(
        late.iter()
            .filter(|&&j| j != me)
            .filter_map(|&j| committed[j]),
    );
    // Static shapes whose bounding box comes within reach (the others stay at least `radius`
    // away from every tried position), with their clearance at the start.
    let reach = len + radius;
    // Boxes clearly beyond reach are dropped on squared distances (no square root; the margin
    // far exceeds rounding), the rest by the exact test.
    let clearly_beyond = reach * reach * (1.0 + 1e-9);
    let within = |(lo, hi): &(DVec2, DVec2)| {
        let gap = start - start.clamp(*lo, *hi);
        gap.length_squared() <= clearly_beyond && gap.length() <= reach
    };
    let close = &mut scratch.close;
    close.clear();
    let r = DVec2::splat(reach * (1.0 + 1e-9) + 1e-9);
    let query = (start - r, start + r);
    let statics = obstacles.statics.len();
    add_close(
        close,
        &mut scratch.offered,
        obstacles.grid,
        (statics, 0),
        query,
        |k| within(&obstacles.static_bounds[k]).then(|| obstacles.statics[k].distance(start)),
    );
    add_close(
        close,
        &mut scratch.offered,
        obstacles.moving_grid,
        (obstacles.moving.len(), statics),
        query,
        |k| {
            let (shape, bounds) = &obstacles.moving[k];
            within(bounds).then(|| shape.distance(start))
        },
    );
    let shape = |k: usize| {
        obstacles
            .statics
            .get(k)
            .unwrap_or_else(|| &obstacles.moving[k - obstacles.statics.len()].0)
    };
    let (near, close) = (&*near, &*close);
    let ok = |p: DVec2| {
        near.iter().all(|(q, r)| {
            let need = radius + r;
            let now = (p - *q).length();
            now >= need || now >= (start - *q).length()
        }) && close.iter().all(|(k, before)| {
            shape(*k)
                .distance(p)
                .is_ok_and(|d| d >= radius || d >= *before)
        })
    };
    if slides {
        return slide_step(start, displacement, radius, near, &ok);
    }
    let mut t = 1.0;
    for _ in 0..8 {
        if ok(start + displacement * t) {
            return displacement * t;
        }
        t *= 0.5;
    }
    DVec2::ZERO
}

/// The largest share `t` of `d` from `s` before the first contact with a disc of `near`
/// (prefix allowed), and the disc it meets.
fn disc_limit(s: DVec2, d: DVec2, radius: f64, near: &[(DVec2, f64)]) -> (f64, Option<DVec2>) {
    let mut t_max = 1.0;
    let mut hit = None;
    let dd = d.length_squared();
    for &(q, r) in near {
        let need = radius + r;
        let w = s - q;
        let c = w.length_squared() - need * need;
        let b = w.dot(d);
        if b >= 0.0 {
            continue; // moving away or sideways: never closer
        }
        if c <= 0.0 {
            // Already within contact: may not come closer.
            t_max = 0.0;
            hit = Some(q);
            continue;
        }
        let disc = b * b - dd * c;
        if disc < 0.0 {
            continue;
        }
        let t = (-b - disc.sqrt()) / dd;
        if t < t_max {
            t_max = t.max(0.0);
            hit = Some(q);
        }
    }
    (t_max, hit)
}

/// The guard's step of [`Preset::Flow`](crate::Preset::Flow): the longest share of the
/// displacement before the first contact with another agent (shortened further while the end
/// would come too near a shape, or rounding would put it in contact), then, with the share it
/// could not walk, one slide along the tangent of the agent it met, found the same way. The
/// two legs together are never longer than the displacement, so every agent and shape the
/// caller gathered within its reach is all that can be met.
fn slide_step(
    start: DVec2,
    displacement: DVec2,
    radius: f64,
    near: &[(DVec2, f64)],
    ok: &dyn Fn(DVec2) -> bool,
) -> DVec2 {
    let leg = |s: DVec2, d: DVec2| -> (DVec2, Option<DVec2>) {
        let (mut t, hit) = disc_limit(s, d, radius, near);
        if hit.is_some() {
            // Stop just short of the contact, so that rounding never puts it within.
            t = (t - 1e-9).max(0.0);
        }
        // Static shapes and rounding: shorten until the end is allowed.
        for _ in 0..12 {
            if t <= 0.0 {
                return (DVec2::ZERO, hit);
            }
            if ok(s + d * t) {
                return (d * t, hit);
            }
            t *= 0.7;
        }
        (DVec2::ZERO, hit)
    };
    let (first, hit) = leg(start, displacement);
    let rest = displacement - first;
    let Some(q) = hit else { return first };
    if rest.length_squared() < 1e-12 {
        return first;
    }
    let p = start + first;
    let n = (p - q).normalize_or_zero();
    let along = rest - n * rest.dot(n).min(0.0);
    if along.length_squared() < 1e-12 {
        return first;
    }
    let (second, _) = leg(p, along);
    first + second
}
