#!/usr/bin/env bash
# gpuchain against CometBFT's own kvstore app on the same localnet config and the same load
# generator (gpuchain-loadgen's replay engine), the two sides alternating run by run. Each
# run starts a fresh chain; the end prints medians per side and the gpuchain/kvstore ratio.
#
#   scripts/bench-engine.sh [--validators 1,4] [--rates 1000,2000,ceiling] [--seconds 20]
#                           [--rounds 3] [--connections 64] [--senders 100] [--age N]
#                           [--sides kvstore,gpuchain[,gpuchain-inprocess,kvstore-socket]]
#                           [--retain-blocks N] [--no-tx-index]
#
# Run it on an idle machine: each run reports `other cores`, the CPU used by anything but
# the nodes and the load generator, and a figure taken beside other work is not a figure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/install-cometbft.sh >/dev/null
export COMETBFT_BIN
# CometBFT's kvstore example as a socket app (the `kvstore-socket` side), same release.
ABCI_CLI_BIN="$(dirname "$COMETBFT_BIN")/abci-cli"
[ -x "$ABCI_CLI_BIN" ] || GOBIN="$(dirname "$COMETBFT_BIN")" go install \
  "github.com/cometbft/cometbft/abci/cmd/abci-cli@$COMETBFT_VERSION"
export ABCI_CLI_BIN
cargo build --workspace --locked --quiet --bins --examples >&2
bash scripts/build-cometbft-gpuchain.sh
echo "commit $(git rev-parse --short HEAD), load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
"$CARGO_TARGET_DIR/debug/examples/engine_vs_kvstore" "$@"
