//! Measures of a group any test, tool or game can call. The seed defines none (digest 004 §8:
//! "no formation-error, smoothness, path-length or collision-count metric is defined
//! anywhere"); these are ours, and the thresholds of the tests that use them say which.

use glam::DVec2;

/// Root-mean-square distance from each member to its slot (`members[i]` to `slots[i]`), in
/// metres; 0 for no members.
pub fn slot_distance(members: &[DVec2], slots: &[DVec2]) -> f64 {
    let n = members.len().min(slots.len());
    if n == 0 {
        return 0.0;
    }
    let sum: f64 = members
        .iter()
        .zip(slots)
        .map(|(p, s)| (*p - *s).length_squared())
        .sum();
    (sum / n as f64).sqrt()
}

/// The formation's radius: the farthest slot from the slots' centroid (at least `floor`, so
/// that a formation of one member or of coincident slots does not divide by zero).
pub fn formation_radius(slots: &[DVec2], floor: f64) -> f64 {
    if slots.is_empty() {
        return floor;
    }
    let c = slots.iter().copied().sum::<DVec2>() / slots.len() as f64;
    slots
        .iter()
        .map(|s| (*s - c).length())
        .fold(floor, f64::max)
}

/// Formation error: the RMS member-to-slot distance over the formation's radius
/// ([`formation_radius`] with a floor of `floor` metres). 0 in formation; 1 means members are
/// off their slots by the formation's own size.
pub fn formation_error(members: &[DVec2], slots: &[DVec2], floor: f64) -> f64 {
    slot_distance(members, slots) / formation_radius(slots, floor)
}

/// Cohesion: the farthest member from the members' centroid over `half_size` (the group
/// map's half width). Up to about 1 the group fits its map; above, members have left it.
pub fn cohesion(members: &[DVec2], half_size: f64) -> f64 {
    if members.is_empty() || half_size <= 0.0 {
        return 0.0;
    }
    let c = members.iter().copied().sum::<DVec2>() / members.len() as f64;
    members
        .iter()
        .map(|p| (*p - c).length())
        .fold(0.0, f64::max)
        / half_size
}

/// The connected parts of a group: members closer than `link` metres are connected (directly
/// or through others). 1 for a group that holds together, 0 for no members.
pub fn splits(members: &[DVec2], link: f64) -> usize {
    let n = members.len();
    let mut part: Vec<usize> = (0..n).collect();
    fn root(part: &mut [usize], mut i: usize) -> usize {
        while part[i] != i {
            part[i] = part[part[i]];
            i = part[i];
        }
        i
    }
    for i in 0..n {
        for j in 0..i {
            if (members[i] - members[j]).length() <= link {
                let (a, b) = (root(&mut part, i), root(&mut part, j));
                part[a] = b;
            }
        }
    }
    (0..n).filter(|&i| root(&mut part, i) == i).count()
}

/// Arrival spread: planner steps between the first and the last member settling (each
/// member's settling step, `None` for one that has not), `None` until all have.
pub fn arrival_spread(settled_at: &[Option<u64>]) -> Option<u64> {
    let mut lo = u64::MAX;
    let mut hi = 0;
    for s in settled_at {
        let s = (*s)?;
        lo = lo.min(s);
        hi = hi.max(s);
    }
    (!settled_at.is_empty()).then(|| hi - lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_on_their_slots_have_no_error() {
        let slots = [DVec2::new(-1.0, 0.0), DVec2::new(1.0, 0.0)];
        assert_eq!(formation_error(&slots, &slots, 0.5), 0.0);
        let off = [DVec2::new(-1.0, 1.0), DVec2::new(1.0, 1.0)];
        assert!((slot_distance(&off, &slots) - 1.0).abs() < 1e-12);
        assert!((formation_error(&off, &slots, 0.5) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn splits_count_connected_parts() {
        let members = [
            DVec2::new(0.0, 0.0),
            DVec2::new(1.0, 0.0),
            DVec2::new(10.0, 0.0),
            DVec2::new(11.0, 0.0),
            DVec2::new(2.0, 0.0),
        ];
        assert_eq!(splits(&members, 1.5), 2);
        assert_eq!(splits(&members, 20.0), 1);
        assert_eq!(splits(&[], 1.0), 0);
    }

    #[test]
    fn cohesion_is_the_farthest_member_over_the_half_size() {
        let members = [DVec2::new(-2.0, 0.0), DVec2::new(2.0, 0.0)];
        assert!((cohesion(&members, 4.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn the_spread_waits_for_every_member() {
        assert_eq!(arrival_spread(&[Some(3), None]), None);
        assert_eq!(arrival_spread(&[Some(3), Some(9), Some(5)]), Some(6));
    }
}
