//! Strokes: what the user draws, as ordered world points with the time each was drawn (digest
//! 004 §4: "the only drawn things are curves, which the system samples into ordered point
//! lists").
//!
//! A stroke is captured point by point from the pointer ([`Stroke::push`]), then simplified
//! (Ramer–Douglas–Peucker, [`Stroke::simplified`]) and resampled at equal arc length
//! ([`Stroke::resampled`]) before the planners read it. Times are kept through both, linearly
//! interpolated where new points are made, so a replay or a "draw speed" reading stays possible.

use glam::DVec2;

use crate::SketchError;

/// The most points [`Stroke::resampled`] makes (a million: 10 km at 1 cm).
pub const MAX_RESAMPLED: usize = 1_000_000;

/// One drawn point: where, and when (seconds, any origin; non-decreasing along a stroke).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StrokePoint {
    /// World position, metres.
    pub position: DVec2,
    /// When it was drawn, seconds.
    pub time: f64,
}

/// An open curve drawn by the user: at least one point once anything is drawn, finite, times
/// non-decreasing. A stroke of one point, or of points all in one place, has zero length: the
/// planners treat it as a point (see the crate doc, *Degenerate strokes*).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Stroke {
    points: Vec<StrokePoint>,
}

impl Stroke {
    /// An empty stroke, to be drawn into with [`Stroke::push`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A stroke through `points`, drawn one a second from t = 0.
    pub fn from_positions(points: impl IntoIterator<Item = DVec2>) -> Result<Self, SketchError> {
        let mut stroke = Self::new();
        for (k, p) in points.into_iter().enumerate() {
            stroke.push(p, k as f64)?;
        }
        Ok(stroke)
    }

    /// A stroke from drawn points, checked as [`Stroke::push`] checks them.
    pub fn from_points(points: impl IntoIterator<Item = StrokePoint>) -> Result<Self, SketchError> {
        let mut stroke = Self::new();
        for p in points {
            stroke.push(p.position, p.time)?;
        }
        Ok(stroke)
    }

    /// Appends a drawn point. A point that is not finite, or drawn before the last one, is
    /// refused and the stroke is unchanged.
    pub fn push(&mut self, position: DVec2, time: f64) -> Result<(), SketchError> {
        if !(position.is_finite() && time.is_finite()) {
            return Err(SketchError::NonFinite);
        }
        if self.points.last().is_some_and(|last| time < last.time) {
            return Err(SketchError::TimeGoesBack);
        }
        self.points.push(StrokePoint { position, time });
        Ok(())
    }

    /// Appends another stroke's points (a stroke continued after a pause): its times are
    /// shifted so that it starts where this one ends, if it started earlier.
    pub fn append(&mut self, other: &Stroke) {
        let Some(first) = other.points.first() else {
            return;
        };
        let shift = match self.points.last() {
            Some(last) if first.time < last.time => last.time - first.time,
            _ => 0.0,
        };
        self.points.extend(other.points.iter().map(|p| StrokePoint {
            position: p.position,
            time: p.time + shift,
        }));
    }

    /// The drawn points, in order.
    pub fn points(&self) -> &[StrokePoint] {
        &self.points
    }

    /// The positions, in order.
    pub fn positions(&self) -> Vec<DVec2> {
        self.points.iter().map(|p| p.position).collect()
    }

    /// Points in the stroke.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether nothing is drawn yet.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The first point's position.
    pub fn start(&self) -> Option<DVec2> {
        self.points.first().map(|p| p.position)
    }

    /// The last point's position.
    pub fn end(&self) -> Option<DVec2> {
        self.points.last().map(|p| p.position)
    }

    /// Arc length, metres.
    pub fn length(&self) -> f64 {
        self.points
            .windows(2)
            .map(|w| w[0].position.distance(w[1].position))
            .sum()
    }

    /// The stroke reversed (last point first); times mirrored so they still grow.
    pub fn reversed(&self) -> Stroke {
        let end = self.points.last().map_or(0.0, |p| p.time);
        let start = self.points.first().map_or(0.0, |p| p.time);
        Stroke {
            points: self
                .points
                .iter()
                .rev()
                .map(|p| StrokePoint {
                    position: p.position,
                    time: start + (end - p.time),
                })
                .collect(),
        }
    }

    /// The stroke with the points that add less than `tolerance` metres of shape left out
    /// (Ramer–Douglas–Peucker): a hand-drawn line of hundreds of pointer samples keeps its
    /// corners and loses its jitter. The ends are always kept.
    pub fn simplified(&self, tolerance: f64) -> Stroke {
        let n = self.points.len();
        if n <= 2 || tolerance.is_nan() || tolerance <= 0.0 {
            return self.clone();
        }
        let mut keep = vec![false; n];
        keep[0] = true;
        keep[n - 1] = true;
        // An explicit stack: thousands of points must not recurse thousands deep.
        let mut spans = vec![(0, n - 1)];
        while let Some((a, b)) = spans.pop() {
            if b <= a + 1 {
                continue;
            }
            let (pa, pb) = (self.points[a].position, self.points[b].position);
            let (mut far, mut farthest) = (a, -1.0);
            for k in a + 1..b {
                let d = distance_to_segment(self.points[k].position, pa, pb);
                if d > farthest {
                    (far, farthest) = (k, d);
                }
            }
            if farthest > tolerance {
                keep[far] = true;
                spans.push((a, far));
                spans.push((far, b));
            }
        }
        Stroke {
            points: self
                .points
                .iter()
                .zip(keep)
                .filter_map(|(p, k)| k.then_some(*p))
                .collect(),
        }
    }

    /// The stroke with every corner replaced by a curve that leaves the corner's legs at most
    /// `radius` metres before it and after it (a quadratic Bézier with the corner as its control
    /// point, never passing more than half that from the corner). Corners of under 10° are
    /// left alone. A stroke field rounds its stroke so that a drawn corner sharper than the
    /// tube does not cut the tube's field into sub-goals at every turn (see
    /// [`crate::field`]).
    pub fn rounded(&self, radius: f64) -> Stroke {
        let n = self.points.len();
        if n < 3 || radius.is_nan() || radius <= 0.0 {
            return self.clone();
        }
        let mut out = vec![self.points[0]];
        for k in 1..n - 1 {
            let (a, v, b) = (self.points[k - 1], self.points[k], self.points[k + 1]);
            let (into, out_of) = (v.position - a.position, b.position - v.position);
            let (l_in, l_out) = (into.length(), out_of.length());
            if l_in == 0.0 || l_out == 0.0 || into.angle_to(out_of).abs() < 10f64.to_radians() {
                out.push(v);
                continue;
            }
            let d = radius.min(0.5 * l_in).min(0.5 * l_out);
            let p0 = v.position - into / l_in * d;
            let p2 = v.position + out_of / l_out * d;
            let (t0, t2) = (
                v.time - (v.time - a.time) * d / l_in,
                v.time + (b.time - v.time) * d / l_out,
            );
            const STEPS: usize = 8;
            for j in 0..=STEPS {
                let t = j as f64 / STEPS as f64;
                let position =
                    p0 * (1.0 - t) * (1.0 - t) + v.position * 2.0 * t * (1.0 - t) + p2 * t * t;
                out.push(StrokePoint {
                    position,
                    time: t0 + (t2 - t0) * t,
                });
            }
        }
        out.push(self.points[n - 1]);
        Stroke { points: out }
    }

    /// Points every `spacing` metres along the stroke, the first and last included (the last
    /// step may be shorter). A stroke of zero length gives its one point. Refused: a spacing
    /// that is not finite and positive, or one that would make more than [`MAX_RESAMPLED`]
    /// points.
    pub fn resampled(&self, spacing: f64) -> Result<Stroke, SketchError> {
        if !(spacing.is_finite() && spacing > 0.0) {
            return Err(SketchError::BadSetting(
                "resampling spacing must be finite and > 0",
            ));
        }
        let Some(&first) = self.points.first() else {
            return Ok(Stroke::new());
        };
        let length = self.length();
        if length <= 0.0 {
            return Ok(Stroke {
                points: vec![first],
            });
        }
        let count = (length / spacing).ceil();
        if count > MAX_RESAMPLED as f64 {
            return Err(SketchError::BadSetting(
                "resampling would make more than a million points",
            ));
        }
        let count = count as usize;
        let mut out = Vec::with_capacity(count + 1);
        out.push(first);
        let mut seg = 0;
        let mut seg_start = 0.0;
        for k in 1..count {
            let s = k as f64 * spacing;
            while seg + 1 < self.points.len() - 1 && {
                let l = self.points[seg]
                    .position
                    .distance(self.points[seg + 1].position);
                seg_start + l < s
            } {
                seg_start += self.points[seg]
                    .position
                    .distance(self.points[seg + 1].position);
                seg += 1;
            }
            let (a, b) = (self.points[seg], self.points[seg + 1]);
            let l = a.position.distance(b.position);
            let t = if l > 0.0 {
                ((s - seg_start) / l).clamp(0.0, 1.0)
            } else {
                0.0
            };
            out.push(StrokePoint {
                position: a.position.lerp(b.position, t),
                time: a.time + (b.time - a.time) * t,
            });
        }
        out.push(*self.points.last().expect("not empty"));
        Ok(Stroke { points: out })
    }

    /// The point of the stroke nearest `p`: (arc length from the start, the point, its
    /// distance from `p`). `None` for an empty stroke.
    pub fn nearest(&self, p: DVec2) -> Option<(f64, DVec2, f64)> {
        let first = self.points.first()?;
        let mut best = (0.0, first.position, first.position.distance(p));
        let mut s = 0.0;
        for w in self.points.windows(2) {
            let (a, b) = (w[0].position, w[1].position);
            let ab = b - a;
            let l2 = ab.length_squared();
            let t = if l2 > 0.0 {
                ((p - a).dot(ab) / l2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let q = a + ab * t;
            let d = q.distance(p);
            if d < best.2 {
                best = (s + t * l2.sqrt(), q, d);
            }
            s += l2.sqrt();
        }
        Some(best)
    }

    /// The point `s` metres along the stroke (clamped to its ends).
    pub fn point_at(&self, s: f64) -> Option<DVec2> {
        let first = self.points.first()?;
        if s <= 0.0 {
            return Some(first.position);
        }
        let mut run = 0.0;
        for w in self.points.windows(2) {
            let l = w[0].position.distance(w[1].position);
            if run + l >= s && l > 0.0 {
                return Some(w[0].position.lerp(w[1].position, (s - run) / l));
            }
            run += l;
        }
        self.end()
    }

    /// The stroke from `from` to `to` metres along it (ends clamped), as a new stroke with the
    /// cut points interpolated.
    pub fn between(&self, from: f64, to: f64) -> Stroke {
        let (from, to) = (from.max(0.0), to.min(self.length()));
        let mut out: Vec<StrokePoint> = Vec::new();
        let mut run = 0.0;
        let at = |a: StrokePoint, b: StrokePoint, t: f64| StrokePoint {
            position: a.position.lerp(b.position, t),
            time: a.time + (b.time - a.time) * t,
        };
        if self.points.len() == 1 || to <= from {
            if let Some(p) = self.point_at(from) {
                let time = self.points.first().map_or(0.0, |q| q.time);
                out.push(StrokePoint { position: p, time });
            }
            return Stroke { points: out };
        }
        for w in self.points.windows(2) {
            let l = w[0].position.distance(w[1].position);
            let (s0, s1) = (run, run + l);
            if s1 >= from && s0 <= to && l > 0.0 {
                if out.is_empty() {
                    out.push(at(w[0], w[1], ((from - s0) / l).clamp(0.0, 1.0)));
                }
                if s1 <= to {
                    out.push(w[1]);
                } else {
                    out.push(at(w[0], w[1], ((to - s0) / l).clamp(0.0, 1.0)));
                }
            }
            run = s1;
        }
        out.dedup_by(|a, b| a.position == b.position);
        Stroke { points: out }
    }

    /// Rubs out the parts of the stroke within `radius` of `centre`: the pieces left, in
    /// order (none if all of it was rubbed out, the stroke itself if nothing was).
    pub fn erased(&self, centre: DVec2, radius: f64) -> Vec<Stroke> {
        let inside = |p: DVec2| p.distance(centre) <= radius;
        let mut pieces = Vec::new();
        let mut current: Vec<StrokePoint> = Vec::new();
        for p in &self.points {
            if inside(p.position) {
                if !current.is_empty() {
                    pieces.push(Stroke {
                        points: std::mem::take(&mut current),
                    });
                }
            } else {
                current.push(*p);
            }
        }
        if !current.is_empty() {
            pieces.push(Stroke { points: current });
        }
        pieces
    }

    /// Moves every point by `offset`.
    pub fn translated(&self, offset: DVec2) -> Stroke {
        Stroke {
            points: self
                .points
                .iter()
                .map(|p| StrokePoint {
                    position: p.position + offset,
                    time: p.time,
                })
                .collect(),
        }
    }
}

/// Distance from `p` to the segment `a`–`b`.
pub(crate) fn distance_to_segment(p: DVec2, a: DVec2, b: DVec2) -> f64 {
    let ab = b - a;
    let l2 = ab.length_squared();
    if l2 == 0.0 {
        return p.distance(a);
    }
    let t = ((p - a).dot(ab) / l2).clamp(0.0, 1.0);
    p.distance(a + ab * t)
}

/// The largest distance from any of `points` to the polyline `line` (one side of the
/// Hausdorff distance): how far a trajectory strays from a stroke.
pub fn farthest_from(points: &[DVec2], line: &[DVec2]) -> f64 {
    points
        .iter()
        .map(|&p| match line {
            [] => f64::INFINITY,
            [only] => p.distance(*only),
            _ => line
                .windows(2)
                .map(|w| distance_to_segment(p, w[0], w[1]))
                .fold(f64::INFINITY, f64::min),
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize) -> Stroke {
        Stroke::from_positions((0..n).map(|k| DVec2::new(k as f64, 0.0))).unwrap()
    }

    #[test]
    fn bad_points_are_refused_and_change_nothing() {
        let mut s = line(3);
        assert_eq!(
            s.push(DVec2::new(f64::NAN, 0.0), 9.0),
            Err(SketchError::NonFinite)
        );
        assert_eq!(s.push(DVec2::ZERO, 0.5), Err(SketchError::TimeGoesBack));
        assert_eq!(s, line(3));
    }

    #[test]
    fn resampling_keeps_both_ends_at_equal_spacing() {
        let s = Stroke::from_positions([DVec2::ZERO, DVec2::new(3.0, 0.0), DVec2::new(3.0, 2.5)])
            .unwrap();
        let r = s.resampled(1.0).unwrap();
        assert_eq!(r.len(), 7);
        assert_eq!(r.start(), Some(DVec2::ZERO));
        assert_eq!(r.end(), Some(DVec2::new(3.0, 2.5)));
        for w in r.points()[..6].windows(2) {
            // Around the corner the chord is shorter than the arc.
            let d = w[0].position.distance(w[1].position);
            assert!(d <= 1.0 + 1e-12 && d > 0.7, "{d}");
        }
        // Times follow the arc: the corner was drawn at t = 1.
        assert!((r.points()[3].time - 1.0).abs() < 1e-12);
    }

    #[test]
    fn simplifying_drops_jitter_and_keeps_corners() {
        let mut pts: Vec<DVec2> = (0..50)
            .map(|k| DVec2::new(k as f64 * 0.1, if k % 2 == 0 { 0.01 } else { -0.01 }))
            .collect();
        pts.extend((1..50).map(|k| DVec2::new(4.9, k as f64 * 0.1)));
        let s = Stroke::from_positions(pts).unwrap().simplified(0.05);
        assert_eq!(s.len(), 3, "{:?}", s.positions());
        assert!(s.positions()[1].distance(DVec2::new(4.9, 0.0)) < 0.05);
    }

    #[test]
    fn erasing_splits_a_stroke_into_the_pieces_left() {
        let pieces = line(10).erased(DVec2::new(4.5, 0.0), 1.0);
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0].end(), Some(DVec2::new(3.0, 0.0)));
        assert_eq!(pieces[1].start(), Some(DVec2::new(6.0, 0.0)));
        assert!(line(3).erased(DVec2::ZERO, 10.0).is_empty());
    }

    #[test]
    fn resampling_too_finely_is_refused() {
        assert!(line(100).resampled(1e-9).is_err());
        assert!(line(100).resampled(0.0).is_err());
        assert!(line(100).resampled(f64::NAN).is_err());
    }

    #[test]
    fn nearest_and_between_measure_along_the_arc() {
        let s = line(10);
        let (along, q, d) = s.nearest(DVec2::new(3.5, 2.0)).unwrap();
        assert!((along - 3.5).abs() < 1e-12 && (d - 2.0).abs() < 1e-12);
        assert_eq!(q, DVec2::new(3.5, 0.0));
        let part = s.between(2.5, 5.0);
        assert_eq!(part.start(), Some(DVec2::new(2.5, 0.0)));
        assert_eq!(part.end(), Some(DVec2::new(5.0, 0.0)));
        assert!((part.length() - 2.5).abs() < 1e-12);
    }

    #[test]
    fn rounding_a_corner_stays_within_half_the_radius_of_it() {
        let s = Stroke::from_positions([DVec2::ZERO, DVec2::new(5.0, 0.0), DVec2::new(5.0, 5.0)])
            .unwrap();
        let r = s.rounded(1.0);
        assert!(r.len() > 3);
        assert_eq!((r.start(), r.end()), (s.start(), s.end()));
        let corner = DVec2::new(5.0, 0.0);
        let nearest = r
            .positions()
            .iter()
            .map(|p| p.distance(corner))
            .fold(f64::MAX, f64::min);
        assert!(nearest <= 0.5 + 1e-9 && nearest > 0.3, "{nearest}");
        assert!(farthest_from(&r.positions(), &s.positions()) <= 0.5 + 1e-9);
        assert!(r.points().windows(2).all(|w| w[0].time <= w[1].time));
    }

    #[test]
    fn appended_strokes_continue_in_time() {
        let mut a = line(3);
        a.append(&line(2).translated(DVec2::new(5.0, 0.0)));
        assert_eq!(a.len(), 5);
        assert!(a.points().windows(2).all(|w| w[0].time <= w[1].time));
    }
}
