#!/usr/bin/env bash
# Starts, stops or shows a localnet of N validators (CometBFT + gpuchaind each) on 127.0.0.1.
#   scripts/localnet.sh start [N]   build, write .localnet/, start, wait for blocks
#   scripts/localnet.sh stop        stop every process cleanly (TERM, then KILL)
#   scripts/localnet.sh status      one line per node
# Logs: .localnet/logs/node<i>-{app,cometbft}.log
# GPUCHAIN_IN_PROCESS=1: each validator is one cometbft-gpuchain process, the app inside
# CometBFT's (docs/operations.md); its log is node<i>-cometbft.log.
set -euo pipefail
source "$(dirname "$0")/env.sh"
NET_DIR="${GPUCHAIN_LOCALNET_DIR:-$GPUCHAIN_ROOT/.localnet}"
GPUCHAIND="$CARGO_TARGET_DIR/debug/gpuchaind"

stop() {
  [ -f "$NET_DIR/pids" ] || return 0
  while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done < "$NET_DIR/pids"
  for _ in $(seq 50); do
    alive=0
    while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$NET_DIR/pids"
    [ $alive -eq 0 ] && break
    sleep 0.1
  done
  while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$NET_DIR/pids"
  rm -f "$NET_DIR/pids"
  echo "localnet stopped"
}

start() {
  local n="${1:-4}"
  stop
  "$GPUCHAIN_ROOT/scripts/install-cometbft.sh" >/dev/null
  (cd "$GPUCHAIN_ROOT" && cargo build -q --workspace --all-targets)
  rm -rf "$NET_DIR"
  "$GPUCHAIND" testnet --validators "$n" --output-dir "$NET_DIR" --base-port "${GPUCHAIN_BASE_PORT:-26600}" >/dev/null
  mkdir -p "$NET_DIR/logs"
  if [ "${GPUCHAIN_IN_PROCESS:-0}" = 1 ]; then
    "$GPUCHAIN_ROOT/scripts/build-cometbft-gpuchain.sh"
    for ((i = 0; i < n; i++)); do
      node="$NET_DIR/node$i"
      "$CARGO_TARGET_DIR/debug/cometbft-gpuchain" start --home "$node/cometbft" --app-home "$node/app" \
        >"$NET_DIR/logs/node$i-cometbft.log" 2>&1 &
      echo $! >>"$NET_DIR/pids"
    done
  else
    for ((i = 0; i < n; i++)); do
      node="$NET_DIR/node$i"
      "$GPUCHAIND" start --home "$node/app" >"$NET_DIR/logs/node$i-app.log" 2>&1 &
      echo $! >>"$NET_DIR/pids"
    done
    sleep 0.5
    for ((i = 0; i < n; i++)); do
      "$COMETBFT_BIN" start --home "$NET_DIR/node$i/cometbft" >"$NET_DIR/logs/node$i-cometbft.log" 2>&1 &
      echo $! >>"$NET_DIR/pids"
    done
  fi
  rpc=$(python3 -c "import json;print(json.load(open('$NET_DIR/localnet.json'))['nodes'][0]['rpc_url'])")
  for _ in $(seq 120); do
    h=$("$GPUCHAIND" status --node "$rpc" --output json 2>/dev/null | python3 -c "import json,sys;print(json.load(sys.stdin)['latest_block_height'])" 2>/dev/null || echo 0)
    if [ "${h:-0}" -ge 2 ]; then
      echo "localnet of $n validators is producing blocks (height $h); rpc $rpc; logs in $NET_DIR/logs"
      return 0
    fi
    sleep 0.5
  done
  echo "error: localnet did not produce blocks; see $NET_DIR/logs" >&2
  return 1
}

status() {
  python3 -c "import json;[print(n['moniker'], n['rpc_url']) for n in json.load(open('$NET_DIR/localnet.json'))['nodes']]" |
    while read -r name rpc; do echo "$name: $("$GPUCHAIND" status --node "$rpc" 2>&1 | head -1)"; done
}

case "${1:-}" in
  start) start "${2:-4}" ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start [N] | stop | status" >&2; exit 2 ;;
esac
