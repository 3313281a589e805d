#!/usr/bin/env bash
# gpuchain's CPU path against PyTorch on the same work, threads and batch: the two sides
# alternate run by run, so that a change in the machine's load hits both. Prints each run,
# the median and spread per side, and the load average before and after.
#
#   scripts/bench-vs-pytorch.sh embedder [RUNS] [THREADS]
#       all-MiniLM-L6-v2 over data/minilm/bench-sentences.json, batch 32, against
#       sentence-transformers (sentences/s)
#   scripts/bench-vs-pytorch.sh cnn [RUNS] [THREADS]
#       the digits CNN over the 1,797 built-in images, batch 256, 20 passes a run, against
#       the same network in torch.nn (images/s)
#
# Defaults: 7 runs, 2 threads. PyTorch comes from PyPI into a virtual environment under the
# cache (its Linux wheel brings CUDA libraries: about 6 GB on disk, used here on the CPU
# only). Run it on an idle machine: a figure taken while other work runs is not a figure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
WORK="${1:?embedder or cnn}"
RUNS="${2:-7}"
THREADS="${3:-2}"
MODEL_DIR="$GPUCHAIN_CACHE/models"
TORCH_PY="$(bash scripts/venv.sh venv-torch scripts/torch-requirements.txt 'import torch, sentence_transformers')"
cargo build --workspace --all-targets --locked --quiet --examples >&2
case "$WORK" in
  embedder)
    [ -f "$MODEL_DIR/all-minilm-l6-v2/model.safetensors" ] || bash scripts/fetch-minilm.sh "$MODEL_DIR" >&2
    theirs=(env GPUCHAIN_MODELS="$MODEL_DIR" "$TORCH_PY" scripts/gen-reference-vectors.py --bench "$THREADS")
    ours=(env GPUCHAIN_MODELS="$MODEL_DIR" "$CARGO_TARGET_DIR/debug/examples/cpu_bench" embedder --threads "$THREADS" --batch 32)
    unit="sentences/s" ;;
  cnn)
    theirs=("$TORCH_PY" scripts/bench-cnn-pytorch.py --threads "$THREADS" --batch 256 --passes 20)
    ours=("$CARGO_TARGET_DIR/debug/examples/cpu_bench" cnn --threads "$THREADS" --batch 256 --passes 20)
    unit="images/s" ;;
  *) echo "unknown workload $WORK: embedder or cnn" >&2; exit 2 ;;
esac
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
  "${theirs[@]}" 2>/dev/null | tail -1 >>"$out"
  RAYON_NUM_THREADS="$THREADS" "${ours[@]}" >>"$out"
  tail -2 "$out"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$unit" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
rate = lambda r: r.get("sentences_per_s", r.get("per_s"))
med = {}
for side in ("pytorch", "gpuchain"):
    rs = [rate(r) for r in runs if r["impl"] == side]
    med[side] = statistics.median(rs)
    print(f"{side:9}: {med[side]:9.1f} {sys.argv[2]} median ({min(rs):.1f}–{max(rs):.1f}), {len(rs)} runs")
pairs = [rate(b) / rate(a) for a, b in zip(runs[0::2], runs[1::2])]
print(f"gpuchain / pytorch: {med['gpuchain'] / med['pytorch']:.2f} on the medians; "
      f"run by run {min(pairs):.2f}–{max(pairs):.2f}, median {statistics.median(pairs):.2f}")
PY
