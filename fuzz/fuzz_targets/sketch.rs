//! Fuzz target: `crowdfield_cli::fuzz::sketch` (crates/cli/src/fuzz.rs says what it checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crowdfield_cli::fuzz::sketch(data));
