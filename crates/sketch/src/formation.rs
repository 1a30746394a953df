//! Formation strokes: a drawn shape becomes a group's formation (digest 004 §5.1: "either
//! loaded from a file of predefined formations, or drawn as a free stroke"; the stroke is an
//! ordered point list L, resampled to the group's n members by the seed's stride rule or
//! extended straight past its end, in `crowdfield_group`).
//!
//! The drawn points are taken into the formation frame (`crowdfield_group::formation`: +y is
//! forward, +x the right-hand side) about their centroid, with the **drag direction** (from the
//! stroke's first point to its last) as forward, unless a facing is given. A shape drawn
//! smaller than the members can stand in is scaled up about its centroid until its nearest
//! two slots are [`Formation::spacing_for`] apart (ours: the seed draws at whatever scale the
//! user drew). The group's slot assignment then decides who takes which slot
//! (`GroupSettings::assignment`: by default no two members' paths to their slots cross).
//!
//! Strokes from the pointer are best resampled at equal arc length first
//! ([`Stroke::resampled`]): the stride rule picks points by index, and raw pointer samples
//! bunch where the hand slowed down.

use glam::DVec2;

use crowdfield_group::{Formation, GroupId, Groups, Resampling};

use crate::{SketchError, Stroke};

/// The formation a drawn shape gives `members` members of radius `radius` (see the module
/// doc). `facing`: forward in the world (`None`: the drag direction). Errors: an empty stroke,
/// one point for several members, a facing or shape with no direction.
pub fn formation_from_stroke(
    stroke: &Stroke,
    facing: Option<DVec2>,
    members: usize,
    radius: f64,
    resampling: Resampling,
) -> Result<Formation, SketchError> {
    let points = stroke.positions();
    if points.is_empty() {
        return Err(SketchError::EmptyStroke);
    }
    let forward = match facing {
        Some(f) => f,
        None => points[points.len() - 1] - points[0],
    }
    .try_normalize()
    .unwrap_or(DVec2::Y);
    let right = DVec2::new(forward.y, -forward.x);
    let centroid = points.iter().copied().sum::<DVec2>() / points.len() as f64;
    let frame: Vec<DVec2> = points
        .iter()
        .map(|p| {
            let d = *p - centroid;
            DVec2::new(d.dot(right), d.dot(forward))
        })
        .collect();
    let mut formation = Formation::Points {
        points: frame,
        resampling,
    };
    if members > 1 {
        let slots = formation.slots(members, radius)?;
        let nearest = slots
            .iter()
            .enumerate()
            .flat_map(|(i, a)| slots[..i].iter().map(move |b| a.distance(*b)))
            .fold(f64::INFINITY, f64::min);
        let wanted = Formation::spacing_for(radius);
        if nearest < wanted {
            let scale = wanted / nearest;
            if let Formation::Points { points, .. } = &mut formation {
                for p in points {
                    *p *= scale;
                }
            }
        }
    }
    Ok(formation)
}

/// Gives group `group` the formation drawn as `stroke` (see [`formation_from_stroke`]), taken
/// while it keeps to its order; the members' largest radius sets the smallest spacing.
pub fn apply_formation_stroke(
    groups: &mut Groups,
    crowd: &crowdfield_steer::Crowd,
    group: GroupId,
    stroke: &Stroke,
    facing: Option<DVec2>,
    resampling: Resampling,
) -> Result<Formation, SketchError> {
    let g = groups
        .group(group)
        .ok_or(crowdfield_group::GroupError::UnknownGroup(group))?;
    let ids = g.member_ids();
    let radius = ids
        .iter()
        .filter_map(|id| crowd.agent(*id))
        .map(|a| a.params().radius)
        .fold(0.0, f64::max);
    let formation = formation_from_stroke(stroke, facing, ids.len(), radius, resampling)?;
    groups.set_formation(group, Some(formation.clone()))?;
    Ok(formation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_drawn_left_to_right_faces_right_and_keeps_the_seeds_stride() {
        // Digest 004 §12 test 10 through a stroke: |L| = 20, n = 7 takes indices 0, 2, …, 12.
        let stroke =
            Stroke::from_positions((0..20).map(|k| DVec2::new(10.0 + 2.0 * k as f64, 5.0)))
                .unwrap();
        let f = formation_from_stroke(&stroke, None, 7, 0.25, Resampling::Stride).unwrap();
        let slots = f.slots(7, 0.25).unwrap();
        // Forward is +x in the world: the drawn line lies along the frame's forward axis.
        let ys: Vec<f64> = slots.iter().map(|s| s.y).collect();
        assert!(slots.iter().all(|s| s.x.abs() < 1e-9));
        let expected: Vec<f64> = (0..7).map(|k| 2.0 * (2 * k) as f64).collect();
        let mean = expected.iter().sum::<f64>() / 7.0;
        for (y, e) in ys.iter().zip(&expected) {
            assert!((y - (e - mean)).abs() < 1e-9, "{ys:?}");
        }
    }

    #[test]
    fn four_drawn_points_for_seven_members_extend_the_last_segment() {
        let pts = [(0.0, 0.0), (2.0, 2.0), (4.0, 0.0), (6.0, 2.0)].map(|(x, y)| DVec2::new(x, y));
        let stroke = Stroke::from_positions(pts).unwrap();
        let f =
            formation_from_stroke(&stroke, Some(DVec2::Y), 7, 0.25, Resampling::Stride).unwrap();
        let slots = f.slots(7, 0.25).unwrap();
        // L_4 + m (L_4 − L_3), m = 1..3, all 2 m apart along (2, 2).
        for m in 4..7 {
            let step = slots[m] - slots[m - 1];
            assert!((step - DVec2::new(2.0, 2.0)).length() < 1e-9, "{step}");
        }
    }

    #[test]
    fn a_shape_drawn_too_small_is_scaled_up_to_the_members_spacing() {
        let stroke =
            Stroke::from_positions((0..5).map(|k| DVec2::new(0.1 * k as f64, 0.0))).unwrap();
        let f = formation_from_stroke(&stroke, None, 5, 0.25, Resampling::Stride).unwrap();
        let slots = f.slots(5, 0.25).unwrap();
        let nearest = (1..5)
            .map(|k| slots[k].distance(slots[k - 1]))
            .fold(f64::MAX, f64::min);
        assert!(
            (nearest - Formation::spacing_for(0.25)).abs() < 1e-9,
            "{nearest}"
        );
        assert!(matches!(
            formation_from_stroke(&Stroke::new(), None, 3, 0.25, Resampling::Stride),
            Err(SketchError::EmptyStroke)
        ));
        assert!(
            formation_from_stroke(
                &Stroke::from_positions([DVec2::ZERO]).unwrap(),
                None,
                3,
                0.25,
                Resampling::Stride
            )
            .is_err()
        );
    }
}
