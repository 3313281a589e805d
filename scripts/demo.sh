#!/usr/bin/env bash
# The main job on defaults: installs what is missing, builds, starts a 4-validator localnet
# of real CometBFT + gpuchaind processes on 127.0.0.1, and walks through the chain as a
# user would: keys, a signed transfer, and a balance proven against a block header's app
# hash. Everything is stopped on exit or Ctrl-C. Safe to run again: builds are reused.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$GPUCHAIN_ROOT"
export GPUCHAIN_LOCALNET_DIR="${GPUCHAIN_LOCALNET_DIR:-$GPUCHAIN_ROOT/.localnet}"
GPUCHAIND="$CARGO_TARGET_DIR/debug/gpuchaind"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "installing prerequisites (system packages, CometBFT $COMETBFT_VERSION)"
bash scripts/install-deps.sh
bash scripts/install-cometbft.sh

step "building gpuchaind (first build takes ~15 min on 2 cores; later runs reuse it)"
cargo build --workspace --all-targets  # one feature set for every command, so nothing rebuilds

trap 'step "stopping the localnet"; bash scripts/localnet.sh stop' EXIT INT TERM
step "starting a 4-validator localnet"
bash scripts/localnet.sh start 4
RPC=$(python3 -c "import json;print(json.load(open('$GPUCHAIN_LOCALNET_DIR/localnet.json'))['nodes'][2]['rpc_url'])")
HOME_DIR="$GPUCHAIN_LOCALNET_DIR"
"$GPUCHAIND" status --node "$RPC"

step "creating a client key"
"$GPUCHAIND" keys add client --home "$HOME_DIR" >/dev/null 2>&1 || true
CLIENT=$("$GPUCHAIND" keys show client --home "$HOME_DIR" --output json | python3 -c "import json,sys;print(json.load(sys.stdin)['address'])")
echo "client address: $CLIENT"

step "faucet sends 25 GPU (25000000 ugpu) to the client, signed by the CLI"
"$GPUCHAIND" tx bank send faucet "$CLIENT" 25000000 --home "$HOME_DIR" --node "$RPC"

step "the client's balance, proven against the app hash of a signed block header"
"$GPUCHAIND" query bank balance "$CLIENT" --prove --node "$RPC"

step "every validator agrees"
bash scripts/localnet.sh status
echo
echo "logs: $GPUCHAIN_LOCALNET_DIR/logs"
