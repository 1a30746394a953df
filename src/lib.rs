//! crowdfield facade.
pub use crowdfield_field as field;

/// The README's Rust examples, compiled as doc tests so that they keep up with the API (they
/// open windows, so they are built, not run).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
