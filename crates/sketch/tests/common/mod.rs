//! Worlds and checks shared by the sketch scenario tests.
// Each test crate uses some of them.
#![allow(dead_code)]

use crowdfield_field::Shape;
use crowdfield_steer::{AgentId, AgentParams, AgentState, CONTACT_TOLERANCE, Crowd, CrowdSettings};
use glam::DVec2;

/// A world of `size` metres with `statics`.
pub fn world(size: DVec2, statics: Vec<Shape>) -> Crowd {
    Crowd::new(
        CrowdSettings {
            min: DVec2::ZERO,
            max: size,
            global_cell_size: 0.25,
            global_inflation: 0.2,
            ..CrowdSettings::default()
        },
        statics,
    )
    .unwrap()
}

/// Spawns standing walkers of radius 0.25 at `points`.
pub fn spawn_at(crowd: &mut Crowd, points: &[DVec2]) -> Vec<AgentId> {
    points
        .iter()
        .map(|p| {
            crowd
                .spawn(AgentParams {
                    position: *p,
                    ..AgentParams::default()
                })
                .unwrap()
        })
        .collect()
}

/// The deepest overlap (metres) between two agents, or an agent and a static shape, beyond the
/// contact tolerance; 0 when none overlap.
pub fn deepest_overlap(crowd: &Crowd) -> f64 {
    let agents: Vec<(DVec2, f64)> = crowd
        .agents()
        .map(|(_, a)| (a.position(), a.params().radius))
        .collect();
    let mut worst: f64 = 0.0;
    for (i, (p, r)) in agents.iter().enumerate() {
        for (q, s) in &agents[..i] {
            worst = worst.max(r + s - (*p - *q).length() - CONTACT_TOLERANCE);
        }
        for shape in crowd.statics() {
            worst = worst.max(r - shape.distance(*p).unwrap() - CONTACT_TOLERANCE);
        }
    }
    worst.max(0.0)
}

/// Steps the crowd until every agent of `ids` has arrived or `max` steps have run; returns
/// each agent's trajectory (its position after every step, the start first) and the steps run.
pub fn walk(crowd: &mut Crowd, ids: &[AgentId], max: usize) -> (Vec<Vec<DVec2>>, usize, f64) {
    let mut tracks: Vec<Vec<DVec2>> = ids
        .iter()
        .map(|id| vec![crowd.agent(*id).unwrap().position()])
        .collect();
    let mut overlap: f64 = 0.0;
    for step in 0..max {
        crowd.step();
        overlap = overlap.max(deepest_overlap(crowd));
        for (k, id) in ids.iter().enumerate() {
            tracks[k].push(crowd.agent(*id).unwrap().position());
        }
        if ids
            .iter()
            .all(|id| crowd.agent(*id).unwrap().state() == AgentState::Arrived)
        {
            return (tracks, step + 1, overlap);
        }
    }
    (tracks, max, overlap)
}

/// Whether every agent of `ids` has arrived.
pub fn all_arrived(crowd: &Crowd, ids: &[AgentId]) -> bool {
    ids.iter()
        .all(|id| crowd.agent(*id).unwrap().state() == AgentState::Arrived)
}
