//! Planner steps per second of a crowd of groups in formation: `GROUPS` groups of `MEMBERS`
//! members, each group a box on its own group map, all ordered across a large world to one
//! goal, stepped with [`Groups::step`] (maps moved and stamped, relaxed in SIMD batches,
//! members decided, the crowd's commit through the collision guard).
//!
//! ```text
//! cargo run --release -p crowdfield_group --example group_steps -- [GROUPS] [MEMBERS] [STEPS] [THREADS]
//! ```
//!
//! Defaults: 10,000 groups of 10, 20 steps, the machine's threads. Prints the group-map side,
//! cells per member, and the mean and median time of a step after two warm-up steps.

#[path = "../benches/fixture/mod.rs"]
mod fixture;

use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: GROUPS MEMBERS STEPS THREADS"))
        .collect();
    let groups_n = args.first().copied().unwrap_or(10_000);
    let members = args.get(1).copied().unwrap_or(10);
    let steps = args.get(2).copied().unwrap_or(20);
    let threads = args.get(3).copied().unwrap_or(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    pool.install(|| run(groups_n, members, steps));
}

fn run(groups_n: usize, members: usize, steps: usize) {
    let started = Instant::now();
    let (mut crowd, mut groups, side) = fixture::formation_world(groups_n, members);
    eprintln!(
        "{groups_n} groups of {members} ({} agents), map {side}x{side} ({:.1} cells a member), set up in {:.1} s, {} threads",
        groups_n * members,
        (side * side) as f64 / members as f64,
        started.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    for _ in 0..2 {
        groups.step(&mut crowd);
    }
    let mut times = Vec::with_capacity(steps);
    let mut parts = [0.0f64; 4];
    for _ in 0..steps {
        let t = Instant::now();
        // What `Groups::step` does, timed by part.
        groups.prepare(&mut crowd);
        crowd.advance_to(crowdfield_steer::StepPhase::Guidance);
        let a = t.elapsed().as_secs_f64();
        groups.plan(&mut crowd);
        let b = t.elapsed().as_secs_f64();
        crowd.step();
        let c = t.elapsed().as_secs_f64();
        groups.finish(&crowd);
        let d = t.elapsed().as_secs_f64();
        for (p, v) in parts.iter_mut().zip([a, b - a, c - b, d - c]) {
            *p += v / steps as f64;
        }
        times.push(d);
    }
    eprintln!(
        "mean ms: prepare+guidance {:.1}, plan {:.1}, crowd step {:.1}, finish {:.1}",
        parts[0] * 1e3,
        parts[1] * 1e3,
        parts[2] * 1e3,
        parts[3] * 1e3
    );
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "groups {groups_n} members {members} side {side} cells_per_member {:.1} mean_ms {:.1} median_ms {:.1} steps_per_s {:.2}",
        (side * side) as f64 / members as f64,
        mean * 1e3,
        median * 1e3,
        1.0 / median
    );
}
