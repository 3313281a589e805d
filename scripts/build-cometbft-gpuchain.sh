#!/usr/bin/env bash
# Builds cometbft-gpuchain: CometBFT's node from the Go module pinned in
# cometbft-gpuchain/cmd/go.mod, with the gpuchain app linked in (libgpuchain_inprocess.a),
# so that `cometbft-gpuchain start --home COMET_HOME --app-home APP_HOME` runs a validator
# as one process (docs/operations.md).
#
#   scripts/build-cometbft-gpuchain.sh            the workspace's debug build (tests, bench),
#                                                 beside gpuchaind in the cached target dir
#   scripts/build-cometbft-gpuchain.sh --release  for a real network: the library built by
#                                                 package (no test hooks), into target/release
#   scripts/build-cometbft-gpuchain.sh --test     the debug build, then its Go tests
#
# A no-op when the binary is newer than the library and the Go sources.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$GPUCHAIN_ROOT"
profile=debug
go_test=0
[ "${1:-}" = "--test" ] && go_test=1
if [ "${1:-}" = "--release" ]; then
  profile=release
  cargo build --release --locked -p gpuchain-inprocess
fi
lib="$CARGO_TARGET_DIR/$profile/libgpuchain_inprocess.a"
out="$CARGO_TARGET_DIR/$profile/cometbft-gpuchain"
src=cometbft-gpuchain/cmd
[ -f "$lib" ] || cargo build --workspace --locked --quiet
command -v go >/dev/null || { echo "error: Go is required to build cometbft-gpuchain (https://go.dev/dl)" >&2; exit 1; }
# The library carries RocksDB's C++ and Rust's std; these are the system libraries they use.
export CGO_ENABLED=1 CGO_LDFLAGS="$lib -lstdc++ -lm -ldl -lpthread"
if ! { [ -x "$out" ] && [ "$out" -nt "$lib" ] &&
  [ -z "$(find "$src" -newer "$out" \( -name '*.go' -o -name go.mod -o -name go.sum \))" ]; }; then
  echo "building $out (CometBFT with the gpuchain app in its process)..." >&2
  # Go does not hash files its linker flags name: without the old binary it must relink.
  rm -f "$out"
  (cd "$src" && go build -mod=readonly -trimpath -o "$out" .)
fi
if [ $go_test = 1 ]; then
  (cd "$src" && go test -mod=readonly -count=1 .)
fi
