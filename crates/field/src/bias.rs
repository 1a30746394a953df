//! The behaviour bias (v, ε) and the stencil weights it induces.
//!
//! # Equation
//!
//! Every free cell of a field satisfies the discrete form of
//!
//! ```text
//! ∇²p + ε v·∇p = 0
//! ```
//!
//! with cell spacing h = 1 and central differences (digest 000 §2.6, digest 004 Eq. 3.3). Solved
//! for the centre cell, the update **as printed in the seeds**, in our grid frame
//! (E = (x+1, y), W = (x−1, y), N = (x, y+1), S = (x, y−1)), is
//!
//! ```text
//! p ← ¼ (p_E + p_W + p_N + p_S) + (ε/8) [ (p_E − p_W)·v_x + (p_N − p_S)·v_y ]
//! ```
//!
//! or, as a weighted mean (digest 004 Eq. 3.4), with a = ε v_x / 2 and b = ε v_y / 2:
//!
//! ```text
//! p ← ¼ [ (1 + a) p_E + (1 − a) p_W + (1 + b) p_N + (1 − b) p_S ]
//! ```
//!
//! The four weights are non-negative exactly when `|ε|·max(|v_x|, |v_y|) ≤ 2`. Then each update is
//! a convex average of its neighbours, the discrete maximum principle holds and no interior local
//! minimum can form. [`Bias::new`] rejects anything outside that range.
//!
//! # Sign convention (world space)
//!
//! The printed update pulls the low-potential valley, and so the agent's path, towards **−v**
//! (digest 000 §2.8 \[CHECK\]; digest 004 §10: ε = −1, v = (1, 0) bends towards +x). The seeds'
//! text says the opposite: v pointing at a wall makes the agent walk by that wall. crowdfield
//! keeps the text's meaning, in world space:
//!
//! > **With ε > 0 the path bends towards +v; with ε < 0 towards −v.**
//!
//! A [`Bias`] therefore feeds **−v** into the printed kernel. [`Bias::from_printed_kernel`] builds
//! the bias that reproduces the printed update literally, for comparing with the seeds' numbers.
//! The tests `world_bias_bends_the_valley_towards_plus_v` and the reference windows lock this.

use glam::DVec2;

use crate::FieldError;
use crate::grid::check_finite;

/// Largest allowed `|ε|·max(|v_x|, |v_y|)`.
pub const MAX_BIAS: f64 = 2.0;

/// A behaviour vector v and its strength ε, in world space (see the module docs for the sign).
///
/// ε is measured per cell (h = 1): the same (v, ε) bends paths more, in world units, on a grid
/// with more cells across (digest 000 §2.6 \[DERIVED\]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bias {
    epsilon: f64,
    direction: DVec2,
}

impl Default for Bias {
    fn default() -> Self {
        Self::HARMONIC
    }
}

impl Bias {
    /// ε = 0: Laplace's equation, the harmonic field with maximal clearance.
    pub const HARMONIC: Self = Self {
        epsilon: 0.0,
        direction: DVec2::X,
    };

    /// A bias of strength `epsilon` towards world direction `direction` (not normalised; the
    /// seeds use components in [−1, 1]).
    ///
    /// Errors if an input is not finite or `|ε|·max|v_i| > 2`.
    pub fn new(epsilon: f64, direction: DVec2) -> Result<Self, FieldError> {
        check_finite("ε", epsilon)?;
        check_finite("v.x", direction.x)?;
        check_finite("v.y", direction.y)?;
        let product = epsilon.abs() * direction.x.abs().max(direction.y.abs());
        if product > MAX_BIAS {
            return Err(FieldError::BiasOutOfRange {
                epsilon,
                vx: direction.x,
                vy: direction.y,
                product,
            });
        }
        Ok(Self { epsilon, direction })
    }

    /// The bias whose update equals the seeds' printed kernel with this (ε, v) literally:
    /// the same as `Bias::new(epsilon, -direction)`.
    pub fn from_printed_kernel(epsilon: f64, direction: DVec2) -> Result<Self, FieldError> {
        Self::new(epsilon, -direction)
    }

    /// Like [`Bias::new`], but scales ε down to the largest allowed value instead of failing
    /// when `|ε|·max|v_i| > 2`. Non-finite input still errors.
    pub fn clamped(epsilon: f64, direction: DVec2) -> Result<Self, FieldError> {
        check_finite("ε", epsilon)?;
        let m = direction.x.abs().max(direction.y.abs());
        let limit = if m > 0.0 { MAX_BIAS / m } else { f64::INFINITY };
        Self::new(epsilon.clamp(-limit, limit), direction)
    }

    /// ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// v, in world space.
    pub fn direction(&self) -> DVec2 {
        self.direction
    }

    /// Whether ε·v is zero, so the field is harmonic.
    pub fn is_harmonic(&self) -> bool {
        self.epsilon == 0.0 || self.direction == DVec2::ZERO
    }

    /// The four neighbour weights of the update in the grid frame.
    pub fn weights(&self) -> StencilWeights {
        // World convention: the printed kernel is fed −v.
        let a = -self.epsilon * self.direction.x * 0.5;
        let b = -self.epsilon * self.direction.y * 0.5;
        StencilWeights {
            east: 0.25 * (1.0 + a),
            west: 0.25 * (1.0 - a),
            north: 0.25 * (1.0 + b),
            south: 0.25 * (1.0 - b),
        }
    }
}

/// Weights of the four neighbours in one update; they sum to 1 and, for a valid [`Bias`], are
/// all in [0, ½].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StencilWeights {
    /// Weight of (x + 1, y).
    pub east: f64,
    /// Weight of (x − 1, y).
    pub west: f64,
    /// Weight of (x, y + 1).
    pub north: f64,
    /// Weight of (x, y − 1).
    pub south: f64,
}

impl StencilWeights {
    /// The harmonic weights, ¼ each.
    pub const HARMONIC: Self = Self {
        east: 0.25,
        west: 0.25,
        north: 0.25,
        south: 0.25,
    };

    /// The weighted mean of four neighbour values.
    #[inline(always)]
    pub fn apply(&self, east: f64, west: f64, north: f64, south: f64) -> f64 {
        self.east * east + self.west * west + self.north * north + self.south * south
    }
}

/// One update exactly as printed in the seeds (digest 004 Eq. 3.3, digest 000 Eq. 5.1), with the
/// seed's own neighbour names: `left` = (i−1, j), `top` = (i, j−1), `right` = (i+1, j),
/// `bottom` = (i, j+1). No sign flip, no validation: this is the reference the tests compare
/// [`Bias`] against.
pub fn printed_update(left: f64, top: f64, right: f64, bottom: f64, epsilon: f64, v: DVec2) -> f64 {
    0.25 * (left + top + right + bottom)
        + epsilon / 8.0 * ((right - left) * v.x + (bottom - top) * v.y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stencil_worked_example_from_the_seed() {
        // Digest 004 §12 test 1: ε = −1, v = (1, 0), (p_l, p_t, p_r, p_b) = (0.2, 0.4, 0.6, 0.8).
        let p = printed_update(0.2, 0.4, 0.6, 0.8, -1.0, DVec2::X);
        assert!((p - 0.45).abs() < 1e-15, "{p}");
        // The same through our weights: the seed's (i, j−1) "top" is our south (row y − 1).
        let w = Bias::from_printed_kernel(-1.0, DVec2::X).unwrap().weights();
        let ours = w.apply(0.6, 0.2, 0.8, 0.4);
        assert!((ours - 0.45).abs() < 1e-15, "{ours}");
        // Under the world convention the same number comes from ε = +1, v = (1, 0).
        let world = Bias::new(1.0, DVec2::X).unwrap().weights();
        assert!((world.apply(0.6, 0.2, 0.8, 0.4) - 0.45).abs() < 1e-15);
    }

    #[test]
    fn zero_bias_is_the_four_neighbour_mean() {
        let w = Bias::HARMONIC.weights();
        assert_eq!(w, StencilWeights::HARMONIC);
        assert_eq!(w.apply(0.1, 0.2, 0.3, 0.4), 0.25);
        assert_eq!(printed_update(0.1, 0.2, 0.3, 0.4, 0.0, DVec2::Y), 0.25);
    }

    #[test]
    fn weights_match_the_printed_update_for_random_inputs() {
        let mut s = 12345u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..1000 {
            let (l, t, r, b) = (next(), next(), next(), next());
            let eps = 4.0 * next() - 2.0;
            let v = DVec2::new(2.0 * next() - 1.0, 2.0 * next() - 1.0);
            let reference = printed_update(l, t, r, b, eps, v);
            let w = Bias::from_printed_kernel(eps, v).unwrap().weights();
            assert!((w.apply(r, l, b, t) - reference).abs() < 1e-14);
        }
    }

    #[test]
    fn valid_bias_gives_a_convex_combination() {
        for &(eps, v) in &[
            (2.0, DVec2::X),
            (-2.0, DVec2::new(1.0, -1.0)),
            (1.2, DVec2::Y),
        ] {
            let w = Bias::new(eps, v).unwrap().weights();
            for x in [w.east, w.west, w.north, w.south] {
                assert!((0.0..=0.5).contains(&x));
            }
            assert!((w.east + w.west + w.north + w.south - 1.0).abs() < 1e-15);
        }
    }

    #[test]
    fn epsilon_guard_rejects_out_of_range_and_non_finite_bias() {
        assert!(matches!(
            Bias::new(3.0, DVec2::Y),
            Err(FieldError::BiasOutOfRange { product, .. }) if product == 3.0
        ));
        assert!(Bias::new(2.4, DVec2::new(1.0, 1.0)).is_err());
        assert!(Bias::new(2.0, DVec2::new(1.0, 1.0)).is_ok());
        assert!(Bias::new(f64::NAN, DVec2::Y).is_err());
        assert!(Bias::new(1.0, DVec2::new(0.0, f64::INFINITY)).is_err());
        let c = Bias::clamped(3.0, DVec2::new(0.0, 0.5)).unwrap();
        assert_eq!(c.epsilon(), 3.0);
        let c = Bias::clamped(-7.0, DVec2::Y).unwrap();
        assert_eq!(c.epsilon(), -2.0);
    }

    #[test]
    fn the_seed_counter_example_breaks_the_maximum_principle() {
        // Digest 004 §2.3: ε = −3, v = (0, 1), p_l = p_t = p_r = 1, p_b = 0 gives 1.125 > 1.
        let p = printed_update(1.0, 1.0, 1.0, 0.0, -3.0, DVec2::Y);
        assert!((p - 1.125).abs() < 1e-15);
        assert!(Bias::from_printed_kernel(-3.0, DVec2::Y).is_err());
    }
}
