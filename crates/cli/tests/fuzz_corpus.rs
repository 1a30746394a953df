//! Replays the fuzz targets' kept inputs on the stable toolchain, without the fuzzer: the
//! seeds each run starts from (`fuzz/seeds/<target>/`, and the shipped scenarios for the
//! scenario target) and every input that once made a target fail (`fuzz/regressions/<target>/`,
//! each named after what it found). A panic fails the test. README, *Fuzzing*, says how the
//! fuzzers run and how a finding becomes a regression input.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file in `dir` (none if it does not exist), sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Feeds every kept input of `target` to `body`; returns how many there were.
fn replay(target: &str, body: fn(&[u8]), extra: Option<&Path>) -> usize {
    let fuzz = root().join("fuzz");
    let inputs: Vec<PathBuf> = [
        Some(fuzz.join("seeds").join(target)),
        Some(fuzz.join("regressions").join(target)),
        extra.map(Path::to_path_buf),
    ]
    .into_iter()
    .flatten()
    .flat_map(|dir| files(&dir))
    .collect();
    for input in &inputs {
        let data = std::fs::read(input).unwrap();
        let ran = std::panic::catch_unwind(|| body(&data));
        assert!(ran.is_ok(), "{target}: {} failed", input.display());
    }
    inputs.len()
}

#[test]
fn scenario_inputs_replay_clean() {
    let shipped = root().join("assets/scenarios");
    assert!(replay("scenario", crowdfield_cli::fuzz::scenario, Some(&shipped)) > 10);
}

#[test]
fn steersuite_inputs_replay_clean() {
    assert!(replay("steersuite", crowdfield_cli::fuzz::steersuite, None) > 0);
}

#[test]
fn menge_inputs_replay_clean() {
    assert!(replay("menge", crowdfield_cli::fuzz::menge, None) > 0);
}

#[test]
fn field_inputs_replay_clean() {
    assert!(replay("field", crowdfield_cli::fuzz::field, None) > 0);
}

#[test]
fn crowd_inputs_replay_clean() {
    assert!(replay("crowd", crowdfield_cli::fuzz::crowd, None) > 0);
}

#[test]
fn sketch_inputs_replay_clean() {
    assert!(replay("sketch", crowdfield_cli::fuzz::sketch, None) > 0);
}

#[test]
fn markers_inputs_replay_clean() {
    assert!(replay("markers", crowdfield_cli::fuzz::markers, None) > 0);
}

/// The seeds are real inputs: the SteerSuite and Menge seeds convert, the JSON seed reads.
#[test]
fn the_seeds_convert() {
    let seeds = root().join("fuzz/seeds");
    let case = std::fs::read_to_string(seeds.join("steersuite/swap.xml")).unwrap();
    let converted = crowdfield_cli::steersuite::from_steersuite(
        &case,
        7,
        bevy_crowdfield::field::Coverage::Centre,
    )
    .unwrap();
    assert_eq!(converted.scenario.agents.len(), 1);
    let menge = std::fs::read_to_string(seeds.join("menge/gap.bin")).unwrap();
    let (scene, behaviour) = menge.split_once('\0').unwrap();
    let source = |name, text| crowdfield_cli::menge::Source { name, text };
    let converted = crowdfield_cli::menge::from_menge(
        &source("scene.xml", scene),
        &source("behavior.xml", behaviour),
        7,
        bevy_crowdfield::field::Coverage::Centre,
    )
    .unwrap();
    assert_eq!(converted.scenario.agents.len(), 7);
    let json = std::fs::read_to_string(seeds.join("scenario/small.scenario.json")).unwrap();
    assert_eq!(
        bevy_crowdfield::Scenario::from_json(&json)
            .unwrap()
            .agents
            .len(),
        2
    );
}
