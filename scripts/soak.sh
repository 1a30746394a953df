#!/usr/bin/env bash
# The soak test in release: at least 10^7 agent-steps over the shipped scenarios with obstacles
# added and removed, walkers spawned and removed and goals added and removed at run time
# (crates/cli/tests/soak.rs says what it checks after every step).
#
#   scripts/soak.sh                                  10^7 agent-steps
#   CROWDFIELD_SOAK_AGENT_STEPS=50000000 scripts/soak.sh
#
# Every test run (and CI) runs the short soak (about 4.8·10^5 agent-steps) in the test profile.
set -euo pipefail
cd "$(dirname "$0")/.."
time cargo test --release -p crowdfield_cli --test soak -- --ignored --nocapture
