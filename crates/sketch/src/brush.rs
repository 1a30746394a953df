//! Brushes (digest 002 §3 A1, the interactive tool's spray and erase; digest 003 §2.2, painted
//! terrain): a stroke dragged with a brush of some radius edits a [`MarkerSet`]. The brush
//! covers the band within its radius of the stroke (a `Shape::Polyline` as thick as the brush
//! is wide), and the marker set takes that band as one edit: sprayed once at the brush's
//! density however the stroke doubles back, erased whole, or painted with a terrain.
//!
//! A click (a stroke of one point) is one dab, a disc. Strokes are simplified to a tenth of the
//! brush's radius first, so thousands of pointer samples make a band of a few pieces.

use crowdfield_field::Shape;
use crowdfield_markers::{MarkerSet, Terrain};

use crate::{SketchError, Stroke};

/// What a brush does.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BrushKind {
    /// Spray markers at `density` per m², carrying `tag` (a formation shape, a mask).
    Spray {
        /// Markers per m² (the seed's ground is 60).
        density: f64,
        /// The tag of the sprayed markers.
        tag: Option<u32>,
    },
    /// Erase every marker under the brush.
    Erase,
    /// Paint the ground: walkable, avoided with an intensity, or forbidden.
    Paint(Terrain),
}

/// A brush: what it does and how wide it is.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Brush {
    /// What it does.
    pub kind: BrushKind,
    /// Its radius, metres.
    pub radius: f64,
}

impl Brush {
    /// The band `stroke` covers with this brush: a polyline as thick as the brush is wide
    /// (one point for a click). Refuses an empty stroke and a radius that is not positive and
    /// finite.
    pub fn band(&self, stroke: &Stroke) -> Result<Shape, SketchError> {
        if !(self.radius.is_finite() && self.radius > 0.0) {
            return Err(SketchError::BadSetting("a brush's radius must be positive"));
        }
        if stroke.is_empty() {
            return Err(SketchError::EmptyStroke);
        }
        let points = stroke.simplified(0.1 * self.radius).positions();
        Ok(Shape::Polyline {
            points,
            thickness: 2.0 * self.radius,
        })
    }

    /// Drags the brush along `stroke` over `markers` (`seed` draws a spray's markers). Returns
    /// how many markers were added, erased or re-typed. On error nothing changes.
    pub fn apply(
        &self,
        stroke: &Stroke,
        markers: &mut MarkerSet,
        seed: u64,
    ) -> Result<usize, SketchError> {
        let band = self.band(stroke)?;
        Ok(match self.kind {
            BrushKind::Spray { density, tag } => markers.spray_shape(band, density, seed, tag)?,
            BrushKind::Erase => markers.erase_shape(band)?.len(),
            BrushKind::Paint(terrain) => markers.paint(band, terrain)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crowdfield_markers::{Generation, MarkerSettings};
    use glam::DVec2;

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
        set.generate(Generation::JitteredGrid, 60.0, 1).unwrap();
        set
    }

    /// A wavy stroke of thousands of pointer samples.
    fn wavy() -> Stroke {
        Stroke::from_positions((0..3000).map(|i| {
            let x = 2.0 + 16.0 * i as f64 / 2999.0;
            DVec2::new(x, 10.0 + 2.0 * (x * 0.5).sin())
        }))
        .unwrap()
    }

    #[test]
    fn an_eraser_dragged_along_a_stroke_clears_its_band_and_nothing_else() {
        let mut set = ground();
        let before = set.len();
        let brush = Brush {
            kind: BrushKind::Erase,
            radius: 1.0,
        };
        let erased = brush.apply(&wavy(), &mut set, 0).unwrap();
        assert!(erased > 1500, "{erased}");
        assert_eq!(set.len(), before - erased);
        let line = wavy().positions();
        for (_, m) in set.markers() {
            let d = crate::farthest_from(&[m.position], &line);
            // The band follows the stroke simplified to a tenth of the radius.
            assert!(d > 0.9, "a marker {d:.2} m from the stroke survived");
        }
        // A few pieces, not thousands.
        let Shape::Polyline { points, .. } = brush.band(&wavy()).unwrap() else {
            unreachable!()
        };
        assert!(points.len() < 100, "{}", points.len());
    }

    #[test]
    fn a_spray_and_a_paint_along_a_stroke_edit_the_band() {
        let mut set = ground();
        let spray = Brush {
            kind: BrushKind::Spray {
                density: 120.0,
                tag: Some(2),
            },
            radius: 0.5,
        };
        let added = spray.apply(&wavy(), &mut set, 5).unwrap();
        assert!(added > 1500, "{added}");
        assert_eq!(
            set.markers().filter(|(_, m)| m.tag == Some(2)).count(),
            added
        );
        let lawn = Brush {
            kind: BrushKind::Paint(Terrain::Avoid { intensity: 0.5 }),
            radius: 1.0,
        };
        let retyped = lawn.apply(&wavy(), &mut set, 0).unwrap();
        assert!(retyped > added);
        assert_eq!(
            set.terrain().terrain_at(wavy().start().unwrap()),
            Terrain::Avoid { intensity: 0.5 }
        );
    }

    #[test]
    fn bad_brushes_and_strokes_are_refused_and_change_nothing() {
        let mut set = ground();
        let before = set.len();
        for radius in [0.0, -1.0, f64::NAN] {
            let brush = Brush {
                kind: BrushKind::Erase,
                radius,
            };
            assert!(brush.apply(&wavy(), &mut set, 0).is_err());
        }
        let brush = Brush {
            kind: BrushKind::Spray {
                density: 0.0,
                tag: None,
            },
            radius: 1.0,
        };
        assert!(matches!(
            brush.apply(&wavy(), &mut set, 0),
            Err(SketchError::Markers(_))
        ));
        assert_eq!(
            brush.apply(&Stroke::new(), &mut set, 0),
            Err(SketchError::EmptyStroke)
        );
        // One point: a dab.
        let eraser = Brush {
            kind: BrushKind::Erase,
            radius: 1.0,
        };
        let dab = Stroke::from_positions([DVec2::new(10.0, 10.0)]).unwrap();
        assert!(eraser.apply(&dab, &mut set, 0).unwrap() > 150);
        assert!(set.within(DVec2::new(10.0, 10.0), 1.0).is_empty());
        assert!(set.len() < before);
    }
}
