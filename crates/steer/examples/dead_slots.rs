//! Steps 100 walkers after `DEAD` agents were spawned and removed, and prints the time a step
//! takes: how a host that keeps spawning and removing agents fares over a long run.
//!
//! ```text
//! cargo run --release -p crowdfield_steer --example dead_slots -- [DEAD]
//! ```
//!
//! Five untimed steps, then fifty timed ones, on rayon's default pool (docs/performance.md,
//! *Removed agents*).

use std::time::Instant;

use crowdfield_field::Shape;
use crowdfield_steer::{AgentParams, Crowd, CrowdSettings};
use glam::DVec2;

fn main() {
    let dead: usize = match std::env::args().nth(1).map(|v| v.parse()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: dead_slots [DEAD]");
            std::process::exit(2);
        }
    };
    let mut crowd = Crowd::new(
        CrowdSettings {
            min: DVec2::ZERO,
            max: DVec2::new(60.0, 60.0),
            ..Default::default()
        },
        Vec::new(),
    )
    .expect("a valid world");
    let goal = crowd
        .add_goal(Shape::Disc {
            centre: DVec2::new(58.0, 30.0),
            radius: 0.5,
        })
        .expect("a valid goal");
    for _ in 0..dead {
        let id = crowd
            .spawn(AgentParams {
                position: DVec2::new(30.0, 50.0),
                goals: vec![],
                ..Default::default()
            })
            .expect("a free spot");
        crowd.remove(id).expect("just spawned");
    }
    for k in 0..100 {
        let at = DVec2::new(2.0 + 1.5 * (k % 10) as f64, 15.0 + 1.5 * (k / 10) as f64);
        crowd
            .spawn(AgentParams {
                position: at,
                goals: vec![goal],
                seed: k as u64,
                ..Default::default()
            })
            .expect("a free spot");
    }
    for _ in 0..5 {
        crowd.step();
    }
    let steps = 50;
    let start = Instant::now();
    for _ in 0..steps {
        crowd.step();
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{dead} removed: {:.1} µs a step, {:.0} agent-steps/s",
        seconds / steps as f64 * 1e6,
        100.0 * steps as f64 / seconds
    );
}
