//! crowdfield facade.
pub use crowdfield_field as field;
