//! What the field overlays draw, computed from a [`Field`] without Bevy: heat-map pixels,
//! isolines and descent arrows. Kept apart from the systems so it can be tested and reused (the
//! CLI's plots draw the same pictures).
//!
//! ## Display scale
//!
//! A harmonic map (seed 000 §3.2, Laplace's equation ∇²p = 0 with p = 0 on goals and 1 on
//! walls) falls off exponentially away from its goal: behind a corridor 1 − p shrinks by a
//! constant factor per cell (digest 000 §2.9). Drawn linearly, nearly the whole map would be one
//! colour. Overlays therefore show the **decade of 1 − p**, `log10(1 − p)`: 0 at the goal,
//! about −16 where `f64` runs out of digits. The picture is normalised to the range found in the
//! map, so a local map (values in [0, 1] with ε > 0, seed 001 Eq. 3) is shown the same way.
//! Free cells whose p rounded to exactly 1 are **flat** (no gradient, seed 000 §4.2) and get
//! their own colour, as do obstacles and goal cells.
//!
//! The descent direction is −∇p (digest 000 Eq. 3.6), the direction agents follow.

use bevy_crowdfield::field::{CellKind, Field};
use bevy_crowdfield::prelude::DVec2;

/// Colour of obstacle cells (sRGB bytes).
pub const OBSTACLE_RGB: [u8; 3] = [72, 74, 82];
/// Colour of goal cells.
pub const GOAL_RGB: [u8; 3] = [250, 250, 250];
/// Colour of free cells where p rounded to 1: flat, no usable gradient.
pub const FLAT_RGB: [u8; 3] = [214, 48, 170];

/// The stops of the heat-map ramp, dark (far from the goal) to bright (at the goal): the
/// viridis colour map sampled at 0, ¼, ½, ¾ and 1.
const RAMP: [[f32; 3]; 5] = [
    [68.0, 1.0, 84.0],
    [59.0, 82.0, 139.0],
    [33.0, 145.0, 140.0],
    [94.0, 201.0, 98.0],
    [253.0, 231.0, 37.0],
];

/// The heat-map colour of `t` in [0, 1] (clamped; NaN reads as 0).
pub fn ramp(t: f32) -> [u8; 3] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (RAMP.len() - 1) as f32;
    let i = (x as usize).min(RAMP.len() - 2);
    let f = x - i as f32;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    [0, 1, 2].map(|c| (a[c] + (b[c] - a[c]) * f).round() as u8)
}

/// The displayed value of a potential: `log10(1 − p)`, or `None` where p rounded to 1 (flat).
pub fn display_value(p: f64) -> Option<f64> {
    let gap = 1.0 - p;
    (gap > 0.0).then(|| gap.log10())
}

/// Range of [`display_value`] over a field's free and goal cells, lowest first. `None` when
/// every such cell is flat.
pub fn display_range(field: &Field<f64>) -> Option<(f64, f64)> {
    let mut range: Option<(f64, f64)> = None;
    for (kind, p) in field.kinds().iter().zip(field.potentials()) {
        if *kind == CellKind::Obstacle {
            continue;
        }
        if let Some(v) = display_value(*p) {
            range = Some(match range {
                None => (v, v),
                Some((lo, hi)) => (lo.min(v), hi.max(v)),
            });
        }
    }
    range
}

/// Position of a displayed value in `range`, 0 (lowest) to 1 (highest).
fn normalise(v: f64, (lo, hi): (f64, f64)) -> f64 {
    if hi > lo { (v - lo) / (hi - lo) } else { 1.0 }
}

/// A field drawn as RGBA8 sRGB pixels, one per cell, rows from the top (highest y) down, as
/// images are stored.
#[derive(Debug, Clone, PartialEq)]
pub struct HeatMap {
    /// Pixels per row (the field's width).
    pub width: usize,
    /// Rows (the field's height).
    pub height: usize,
    /// `width × height × 4` bytes.
    pub rgba: Vec<u8>,
    /// The displayed range, `log10(1 − p)` lowest and highest; `None` if all flat.
    pub range: Option<(f64, f64)>,
}

/// Paints a field: obstacles, goals and flat cells in their colours, the rest on the ramp by
/// [`display_value`], with `alpha` for every pixel.
pub fn heat_map(field: &Field<f64>, alpha: u8) -> HeatMap {
    let (w, h) = (field.width(), field.height());
    let range = display_range(field);
    let mut rgba = vec![0u8; w * h * 4];
    for y in 0..h {
        let row = h - 1 - y;
        for x in 0..w {
            let i = y * w + x;
            let rgb = match field.kinds()[i] {
                CellKind::Obstacle => OBSTACLE_RGB,
                CellKind::Goal => GOAL_RGB,
                CellKind::Free | CellKind::Fixed => {
                    match (display_value(field.potentials()[i]), range) {
                        (Some(v), Some(r)) => ramp(normalise(v, r) as f32),
                        _ => FLAT_RGB,
                    }
                }
            };
            let o = (row * w + x) * 4;
            rgba[o..o + 3].copy_from_slice(&rgb);
            rgba[o + 3] = alpha;
        }
    }
    HeatMap {
        width: w,
        height: h,
        rgba,
        range,
    }
}

/// Isolines of the displayed value at `levels` evenly spaced heights strictly inside the
/// field's range, as world-space segments (marching squares over cell centres). Squares that
/// touch an obstacle or a flat cell are skipped; a saddle is split by its centre value.
pub fn isolines(field: &Field<f64>, levels: usize) -> Vec<[DVec2; 2]> {
    let Some(range) = display_range(field) else {
        return Vec::new();
    };
    let (w, h) = (field.width(), field.height());
    if w < 2 || h < 2 || levels == 0 {
        return Vec::new();
    }
    let value: Vec<f64> = field
        .kinds()
        .iter()
        .zip(field.potentials())
        .map(|(k, p)| match (k, display_value(*p)) {
            (CellKind::Obstacle, _) | (_, None) => f64::NAN,
            (_, Some(v)) => normalise(v, range),
        })
        .collect();
    let geometry = field.geometry();
    let mut segments = Vec::new();
    for l in 1..=levels {
        let level = l as f64 / (levels + 1) as f64;
        for y in 0..h - 1 {
            for x in 0..w - 1 {
                // Corners counter-clockwise from the lower left.
                let corners = [(x, y), (x + 1, y), (x + 1, y + 1), (x, y + 1)];
                let v = corners.map(|(cx, cy)| value[cy * w + cx]);
                if v.iter().any(|v| v.is_nan()) {
                    continue;
                }
                let points: Vec<DVec2> = (0..4)
                    .filter_map(|e| {
                        let (a, b) = (e, (e + 1) % 4);
                        let (va, vb) = (v[a], v[b]);
                        if (va < level) == (vb < level) {
                            return None;
                        }
                        let f = (level - va) / (vb - va);
                        let pa = geometry.cell_centre(corners[a].0, corners[a].1);
                        let pb = geometry.cell_centre(corners[b].0, corners[b].1);
                        Some(pa + (pb - pa) * f)
                    })
                    .collect();
                match points.len() {
                    2 => segments.push([points[0], points[1]]),
                    4 => {
                        // Crossings lie on edges 0-1, 1-2, 2-3, 3-0 in order. Join around the
                        // corners on the centre's other side.
                        let centre = v.iter().sum::<f64>() / 4.0;
                        if (centre < level) == (v[0] < level) {
                            segments.push([points[0], points[1]]);
                            segments.push([points[2], points[3]]);
                        } else {
                            segments.push([points[3], points[0]]);
                            segments.push([points[1], points[2]]);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    segments
}

/// One arrow of [`descent_arrows`]: where it starts and its unit direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrow {
    /// The cell centre it is drawn from.
    pub at: DVec2,
    /// Unit descent direction −∇p.
    pub direction: DVec2,
}

/// The descent direction at every `spacing`-th free cell (in x and y, starting half a spacing
/// in), skipping flat cells.
pub fn descent_arrows(field: &Field<f64>, spacing: usize) -> Vec<Arrow> {
    let spacing = spacing.max(1);
    let (w, h) = (field.width(), field.height());
    let mut arrows = Vec::new();
    for y in (spacing / 2..h).step_by(spacing) {
        for x in (spacing / 2..w).step_by(spacing) {
            if field.kind(x, y) != Some(CellKind::Free) {
                continue;
            }
            if let Some(direction) = field.descent_at_cell(x, y).try_normalize() {
                arrows.push(Arrow {
                    at: field.geometry().cell_centre(x, y),
                    direction,
                });
            }
        }
    }
    arrows
}

/// Colour of an avoided region (its alpha grows with the intensity).
pub const AVOID_RGB: [u8; 3] = [214, 150, 40];
/// Colour of a forbidden region.
pub const FORBIDDEN_RGB: [u8; 3] = [150, 30, 40];
/// Colour of a ground marker.
pub const MARKER_RGB: [u8; 3] = [150, 205, 255];
/// Colours of tagged markers, by tag.
pub const TAG_RGB: [[u8; 3]; 4] = [
    [255, 225, 60],
    [120, 255, 140],
    [255, 120, 220],
    [255, 160, 90],
];

/// Paints a marker set at `pixels_per_metre` (lowered so that neither side passes
/// `max_side` pixels): painted regions as translucent fills (avoided amber, forbidden red),
/// each marker one pixel (ground markers pale blue, tagged ones by tag, avoided ones amber),
/// the rest clear. Rows run from the top (highest y) down.
pub fn markers_picture(
    set: &bevy_crowdfield::markers::MarkerSet,
    pixels_per_metre: f64,
    max_side: usize,
) -> HeatMap {
    use bevy_crowdfield::markers::Terrain;
    let (lo, hi) = (set.settings().min, set.settings().max);
    let size = hi - lo;
    let scale = pixels_per_metre
        .min(max_side as f64 / size.x)
        .min(max_side as f64 / size.y)
        .max(1e-6);
    let width = ((size.x * scale).ceil() as usize).max(1);
    let height = ((size.y * scale).ceil() as usize).max(1);
    let mut rgba = vec![0u8; width * height * 4];
    let regions = set.terrain();
    if !regions.regions().is_empty() {
        for row in 0..height {
            for col in 0..width {
                let p = lo
                    + bevy::math::DVec2::new(
                        (col as f64 + 0.5) / scale,
                        (height - 1 - row) as f64 / scale + 0.5 / scale,
                    );
                let (rgb, alpha) = match regions.terrain_at(p) {
                    Terrain::Walkable => continue,
                    Terrain::Avoid { intensity } => (AVOID_RGB, (40.0 + 100.0 * intensity) as u8),
                    Terrain::Forbidden => (FORBIDDEN_RGB, 150),
                };
                let at = (row * width + col) * 4;
                rgba[at..at + 4].copy_from_slice(&[rgb[0], rgb[1], rgb[2], alpha]);
            }
        }
    }
    for (_, m) in set.markers() {
        let q = (m.position - lo) * scale;
        let (col, row) = (
            q.x.floor() as isize,
            height as isize - 1 - q.y.floor() as isize,
        );
        if col < 0 || row < 0 || col >= width as isize || row >= height as isize {
            continue;
        }
        // Ground markers faint and adding up, so that what lies under them still shows and
        // denser ground (a spray) shows brighter.
        let (rgb, alpha) = match (m.tag, m.terrain) {
            (Some(t), _) => (TAG_RGB[t as usize % TAG_RGB.len()], 230),
            (None, Terrain::Avoid { .. }) => (AVOID_RGB, 200),
            _ => (MARKER_RGB, 45),
        };
        let at = (row as usize * width + col as usize) * 4;
        let px = &mut rgba[at..at + 4];
        if px[..3] == rgb && alpha < 200 {
            px[3] = px[3].saturating_add(alpha);
        } else {
            px.copy_from_slice(&[rgb[0], rgb[1], rgb[2], alpha]);
        }
    }
    HeatMap {
        width,
        height,
        rgba,
        range: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy_crowdfield::field::{Bias, GridGeometry, MultigridSolver};

    /// A 20 × 10 room with the goal at its east wall, solved to convergence.
    fn room() -> Field<f64> {
        let geometry = GridGeometry::new(DVec2::ZERO, 1.0, 20, 10).unwrap();
        let mut field = Field::new(geometry, 1.0);
        for y in 0..10 {
            field.set_obstacle(0, y).unwrap();
            field.set_goal(19, y).unwrap();
        }
        for x in 0..20 {
            field.set_obstacle(x, 0).unwrap();
            field.set_obstacle(x, 9).unwrap();
        }
        field.set_obstacle(8, 4).unwrap();
        MultigridSolver::new()
            .solve(&mut field, &Bias::HARMONIC, 1e-12)
            .unwrap();
        field
    }

    #[test]
    fn ramp_runs_dark_to_bright_and_clamps() {
        let luminance =
            |c: [u8; 3]| 0.2126 * c[0] as f32 + 0.7152 * c[1] as f32 + 0.0722 * c[2] as f32;
        let mut last = -1.0;
        for i in 0..=20 {
            let l = luminance(ramp(i as f32 / 20.0));
            assert!(l > last, "ramp not increasing in brightness at {i}");
            last = l;
        }
        assert_eq!(ramp(-3.0), ramp(0.0));
        assert_eq!(ramp(7.0), ramp(1.0));
        assert_eq!(ramp(f32::NAN), ramp(0.0));
    }

    #[test]
    fn heat_map_colours_cells_by_kind_and_puts_north_on_top() {
        let field = room();
        let map = heat_map(&field, 200);
        assert_eq!((map.width, map.height), (20, 10));
        let pixel = |x: usize, y: usize| {
            let o = ((9 - y) * 20 + x) * 4;
            &map.rgba[o..o + 4]
        };
        assert_eq!(pixel(8, 4)[..3], OBSTACLE_RGB);
        assert_eq!(pixel(19, 5)[..3], GOAL_RGB);
        assert_eq!(pixel(3, 5)[3], 200);
        // Brighter towards the goal along the middle row.
        let l = |x| pixel(x, 6).iter().take(3).map(|c| *c as u32).sum::<u32>();
        assert!(l(17) > l(10) && l(10) > l(3));
        let (lo, hi) = map.range.unwrap();
        assert_eq!(hi, 0.0, "goal cells show 1 - p = 1");
        assert!(lo < -1.0);
    }

    #[test]
    fn flat_cells_get_their_own_colour() {
        let mut field = room();
        let i = field.geometry().index(2, 5);
        field.potentials_mut()[i] = 1.0;
        let map = heat_map(&field, 255);
        let o = ((9 - 5) * 20 + 2) * 4;
        assert_eq!(map.rgba[o..o + 3], FLAT_RGB);
        assert!(isolines(&field, 5).iter().all(|s| s.iter().all(|p| {
            // No segment inside a square touching the flat cell's centre (2.5, 5.5).
            (p.x - 2.5).abs() >= 1.0 || (p.y - 5.5).abs() >= 1.0
        })));
    }

    #[test]
    fn isolines_cross_the_room_at_rising_levels() {
        let field = room();
        let segments = isolines(&field, 4);
        assert!(!segments.is_empty());
        // Each level cuts the middle row once: along y = 5.5 (between rows 5 and 6, at cell
        // centres 5.5 and 6.5 it is inside a square) count crossings of x.
        let crossings = segments
            .iter()
            .filter(|[a, b]| (a.y - 6.0) * (b.y - 6.0) <= 0.0 && a.y != b.y)
            .count();
        assert_eq!(
            crossings, 4,
            "one crossing per level on a line across the room"
        );
        // Every end point lies inside the room and off the obstacle rows.
        for p in segments.iter().flatten() {
            assert!(p.x > 0.5 && p.x < 19.5 && p.y > 0.5 && p.y < 9.5);
        }
    }

    #[test]
    fn arrows_point_down_the_potential() {
        let field = room();
        let arrows = descent_arrows(&field, 3);
        assert!(arrows.len() > 10);
        for a in &arrows {
            assert!((a.direction.length() - 1.0).abs() < 1e-9);
            let ahead = field.potential_at(a.at + a.direction * 0.3).unwrap();
            let here = field.potential_at(a.at).unwrap();
            assert!(ahead < here, "arrow at {:?} climbs", a.at);
        }
    }

    #[test]
    fn a_markers_picture_shows_markers_tags_and_painted_regions() {
        use bevy_crowdfield::markers::{MarkerSet, MarkerSettings, Terrain};
        use bevy_crowdfield::prelude::{DVec2, Shape};
        let mut set = MarkerSet::new(
            MarkerSettings {
                min: DVec2::ZERO,
                max: DVec2::new(4.0, 2.0),
                ..Default::default()
            },
            vec![],
        )
        .unwrap();
        set.paint(
            Shape::Aabb {
                min: DVec2::new(3.0, 0.0),
                max: DVec2::new(4.0, 2.0),
            },
            Terrain::Forbidden,
        )
        .unwrap();
        set.spray(DVec2::new(1.0, 1.0), 0.4, 50.0, 1, Some(0))
            .unwrap();
        let picture = super::markers_picture(&set, 10.0, 4096);
        assert_eq!((picture.width, picture.height), (40, 20));
        let px = |col: usize, row: usize| &picture.rgba[(row * 40 + col) * 4..][..4];
        // The forbidden strip on the right, clear ground on the left.
        assert_eq!(&px(35, 10)[..3], &super::FORBIDDEN_RGB);
        assert_eq!(px(25, 10)[3], 0);
        // Tagged markers near (1, 1), in the first tag colour.
        let tagged = (0..20)
            .flat_map(|row| (0..40).map(move |col| (col, row)))
            .filter(|&(c, r)| px(c, r)[..3] == super::TAG_RGB[0])
            .count();
        assert!(tagged > 10, "{tagged}");
        // Capped at the largest side.
        let small = super::markers_picture(&set, 10.0, 8);
        assert_eq!((small.width, small.height), (8, 4));
    }
}
