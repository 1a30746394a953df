//! Personal space and the seed's marker weighting (digest 002 §2.2, §2.4, §2.6, §2.8): each
//! step every marker within an agent's personal space R goes to the nearest such agent, so no
//! two agents share a marker; the weighting f of Eq. 7 turns an agent's markers into a heading
//! towards its goal (Eqs. 5–6); direct motion sums weighted offsets (Eqs. 10–11); d_enf keeps
//! agents t_min apart (Eq. 8).
//!
//! These are the building blocks of the marker back end's step; tree paths and behaviours come
//! on top.

use glam::DVec2;

use crowdfield_steer::AgentGrid;

use crate::{MarkerId, MarkerSet};

/// The seed's personal space radius R, metres (digest 002 §2.13).
pub const PERSONAL_RADIUS: f64 = 1.2;

/// The seed's minimum distance t_min kept by d_enf, metres (digest 002 §2.6).
pub const MIN_DISTANCE: f64 = 0.5;

/// Eq. 7: f(x, y) = (1 + cos θ) / (1 + ‖y‖), θ the angle between x (towards the goal) and y
/// (towards the marker); 0 when either is zero (or not finite). The plane's case of
/// [`biocrowds::weight`](crate::biocrowds::weight) (the same f, seed 003's Eq. 4.2).
pub fn weight(x: DVec2, y: DVec2) -> f64 {
    crate::biocrowds::weight(x.extend(0.0), y.extend(0.0))
}

/// Eqs. 5–6: the direction from `p` that its markers give towards `goal`, each offset
/// weighted by [`weight`] over the weights' sum; `None` where every weight is zero or the sum
/// of offsets is (digest 002 §2.4's edge cases: skip).
pub fn goal_direction(p: DVec2, goal: DVec2, markers: &[DVec2]) -> Option<DVec2> {
    let x = goal - p;
    let mut sum = 0.0;
    let mut d = DVec2::ZERO;
    for &m in markers {
        let w = weight(x, m - p);
        sum += w;
        d += w * (m - p);
    }
    if sum.is_nan() || sum <= 0.0 {
        return None;
    }
    let d = d / sum;
    (d.length_squared() > 0.0).then_some(d)
}

/// Eqs. 10–11: m_d = Σ w_k (m_k − p) over the markers with their weights; `None` when it is
/// zero.
pub fn direct_direction(p: DVec2, markers: &[(DVec2, f64)]) -> Option<DVec2> {
    let d: DVec2 = markers.iter().map(|&(m, w)| w * (m - p)).sum();
    (d.length_squared() > 0.0 && d.is_finite()).then_some(d)
}

/// Eq. 8 as printed: each agent closer than `t_min` to others moves by half its separation from
/// each, averaged over them (coincident agents get no push; agents at positions that are not
/// finite neither push nor are pushed). Neighbours are found on a grid and taken in index
/// order.
pub fn enforce_distance(positions: &[DVec2], t_min: f64) -> Vec<DVec2> {
    if !(t_min.is_finite() && t_min > 0.0) {
        return vec![DVec2::ZERO; positions.len()];
    }
    let points: Vec<Option<(DVec2, f64)>> = positions
        .iter()
        .map(|p| p.is_finite().then_some((*p, 0.0)))
        .collect();
    let grid = AgentGrid::build(&points, t_min);
    let mut near: Vec<usize> = Vec::new();
    positions
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            if !p.is_finite() {
                return DVec2::ZERO;
            }
            near.clear();
            grid.for_each_near(p, t_min, |j| near.push(j));
            near.sort_unstable();
            let mut sum = DVec2::ZERO;
            let mut count = 0usize;
            for &j in &near {
                let q = positions[j];
                if j != i && p.distance(q) < t_min {
                    sum += (p - q) * 0.5;
                    count += 1;
                }
            }
            if count == 0 {
                DVec2::ZERO
            } else {
                sum / count as f64
            }
        })
        .collect()
}

/// Splits the markers among agents (digest 002 §2.2, "personal space"): every marker within
/// `radius` of some agent goes to the nearest of them (the lower index on a tie), so no marker
/// has two owners. Returns each agent's markers, by id. Agents at positions that are not
/// finite get none.
///
/// The marker back end makes the same split each step, index band by index band in
/// parallel, summing each agent's motion as it goes.
pub fn split(set: &MarkerSet, agents: &[DVec2], radius: f64) -> Vec<Vec<MarkerId>> {
    struct Lists(Vec<Vec<MarkerId>>, Vec<usize>);
    impl Owners for Lists {
        fn cell(&mut self, _: DVec2, _: DVec2, candidates: &[Candidate]) {
            self.1.clear();
            self.1.extend(candidates.iter().map(|c| c.index));
        }
        fn marker(&mut self, owner: usize, id: u32, _: DVec2, _: f64) {
            self.0[self.1[owner]].push(MarkerId(id));
        }
    }
    let mut owned = Lists(vec![Vec::new(); agents.len()], Vec::new());
    if !(radius.is_finite() && radius > 0.0) {
        return owned.0;
    }
    let points: Vec<Option<DVec2>> = agents.iter().map(|p| p.is_finite().then_some(*p)).collect();
    let split = Split::new(set, &points, radius);
    let reach = split.reach(|_| true);
    for band in 0..split.bands() {
        split.walk_band(band, &reach, &mut owned);
    }
    for list in &mut owned.0 {
        list.sort_unstable();
    }
    owned.0
}

/// Index cell rows per band of [`Split`]: bands are the unit of parallel work, fixed so that
/// what is summed band by band does not depend on the thread count.
pub(crate) const BAND_ROWS: usize = 8;

/// Whether `b` is nearer than `a` to every point of the box `lo`–`hi`, by a margin no
/// rounding closes: ‖x − a‖² − ‖x − b‖² is affine in x, so its least value over the box is at
/// a corner.
fn nearer_all_over(b: DVec2, a: DVec2, lo: DVec2, hi: DVec2) -> bool {
    // ‖x − a‖² − ‖x − b‖² = 2 x·(b − a) + ‖a‖² − ‖b‖², taken relative to a for precision.
    let u = b - a;
    let corner = |v: f64, l: f64, h: f64| if v > 0.0 { l } else { h };
    let x = DVec2::new(corner(u.x, lo.x, hi.x), corner(u.y, lo.y, hi.y)) - a;
    let least = 2.0 * x.dot(u) - u.length_squared();
    least > 1e-9
}

/// The index cells within reach of some agents ([`Split::reach`]): a bit per cell.
pub(crate) struct Reach {
    bits: Vec<u64>,
    /// The index rows holding any, `rows.0..rows.1`.
    rows: (usize, usize),
}

impl Reach {
    fn has(&self, cell: usize) -> bool {
        self.bits[cell / 64] & (1 << (cell % 64)) != 0
    }
}

/// An agent that may own markers of the index cell at hand: its index among the agents and its
/// position.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate {
    pub index: usize,
    pub position: DVec2,
}

/// What [`Split::walk_band`] reports.
pub(crate) trait Owners {
    /// A new index cell (its lower and upper corners), with the agents that may own its
    /// markers (lowest index first).
    fn cell(&mut self, lo: DVec2, hi: DVec2, candidates: &[Candidate]);
    /// Marker `id` at `m` goes to the cell's candidate `owner` (by place in the list), `d2`
    /// from it squared.
    fn marker(&mut self, owner: usize, id: u32, m: DVec2, d2: f64);
    /// Every marker of `entries` within reach goes to the cell's candidate `owner` at `q` (the
    /// only one left); `all_within`: every one of them is within reach (`r2`, squared).
    fn run(&mut self, owner: usize, q: DVec2, entries: &[(u32, DVec2)], all_within: bool, r2: f64) {
        for &(id, m) in entries {
            let e = (m - q).length_squared();
            if all_within || e <= r2 {
                self.marker(owner, id, m, e);
            }
        }
    }
}

/// The personal-space split of one step: the agents by grid cell, walked over the marker
/// index cell by cell, so that each marker is looked at once however many agents reach it
/// (an agent-by-agent scan reads every marker once per agent within 2R and tests it against
/// each of them).
pub(crate) struct Split<'a> {
    set: &'a MarkerSet,
    agents: &'a [Option<DVec2>],
    grid: AgentGrid,
    radius: f64,
}

impl<'a> Split<'a> {
    /// The split of `set` among `agents` (those at `None` own nothing) within `radius`.
    pub fn new(set: &'a MarkerSet, agents: &'a [Option<DVec2>], radius: f64) -> Self {
        let points: Vec<Option<(DVec2, f64)>> =
            agents.iter().map(|p| p.map(|p| (p, 0.0))).collect();
        Self {
            set,
            agents,
            grid: AgentGrid::build(&points, radius.max(1e-6)),
            radius,
        }
    }

    /// The index cells within the radius's square of the agents `keep` picks (by index); a
    /// walk reads those cells only, so a few agents in a large world cost little.
    pub fn reach(&self, keep: impl Fn(usize) -> bool) -> Reach {
        let (cols, rows) = self.set.index_size();
        let mut reach = Reach {
            bits: vec![0; (cols * rows).div_ceil(64)],
            rows: (rows, 0),
        };
        let r = DVec2::splat(self.radius);
        for (i, p) in self.agents.iter().enumerate() {
            let Some(p) = p else {
                continue;
            };
            if !keep(i) {
                continue;
            }
            let (c0, r0) = self.set.index_cell_of(*p - r);
            let (c1, r1) = self.set.index_cell_of(*p + r);
            reach.rows = (reach.rows.0.min(r0), reach.rows.1.max(r1 + 1));
            for row in r0..=r1 {
                for col in c0..=c1 {
                    let k = row * cols + col;
                    reach.bits[k / 64] |= 1 << (k % 64);
                }
            }
        }
        reach
    }

    /// How many bands the index has.
    pub fn bands(&self) -> usize {
        self.set.index_size().1.div_ceil(BAND_ROWS)
    }

    /// Walks band `band` of the index, the cells in `reach` only, reporting every marker
    /// within the radius of some agent with its owner.
    pub fn walk_band(&self, band: usize, reach: &Reach, out: &mut impl Owners) {
        let (cols, rows) = self.set.index_size();
        let r = self.radius;
        let r2 = r * r;
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut dominated: Vec<bool> = Vec::new();
        let first = (band * BAND_ROWS).max(reach.rows.0);
        let last = ((band + 1) * BAND_ROWS).min(rows).min(reach.rows.1);
        for row in first..last {
            for col in 0..cols {
                if !reach.has(row * cols + col) {
                    continue;
                }
                let (lo, hi, entries) = self.set.index_cell(col, row);
                if entries.is_empty() {
                    continue;
                }
                let centre = (lo + hi) * 0.5;
                candidates.clear();
                self.grid
                    .for_each_near(centre, (hi - lo).length() * 0.5 + r, |j| {
                        if let Some(q) = self.agents[j]
                            && (q.clamp(lo, hi) - q).length_squared() <= r2
                        {
                            candidates.push(Candidate {
                                index: j,
                                position: q,
                            });
                        }
                    });
                if candidates.is_empty() {
                    continue;
                }
                candidates.sort_unstable_by_key(|c| c.index);
                // A candidate that another is nearer than all over the cell owns none of it.
                dominated.clear();
                dominated.extend(candidates.iter().map(|a| {
                    candidates.iter().any(|b| {
                        b.index != a.index && nearer_all_over(b.position, a.position, lo, hi)
                    })
                }));
                if dominated.iter().all(|&d| d) {
                    // Only by rounding: keep them all and let the markers decide.
                    dominated.iter_mut().for_each(|d| *d = false);
                }
                out.cell(lo, hi, &candidates);
                let alive: smallvec::SmallVec<[(usize, DVec2); 8]> = candidates
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| !dominated[k])
                    .map(|(k, c)| (k, c.position))
                    .collect();
                if let [(k, q)] = alive[..] {
                    // One owner for the whole cell: only the reach to test.
                    let far = DVec2::new(
                        (lo.x - q.x).abs().max((hi.x - q.x).abs()),
                        (lo.y - q.y).abs().max((hi.y - q.y).abs()),
                    );
                    let all_within = far.length_squared() <= r2 * (1.0 - 1e-12);
                    out.run(k, q, entries, all_within, r2);
                    continue;
                }
                for &(id, m) in entries {
                    let mut best = (f64::INFINITY, usize::MAX);
                    for &(k, q) in &alive {
                        let e = (m - q).length_squared();
                        // Strictly nearer wins; candidates come lowest index first, so a tie
                        // stays with the lower.
                        if e < best.0 {
                            best = (e, k);
                        }
                    }
                    if best.0 <= r2 {
                        out.marker(best.1, id, m, best.0);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Generation, MarkerSettings};

    /// Digest 002 test U1.
    #[test]
    fn the_weighting_is_zero_for_zero_vectors_and_opposite_markers_and_falls_with_angle_and_distance()
     {
        let x = DVec2::new(1.0, 0.0);
        assert_eq!(weight(x, DVec2::ZERO), 0.0);
        assert_eq!(weight(DVec2::ZERO, x), 0.0);
        let y = DVec2::new(0.5, 0.0);
        assert!((weight(x, y) - 2.0 / 1.5).abs() < 1e-12);
        assert!(weight(x, DVec2::new(-0.5, 0.0)).abs() < 1e-12);
        // Strictly decreasing in θ at fixed ‖y‖, and in ‖y‖ at fixed θ.
        let mut last = f64::INFINITY;
        for k in 0..=12 {
            let a = std::f64::consts::PI * k as f64 / 12.0;
            let f = weight(x, DVec2::new(a.cos(), a.sin()) * 0.7);
            assert!(f < last || k == 0);
            last = f;
        }
        let mut last = f64::INFINITY;
        for k in 1..=10 {
            let f = weight(x, DVec2::new(1.0, 1.0) * 0.2 * k as f64);
            assert!(f < last);
            last = f;
        }
    }

    fn ground() -> MarkerSet {
        let mut set = MarkerSet::new(
            MarkerSettings {
                min: DVec2::ZERO,
                max: DVec2::new(20.0, 20.0),
                ..Default::default()
            },
            vec![],
        )
        .unwrap();
        set.generate(Generation::default(), 60.0, 3).unwrap();
        set
    }

    /// With the seed's density, markers in a full personal space point the way to the goal
    /// within the digest's measured spread (mean 4.8°, 95th percentile 12.4° at 60 per m²).
    #[test]
    fn markers_round_an_agent_point_to_its_goal() {
        let set = ground();
        let mut angles = Vec::new();
        for k in 0..40 {
            let p = DVec2::new(4.0 + (k % 8) as f64 * 1.6, 4.0 + (k / 8) as f64 * 2.4);
            let goal = p + DVec2::new((k as f64).cos(), (k as f64).sin()) * 6.0;
            let mine: Vec<DVec2> = set
                .within(p, PERSONAL_RADIUS)
                .iter()
                .map(|id| set.marker(*id).unwrap().position)
                .collect();
            let d = goal_direction(p, goal, &mine).unwrap();
            angles.push(d.angle_to(goal - p).abs().to_degrees());
        }
        let mean = angles.iter().sum::<f64>() / angles.len() as f64;
        assert!(mean < 10.0, "mean {mean:.1}°");
        assert!(goal_direction(DVec2::ZERO, DVec2::ZERO, &[DVec2::X]).is_none());
        assert!(goal_direction(DVec2::ZERO, DVec2::X, &[-DVec2::X]).is_none());
    }

    #[test]
    fn the_split_gives_each_marker_to_its_nearest_agent_within_reach_and_to_no_other() {
        let set = ground();
        let agents = [
            DVec2::new(5.0, 5.0),
            DVec2::new(5.8, 5.2),
            DVec2::new(12.0, 12.0),
            DVec2::new(f64::NAN, 1.0),
        ];
        let owned = split(&set, &agents, PERSONAL_RADIUS);
        let mut all: Vec<MarkerId> = owned.iter().flatten().copied().collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n, "a marker with two owners");
        assert!(owned[3].is_empty());
        for (i, list) in owned.iter().enumerate().take(3) {
            assert!(!list.is_empty());
            for id in list {
                let m = set.marker(*id).unwrap().position;
                let d = agents[i].distance(m);
                assert!(d <= PERSONAL_RADIUS);
                for (j, q) in agents.iter().enumerate().take(3) {
                    assert!(d <= q.distance(m) || j == i, "marker {id} nearer agent {j}");
                }
            }
        }
        // Every marker within reach of someone is owned.
        let reached = set
            .markers()
            .filter(|(_, m)| {
                agents[..3]
                    .iter()
                    .any(|a| a.distance(m.position) <= PERSONAL_RADIUS)
            })
            .count();
        assert_eq!(reached, n);
        assert!(split(&set, &agents, 0.0).iter().all(|l| l.is_empty()));
    }

    #[test]
    fn distance_enforcement_pushes_close_pairs_apart_as_printed() {
        let moved = enforce_distance(
            &[DVec2::ZERO, DVec2::new(0.3, 0.0), DVec2::new(5.0, 5.0)],
            MIN_DISTANCE,
        );
        assert!((moved[0] - DVec2::new(-0.15, 0.0)).length() < 1e-12);
        assert!((moved[1] - DVec2::new(0.15, 0.0)).length() < 1e-12);
        assert_eq!(moved[2], DVec2::ZERO);
        // Coincident agents get no push.
        assert_eq!(
            enforce_distance(&[DVec2::ONE, DVec2::ONE], MIN_DISTANCE),
            vec![DVec2::ZERO; 2]
        );
        assert_eq!(
            direct_direction(DVec2::ZERO, &[(DVec2::X, 2.0), (-DVec2::X, 1.0)]),
            Some(DVec2::X)
        );
        assert_eq!(direct_direction(DVec2::ZERO, &[]), None);
    }
}
