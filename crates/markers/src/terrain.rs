//! Painted terrain (digest 003 §2.2): the ground starts walkable and the user paints regions
//! that are best avoided (with an intensity) or forbidden. A marker takes the type of the
//! region that holds it ([`crate::MarkerSet`]); the weight factor `ft` of digest 003's motion
//! rule comes from it ([`Terrain::ft`]).

use crowdfield_field::Shape;
use glam::DVec2;

use crate::MarkerError;

/// The type of the ground at a point (digest 003 §2.2).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Terrain {
    /// Streets, pavements: walk freely (`ft` = 1).
    #[default]
    Walkable,
    /// Lawns, river banks: walkable, best avoided; `intensity` in (0, 1) says how much
    /// (`ft` = 1 − intensity).
    Avoid {
        /// How strongly to avoid it, in (0, 1).
        intensity: f64,
    },
    /// Holes, water, walls: never walked (`ft` = 0); no marker is placed there.
    Forbidden,
}

impl Terrain {
    /// The weight factor of digest 003's motion rule: 1 walkable, 1 − intensity avoided, 0
    /// forbidden.
    pub fn ft(self) -> f64 {
        match self {
            Terrain::Walkable => 1.0,
            Terrain::Avoid { intensity } => 1.0 - intensity,
            Terrain::Forbidden => 0.0,
        }
    }

    /// Whether markers may be placed on it.
    pub fn is_walkable(self) -> bool {
        !matches!(self, Terrain::Forbidden)
    }

    fn validate(self) -> Result<(), MarkerError> {
        match self {
            Terrain::Avoid { intensity } if !(intensity > 0.0 && intensity < 1.0) => Err(
                MarkerError::BadSetting("an avoided region's intensity must lie in (0, 1)"),
            ),
            _ => Ok(()),
        }
    }
}

/// One painted region.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct TerrainRegion {
    /// Where.
    pub shape: Shape,
    /// What.
    pub terrain: Terrain,
}

/// The painted regions, in paint order: where regions overlap the one painted last decides.
/// Outside every region the ground is [`Terrain::Walkable`].
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TerrainMap {
    regions: Vec<TerrainRegion>,
    /// Each region's bounding box, to skip it fast.
    #[cfg_attr(feature = "serde", serde(skip))]
    boxes: Vec<(DVec2, DVec2)>,
}

impl TerrainMap {
    /// All ground walkable.
    pub fn new() -> Self {
        Self::default()
    }

    /// Paints `shape` with `terrain` over what was painted before. A shape that is not valid
    /// (not finite, negative sizes) or an intensity outside (0, 1) is refused and nothing
    /// changes.
    pub fn paint(&mut self, shape: Shape, terrain: Terrain) -> Result<(), MarkerError> {
        terrain.validate()?;
        let bounds = shape.bounds()?;
        self.regions.push(TerrainRegion { shape, terrain });
        self.boxes.push(bounds);
        Ok(())
    }

    /// The regions, in paint order.
    pub fn regions(&self) -> &[TerrainRegion] {
        &self.regions
    }

    /// Takes the last painted region off; returns it.
    pub fn pop(&mut self) -> Option<TerrainRegion> {
        self.boxes.pop();
        self.regions.pop()
    }

    /// The terrain at `p`: the last painted region holding it, walkable outside them all.
    pub fn terrain_at(&self, p: DVec2) -> Terrain {
        if self.boxes.len() != self.regions.len() {
            // Deserialised without its boxes: look at every region.
            return self
                .regions
                .iter()
                .rev()
                .find(|r| r.shape.distance(p).is_ok_and(|d| d <= 0.0))
                .map_or(Terrain::Walkable, |r| r.terrain);
        }
        self.regions
            .iter()
            .zip(&self.boxes)
            .rev()
            .find(|(r, (lo, hi))| {
                p.cmpge(*lo).all()
                    && p.cmple(*hi).all()
                    && r.shape.distance(p).is_ok_and(|d| d <= 0.0)
            })
            .map_or(Terrain::Walkable, |(r, _)| r.terrain)
    }

    /// Rebuilds the bounding boxes (after deserialising).
    pub fn rebuild(&mut self) -> Result<(), MarkerError> {
        self.boxes = self
            .regions
            .iter()
            .map(|r| r.shape.bounds())
            .collect::<Result<_, _>>()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disc(x: f64, y: f64, r: f64) -> Shape {
        Shape::Disc {
            centre: DVec2::new(x, y),
            radius: r,
        }
    }

    #[test]
    fn the_last_painted_region_decides_and_the_rest_is_walkable() {
        let mut map = TerrainMap::new();
        map.paint(disc(0.0, 0.0, 2.0), Terrain::Avoid { intensity: 0.6 })
            .unwrap();
        map.paint(disc(1.0, 0.0, 1.0), Terrain::Forbidden).unwrap();
        assert_eq!(map.terrain_at(DVec2::new(1.5, 0.0)), Terrain::Forbidden);
        assert_eq!(
            map.terrain_at(DVec2::new(-1.5, 0.0)),
            Terrain::Avoid { intensity: 0.6 }
        );
        assert_eq!(map.terrain_at(DVec2::new(5.0, 0.0)), Terrain::Walkable);
        assert!((map.terrain_at(DVec2::new(-1.5, 0.0)).ft() - 0.4).abs() < 1e-12);
        map.pop();
        assert_eq!(
            map.terrain_at(DVec2::new(1.5, 0.0)),
            Terrain::Avoid { intensity: 0.6 }
        );
    }

    #[test]
    fn bad_regions_are_refused_and_change_nothing() {
        let mut map = TerrainMap::new();
        for intensity in [0.0, 1.0, -0.5, f64::NAN] {
            assert!(
                map.paint(disc(0.0, 0.0, 1.0), Terrain::Avoid { intensity })
                    .is_err()
            );
        }
        assert!(
            map.paint(disc(f64::NAN, 0.0, 1.0), Terrain::Forbidden)
                .is_err()
        );
        assert!(map.regions().is_empty());
    }
}
