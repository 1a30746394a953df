//! PNG plots of a run: the agents' trajectories over the obstacles, a global map as a heat map,
//! and the fundamental diagram of the measurement areas. plotters draws into an RGB buffer,
//! which the `png` crate encodes.
//!
//! The plots carry no text: plotters draws text through system font libraries, which this
//! workspace keeps out of its build. Colours and the captions in README and docs/runner.md
//! carry the meaning.

use std::path::Path;

use bevy::math::DVec2;
use bevy_crowdfield::field::{CellKind, Field, Shape};
use bevy_crowdfield::scenario::Measurement;
use plotters::prelude::*;

use crate::Sample;
use crate::measure::{AreaReport, weidmann_speed};

/// What a plot draws besides the data: the world rectangle, its static obstacles and the goals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SceneView {
    /// Lower-left corner of the world.
    pub min: DVec2,
    /// Upper-right corner of the world.
    pub max: DVec2,
    /// Static obstacles (the world's bounding walls excluded).
    pub statics: Vec<Shape>,
    /// Goal regions.
    pub goals: Vec<Shape>,
    /// Measurement areas (blue outlines) and lines (red).
    pub measurements: Vec<Measurement>,
}

/// Why a plot could not be written.
#[derive(Debug, thiserror::Error)]
#[error("plot {path}: {message}")]
pub struct PlotError {
    path: String,
    message: String,
}

impl PlotError {
    fn new(path: &Path, e: impl std::fmt::Display) -> Self {
        Self {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}

/// Encodes an RGB buffer of `size` as a PNG file.
/// A chart's drawing context, as [`chart`] hands it to its caller.
pub(crate) type Chart<'a> = ChartContext<
    'a,
    BitMapBackend<'a>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Writes a 760 × 520 chart over `x` and `y` (each low, high, grid step) with light grid lines
/// in `grid` and a black frame; `draw` draws the data between them.
pub(crate) fn chart(
    path: &Path,
    x: (f64, f64, f64),
    y: (f64, f64, f64),
    draw: impl FnOnce(&mut Chart<'_>) -> Result<(), Box<dyn std::error::Error>>,
    grid: RGBColor,
) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::new(path, e);
    let size = (760u32, 520u32);
    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .build_cartesian_2d(x.0..x.1, y.0..y.1)
            .map_err(|e| err(&e))?;
        let lines = |lo: f64, hi: f64, step: f64| {
            let n = ((hi - lo) / step).round() as usize;
            (1..n).map(move |k| lo + k as f64 * step)
        };
        let vertical = lines(x.0, x.1, x.2).map(|v| vec![(v, y.0), (v, y.1)]);
        let horizontal = lines(y.0, y.1, y.2).map(|v| vec![(x.0, v), (x.1, v)]);
        chart
            .draw_series(
                vertical
                    .chain(horizontal)
                    .map(|l| PathElement::new(l, grid.stroke_width(1))),
            )
            .map_err(|e| err(&e))?;
        draw(&mut chart).map_err(|e| err(&e))?;
        chart
            .draw_series([Rectangle::new(
                [(x.0, y.0), (x.1, y.1)],
                BLACK.stroke_width(1),
            )])
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    write_png(path, size, &rgb)
}

fn write_png(path: &Path, size: (u32, u32), rgb: &[u8]) -> Result<(), PlotError> {
    let file = std::fs::File::create(path).map_err(|e| PlotError::new(path, e))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), size.0, size.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder
        .write_header()
        .map_err(|e| PlotError::new(path, e))?;
    writer
        .write_image_data(rgb)
        .map_err(|e| PlotError::new(path, e))?;
    writer.finish().map_err(|e| PlotError::new(path, e))
}

/// Pixel size for a world of `extent`: 1,200 px on the long side.
fn canvas(extent: DVec2) -> (u32, u32) {
    let long = 1_200.0;
    let scale = long / extent.x.max(extent.y).max(1e-9);
    let size = |v: f64| ((v * scale).round() as u32).clamp(120, 1_200) + 20;
    (size(extent.x), size(extent.y))
}

/// Corners of `shape` as closed outlines (discs as 48-gons, thick segments as boxes).
pub fn outlines(shape: &Shape) -> Vec<Vec<DVec2>> {
    let thick = |a: DVec2, b: DVec2, t: f64| {
        let n = (b - a).try_normalize().unwrap_or(DVec2::X).perp() * (t * 0.5);
        vec![a + n, b + n, b - n, a - n]
    };
    match shape {
        Shape::Disc { centre, radius } => vec![
            (0..48)
                .map(|k| {
                    *centre + DVec2::from_angle(std::f64::consts::TAU * k as f64 / 48.0) * *radius
                })
                .collect(),
        ],
        Shape::Aabb { min, max } => vec![vec![
            *min,
            DVec2::new(max.x, min.y),
            *max,
            DVec2::new(min.x, max.y),
        ]],
        Shape::RotatedBox {
            centre,
            half_extents,
            angle,
        } => {
            let r = DVec2::from_angle(*angle);
            vec![
                [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)]
                    .into_iter()
                    .map(|(sx, sy)| *centre + r.rotate(DVec2::new(sx, sy) * *half_extents))
                    .collect(),
            ]
        }
        Shape::Polygon(points) => vec![points.clone()],
        Shape::Segment { a, b, thickness } => vec![thick(*a, *b, *thickness)],
        Shape::Polyline { points, thickness } => points
            .windows(2)
            .map(|w| thick(w[0], w[1], *thickness))
            .collect(),
    }
}

fn pt(p: DVec2) -> (f64, f64) {
    (p.x, p.y)
}

/// Writes the trajectories over the obstacles (grey) and goals (green) as a PNG: one colour per
/// agent, a dot where it started.
pub fn plot_trajectories(
    path: &Path,
    view: &SceneView,
    samples: &[Sample],
) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::new(path, e);
    let size = canvas(view.max - view.min);
    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .build_cartesian_2d(view.min.x..view.max.x, view.min.y..view.max.y)
            .map_err(|e| err(&e))?;
        chart
            .draw_series(view.goals.iter().flat_map(outlines).map(|o| {
                Polygon::new(
                    o.into_iter().map(pt).collect::<Vec<_>>(),
                    RGBColor(150, 220, 150).filled(),
                )
            }))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(view.statics.iter().flat_map(outlines).map(|o| {
                Polygon::new(
                    o.into_iter().map(pt).collect::<Vec<_>>(),
                    RGBColor(110, 110, 110).filled(),
                )
            }))
            .map_err(|e| err(&e))?;
        let agents = samples.iter().map(|s| s.agent + 1).max().unwrap_or(0);
        let mut paths: Vec<Vec<(f64, f64)>> = vec![Vec::new(); agents];
        for s in samples {
            paths[s.agent].push((s.position.x as f64, s.position.y as f64));
        }
        for (k, path_k) in paths.iter().enumerate() {
            let colour = HSLColor((k as f64 * 0.618_034).fract(), 0.75, 0.42);
            chart
                .draw_series(LineSeries::new(
                    path_k.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(|e| err(&e))?;
            if let Some(first) = path_k.first() {
                chart
                    .draw_series([Circle::new(*first, 3, colour.filled())])
                    .map_err(|e| err(&e))?;
            }
        }
        for m in &view.measurements {
            let (points, colour) = match m {
                Measurement::Area { min, max, .. } => (
                    vec![
                        (min.x as f64, min.y as f64),
                        (max.x as f64, min.y as f64),
                        (max.x as f64, max.y as f64),
                        (min.x as f64, max.y as f64),
                        (min.x as f64, min.y as f64),
                    ],
                    RGBColor(30, 60, 220),
                ),
                Measurement::Line { a, b, .. } => (
                    vec![(a.x as f64, a.y as f64), (b.x as f64, b.y as f64)],
                    RGBColor(220, 30, 30),
                ),
            };
            chart
                .draw_series([PathElement::new(points, colour.stroke_width(3))])
                .map_err(|e| err(&e))?;
        }
        chart
            .draw_series([Rectangle::new(
                [pt(view.min), pt(view.max)],
                BLACK.stroke_width(1),
            )])
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    write_png(path, size, &rgb)
}

/// Writes the fundamental diagram of `areas` as a PNG of two panels over Voronoi density (0 to
/// 4 agents per m², or further if measured; light grid lines every 0.5 m⁻²): on the left the
/// Voronoi speed (0 to 1.6 m/s, grid every 0.2 m/s), on the right the specific flow (0 to 2.4 per
/// second and metre, grid every 0.4). Each step's sample is a small dot in its area's colour
/// (the first area dark blue, then orange, green, purple…), each density bin's mean a larger
/// dot ringed in black, and Weidmann's relation a black line.
pub fn plot_fundamental_diagram(path: &Path, areas: &[AreaReport]) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::new(path, e);
    let size = (1_220u32, 520u32);
    let top = areas
        .iter()
        .map(|a| a.voronoi_density_max)
        .fold(4.0, f64::max);
    let top = (top * 2.0).ceil() / 2.0;
    let palette = [
        RGBColor(30, 60, 180),
        RGBColor(230, 120, 20),
        RGBColor(40, 160, 60),
        RGBColor(140, 60, 170),
        RGBColor(200, 40, 40),
    ];
    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (left, right) = root.split_horizontally(size.0 / 2);
        for (panel, flow) in [(left, false), (right, true)] {
            let (y_top, y_grid): (f64, f64) = if flow { (2.4, 0.4) } else { (1.6, 0.2) };
            let value = |density: f64, speed: f64| if flow { density * speed } else { speed };
            let mut chart = ChartBuilder::on(&panel)
                .margin(14)
                .build_cartesian_2d(0.0..top, 0.0..y_top)
                .map_err(|e| err(&e))?;
            let grey = RGBColor(215, 215, 215);
            let vertical = (1..(top / 0.5).round() as usize)
                .map(|k| vec![(k as f64 * 0.5, 0.0), (k as f64 * 0.5, y_top)]);
            let horizontal = (1..(y_top / y_grid).round() as usize)
                .map(|k| vec![(0.0, k as f64 * y_grid), (top, k as f64 * y_grid)]);
            chart
                .draw_series(
                    vertical
                        .chain(horizontal)
                        .map(|l| PathElement::new(l, grey.stroke_width(1))),
                )
                .map_err(|e| err(&e))?;
            for (k, area) in areas.iter().enumerate() {
                let colour = palette[k % palette.len()];
                chart
                    .draw_series(
                        area.samples
                            .iter()
                            .filter(|s| s.voronoi_density > 0.0)
                            .map(|s| {
                                Circle::new(
                                    (
                                        s.voronoi_density,
                                        value(s.voronoi_density, s.voronoi_speed_m_s),
                                    ),
                                    2,
                                    colour.mix(0.45).filled(),
                                )
                            }),
                    )
                    .map_err(|e| err(&e))?;
            }
            chart
                .draw_series(LineSeries::new(
                    (1..=(top * 100.0) as usize).map(|i| {
                        let d = i as f64 / 100.0;
                        (d, value(d, weidmann_speed(d)))
                    }),
                    BLACK.stroke_width(2),
                ))
                .map_err(|e| err(&e))?;
            for (k, area) in areas.iter().enumerate() {
                let colour = palette[k % palette.len()];
                for bin in &area.bins {
                    let d = bin.density_mean;
                    let at = (d, value(d, bin.speed_mean_m_s));
                    chart
                        .draw_series([
                            Circle::new(at, 7, BLACK.filled()),
                            Circle::new(at, 5, colour.filled()),
                        ])
                        .map_err(|e| err(&e))?;
                }
            }
            chart
                .draw_series([Rectangle::new(
                    [(0.0, 0.0), (top, y_top)],
                    BLACK.stroke_width(1),
                )])
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    write_png(path, size, &rgb)
}

/// Writes the groups' measures over time as a PNG of two panels over seconds (grid lines every
/// 10 s): on the left each group's formation error (RMS member-to-slot distance over the
/// formation's radius; grid every 0.25), on the right its connected parts (grid every part);
/// one colour a group (the first dark blue, then orange, green, purple, red), a thin line of its
/// colour where it arrived.
pub fn plot_groups(
    path: &Path,
    samples: &[crate::GroupSample],
    period: f64,
) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::new(path, e);
    let size = (1_220u32, 460u32);
    let palette = [
        RGBColor(30, 60, 180),
        RGBColor(230, 120, 20),
        RGBColor(40, 160, 60),
        RGBColor(140, 60, 170),
        RGBColor(200, 40, 40),
    ];
    let groups = samples.iter().map(|s| s.group + 1).max().unwrap_or(0);
    let t_end = samples
        .iter()
        .map(|s| s.step as f64 * period)
        .fold(1.0, f64::max);
    let error_top = samples
        .iter()
        .map(|s| s.formation_error)
        .fold(0.5, f64::max)
        * 1.05;
    let parts_top = samples.iter().map(|s| s.parts).max().unwrap_or(1).max(2) as f64 + 0.5;
    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let (left, right) = root.split_horizontally(size.0 / 2);
        for (panel, parts) in [(left, false), (right, true)] {
            let top = if parts { parts_top } else { error_top };
            let mut chart = ChartBuilder::on(&panel)
                .margin(14)
                .build_cartesian_2d(0.0..t_end, 0.0..top)
                .map_err(|e| err(&e))?;
            // Grid lines (no text: the plots carry no font): every 10 s, and every 0.25 of
            // formation error or every part.
            let grey = RGBColor(220, 220, 220);
            let y_grid = if parts { 1.0 } else { 0.25 };
            let vertical = (1..=(t_end / 10.0) as usize)
                .map(|k| vec![(k as f64 * 10.0, 0.0), (k as f64 * 10.0, top)]);
            let horizontal = (1..=(top / y_grid) as usize)
                .map(|k| vec![(0.0, k as f64 * y_grid), (t_end, k as f64 * y_grid)]);
            chart
                .draw_series(
                    vertical
                        .chain(horizontal)
                        .map(|l| PathElement::new(l, grey.stroke_width(1))),
                )
                .map_err(|e| err(&e))?;
            chart
                .draw_series([Rectangle::new(
                    [(0.0, 0.0), (t_end, top)],
                    BLACK.stroke_width(1),
                )])
                .map_err(|e| err(&e))?;
            for g in 0..groups {
                let colour = palette[g % palette.len()];
                let mine: Vec<&crate::GroupSample> =
                    samples.iter().filter(|s| s.group == g).collect();
                let value = |s: &crate::GroupSample| {
                    if parts {
                        s.parts as f64
                    } else {
                        s.formation_error
                    }
                };
                chart
                    .draw_series(LineSeries::new(
                        mine.iter().map(|s| (s.step as f64 * period, value(s))),
                        colour.stroke_width(2),
                    ))
                    .map_err(|e| err(&e))?;
                if let Some(at) = mine.iter().find(|s| s.arrived) {
                    let t = at.step as f64 * period;
                    chart
                        .draw_series([PathElement::new(
                            vec![(t, 0.0), (t, top)],
                            colour.mix(0.4).stroke_width(1),
                        )])
                        .map_err(|e| err(&e))?;
                }
            }
        }
        root.present().map_err(|e| err(&e))?;
    }
    write_png(path, size, &rgb)
}

/// A dark-purple → teal → yellow ramp for t in [0, 1].
fn ramp(t: f64) -> RGBColor {
    let stops = [
        (0.0, (40.0, 10.0, 70.0)),
        (0.35, (50.0, 90.0, 140.0)),
        (0.65, (40.0, 170.0, 130.0)),
        (1.0, (250.0, 230.0, 40.0)),
    ];
    let t = t.clamp(0.0, 1.0);
    let k = stops
        .iter()
        .rposition(|(s, _)| *s <= t)
        .unwrap_or(0)
        .min(stops.len() - 2);
    let ((s0, c0), (s1, c1)) = (stops[k], stops[k + 1]);
    let u = (t - s0) / (s1 - s0);
    let mix = |a: f64, b: f64| (a + (b - a) * u).round() as u8;
    RGBColor(mix(c0.0, c1.0), mix(c0.1, c1.1), mix(c0.2, c1.2))
}

/// Writes `map` as a heat map of log10(1 − p) (16 decades, dark far from the goal, yellow at
/// it): obstacles grey, goal cells white, cells where p rounded to exactly 1 (flat) magenta,
/// with the static obstacles' outlines on top.
pub fn plot_field(path: &Path, map: &Field<f64>, view: &SceneView) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::new(path, e);
    let g = map.geometry();
    let (lo, hi) = g.world_bounds();
    let size = canvas(hi - lo);
    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .build_cartesian_2d(lo.x..hi.x, lo.y..hi.y)
            .map_err(|e| err(&e))?;
        let c = g.cell_size();
        let cells = (0..map.height()).flat_map(|y| (0..map.width()).map(move |x| (x, y)));
        chart
            .draw_series(cells.map(|(x, y)| {
                let colour = match map.kind(x, y) {
                    Some(CellKind::Obstacle) => RGBColor(120, 120, 120),
                    Some(CellKind::Goal) => WHITE,
                    _ => {
                        let p = map.potential(x, y).unwrap_or(1.0);
                        if p >= 1.0 {
                            MAGENTA
                        } else {
                            ramp(1.0 + (1.0 - p).log10() / 16.0)
                        }
                    }
                };
                let corner = g.cell_centre(x, y) - DVec2::splat(c * 0.5);
                Rectangle::new([pt(corner), pt(corner + DVec2::splat(c))], colour.filled())
            }))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(view.statics.iter().flat_map(outlines).map(|mut o| {
                if let Some(first) = o.first().copied() {
                    o.push(first);
                }
                PathElement::new(
                    o.into_iter().map(pt).collect::<Vec<_>>(),
                    BLACK.stroke_width(1),
                )
            }))
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    write_png(path, size, &rgb)
}
