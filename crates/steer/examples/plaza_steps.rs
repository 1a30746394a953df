//! Steps the benchmark plaza (`crowdfield_fixtures::plaza`) and prints agent-steps per second and a checksum
//! of every agent's position, for profiling and for checking that a speed change leaves the
//! trajectories bit for bit as they were.
//!
//! ```text
//! cargo run --release -p crowdfield_steer --example plaza_steps -- [AGENTS] [THREADS] [STEPS] [SWEEPS]
//! ```
//!
//! Defaults: 2000 agents, 2 threads (0: rayon's default), 10 steps, 30 sweeps. Five untimed
//! steps warm the maps first, as the `crowd_step` bench does. Under a profiler
//! (`valgrind --tool=callgrind --toggle-collect='*Crowd::advance_to*'`, `perf record`) the
//! steps are what to read. For one set of arguments the checksum is the same for any thread
//! count and with or without AVX2 or AVX-512 (no fused multiply–add anywhere); compare
//! checksums from one machine, since the behaviours' sines and cosines come from the system's
//! maths library.

use std::time::Instant;

use crowdfield_steer::StepPhase;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!(
                    "usage: plaza_steps [AGENTS] [THREADS] [STEPS] [SWEEPS]; `{a}` is not a count"
                );
                std::process::exit(2)
            })
        })
        .collect();
    let arg = |i: usize, default: usize| args.get(i).copied().unwrap_or(default);
    let (agents, threads, steps, sweeps) = (arg(0, 2000), arg(1, 2), arg(2, 10), arg(3, 30));
    if steps == 0 || args.len() > 4 {
        eprintln!("usage: plaza_steps [AGENTS] [THREADS] [STEPS ≥ 1] [SWEEPS]");
        std::process::exit(2);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let mut crowd = crowdfield_fixtures::plaza(agents, sweeps, crowdfield_steer::Preset::Seeds);
    let live = crowd.agents().count();
    pool.install(|| {
        for _ in 0..5 {
            crowd.step();
        }
        // The parallel phases (sensing, relaxation, decision) and the sequential motion phase
        // (collision guard and goals, in id order) are timed apart.
        let (mut planning, mut motion) = (0.0, 0.0);
        for _ in 0..steps {
            let start = Instant::now();
            crowd.advance_to(StepPhase::Decision);
            let planned = Instant::now();
            crowd.advance_to(StepPhase::Motion);
            planning += (planned - start).as_secs_f64();
            motion += planned.elapsed().as_secs_f64();
        }
        let seconds = planning + motion;
        let threads = rayon::current_num_threads();
        println!(
            "{live} agents, {threads} threads, {steps} steps of {sweeps} sweeps: {seconds:.3} s \
             ({planning:.3} s planning, {motion:.3} s motion), {:.0} agent-steps/s",
            (live * steps) as f64 / seconds
        );
    });
    // FNV-1a over the bits of every position, in agent order.
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for (_, agent) in crowd.agents() {
        let p = agent.position();
        for bits in [p.x.to_bits(), p.y.to_bits()] {
            for byte in bits.to_le_bytes() {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    println!("checksum {hash:016x}");
}
