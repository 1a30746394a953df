//! The floating-point type a field stores its potentials in.
//!
//! Global maps and stroke fields must be `f64`: far from the goal the harmonic potential gets
//! within 1e-8 of 1, and `f32` (ε ≈ 1.2e-7) rounds it flat (digest 000 §2.9, digest 004 §10).
//! Small local maps may use `f32` only where the descent stays at or above 1e-5 per cell: the
//! test `f32_and_f64_local_maps_pick_the_same_direction` finds both precisions within 0.5° there
//! (11–35 cell windows, four biases, 30–100 sweeps), but 2° apart at 2.5e-6, 14° at 3e-8, and
//! `f32` flat below about 1e-8, which local maps reach behind walls or with strong bias. The
//! steering crate therefore uses `f64` local maps.

use std::fmt::Debug;
use std::ops::{Add, AddAssign, Mul, Neg, Sub};

/// A potential value type: implemented for `f32` and `f64` only.
pub trait Potential:
    Copy
    + Debug
    + Default
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
    + AddAssign
{
    /// 0, the goal potential.
    const ZERO: Self;
    /// 1, the obstacle potential.
    const ONE: Self;
    /// Converts from `f64`, rounding to nearest.
    fn from_f64(value: f64) -> Self;
    /// Widens to `f64`.
    fn to_f64(self) -> f64;
    /// Absolute value.
    fn abs(self) -> Self;
}

impl Potential for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        value
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f64::abs(self)
    }
}

impl Potential for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        value as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f32::abs(self)
    }
}
