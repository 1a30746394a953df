//! Builds the stroke field of the `stroke_field` benchmark's scene (a winding 150 m stroke over
//! a 256 × 256-cell world with three buildings) and prints where the time goes: the chain and
//! segments, the first segment's whole-world field, solves and their times. Then the same scene
//! twice as large (128 m, 512 × 512 cells, a 374 m stroke) built a slice per frame with a 4 ms
//! budget: how many frames, and the longest slice.
//!
//! `cargo run --release -p crowdfield_sketch --example stroke_field_build`

use std::time::Instant;

use crowdfield_field::Shape;
use crowdfield_sketch::{Stroke, StrokeField, StrokeFieldSettings};
use glam::DVec2;

fn main() {
    let stroke = Stroke::from_positions([
        DVec2::new(4.0, 6.0),
        DVec2::new(40.0, 6.0),
        DVec2::new(58.0, 20.0),
        DVec2::new(58.0, 34.0),
        DVec2::new(30.0, 34.0),
        DVec2::new(10.0, 44.0),
        DVec2::new(10.0, 58.0),
        DVec2::new(60.0, 58.0),
    ])
    .expect("finite");
    let buildings = vec![
        Shape::Aabb {
            min: DVec2::new(14.0, 14.0),
            max: DVec2::new(30.0, 26.0),
        },
        Shape::Disc {
            centre: DVec2::new(44.0, 46.0),
            radius: 5.0,
        },
        Shape::RotatedBox {
            centre: DVec2::new(36.0, 20.0),
            half_extents: DVec2::new(4.0, 2.0),
            angle: 0.6,
        },
    ];
    let world = (DVec2::ZERO, DVec2::splat(64.0));
    let settings = StrokeFieldSettings::default();
    // A walker a few metres from the stroke's start, and one in the far corner.
    let (near, far) = (DVec2::new(2.0, 10.0), DVec2::new(62.0, 2.0));
    for run in 0..5 {
        let t = Instant::now();
        let mut f =
            StrokeField::begin(&stroke, world, &buildings, settings.clone()).expect("begins");
        f.join_field(0, &[near]).expect("joins");
        let walkable = t.elapsed();
        let t = Instant::now();
        f.advance(std::time::Duration::MAX).expect("builds");
        let rest = t.elapsed();
        let t = Instant::now();
        f.join_field(0, &[far]).expect("joins");
        let far_join = t.elapsed();
        let s = f.stats();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        println!(
            "run {run}: {} m stroke, {} chain cells, {} segments ({} + {} solves); first segment and a joining field for a walker near the start {:.1} ms; the other segments {:.1} ms; the joining field grown to a walker in the far corner {:.1} ms",
            stroke.length().round(),
            f.chain().len(),
            f.segments().len(),
            s.stage_one_solves,
            s.stage_two_solves,
            ms(walkable),
            ms(rest),
            ms(far_join),
        );
    }
    // Twice as large, time-sliced.
    let big_stroke =
        Stroke::from_positions(stroke.positions().iter().map(|p| *p * 2.0)).expect("finite");
    let big_buildings: Vec<Shape> = buildings
        .iter()
        .map(|b| b.transformed(DVec2::ZERO, 0.0, DVec2::splat(2.0)))
        .collect();
    let big_world = (DVec2::ZERO, DVec2::splat(128.0));
    let budget = std::time::Duration::from_millis(4);
    for run in 0..3 {
        let t = Instant::now();
        let mut f = StrokeField::begin(&big_stroke, big_world, &big_buildings, settings.clone())
            .expect("begins");
        let first = t.elapsed();
        let mut slices = Vec::new();
        while !f.is_complete() {
            let t = Instant::now();
            f.advance(budget).expect("builds");
            slices.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let longest = slices.iter().copied().fold(0.0, f64::max);
        println!(
            "large run {run}: {} m stroke over 512 x 512 cells, {} segments; begun (chain and first segment) in {:.1} ms, then {} slices of at most {budget:?}: longest {longest:.1} ms, total {:.1} ms",
            big_stroke.length().round(),
            f.segments().len(),
            first.as_secs_f64() * 1e3,
            slices.len(),
            slices.iter().sum::<f64>(),
        );
    }
}
