//! Which member takes which slot.
//!
//! The seed fixes slot i to the i-th member, for good (seed 004 §5.2.1; digest 004 §5.1:
//! "no optimal assignment and no reassignment"), and rejects slots as shared field minima
//! because members then converge on each other's slots (§5.11). A fixed assignment has its own
//! failure, the one players report most about formations: when an order turns the formation
//! round (a new target behind the group, a mirrored shape), every member's slot lands on the
//! far side and the members cross through each other to reach them.
//!
//! [`SlotAssignment::NonCrossing`] (ours) reassigns slots when an order is given, when the
//! heading turns by more than a right angle, and while the formation is broken (members filed
//! through a door come out in another order): the assignment with the least total distance
//! from the members to the slots they will hold (Kuhn–Munkres on distances rounded to
//! micrometres). Its
//! straight paths never cross: if two crossed, swapping their ends would shorten both by the
//! triangle inequality, so the total was not the least. Between orders the slots stay fixed,
//! as in the seed, so no member ever trades places on the way.

use glam::DVec2;
use pathfinding::prelude::{Matrix, kuhn_munkres_min};

/// How members are matched with slots.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SlotAssignment {
    /// The seed's rule: member i takes slot i, always.
    ByIndex,
    /// Ours: the least total distance, recomputed when an order is given, when the heading
    /// turns by more than a right angle and while the formation is broken, fixed in between;
    /// members' straight paths to their slots never cross (see the module doc).
    #[default]
    NonCrossing,
}

/// For each member at `from[i]`, the index of the slot in `to` it takes: the assignment with
/// the least total distance. `from` and `to` have the same length.
pub fn least_total_distance(from: &[DVec2], to: &[DVec2]) -> Vec<usize> {
    let n = from.len().min(to.len());
    if n == 0 {
        return Vec::new();
    }
    let mut weights = Vec::with_capacity(n * n);
    for a in &from[..n] {
        for b in &to[..n] {
            // Micrometres: exact enough, far from overflow for any world that fits a grid.
            weights.push(((*a - *b).length() * 1e6).round() as i64);
        }
    }
    let matrix = Matrix::from_vec(n, n, weights).expect("n × n weights");
    let (_, assignment) = kuhn_munkres_min(&matrix);
    assignment
}

/// The pairs of straight paths `from[i] → to[i]` that cross: that meet at a point inside both,
/// or run along the same line over a stretch (the two members would walk through each
/// other). Touching at an end point does not count.
pub fn crossings(from: &[DVec2], to: &[DVec2]) -> usize {
    let n = from.len().min(to.len());
    let mut count = 0;
    for i in 0..n {
        for j in 0..i {
            if segments_cross(from[i], to[i], from[j], to[j]) {
                count += 1;
            }
        }
    }
    count
}

/// Whether the segments ab and cd cross at a point inside both.
fn segments_cross(a: DVec2, b: DVec2, c: DVec2, d: DVec2) -> bool {
    let orient = |p: DVec2, q: DVec2, r: DVec2| (q - p).perp_dot(r - p);
    let (d1, d2) = (orient(c, d, a), orient(c, d, b));
    let (d3, d4) = (orient(a, b, c), orient(a, b, d));
    let eps = 1e-12;
    let proper = ((d1 > eps && d2 < -eps) || (d1 < -eps && d2 > eps))
        && ((d3 > eps && d4 < -eps) || (d3 < -eps && d4 > eps));
    if proper {
        return true;
    }
    // On one line: they cross where their stretches along it overlap by more than a point.
    let collinear = [d1, d2, d3, d4].iter().all(|d| d.abs() <= 1e-9);
    let axis = (b - a).try_normalize().or((d - c).try_normalize());
    match axis {
        Some(u) if collinear => {
            let (a0, a1) = (a.dot(u).min(b.dot(u)), a.dot(u).max(b.dot(u)));
            let (c0, c1) = (c.dot(u).min(d.dot(u)), c.dot(u).max(d.dot(u)));
            a1.min(c1) - a0.max(c0) > 1e-9
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossing_paths_are_counted_once_per_pair() {
        let from = [DVec2::new(0.0, 0.0), DVec2::new(1.0, 0.0)];
        let to = [DVec2::new(1.0, 1.0), DVec2::new(0.0, 1.0)];
        assert_eq!(crossings(&from, &to), 1);
        let to = [DVec2::new(0.0, 1.0), DVec2::new(1.0, 1.0)];
        assert_eq!(crossings(&from, &to), 0);
    }

    #[test]
    fn paths_along_one_line_that_overlap_cross() {
        let from = [DVec2::new(0.0, 0.0), DVec2::new(0.0, 1.0)];
        let to = [DVec2::new(0.0, 2.0), DVec2::new(0.0, -1.0)];
        assert_eq!(crossings(&from, &to), 1);
        let to = [DVec2::new(0.0, -1.0), DVec2::new(0.0, 2.0)];
        assert_eq!(crossings(&from, &to), 0);
    }

    #[test]
    fn the_least_total_distance_uncrosses_a_mirrored_line() {
        // A line of five turned round: by index every path crosses the middle one's.
        let from: Vec<DVec2> = (0..5).map(|i| DVec2::new(i as f64, 0.0)).collect();
        let to: Vec<DVec2> = (0..5).map(|i| DVec2::new(4.0 - i as f64, 1.0)).collect();
        assert_eq!(crossings(&from, &to), 10);
        let assigned = least_total_distance(&from, &to);
        let ends: Vec<DVec2> = assigned.iter().map(|&k| to[k]).collect();
        assert_eq!(crossings(&from, &ends), 0);
        for (a, b) in from.iter().zip(&ends) {
            assert!(
                (a.x - b.x).abs() < 1e-12,
                "each takes the slot in front of it"
            );
        }
    }
}
