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
# The fuzz workspace builds under nightly with its own flags: keep it in fuzz/target.
unset CARGO_TARGET_DIR
cd "$root/fuzz"
# Fresh findings go to a scratch corpus; the committed seed corpus is only read.
# The harness's RocksDB lives in a static that libFuzzer never drops: give it a TMPDIR that
# is removed on exit.
scratch=$(mktemp -d)
db_tmp=$(mktemp -d)
trap 'rm -rf "$scratch" "$db_tmp"' EXIT
export TMPDIR=$db_tmp
cargo +nightly fuzz run --sanitizer none "$target" "$scratch" "corpus/$target" -- \
  -max_total_time="$seconds" -max_len=4096 -print_final_stats=1
