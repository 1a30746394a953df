//! Worlds and checks shared by the sketch scenario tests.
// Each test crate uses some of them.
#![allow(dead_code)]

use crowdfield_steer::{AgentId, AgentState, Crowd};
use glam::DVec2;

#[allow(unused_imports)]
pub use crowdfield_fixtures::{deepest_overlap, spawn_at, world};

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
