//! Markers from an area-equalised terrain mesh (digest 003 §2.3): the terrain's triangles are
//! split until every one is at most 1.35 × the smallest triangle's area, and each final
//! triangle gives one marker at its centroid, in 3D, so marker density follows the surface
//! (a slope gets more markers per metre of plan than flat ground).
//!
//! - [`TerrainMesh::equalise`]: the seed's rule, with the 4-way midpoint split digest 003 §2.3
//!   suggests (four children of a quarter of the area each, on the parent's plane).
//! - [`TerrainMesh::centroids_at`]: ours, for a marker density: every equalised triangle cut
//!   into n² equal triangles (its sides in n parts), n the least that gives the density asked
//!   for over the surface; the pieces keep the parent's plane and the seed's bound relative to
//!   the first mesh's smallest area.
//!
//! A marker's type is the painted region holding its centroid (digest 003 §2.3's suggestion);
//! [`crate::MarkerSet`] places them (`Generation::Mesh`).

use glam::{DVec2, DVec3};

use crate::{HeightMap, MarkerError};

/// The seed's subdivision threshold: no triangle above 1.35 × the smallest's area.
pub const EQUALISE_RATIO: f64 = 1.35;

/// A triangle mesh of the ground.
#[derive(Debug, Clone, PartialEq)]
pub struct TerrainMesh {
    vertices: Vec<DVec3>,
    triangles: Vec<[u32; 3]>,
}

impl TerrainMesh {
    /// A mesh of `vertices` and `triangles` (indices into the vertices). Refuses an empty
    /// mesh, vertices that are not finite, indices out of range and degenerate triangles (of
    /// no area: a smallest area of 0 would ask for endless splitting).
    pub fn new(vertices: Vec<DVec3>, triangles: Vec<[u32; 3]>) -> Result<Self, MarkerError> {
        if triangles.is_empty() {
            return Err(MarkerError::BadMesh("a mesh needs at least one triangle"));
        }
        if vertices.iter().any(|v| !v.is_finite()) {
            return Err(MarkerError::NonFinite("a mesh vertex"));
        }
        let mesh = Self {
            vertices,
            triangles,
        };
        for t in &mesh.triangles {
            if t.iter().any(|&i| i as usize >= mesh.vertices.len()) {
                return Err(MarkerError::BadMesh("a triangle names a missing vertex"));
            }
        }
        for k in 0..mesh.triangles.len() {
            let [a, b, c] = mesh.corners(k);
            // No area, relative to its size: three points (nearly) in a line or coincident.
            let scale = (b - a).length_squared().max((c - a).length_squared());
            if !(mesh.area(k) > 1e-12 * scale && scale > 0.0) {
                return Err(MarkerError::BadMesh("a triangle of no area"));
            }
        }
        Ok(mesh)
    }

    /// The mesh of a height map's grid: each cell cut along its rising diagonal into two
    /// triangles, the surface [`HeightMap::height`] reads.
    pub fn from_heights(heights: &HeightMap) -> Self {
        let (cols, rows) = heights.size();
        let vertices = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (c, r)))
            .map(|(c, r)| heights.point(c, r))
            .collect();
        let mut triangles = Vec::with_capacity(2 * (cols - 1) * (rows - 1));
        let at = |c: usize, r: usize| (r * cols + c) as u32;
        for r in 0..rows - 1 {
            for c in 0..cols - 1 {
                triangles.push([at(c, r), at(c + 1, r), at(c + 1, r + 1)]);
                triangles.push([at(c, r), at(c + 1, r + 1), at(c, r + 1)]);
            }
        }
        Self {
            vertices,
            triangles,
        }
    }

    /// Flat ground at height 0 over `min`–`max`, in cells of about `cell` metres (fitted to
    /// the extent), each cut into two triangles.
    pub fn flat(min: DVec2, max: DVec2, cell: f64) -> Result<Self, MarkerError> {
        let size = max - min;
        if !(min.is_finite() && max.is_finite() && size.x > 0.0 && size.y > 0.0) {
            return Err(MarkerError::BadMesh("flat ground needs min < max"));
        }
        if !(cell.is_finite() && cell > 0.0) {
            return Err(MarkerError::BadMesh("a mesh cell must be positive"));
        }
        let n = (size / cell).ceil().max(DVec2::ONE);
        if n.x * n.y > 16_777_216.0 {
            return Err(MarkerError::BadMesh("a mesh of more than 2^24 cells"));
        }
        let heights = HeightMap::new(
            min,
            1.0,
            n.x as usize + 1,
            n.y as usize + 1,
            vec![0.0; (n.x as usize + 1) * (n.y as usize + 1)],
        )?;
        let mut mesh = Self::from_heights(&heights);
        // Stretch the unit grid over the extent.
        let scale = size / n;
        for v in &mut mesh.vertices {
            *v = (min + (v.truncate() - min) * scale).extend(0.0);
        }
        Ok(mesh)
    }

    /// The vertices.
    pub fn vertices(&self) -> &[DVec3] {
        &self.vertices
    }

    /// The triangles, as indices into [`vertices`](Self::vertices).
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// Triangle `k`'s corners.
    pub fn corners(&self, k: usize) -> [DVec3; 3] {
        self.triangles[k].map(|i| self.vertices[i as usize])
    }

    /// Triangle `k`'s area (in 3D).
    pub fn area(&self, k: usize) -> f64 {
        let [a, b, c] = self.corners(k);
        0.5 * (b - a).cross(c - a).length()
    }

    /// The smallest triangle's area, A_min.
    pub fn smallest_area(&self) -> f64 {
        (0..self.triangles.len())
            .map(|k| self.area(k))
            .fold(f64::INFINITY, f64::min)
    }

    /// The whole surface's area.
    pub fn surface_area(&self) -> f64 {
        (0..self.triangles.len()).map(|k| self.area(k)).sum()
    }

    /// Triangle `k`'s centroid.
    pub fn centroid(&self, k: usize) -> DVec3 {
        let [a, b, c] = self.corners(k);
        (a + b + c) / 3.0
    }

    /// The seed's equalisation: every triangle above `ratio` × this mesh's smallest area is
    /// split into four at its sides' midpoints, and the pieces again, until none is. Refuses a
    /// ratio below 1 (the pieces of the smallest would never do) and a result of more than
    /// `max_triangles` triangles.
    pub fn equalise(&self, ratio: f64, max_triangles: usize) -> Result<Self, MarkerError> {
        if !(ratio.is_finite() && ratio >= 1.0) {
            return Err(MarkerError::BadMesh(
                "the equalising ratio must be at least 1",
            ));
        }
        let limit = ratio * self.smallest_area();
        let mut vertices = Vec::new();
        let mut triangles = Vec::new();
        let mut stack: Vec<[DVec3; 3]> = (0..self.triangles.len())
            .rev()
            .map(|k| self.corners(k))
            .collect();
        while let Some([a, b, c]) = stack.pop() {
            let area = 0.5 * (b - a).cross(c - a).length();
            if area > limit {
                let (ab, bc, ca) = ((a + b) / 2.0, (b + c) / 2.0, (c + a) / 2.0);
                // Pushed so that the pieces come out in a fixed order: a's corner first.
                stack.extend([[ab, bc, ca], [ca, bc, c], [ab, b, bc], [a, ab, ca]]);
                continue;
            }
            if triangles.len() >= max_triangles {
                return Err(MarkerError::TooManyMarkers {
                    wanted: (triangles.len() + stack.len() + 1) as u64,
                });
            }
            let first = vertices.len() as u32;
            vertices.extend([a, b, c]);
            triangles.push([first, first + 1, first + 2]);
        }
        Ok(Self {
            vertices,
            triangles,
        })
    }

    /// The cut that gives at least `density` markers per m² of surface: each triangle in n²
    /// pieces, n ≥ 1 the least that does.
    pub fn pieces_for(&self, density: f64) -> usize {
        let now = self.triangles.len() as f64 / self.surface_area();
        ((density / now).sqrt().ceil().max(1.0)) as usize
    }

    /// The centroids of every triangle cut into `n`² equal pieces (its sides in `n` parts),
    /// triangle by triangle. `n` = 1: the triangles' own centroids.
    pub fn centroids_at(&self, n: usize) -> impl Iterator<Item = DVec3> + '_ {
        let n = n.max(1);
        (0..self.triangles.len()).flat_map(move |k| {
            let [a, b, c] = self.corners(k);
            let (u, v) = ((b - a) / n as f64, (c - a) / n as f64);
            let up = (0..n).flat_map(move |i| {
                (0..n - i).map(move |j| a + u * (i as f64 + 1.0 / 3.0) + v * (j as f64 + 1.0 / 3.0))
            });
            let down = (0..n.saturating_sub(1)).flat_map(move |i| {
                (0..n - 1 - i)
                    .map(move |j| a + u * (i as f64 + 2.0 / 3.0) + v * (j as f64 + 2.0 / 3.0))
            });
            up.chain(down)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_cuts_give_n_squared_centroids_inside_the_triangle() {
        let mesh = TerrainMesh::new(
            vec![
                DVec3::ZERO,
                DVec3::new(2.0, 0.0, 1.0),
                DVec3::new(0.0, 3.0, 0.5),
            ],
            vec![[0, 1, 2]],
        )
        .unwrap();
        for n in 1..6 {
            let c: Vec<DVec3> = mesh.centroids_at(n).collect();
            assert_eq!(c.len(), n * n);
            // Their mean is the triangle's centroid (equal pieces).
            let mean = c.iter().copied().sum::<DVec3>() / c.len() as f64;
            assert!((mean - mesh.centroid(0)).length() < 1e-12);
        }
        assert_eq!(
            mesh.pieces_for(mesh.triangles.len() as f64 / mesh.surface_area()),
            1
        );
    }

    #[test]
    fn degenerate_meshes_are_refused() {
        let v = vec![DVec3::ZERO, DVec3::X, DVec3::Y, DVec3::new(2.0, 0.0, 0.0)];
        assert!(TerrainMesh::new(v.clone(), vec![]).is_err());
        assert!(TerrainMesh::new(v.clone(), vec![[0, 1, 4]]).is_err());
        assert!(TerrainMesh::new(v.clone(), vec![[0, 1, 3]]).is_err()); // in a line
        assert!(TerrainMesh::new(v.clone(), vec![[0, 0, 2]]).is_err()); // coincident
        let mut nan = v.clone();
        nan[2].z = f64::NAN;
        assert!(TerrainMesh::new(nan, vec![[0, 1, 2]]).is_err());
        let ok = TerrainMesh::new(v, vec![[0, 1, 2]]).unwrap();
        assert!(ok.equalise(0.5, 100).is_err());
        assert!(TerrainMesh::flat(DVec2::ONE, DVec2::ZERO, 1.0).is_err());
    }
}
