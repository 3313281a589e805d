# Shared settings for gpuchain's scripts; sourced, not run.
# shellcheck shell=bash
GPUCHAIN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GPUCHAIN_ROOT
export GPUCHAIN_CACHE="${GPUCHAIN_CACHE:-$HOME/.cache/gpuchain}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$GPUCHAIN_CACHE/target}"
export COMETBFT_VERSION="${COMETBFT_VERSION:-v0.38.26}"
export COMETBFT_BIN="$GPUCHAIN_CACHE/cometbft-$COMETBFT_VERSION/cometbft"
# Only what is missing is prepended, so PATH reads the same from any shell (a build script
# that watches an environment variable would otherwise see a change and rebuild).
for dir in /usr/local/go/bin "$HOME/.cargo/bin"; do
  case ":$PATH:" in
    *":$dir:"*) ;;
    *) PATH="$dir:$PATH" ;;
  esac
done
export PATH
