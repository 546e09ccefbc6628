#!/usr/bin/env bash
# Fuzz every wire parser for a bounded time; exit non-zero on any finding.
#
#   fuzz/run.sh [seconds-per-group] [dcirouter-fuzz options...]
#
# Stable Rust only, nothing but crates.io: the harness (fuzz/src) is a small
# coverage-guided mutation fuzzer. Coverage comes from LLVM SanitizerCoverage
# inline 8-bit counters, enabled with stable `-C` flags; `--target <host>`
# keeps those flags off build scripts and proc macros. FUZZ_NO_COVERAGE=1
# builds without them (plain mutation fuzzing).
#
# Examples: fuzz/run.sh 30                 (30 s per group, 6 groups; make test uses 20)
#           fuzz/run.sh 600 --group l2l3 --corpus
#           fuzz/run.sh 0 --iters 20000      (deterministic run count)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
secs="${1:-30}"
[ $# -gt 0 ] && shift
host="$(rustc -vV | sed -n 's/^host: //p')"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
flags="--cfg fuzz_cov -C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=3 -C llvm-args=-sanitizer-coverage-inline-8bit-counters"
extra=(--require-coverage)
if [ "${FUZZ_NO_COVERAGE:-0}" = 1 ]; then
    flags=""
    extra=()
fi
# The coverage flags change the build: keep it apart from normal builds.
RUSTFLAGS="${RUSTFLAGS:-} $flags" cargo build --quiet --manifest-path "$here/Cargo.toml" \
    --profile fuzz --target "$host" --bin dcirouter-fuzz
exec "$CARGO_TARGET_DIR/$host/fuzz/dcirouter-fuzz" --seconds "$secs" "${extra[@]}" "$@"
