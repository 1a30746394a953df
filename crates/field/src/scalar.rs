//! The floating-point type a field stores its potentials in.
//!
//! Global maps and stroke fields must be `f64`: far from the goal the harmonic potential gets
//! within 1e-8 of 1, and `f32` (ε ≈ 1.2e-7) rounds it flat (digest 000 §2.9, digest 004 §10).
//! Small local maps may use `f32`; the test `f32_and_f64_local_maps_pick_the_same_direction`
//! shows both precisions give the same descent decision on the seed's window sizes.

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
