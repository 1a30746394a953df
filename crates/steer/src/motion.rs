//! Heading and speed: how a descent direction becomes a step (seed 000 §4, seed 001 §2.6).
//!
//! Heading rules, with g the unit local descent and d the previous unit heading:
//!
//! ```text
//! A  raw:       d_t = g
//! B  average:   d_t = (d_{t−1} + g) / ‖·‖
//! C  mass:      d_t = (m_a d_{t−1} + g) / ‖·‖          (m_a = 4 default)
//! η  inertia:   d_t = (η d_{t−1} + (1 − η) g) / ‖·‖     (m_a = η / (1 − η))
//! ```
//!
//! g is normalised before blending (digest 000 §4.2 \[IMPL\]: raw local gradients are 1e-2–1e-3,
//! and blending them unnormalised would freeze the heading). Speed factors, with
//! cos θ = g · d_{t−1}:
//!
//! - [`SpeedLaw::FaTable`]: the step table of seed 000 Table 5.2 — 0 below cos 0.01 (the agent
//!   stops but still turns), 0.05, 0.2, 0.5, 0.8, then 1 from cos 0.92.
//! - [`SpeedLaw::Cosine`]: max(0, cos θ) (seed 001 Eq. 6).
//! - [`SpeedLaw::Constant`]: always 1.
//!
//! The step is `max_step · factor · d_t`.

use glam::DVec2;

/// How the heading follows the descent.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HeadingRule {
    /// Rule A: the raw descent.
    Raw,
    /// Rule B: plain average of old heading and descent.
    Average,
    /// Rule C: old heading weighted by a mass m_a.
    Mass(f64),
    /// The η form: η in [0, 1].
    Inertia(f64),
}

impl Default for HeadingRule {
    fn default() -> Self {
        HeadingRule::Mass(4.0)
    }
}

/// How fast the agent walks given the turn between heading and descent.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "reflect", derive(bevy_reflect::Reflect))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpeedLaw {
    /// Seed 000 Table 5.2.
    #[default]
    FaTable,
    /// max(0, cos θ).
    Cosine,
    /// Always full speed.
    Constant,
}

/// Seed 000 Table 5.2: (lower bound of cos θ, factor), highest first.
const FA_TABLE: [(f64, f64); 5] = [
    (0.92, 1.0),
    (0.71, 0.8),
    (0.60, 0.5),
    (0.30, 0.2),
    (0.01, 0.05),
];

impl SpeedLaw {
    /// The speed factor for a turn with cosine `cos`.
    pub fn factor(self, cos: f64) -> f64 {
        match self {
            SpeedLaw::Constant => 1.0,
            SpeedLaw::Cosine => cos.max(0.0),
            SpeedLaw::FaTable => FA_TABLE
                .iter()
                .find(|(lo, _)| cos >= *lo)
                .map_or(0.0, |(_, f)| *f),
        }
    }
}

/// The new unit heading and the speed factor for one step.
///
/// `previous` is the last heading (zero on the first step, which then takes the descent at full
/// speed, digest 001 G6); `descent` need not be normalised. A zero descent keeps the heading and
/// stops.
pub fn decide(previous: DVec2, descent: DVec2, rule: HeadingRule, law: SpeedLaw) -> (DVec2, f64) {
    let Some(g) = descent.try_normalize() else {
        return (previous, 0.0);
    };
    let Some(d) = previous.try_normalize() else {
        return (g, 1.0);
    };
    let blended = match rule {
        HeadingRule::Raw => g,
        HeadingRule::Average => d + g,
        HeadingRule::Mass(m) => d * m.max(0.0) + g,
        HeadingRule::Inertia(eta) => {
            let eta = eta.clamp(0.0, 1.0);
            d * eta + g * (1.0 - eta)
        }
    };
    // Opposite vectors of equal weight cancel: keep turning towards the descent.
    let heading = blended.try_normalize().unwrap_or(d.perp());
    (heading, law.factor(g.dot(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fa_table_matches_the_seed() {
        let law = SpeedLaw::FaTable;
        assert_eq!(law.factor(-1.0), 0.0);
        assert_eq!(law.factor(0.0099), 0.0);
        assert_eq!(law.factor(0.01), 0.05);
        assert_eq!(law.factor(0.29), 0.05);
        assert_eq!(law.factor(0.30), 0.2);
        assert_eq!(law.factor(0.65), 0.5);
        assert_eq!(law.factor(0.71), 0.8);
        assert_eq!(law.factor(0.92), 1.0);
        assert_eq!(law.factor(1.0), 1.0);
    }

    #[test]
    fn cosine_law_stops_beyond_ninety_degrees() {
        assert_eq!(SpeedLaw::Cosine.factor(-0.2), 0.0);
        assert_eq!(SpeedLaw::Cosine.factor(0.5), 0.5);
    }

    #[test]
    fn inertia_half_turns_half_way() {
        // Digest 004 §12 test 5: η = 0 gives the gradient, η = 0.5 half the turn.
        let d = DVec2::X;
        let g = DVec2::Y;
        let (h0, _) = decide(d, g, HeadingRule::Inertia(0.0), SpeedLaw::Constant);
        assert!((h0 - g).length() < 1e-12);
        let (h, _) = decide(d, g, HeadingRule::Inertia(0.5), SpeedLaw::Constant);
        assert!((h.to_angle().to_degrees() - 45.0).abs() < 1e-9);
        // m_a = η/(1 − η): m_a = 1 ≡ η = 0.5.
        let (m, _) = decide(d, g, HeadingRule::Mass(1.0), SpeedLaw::Constant);
        assert!((m - h).length() < 1e-12);
    }

    #[test]
    fn a_reversal_stops_but_turns() {
        let (h, f) = decide(
            DVec2::X,
            DVec2::NEG_X,
            HeadingRule::Mass(4.0),
            SpeedLaw::FaTable,
        );
        assert_eq!(f, 0.0);
        assert!(
            (h - DVec2::X).length() < 1e-12,
            "m_a = 4 keeps the heading against a reversal"
        );
        let (h, f) = decide(
            DVec2::X,
            DVec2::new(-0.2, 1.0),
            HeadingRule::Mass(4.0),
            SpeedLaw::FaTable,
        );
        assert_eq!(f, 0.0);
        assert!(h.y > 0.0, "it still turns towards the descent");
    }

    #[test]
    fn first_step_and_zero_descent() {
        assert_eq!(
            decide(
                DVec2::ZERO,
                DVec2::new(0.0, 3.0),
                HeadingRule::default(),
                SpeedLaw::FaTable
            ),
            (DVec2::Y, 1.0)
        );
        assert_eq!(
            decide(
                DVec2::X,
                DVec2::ZERO,
                HeadingRule::default(),
                SpeedLaw::FaTable
            ),
            (DVec2::X, 0.0)
        );
    }
}
