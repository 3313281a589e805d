#!/usr/bin/env bash
# Runs one cargo-fuzz target for a number of seconds (default 60) over its committed corpus.
#   scripts/fuzz.sh tx_decode|check_tx|finalize_block [seconds]
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). The app links
# RocksDB: if a normal build already produced librocksdb.a, it is reused instead of building
# RocksDB again under nightly (set ROCKSDB_LIB_DIR yourself to choose one). Coverage
# instrumentation only, no sanitizer: the code under test forbids `unsafe`.
set -euo pipefail
target=${1:?usage: scripts/fuzz.sh TARGET [seconds]}
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${ROCKSDB_LIB_DIR:-}" ]; then
  lib=$(find "${CARGO_TARGET_DIR:-$root/target}" -name librocksdb.a -path '*librocksdb-sys*' 2>/dev/null | head -1 || true)
  if [ -n "$lib" ]; then
    export ROCKSDB_LIB_DIR=$(dirname "$lib") ROCKSDB_STATIC=1
  fi
fi
cd "$root/fuzz"
# Fresh findings go to a scratch corpus; the committed seed corpus is only read.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cargo +nightly fuzz run --sanitizer none "$target" "$scratch" "corpus/$target" -- \
  -max_total_time="$seconds" -max_len=4096 -print_final_stats=1
