#!/usr/bin/env bash
# Fuzz each cargo-fuzz target of the native core (fuzz/fuzz_targets/) for SECONDS (default 60)
# on corpora seeded from the repository's lines. Exits non-zero when a target panics, hangs
# (an input over 10 s), runs out of memory or trips AddressSanitizer; libFuzzer then writes the
# input to fuzz/artifacts/<target>/. Installs cargo-fuzz when it is missing. See fuzz/README.md.
#
#   bash fuzz/native.sh            # 60 s per target (what CI runs)
#   bash fuzz/native.sh 3600       # an hour per target
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
targets=(scan_line check_row)

# cargo fuzz passes nightly-only flags (-Z sanitizer); the stable compiler accepts them with
# RUSTC_BOOTSTRAP, so the one toolchain every machine has will do (a nightly one is used as is).
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --locked --quiet cargo-fuzz --version '^0.13'
fi

python3 seed_native.py "${targets[@]}"
cargo fuzz build -O
mkdir -p artifacts
for target in "${targets[@]}"; do
  echo "fuzzing $target for ${seconds} s" >&2
  log="artifacts/$target.log"
  if ! cargo fuzz run -O "$target" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz target $target failed: the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || true
done
