#!/usr/bin/env bash
# CUDA calibration and figures on a GPU machine (docs/benchmarks.md, "GPU"): burn-cuda's
# results against the paths verifiers trust, and its speed against PyTorch on the same GPU,
# the two sides alternating run by run. One JSON line per section on stdout.
#
#   scripts/gpu-calibration.sh [small] [smollm2] [minilm]      (default: all three)
#
#   small    digits MLP and CNN logits against canonical; the tiny decoder's CUDA
#            generations checked by the CPU verifier
#   smollm2  SmolLM2 prefill/decode tokens/s at batch 1 and 8 against transformers (f32,
#            eager) on the same GGUF; then CUDA chat answers checked by the CPU verifier's
#            teacher-forced check: per question one greedy answer and SEEDS seeded jobs of
#            8 answers each, up to NEW_TOKENS tokens, ending at end of sequence
#   minilm   MiniLM embeddings against canonical; sentences/s against sentence-transformers
#
# Build the binary where Rust is (the GPU machine needs none):
#   cargo build --release -p gpuchain-compute --features cuda --example cuda_calibration
# (with CUDARC_CUDA_VERSION=13000 for a CUDA 13.0 driver; stripped, it is 65 MB, 9 MB in xz;
# at run time libnvrtc's folder, not its stubs, must be on LD_LIBRARY_PATH).
# BIN is that binary (default: the release build in the cargo target dir); the models are
# under GPUCHAIN_MODELS as scripts/fetch-smollm2.sh and scripts/fetch-minilm.sh leave them;
# PYTHON has torch with CUDA, transformers, sentence-transformers and gguf. RUNS timed runs
# per side and ALTERNATIONS rounds of both sides (default 3 and 3); SEEDS seeded jobs per
# chat question (default 7: with 10 questions, 570 answers) of up to NEW_TOKENS tokens
# (default 32).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/gpuchain/target}/release/examples/cuda_calibration}"
MODELS="${GPUCHAIN_MODELS:-$HOME/.cache/gpuchain/models}"
PY="${PYTHON:-python3}"
RUNS="${RUNS:-3}"
ALTERNATIONS="${ALTERNATIONS:-3}"
GGUF="$MODELS/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
MINILM="$MODELS/all-minilm-l6-v2"

# A side that fails says so in a line of its own; the other sections still run.
side() {
  "$@" || echo "{\"section\":\"failed\",\"command\":\"$*\",\"status\":$?}"
}

echo "{\"section\":\"load\",\"loadavg_before\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"cpus\":$(nproc)}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
  sed 's/.*/{"section":"gpu","nvidia_smi":"&"}/'
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(small smollm2 minilm)
for stage in "${stages[@]}"; do
  case "$stage" in
    small) side "$BIN" --data data --sections digits,tiny_llama ;;
    smollm2)
      ids="$(mktemp)"
      for _ in $(seq "$ALTERNATIONS"); do
        side "$BIN" --data data --sections smollm2_speed --smollm2 "$GGUF" --runs "$RUNS" --prompt-ids "$ids"
        side "$PY" scripts/bench-llm-torch-gpu.py "$GGUF" "$ids" "$RUNS"
      done
      side "$BIN" --data data --sections smollm2_checks --smollm2 "$GGUF" --seeds "${SEEDS:-7}" --new "${NEW_TOKENS:-32}" ;;
    minilm)
      side "$BIN" --data data --sections minilm --minilm "$MINILM"
      for _ in $(seq "$ALTERNATIONS"); do
        side "$BIN" --data data --sections minilm_speed --minilm "$MINILM" --runs "$RUNS"
        GPUCHAIN_MODELS="$MODELS" side "$PY" scripts/gen-reference-vectors.py --bench "$(nproc)" --device cuda
      done ;;
    *) echo "unknown stage $stage: small, smollm2 or minilm" >&2; exit 2 ;;
  esac
done
echo "{\"section\":\"load\",\"loadavg_after\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
