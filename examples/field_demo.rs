//! Solves a global map and writes a picture of it.
//!
//! ```text
//! cargo run --release --example field_demo [-- OUT.png]
//! ```
//!
//! A 60 m × 36 m yard (0.4 m cells) with a wall, a disc, a rotated box, a thin diagonal fence and
//! a triangle, all grown by a 0.3 m agent radius, and a goal at the east end. The harmonic field
//! (ε = 0) is solved with the multigrid solver; so is a biased one (ε = 0.7, v = (0, 1)), which
//! by crowdfield's sign convention bends paths towards +y (up). The picture shows
//! −log₁₀(1 − p) as a heat map (the potential itself is within 1e-3 of 1 over most of the map),
//! isolines, obstacles in grey, the goal in green, harmonic paths in white and biased paths in
//! orange, all from the same starts.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use crowdfield::field::{
    Bias, CellKind, Coverage, Field, GridGeometry, MultigridSolver, Shape, SubgoalStack,
    raster::{rasterise_goal, rasterise_obstacle},
};
use glam::DVec2;

const AGENT_RADIUS: f64 = 0.3;
const PIXELS_PER_CELL: usize = 6;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("out/field_demo.png"));
    let geometry = GridGeometry::covering(DVec2::ZERO, DVec2::new(60.0, 36.0), 0.4)?;
    let mut field = Field::<f64>::new(geometry, 1.0);
    let obstacles = [
        Shape::Aabb {
            min: DVec2::new(14.0, 0.0),
            max: DVec2::new(16.0, 24.0),
        },
        Shape::Disc {
            centre: DVec2::new(30.0, 12.0),
            radius: 4.0,
        },
        Shape::RotatedBox {
            centre: DVec2::new(36.0, 26.0),
            half_extents: DVec2::new(7.0, 1.0),
            angle: -0.4,
        },
        Shape::Segment {
            a: DVec2::new(44.0, 4.0),
            b: DVec2::new(50.0, 20.0),
            thickness: 0.1,
        },
        Shape::Polygon(vec![
            DVec2::new(22.0, 28.0),
            DVec2::new(27.0, 36.0),
            DVec2::new(19.0, 36.0),
        ]),
    ];
    for shape in &obstacles {
        rasterise_obstacle(&mut field, shape, AGENT_RADIUS, Coverage::Touch)?;
    }
    rasterise_goal(
        &mut field,
        &Shape::Disc {
            centre: DVec2::new(57.0, 18.0),
            radius: 1.0,
        },
        Coverage::Centre,
    )?;

    let solver = MultigridSolver::new();
    let mut harmonic = field.clone();
    let report = solver.solve(&mut harmonic, &Bias::HARMONIC, 1e-10)?;
    println!(
        "harmonic: {}×{} cells, {} iterations, {} levels, residual {:.1e}",
        geometry.width(),
        geometry.height(),
        report.iterations,
        report.levels,
        report.residual
    );
    let mut biased = field.clone();
    let bias = Bias::new(0.7, DVec2::Y)?;
    let report = solver.solve(&mut biased, &bias, 1e-10)?;
    println!(
        "biased (ε = 0.7, v = (0, 1)): {} iterations, residual {:.1e}",
        report.iterations, report.residual
    );

    let starts = [
        DVec2::new(3.0, 4.0),
        DVec2::new(3.0, 18.0),
        DVec2::new(3.0, 32.0),
        DVec2::new(22.0, 6.0),
        DVec2::new(24.0, 20.0),
    ];
    let white: Vec<Vec<DVec2>> = starts.iter().map(|s| trace(&harmonic, *s)).collect();
    let orange: Vec<Vec<DVec2>> = starts.iter().map(|s| trace(&biased, *s)).collect();
    for (i, (a, b)) in white.iter().zip(&orange).enumerate() {
        println!(
            "start {i}: harmonic path {} steps, biased path {} steps",
            a.len(),
            b.len()
        );
    }

    let mut image = Image::new(
        geometry.width() * PIXELS_PER_CELL,
        geometry.height() * PIXELS_PER_CELL,
    );
    paint_field(&mut image, &harmonic);
    for path in &white {
        image.polyline(&geometry, path, [255, 255, 255]);
    }
    for path in &orange {
        image.polyline(&geometry, path, [255, 140, 0]);
    }
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    image.save(&out)?;
    println!("wrote {}", out.display());
    Ok(())
}

/// Follows the descent in half-cell steps (with sub-goals against flat spots) until a goal cell.
fn trace(field: &Field<f64>, start: DVec2) -> Vec<DVec2> {
    let g = field.geometry();
    let mut stack = SubgoalStack::new();
    let mut pos = start;
    let mut path = vec![pos];
    for _ in 0..4_000 {
        let c = g.world_to_cell(pos);
        if field.kind(c.x as usize, c.y as usize) == Some(CellKind::Goal) {
            break;
        }
        let Ok(d) = stack.descent(field, pos) else {
            break;
        };
        if d == DVec2::ZERO {
            break;
        }
        pos += d.normalize() * g.cell_size() * 0.5;
        path.push(pos);
    }
    path
}

fn paint_field(image: &mut Image, field: &Field<f64>) {
    let (w, h) = (field.width(), field.height());
    let level = |x: usize, y: usize| -> f64 {
        let p = field.potential(x, y).unwrap_or(1.0);
        (-(1.0 - p).max(1e-12).log10()).clamp(0.0, 12.0) / 12.0
    };
    for y in 0..h {
        for x in 0..w {
            let colour = match field.kind(x, y) {
                Some(CellKind::Obstacle) => [70, 70, 78],
                Some(CellKind::Goal) => [40, 220, 90],
                _ => {
                    let t = level(x, y);
                    // Isolines every 0.5 decades of 1 − p.
                    let band = (t * 24.0).floor();
                    let edge = x + 1 < w && (level(x + 1, y) * 24.0).floor() != band
                        || y + 1 < h && (level(x, y + 1) * 24.0).floor() != band;
                    if edge {
                        [20, 20, 30]
                    } else {
                        colour_map(1.0 - t)
                    }
                }
            };
            image.fill_cell(x, h - 1 - y, colour);
        }
    }
}

/// A dark-blue → teal → yellow ramp.
fn colour_map(t: f64) -> [u8; 3] {
    let stops = [
        (0.0, [30.0, 20.0, 90.0]),
        (0.5, [30.0, 150.0, 140.0]),
        (1.0, [250.0, 230.0, 60.0]),
    ];
    let t = t.clamp(0.0, 1.0);
    let (i, j) = if t < 0.5 { (0, 1) } else { (1, 2) };
    let u = (t - stops[i].0) / (stops[j].0 - stops[i].0);
    let c: Vec<u8> = (0..3)
        .map(|k| (stops[i].1[k] * (1.0 - u) + stops[j].1[k] * u) as u8)
        .collect();
    [c[0], c[1], c[2]]
}

struct Image {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Image {
    fn new(width: usize, height: usize) -> Self {
        Self {
            width,
            height,
            rgb: vec![0; width * height * 3],
        }
    }

    fn put(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < self.width && (y as usize) < self.height {
            let i = (y as usize * self.width + x as usize) * 3;
            self.rgb[i..i + 3].copy_from_slice(&c);
        }
    }

    fn fill_cell(&mut self, cx: usize, cy: usize, c: [u8; 3]) {
        for dy in 0..PIXELS_PER_CELL {
            for dx in 0..PIXELS_PER_CELL {
                self.put(
                    (cx * PIXELS_PER_CELL + dx) as i64,
                    (cy * PIXELS_PER_CELL + dy) as i64,
                    c,
                );
            }
        }
    }

    /// Draws a world-space polyline two pixels wide (image y grows downwards).
    fn polyline(&mut self, g: &GridGeometry, points: &[DVec2], c: [u8; 3]) {
        let height = self.height as f64;
        let to_px = |p: DVec2| {
            let q = (p - g.origin()) / g.cell_size() * PIXELS_PER_CELL as f64;
            DVec2::new(q.x, height - q.y)
        };
        for pair in points.windows(2) {
            let (a, b) = (to_px(pair[0]), to_px(pair[1]));
            let steps = (b - a).length().ceil().max(1.0) as usize;
            for s in 0..=steps {
                let p = a.lerp(b, s as f64 / steps as f64);
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    self.put(p.x as i64 + dx, p.y as i64 + dy, c);
                }
            }
        }
    }

    fn save(&self, path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
        let mut encoder = png::Encoder::new(
            BufWriter::new(File::create(path)?),
            self.width as u32,
            self.height as u32,
        );
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.write_header()?.write_image_data(&self.rgb)?;
        Ok(())
    }
}
