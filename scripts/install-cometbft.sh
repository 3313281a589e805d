#!/usr/bin/env bash
# Installs the pinned CometBFT with `go install` into the cache; a no-op when present.
set -euo pipefail
source "$(dirname "$0")/env.sh"
if [ -x "$COMETBFT_BIN" ] && "$COMETBFT_BIN" version | grep -q "${COMETBFT_VERSION#v}"; then
  echo "cometbft $COMETBFT_VERSION already installed at $COMETBFT_BIN"
  exit 0
fi
command -v go >/dev/null || { echo "error: Go is required to install CometBFT (https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$(dirname "$COMETBFT_BIN")"
echo "installing cometbft $COMETBFT_VERSION with go install (first time only)..."
GOBIN="$(dirname "$COMETBFT_BIN")" go install "github.com/cometbft/cometbft/cmd/cometbft@$COMETBFT_VERSION"
"$COMETBFT_BIN" version
