//! Maps shared by the benchmarks.

use crowdfield_field::{Coverage, Field, GridGeometry, Potential, Shape, raster};
use glam::DVec2;

/// A square room of `side` cells with a goal patch near the east wall and, when `side` ≥ 64,
/// a few box and disc obstacles: a typical global map.
pub fn room<T: Potential>(side: usize, free: f64) -> Field<T> {
    let g = GridGeometry::new(DVec2::ZERO, 1.0, side, side).unwrap();
    let mut f = Field::new(g, free);
    if side >= 64 {
        let s = side as f64;
        let shapes = [
            Shape::Aabb {
                min: DVec2::new(0.3 * s, 0.2 * s),
                max: DVec2::new(0.35 * s, 0.8 * s),
            },
            Shape::Disc {
                centre: DVec2::new(0.6 * s, 0.3 * s),
                radius: 0.08 * s,
            },
            Shape::RotatedBox {
                centre: DVec2::new(0.65 * s, 0.7 * s),
                half_extents: DVec2::new(0.12 * s, 0.03 * s),
                angle: 0.5,
            },
        ];
        for shape in &shapes {
            raster::rasterise_obstacle(&mut f, shape, 0.0, Coverage::Touch).unwrap();
        }
    }
    let (gx, gy) = (side - 2, side / 2);
    for y in gy - 1..=gy + 1 {
        f.set_goal(gx, y).unwrap();
    }
    f
}

/// Free cells of a field: the cells a sweep updates.
pub fn free_cells<T: Potential>(f: &Field<T>) -> u64 {
    f.kinds().iter().filter(|k| !k.is_fixed()).count() as u64
}
