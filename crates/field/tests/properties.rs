//! Solver invariants as property tests (digest 000 §8.2 test 4, digest 004 §12 tests 2–3).

use crowdfield_field::{
    Bias, CellKind, Field, GridGeometry, MultigridSolver, Relaxation, Shape, SweepOrder, relax,
};
use glam::DVec2;
use proptest::prelude::*;

/// A random maze: size, obstacle cells, goal cells.
fn maze() -> impl Strategy<Value = Field<f64>> {
    (
        8usize..26,
        8usize..26,
        0.0f64..0.35,
        any::<u64>(),
        1usize..4,
    )
        .prop_map(|(w, h, density, seed, goals)| {
            let mut f = Field::new(GridGeometry::new(DVec2::ZERO, 1.0, w, h).unwrap(), 0.9);
            let mut s = seed | 1;
            let mut next = || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64
            };
            for y in 1..h - 1 {
                for x in 1..w - 1 {
                    if next() < density {
                        f.set_obstacle(x, y).unwrap();
                    }
                }
            }
            for _ in 0..goals {
                let x = 1 + (next() * (w - 2) as f64) as usize;
                let y = 1 + (next() * (h - 2) as f64) as usize;
                f.set_goal(x, y).unwrap();
            }
            f
        })
}

fn bias(max_eps: f64) -> impl Strategy<Value = Bias> {
    (-max_eps..max_eps, 0.0f64..std::f64::consts::TAU)
        .prop_map(|(eps, a)| Bias::new(eps, DVec2::from_angle(a)).unwrap())
}

fn order() -> impl Strategy<Value = Relaxation> {
    prop_oneof![
        Just(Relaxation::GAUSS_SEIDEL),
        Just(Relaxation::RED_BLACK),
        Just(Relaxation {
            order: SweepOrder::Alternating,
            omega: 1.0
        }),
    ]
}

/// Free cells 4-connected to a goal.
fn reachable(f: &Field<f64>) -> Vec<bool> {
    let (w, h) = (f.width(), f.height());
    let k = f.kinds();
    let mut seen = vec![false; w * h];
    let mut stack: Vec<usize> = (0..w * h).filter(|&i| k[i] == CellKind::Goal).collect();
    while let Some(i) = stack.pop() {
        if seen[i] {
            continue;
        }
        seen[i] = true;
        let (x, y) = (i % w, i / w);
        for (nx, ny) in [
            (x + 1, y),
            (x.wrapping_sub(1), y),
            (x, y + 1),
            (x, y.wrapping_sub(1)),
        ] {
            if nx < w && ny < h {
                let j = ny * w + nx;
                if !seen[j] && k[j] == CellKind::Free {
                    stack.push(j);
                }
            }
        }
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Any number of sweeps, any valid bias, any order: every potential stays in [0, 1].
    #[test]
    fn maximum_principle_holds_for_every_sweep(
        mut f in maze(), b in bias(2.0), r in order(), sweeps in 1usize..80, seed in any::<u64>()
    ) {
        // Random initial values in [0, 1] for free cells.
        let mut s = seed | 1;
        let kinds = f.kinds().to_vec();
        for (p, k) in f.potentials_mut().iter_mut().zip(kinds) {
            if k == CellKind::Free {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                *p = (s >> 11) as f64 / (1u64 << 53) as f64;
            }
        }
        relax(&mut f, &b, &r, sweeps);
        for p in f.potentials() {
            prop_assert!((0.0..=1.0).contains(p), "{p}");
        }
    }

    /// Converged fields have no interior local minima among cells that can reach a goal, and
    /// steepest descent over cells from every such cell reaches a goal (completeness). Cells
    /// whose neighbours all agree to 1e-12 are flat (digest 004 §12 test 3 allows flagging
    /// them); they must genuinely be near 1.
    #[test]
    fn converged_fields_have_no_minima_and_descent_always_arrives(f in maze(), b in bias(1.9)) {
        let mut f = f;
        prop_assume!(f.has_goal());
        let report = MultigridSolver::new().solve(&mut f, &b, 1e-13).unwrap();
        prop_assert!(report.residual < 1e-12, "{report:?}");
        let (w, h) = (f.width(), f.height());
        let reach = reachable(&f);
        let p = f.potentials();
        let k = f.kinds();
        for (x, y) in f.interior_local_minima() {
            let i = y * w + x;
            if reach[i] {
                let spread = [p[i + 1], p[i - 1], p[i + w], p[i - w]].iter().fold(0.0f64, |m, v| m.max(v - p[i]));
                prop_assert!(spread < 1e-12 && p[i] > 1.0 - 1e-9, "minimum at ({x}, {y}) p = {}", p[i]);
            }
        }
        for start in 0..w * h {
            if !reach[start] || k[start] != CellKind::Free {
                continue;
            }
            let mut i = start;
            let mut steps = 0;
            while k[i] != CellKind::Goal {
                let best = [i + 1, i - 1, i + w, i - w]
                    .into_iter()
                    .filter(|&j| k[j] != CellKind::Obstacle)
                    .min_by(|a, b| p[*a].total_cmp(&p[*b]))
                    .unwrap();
                if p[best] >= p[i] {
                    prop_assert!(p[i] > 1.0 - 1e-9, "stall at {} with p = {}", i, p[i]);
                    break;
                }
                i = best;
                steps += 1;
                prop_assert!(steps <= w * h);
            }
        }
    }
}

/// Any of the shapes, within a 10 m square.
fn any_shape() -> impl Strategy<Value = Shape> {
    let point = (0.0..10.0f64, 0.0..10.0f64).prop_map(|(x, y)| DVec2::new(x, y));
    prop_oneof![
        (point.clone(), 0.1..2.0f64).prop_map(|(centre, radius)| Shape::Disc { centre, radius }),
        (point.clone(), 0.1..3.0f64, 0.1..3.0f64).prop_map(|(min, w, h)| Shape::Aabb {
            min,
            max: min + DVec2::new(w, h)
        }),
        (point.clone(), 0.1..2.0f64, 0.1..2.0f64, -3.0..3.0f64).prop_map(
            |(centre, w, h, angle)| {
                Shape::RotatedBox {
                    centre,
                    half_extents: DVec2::new(w, h),
                    angle,
                }
            }
        ),
        (point.clone(), point.clone(), 0.0..0.8f64).prop_map(|(a, b, thickness)| Shape::Segment {
            a,
            b,
            thickness
        }),
        (point.clone(), 0.3..2.0f64, 3usize..8).prop_map(|(c, r, n)| Shape::Polygon(
            (0..n)
                .map(|i| {
                    let t = std::f64::consts::TAU * i as f64 / n as f64;
                    c + DVec2::new(t.cos(), t.sin()) * r
                })
                .collect()
        )),
        (proptest::collection::vec(point, 2..5), 0.0..0.6f64)
            .prop_map(|(points, thickness)| Shape::Polyline { points, thickness }),
    ]
}

proptest! {
    /// Sight: the segment's distance to a shape is never more than any of its points' distance,
    /// and points 1 cm apart along it come within 1 cm of it. So a segment is blocked exactly
    /// when some point on it touches the shape.
    #[test]
    fn segment_distance_is_the_least_point_distance_along_the_segment(
        shape in any_shape(),
        a in (-2.0..12.0f64, -2.0..12.0f64),
        b in (-2.0..12.0f64, -2.0..12.0f64),
    ) {
        let (a, b) = (DVec2::new(a.0, a.1), DVec2::new(b.0, b.1));
        let exact = shape.segment_distance(a, b).unwrap();
        let steps = ((b - a).length() / 0.01).ceil().max(1.0) as usize;
        let sampled = (0..=steps)
            .map(|k| shape.distance(a + (b - a) * (k as f64 / steps as f64)).unwrap())
            .fold(f64::INFINITY, f64::min);
        prop_assert!(exact <= sampled + 1e-9, "exact {exact} > sampled {sampled}");
        prop_assert!(sampled <= exact + 0.01, "sampled {sampled} far above exact {exact}");
    }
}
