# Shared settings for gpuchain's scripts; sourced, not run.
# shellcheck shell=bash
GPUCHAIN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GPUCHAIN_ROOT
export GPUCHAIN_CACHE="${GPUCHAIN_CACHE:-$HOME/.cache/gpuchain}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$GPUCHAIN_CACHE/target}"
export COMETBFT_VERSION="${COMETBFT_VERSION:-v0.38.26}"
export COMETBFT_BIN="$GPUCHAIN_CACHE/cometbft-$COMETBFT_VERSION/cometbft"
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
