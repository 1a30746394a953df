//! Builds the stroke field of the `stroke_field` benchmark's scene (a winding 150 m stroke over
//! a 256 × 256-cell world with three buildings) and prints where the time goes: the chain and
//! segments, the first segment's whole-world field, solves and their times.
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
    for run in 0..5 {
        let t = Instant::now();
        let mut f = StrokeField::build(&stroke, world, &buildings, StrokeFieldSettings::default())
            .expect("builds");
        let built = t.elapsed();
        let t = Instant::now();
        f.join_field(0).expect("joins");
        let join = t.elapsed();
        let s = f.stats();
        println!(
            "run {run}: {} m stroke, {} chain cells, {} segments; build {:.1} ms (stage 1: {} solves {:.1} ms, stage 2: {} solves {:.1} ms), first whole-world field {:.1} ms, walkable {:.1} ms",
            stroke.length().round(),
            f.chain().len(),
            f.segments().len(),
            built.as_secs_f64() * 1e3,
            s.stage_one_solves,
            s.stage_one.as_secs_f64() * 1e3,
            s.stage_two_solves - 1,
            (s.stage_two.as_secs_f64() - join.as_secs_f64()).max(0.0) * 1e3,
            join.as_secs_f64() * 1e3,
            (built + join).as_secs_f64() * 1e3,
        );
    }
}
