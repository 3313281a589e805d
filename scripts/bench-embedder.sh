#!/usr/bin/env bash
# Embedder throughput of gpuchain's CPU path against PyTorch + sentence-transformers on the
# same checkpoint (all-MiniLM-L6-v2), sentences (data/minilm/bench-sentences.json), batch and
# threads: the two sides alternate run by run, so that a change in the machine's load hits
# both. Prints each run, the median and spread per side, and the load average before and
# after.
#
#   scripts/bench-embedder.sh [RUNS] [THREADS]   (defaults 7 and 2; batch 32)
#
# PyTorch comes from PyPI into a virtual environment under the cache (its Linux wheel brings
# CUDA libraries: about 6 GB on disk, used here on the CPU only). Run it on an idle machine:
# a figure taken while other work runs is not a figure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
RUNS="${1:-7}"
THREADS="${2:-2}"
MODEL_DIR="$GPUCHAIN_CACHE/models"
[ -f "$MODEL_DIR/all-minilm-l6-v2/model.safetensors" ] || bash scripts/fetch-minilm.sh "$MODEL_DIR" >&2
TORCH_PY="$(bash scripts/venv.sh venv-torch scripts/torch-requirements.txt 'import torch, sentence_transformers')"
cargo build --workspace --all-targets --locked --quiet --examples >&2
OURS="$CARGO_TARGET_DIR/debug/examples/embedder_bench"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
  GPUCHAIN_MODELS="$MODEL_DIR" "$TORCH_PY" scripts/gen-reference-vectors.py --bench "$THREADS" 2>/dev/null \
    | tail -1 >>"$out"
  RAYON_NUM_THREADS="$THREADS" "$OURS" --threads "$THREADS" --batch 32 >>"$out"
  tail -2 "$out"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for side in ("pytorch", "gpuchain"):
    rate = [r["sentences_per_s"] for r in runs if r["impl"] == side]
    med[side] = statistics.median(rate)
    print(f"{side:9}: {med[side]:6.1f} sentences/s median ({min(rate):.1f}–{max(rate):.1f}), {len(rate)} runs")
print(f"gpuchain / pytorch: {med['gpuchain'] / med['pytorch']:.2f}")
PY
