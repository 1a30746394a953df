//! Flatness placeholder.
/// Threshold.
pub const FLATNESS_THRESHOLD: f64 = 1e-8;
/// Level.
pub const SUBGOAL_LEVEL: f64 = 1.0 - 1e-5;
/// Stack.
pub struct SubgoalStack;
