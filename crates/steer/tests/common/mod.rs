//! Helpers shared by the steering scenario tests.
// Each test crate uses some of them.
#![allow(dead_code)]

use crowdfield_steer::{AgentId, AgentState, Crowd};

/// How many of `ids` have arrived.
pub fn arrived(crowd: &Crowd, ids: &[AgentId]) -> usize {
    ids.iter()
        .filter(|id| {
            crowd
                .agent(**id)
                .is_some_and(|a| a.state() == AgentState::Arrived)
        })
        .count()
}

/// Whether every one of `ids` has arrived.
pub fn all_arrived(crowd: &Crowd, ids: &[AgentId]) -> bool {
    arrived(crowd, ids) == ids.len()
}
