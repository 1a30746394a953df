#!/usr/bin/env bash
# Runs the fuzz targets (fuzz/fuzz_targets/) with cargo fuzz, each for a bounded time.
#
#   scripts/fuzz.sh                 every target, 60 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh crowd field
#
# Needs `cargo install cargo-fuzz`. Runs on the stable toolchain with `-s none` (no sanitizer:
# the crates forbid unsafe code; libFuzzer's coverage guidance and panics are what find bugs).
# Each target starts from its seeds (fuzz/seeds/<target>/, the shipped scenarios for
# `scenario`) and the inputs that once failed (fuzz/regressions/<target>/), and grows its own
# corpus in fuzz/corpus/<target>/ (not committed). A failing input lands in
# fuzz/artifacts/<target>/: copy it into fuzz/regressions/<target>/ under a name that says what
# it found; `cargo test -p crowdfield_cli --test fuzz_corpus` then replays it on every test run.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(scenario steersuite menge field crowd sketch markers)
fi
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target" "seeds/$target" "regressions/$target"
  dirs=("corpus/$target" "seeds/$target" "regressions/$target")
  if [ "$target" = scenario ]; then
    dirs+=(../assets/scenarios)
  fi
  echo "== $target: ${seconds} s"
  cargo fuzz run -s none --release "$target" "${dirs[@]}" -- \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1
done
