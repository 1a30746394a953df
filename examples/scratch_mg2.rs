use crowdfield::field::*;
use glam::DVec2;
fn main() {
    let n = 257;
    let mut tot = std::time::Duration::ZERO;
    for _ in 0..50 {
        let mut f = Field::<f64>::new(GridGeometry::new(DVec2::ZERO, 1.0, n, n).unwrap(), 1.0);
        for y in n / 4..3 * n / 4 {
            f.set_obstacle(n / 2, y).unwrap();
        }
        f.set_goal(n - 3, n / 2).unwrap();
        let t = std::time::Instant::now();
        let r = MultigridSolver::new()
            .solve(&mut f, &Bias::HARMONIC, 1e-6)
            .unwrap();
        tot += t.elapsed();
        assert!(r.converged);
    }
    println!("mean {:?}", tot / 50);
}
