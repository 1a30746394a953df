//! Formations: ordered points turned into one slot per member (seed 004 §5.2.1, digest 004
//! §5.1 and §12 test 10).
//!
//! A formation is an ordered list L of points in the **formation frame**: +y is the group's
//! heading (forward), +x its right-hand side, units metres. The list comes from a
//! [`Template`] (line, column, wedge, echelon, circle, box, diamond), from code, from a file,
//! or from a drawn stroke, and is resampled to the n members of the group:
//!
//! ```text
//! n ≤ |L|   slots = L[0], L[s], L[2s], …, L[(n−1)s]        s = ⌊|L| / n⌋   (the seed's stride)
//! n > |L|   slots = L[0..|L|], then L_last + m·(L_last − L_prev),  m = 1 … n − |L|
//! ```
//!
//! The stride rule keeps points equally spaced by index and may leave the tail of a long list
//! unused (|L| = 20, n = 7 takes indices 0, 2, …, 12); the straight extension distorts one end
//! of a short list. [`Resampling::CatmullRom`] (the seed's suggestion) instead samples a
//! Catmull–Rom spline through the points at equal arc length, ends included. The slots are then
//! centred on their centroid, which the group map's centre carries (seed: the formation
//! centroid is aligned with the map centre), and member i takes slot i unless a
//! [`SlotAssignment`](crate::SlotAssignment) policy says otherwise.

use glam::DVec2;

use crate::GroupError;

/// How a list of formation points becomes one slot per member.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resampling {
    /// The seed's rule: every ⌊|L|/n⌋-th point from the first, or the list extended straight
    /// out of its last segment when there are more members than points.
    #[default]
    Stride,
    /// A Catmull–Rom spline through the points (uniform, end points doubled), sampled at equal
    /// arc length from the first point to the last.
    CatmullRom,
}

/// Formation templates, laid out for any number of members at a given spacing (metres
/// between neighbouring slots). In the formation frame: +y forward, +x right.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// Side by side, across the heading.
    Line,
    /// One behind the other.
    Column,
    /// A wedge (a "V" with its point forward): the first member at the point, the others
    /// alternately right and left, each pair a row further back (seed 004 Fig 5.7).
    Wedge,
    /// A diagonal line going back to the right.
    Echelon,
    /// Evenly round a circle facing outwards.
    Circle,
    /// Rows of ⌈√n⌉ members, filled from the front.
    Box,
    /// A box turned by 45°: one member at the front point.
    Diamond,
}

impl Template {
    /// Every template, in the order a game's keys might list them.
    pub const ALL: [Template; 7] = [
        Template::Line,
        Template::Column,
        Template::Wedge,
        Template::Echelon,
        Template::Circle,
        Template::Box,
        Template::Diamond,
    ];

    /// The template's points for `members` members `spacing` metres apart, centred on their
    /// centroid.
    pub fn points(self, members: usize, spacing: f64) -> Vec<DVec2> {
        let n = members;
        let s = spacing;
        let half = (n as f64 - 1.0) * 0.5;
        let mut points: Vec<DVec2> = match self {
            Template::Line => (0..n)
                .map(|i| DVec2::new((i as f64 - half) * s, 0.0))
                .collect(),
            Template::Column => (0..n)
                .map(|i| DVec2::new(0.0, (half - i as f64) * s))
                .collect(),
            Template::Wedge => (0..n)
                .map(|i| {
                    let row = i.div_ceil(2) as f64;
                    let side = if i % 2 == 1 { 1.0 } else { -1.0 };
                    // Neighbours along each arm are `s` apart: 45° arms.
                    let d = s * std::f64::consts::FRAC_1_SQRT_2;
                    DVec2::new(side * row * d, -row * d)
                })
                .collect(),
            Template::Echelon => {
                let d = s * std::f64::consts::FRAC_1_SQRT_2;
                (0..n)
                    .map(|i| DVec2::new(i as f64 * d, -(i as f64) * d))
                    .collect()
            }
            Template::Circle => {
                if n < 2 {
                    vec![DVec2::ZERO; n]
                } else {
                    // Neighbouring slots a chord of `s` apart, the first straight ahead.
                    let radius = (s / (2.0 * (std::f64::consts::PI / n as f64).sin())).max(s * 0.5);
                    (0..n)
                        .map(|i| {
                            let a = std::f64::consts::FRAC_PI_2
                                - std::f64::consts::TAU * i as f64 / n as f64;
                            DVec2::new(a.cos(), a.sin()) * radius
                        })
                        .collect()
                }
            }
            Template::Box | Template::Diamond => {
                let cols = (n as f64).sqrt().ceil().max(1.0) as usize;
                let rows = n.div_ceil(cols.max(1));
                let grid: Vec<DVec2> = (0..n)
                    .map(|i| {
                        let (row, col) = (i / cols, i % cols);
                        // The last row, if short, is centred.
                        let in_row = if row + 1 == rows {
                            n - row * cols
                        } else {
                            cols
                        };
                        let x = (col as f64 - (in_row as f64 - 1.0) * 0.5) * s;
                        let y = -(row as f64) * s;
                        DVec2::new(x, y)
                    })
                    .collect();
                if self == Template::Box {
                    grid
                } else {
                    // Turned by 45° about the front-left corner's row, so a corner leads.
                    grid.into_iter()
                        .map(|p| DVec2::from_angle(std::f64::consts::FRAC_PI_4).rotate(p))
                        .collect()
                }
            }
        };
        centre(&mut points);
        points
    }
}

/// A formation: an ordered list of points in the formation frame (see the module doc) and how
/// it is resampled to the members of a group.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, PartialEq)]
pub enum Formation {
    /// A template laid out for the group's members at `spacing` metres (0: from the members'
    /// radii, see [`Formation::spacing_for`]).
    Template {
        /// Which template.
        template: Template,
        /// Metres between neighbouring slots (0: from the members' radii).
        spacing: f64,
    },
    /// Any ordered point list (from code, a file, or a drawn stroke), in metres.
    Points {
        /// The points, in order.
        points: Vec<DVec2>,
        /// How they become one slot per member.
        resampling: Resampling,
    },
}

impl Formation {
    /// A template at the spacing derived from the members' radii.
    pub fn template(template: Template) -> Self {
        Formation::Template {
            template,
            spacing: 0.0,
        }
    }

    /// An ordered point list resampled with the seed's stride rule.
    pub fn points(points: Vec<DVec2>) -> Self {
        Formation::Points {
            points,
            resampling: Resampling::Stride,
        }
    }

    /// The spacing a template uses for members whose largest radius is `radius`: three
    /// diameters between centres. On the group map's cells of one diameter, neighbouring slots
    /// are then at least two rings apart even along a wedge's 45° arms (2.1 cells on each
    /// axis), so a member on its slot is never in another's B_1, where μ = 1 leaves no pull to
    /// the slot: at two diameters, diagonal neighbours of a wedge stood a ring apart and two
    /// members of the narrow-passage test stopped half a metre short of their slots.
    pub fn spacing_for(radius: f64) -> f64 {
        6.0 * radius
    }

    /// Checks what can be checked without the group: finite points and spacing, at least one
    /// point.
    pub fn validate(&self) -> Result<(), GroupError> {
        match self {
            Formation::Template { spacing, .. } => {
                if !(spacing.is_finite() && *spacing >= 0.0) {
                    return Err(GroupError::BadFormation("spacing must be finite and ≥ 0"));
                }
            }
            Formation::Points { points, .. } => {
                if points.is_empty() {
                    return Err(GroupError::FormationTooShort {
                        points: 0,
                        members: 1,
                    });
                }
                if points.iter().any(|p| !p.is_finite()) {
                    return Err(GroupError::BadFormation("points must be finite"));
                }
            }
        }
        Ok(())
    }

    /// The slots for `members` members whose largest radius is `radius`, centred on their
    /// centroid, in the formation frame.
    pub fn slots(&self, members: usize, radius: f64) -> Result<Vec<DVec2>, GroupError> {
        self.validate()?;
        if members == 0 {
            return Ok(Vec::new());
        }
        let mut slots = match self {
            Formation::Template { template, spacing } => {
                let s = if *spacing > 0.0 {
                    *spacing
                } else {
                    Formation::spacing_for(radius)
                };
                template.points(members, s)
            }
            Formation::Points { points, resampling } => match resampling {
                Resampling::Stride => resample_stride(points, members)?,
                Resampling::CatmullRom => resample_catmull_rom(points, members)?,
            },
        };
        centre(&mut slots);
        if members > 1 {
            // Two slots in one place would send two members to the same point.
            for (i, a) in slots.iter().enumerate() {
                if slots[..i].iter().any(|b| (*a - *b).length() < 1e-9) {
                    return Err(GroupError::BadFormation("two slots at the same point"));
                }
            }
        }
        Ok(slots)
    }
}

/// The seed's resampling of `points` to `n` slots (see the module doc), not centred.
pub fn resample_stride(points: &[DVec2], n: usize) -> Result<Vec<DVec2>, GroupError> {
    let len = points.len();
    if len == 0 || (n > len && len < 2) {
        return Err(GroupError::FormationTooShort {
            points: len,
            members: n,
        });
    }
    if n <= len {
        let stride = len / n.max(1);
        return Ok((0..n).map(|i| points[i * stride]).collect());
    }
    let last = points[len - 1];
    let step = last - points[len - 2];
    if step.length() < 1e-12 {
        return Err(GroupError::BadFormation(
            "the last two points coincide: no direction to extend the formation",
        ));
    }
    let mut out = points.to_vec();
    out.extend((1..=n - len).map(|m| last + step * m as f64));
    Ok(out)
}

/// `n` points at equal arc length along the uniform Catmull–Rom spline through `points` (end
/// points doubled), the first and last points included, not centred.
pub fn resample_catmull_rom(points: &[DVec2], n: usize) -> Result<Vec<DVec2>, GroupError> {
    let len = points.len();
    if len < 2 {
        return if len == 1 && n == 1 {
            Ok(vec![points[0]])
        } else {
            Err(GroupError::FormationTooShort {
                points: len,
                members: n,
            })
        };
    }
    // A dense polyline along the spline.
    const PER_SEGMENT: usize = 32;
    let at = |k: isize| points[k.clamp(0, len as isize - 1) as usize];
    let mut dense = vec![points[0]];
    for k in 0..len as isize - 1 {
        let (p0, p1, p2, p3) = (at(k - 1), at(k), at(k + 1), at(k + 2));
        for j in 1..=PER_SEGMENT {
            let t = j as f64 / PER_SEGMENT as f64;
            let (t2, t3) = (t * t, t * t * t);
            let p = 0.5
                * ((2.0 * p1)
                    + (p2 - p0) * t
                    + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * t2
                    + (3.0 * p1 - p0 - 3.0 * p2 + p3) * t3);
            dense.push(p);
        }
    }
    let mut cumulative = vec![0.0];
    for w in dense.windows(2) {
        let last = *cumulative.last().expect("starts with 0");
        cumulative.push(last + (w[1] - w[0]).length());
    }
    let total = *cumulative.last().expect("not empty");
    if total < 1e-12 {
        return Err(GroupError::BadFormation("the points all coincide"));
    }
    if n == 1 {
        return Ok(vec![points[0]]);
    }
    let mut out = Vec::with_capacity(n);
    let mut seg = 0;
    for i in 0..n {
        let target = total * i as f64 / (n - 1) as f64;
        while seg + 2 < cumulative.len() && cumulative[seg + 1] < target {
            seg += 1;
        }
        let (a, b) = (cumulative[seg], cumulative[seg + 1]);
        let f = if b > a { (target - a) / (b - a) } else { 0.0 };
        out.push(dense[seg].lerp(dense[seg + 1], f.clamp(0.0, 1.0)));
    }
    Ok(out)
}

/// Moves `points` so that their centroid is the origin.
fn centre(points: &mut [DVec2]) {
    if points.is_empty() {
        return;
    }
    let c = points.iter().copied().sum::<DVec2>() / points.len() as f64;
    for p in points {
        *p -= c;
    }
}

/// The formation frame turned to `heading` (a unit vector; +y of the frame goes there) and
/// placed at `centre`: the world position of formation point `p`.
pub fn to_world(p: DVec2, heading: DVec2, centre: DVec2) -> DVec2 {
    // +y → heading, +x → heading turned a quarter clockwise (its right-hand side).
    let right = DVec2::new(heading.y, -heading.x);
    centre + right * p.x + heading * p.y
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize) -> Vec<DVec2> {
        (0..n).map(|i| DVec2::new(i as f64, 0.0)).collect()
    }

    #[test]
    fn twenty_points_for_seven_members_take_every_second_from_the_first() {
        // Digest 004 §12 test 10: indices {0, 2, 4, …, 12}.
        let points: Vec<DVec2> = (0..20)
            .map(|i| DVec2::new(i as f64, (i * i) as f64))
            .collect();
        let slots = resample_stride(&points, 7).unwrap();
        let taken: Vec<DVec2> = [0, 2, 4, 6, 8, 10, 12].iter().map(|&i| points[i]).collect();
        assert_eq!(slots, taken);
    }

    #[test]
    fn four_points_for_seven_members_extend_the_last_segment() {
        // Digest 004 §12 test 10: the 3 extra slots are L4 + m·(L4 − L3), m = 1..3.
        let points = vec![
            DVec2::new(0.0, 0.0),
            DVec2::new(1.0, 1.0),
            DVec2::new(2.0, 0.0),
            DVec2::new(3.0, 0.5),
        ];
        let slots = resample_stride(&points, 7).unwrap();
        assert_eq!(&slots[..4], &points[..]);
        let v = points[3] - points[2];
        for m in 1..=3 {
            assert!((slots[3 + m] - (points[3] + v * m as f64)).length() < 1e-12);
        }
    }

    #[test]
    fn a_formation_of_zero_or_one_point_is_a_typed_error() {
        assert_eq!(
            resample_stride(&[], 3),
            Err(GroupError::FormationTooShort {
                points: 0,
                members: 3
            })
        );
        assert_eq!(
            resample_stride(&[DVec2::ZERO], 3),
            Err(GroupError::FormationTooShort {
                points: 1,
                members: 3
            })
        );
        assert_eq!(resample_stride(&[DVec2::ONE], 1).unwrap(), vec![DVec2::ONE]);
        assert!(Formation::points(vec![]).slots(2, 0.25).is_err());
        assert!(
            Formation::points(vec![DVec2::NAN, DVec2::ONE])
                .slots(2, 0.25)
                .is_err()
        );
        assert!(resample_catmull_rom(&[DVec2::ZERO], 2).is_err());
    }

    #[test]
    fn catmull_rom_samples_a_line_at_equal_spacing_end_to_end() {
        let slots = resample_catmull_rom(&line(4), 7).unwrap();
        assert_eq!(slots.len(), 7);
        for (i, s) in slots.iter().enumerate() {
            assert!((s.x - i as f64 * 0.5).abs() < 1e-6, "{s}");
            assert!(s.y.abs() < 1e-9);
        }
    }

    #[test]
    fn templates_give_one_distinct_slot_per_member_centred() {
        for template in Template::ALL {
            for n in 1..=24 {
                let slots = Formation::Template {
                    template,
                    spacing: 1.0,
                }
                .slots(n, 0.25)
                .unwrap();
                assert_eq!(slots.len(), n);
                let c = slots.iter().copied().sum::<DVec2>() / n as f64;
                assert!(c.length() < 1e-9, "{template:?} {n}");
                for (i, a) in slots.iter().enumerate() {
                    for b in &slots[..i] {
                        assert!(
                            (*a - *b).length() > 0.7,
                            "{template:?} with {n}: slots {a} and {b} too close"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_wedge_points_forward() {
        let slots = Template::Wedge.points(7, 1.0);
        let front = slots
            .iter()
            .copied()
            .max_by(|a, b| a.y.total_cmp(&b.y))
            .unwrap();
        assert!(
            (front - slots[0]).length() < 1e-12,
            "the first member leads"
        );
        assert!(front.x.abs() < 1e-9);
    }

    #[test]
    fn the_frame_turns_forward_onto_the_heading() {
        let heading = DVec2::new(0.0, -1.0);
        // Forward goes to the heading, right to the heading's right (west for south).
        assert!((to_world(DVec2::Y, heading, DVec2::ZERO) - heading).length() < 1e-12);
        assert!((to_world(DVec2::X, heading, DVec2::ZERO) - DVec2::NEG_X).length() < 1e-12);
        assert!((to_world(DVec2::X, DVec2::Y, DVec2::ZERO) - DVec2::X).length() < 1e-12);
    }
}
