//! Stroke-field build times (Mode B, `StrokeField`) over a 256 × 256-cell world (64 m at the
//! default 0.25 m cells) with a few buildings, on one core (the field crate's solver is
//! single-threaded): a winding stroke of about 150 m, cut into sub-goals.
//!
//! - `walkable`: what a stroke needs before a walker near its start can set off — the chain,
//!   the first segment and its joining field round the walker (the goal: ≤ 16 ms,
//!   "walkable in the frame it is finished"; the other segments follow within later frames'
//!   budgets, [`StrokeField::advance`]);
//! - `complete`: the chain and every segment;
//! - `join_far`: a joining field grown to a walker in the world's far corner (all the world).
//!
//! `cargo bench -p crowdfield_sketch --bench stroke_field`

use criterion::{Criterion, criterion_group, criterion_main};
use crowdfield_field::Shape;
use crowdfield_sketch::{Stroke, StrokeField, StrokeFieldSettings};
use glam::DVec2;

fn scene() -> (Stroke, Vec<Shape>) {
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
    (stroke, buildings)
}

fn build(c: &mut Criterion) {
    let (stroke, buildings) = scene();
    let world = (DVec2::ZERO, DVec2::splat(64.0));
    let settings = StrokeFieldSettings::default();
    let mut group = c.benchmark_group("stroke_field_256");
    group.sample_size(20);
    let near = [DVec2::new(2.0, 10.0)];
    let far = [DVec2::new(62.0, 2.0)];
    group.bench_function("walkable", |b| {
        b.iter(|| {
            let mut f =
                StrokeField::begin(&stroke, world, &buildings, settings.clone()).expect("begins");
            f.join_field(0, &near).expect("joins").width()
        })
    });
    group.bench_function("complete", |b| {
        b.iter(|| {
            StrokeField::build(&stroke, world, &buildings, settings.clone())
                .expect("builds")
                .segments()
                .len()
        })
    });
    let field = StrokeField::build(&stroke, world, &buildings, settings.clone()).expect("builds");
    group.bench_function("join_far", |b| {
        b.iter(|| {
            let mut f = field.clone();
            f.join_field(0, &far).expect("joins").width()
        })
    });
    group.finish();
}

criterion_group!(benches, build);
criterion_main!(benches);
