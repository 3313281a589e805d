#!/usr/bin/env bash
# Generation speed of gpuchain's row decoder (the CPU path of generation jobs) against
# llama.cpp on the same GGUF file, threads and prompt: the two sides alternate run by run, so
# that a change in the machine's load hits both. Prints each run, then the median and spread
# of prefill and decode tokens/s per side, and the load average before and after.
#
#   scripts/bench-llm.sh [RUNS] [BATCH] [NEW_TOKENS] [pytorch]
#       (defaults 7, 1, 16; 2 threads, 37-token prompt, or PROMPT_TOKENS from the
#       environment). With `pytorch`, PyTorch (transformers'
#       Llama over the same file's weights dequantised to f32, scripts/bench-llm-torch.py)
#       runs as a third side in the same alternation; its virtual environment comes from PyPI
#       (scripts/torch-requirements.txt, about 6 GB once). VERIFY_RUNS (default 3): how
#       many times our side checks each run's answers, the median counting; VERIFY_THREADS
#       (default 1, as the verifier agent runs each check): the threads a check runs on.
#       A batch's rows share one prompt, which the check reads once for all of them.
#
# Run it on an idle machine: a figure taken while other work runs is not a figure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
RUNS="${1:-7}"
BATCH="${2:-1}"
NEW="${3:-16}"
TORCH_PY=""
if [ "${4:-}" = pytorch ]; then
  TORCH_PY="$(bash scripts/venv.sh venv-torch scripts/torch-requirements.txt 'import torch, transformers, gguf')"
fi
MODEL_DIR="$GPUCHAIN_CACHE/models"
MODEL="$MODEL_DIR/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$MODEL" ] || bash scripts/fetch-smollm2.sh "$MODEL_DIR" >&2
bash scripts/llama-cpp-env.sh >/dev/null
cargo build --workspace --all-targets --locked --quiet --examples >&2
OURS="$CARGO_TARGET_DIR/debug/examples/llm_bench"
ARGS=(--threads 2 --prompt-tokens "${PROMPT_TOKENS:-37}" --new-tokens "$NEW" --runs 1 --batch "$BATCH")
# Our side checks each run's answers VERIFY_RUNS times (the median counts), as a verifier
# that checks job after job runs warm, on VERIFY_THREADS threads.
OURS_ARGS=(--verify-runs "${VERIFY_RUNS:-3}" --verify-threads "${VERIFY_THREADS:-1}")
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
  node scripts/llama-cpp-anchor.mjs bench "$MODEL" "${ARGS[@]}" 2>/dev/null \
    | sed 's/^{/{"side":"llama.cpp",/' >>"$out"
  "$OURS" "$MODEL" "${ARGS[@]}" "${OURS_ARGS[@]}" 2>/dev/null | sed 's/^{/{"side":"gpuchain",/' >>"$out"
  if [ -n "$TORCH_PY" ]; then
    "$TORCH_PY" scripts/bench-llm-torch.py "$MODEL" "${ARGS[@]}" 2>/dev/null \
      | sed 's/^{/{"side":"pytorch",/' >>"$out"
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
prefill = {}
for side in ("llama.cpp", "gpuchain", "pytorch"):
    rs = [r for r in runs if r["side"] == side]
    if not rs:
        continue
    b = rs[0]["batch"]
    pre = [b * r["prefill_tokens"] / r["prefill_s"] for r in rs]
    # A run of one or two new tokens may time no decoding step at all.
    dec = [b * r["decode_tokens"] / r["decode_s"] for r in rs if r["decode_s"] > 0]
    decode = f"{statistics.median(dec):6.1f} tokens/s ({min(dec):.1f}–{max(dec):.1f})" if dec else "not timed"
    extra = f', weights {rs[0]["weight_bytes"] / 1e6:.0f} MB, resident {rs[0]["resident_bytes"] / 1e6:.0f} MB of a {rs[0]["file_bytes"] / 1e6:.0f} MB file' if "weight_bytes" in rs[0] else ""
    if "verify_s" in rs[0]:
        ratio = [r["verify_s"] / (r["prefill_s"] + r["decode_s"]) for r in rs if r["prefill_s"] + r["decode_s"] > 0]
        extra += f"; verifying an answer costs {100 * statistics.median(ratio):.0f}% ({100 * min(ratio):.0f}–{100 * max(ratio):.0f}%) of generating it"
    if "verify_cpu_s" in rs[0]:
        cpu = [r["verify_cpu_s"] / r["generate_cpu_s"] for r in rs if r["generate_cpu_s"] > 0]
        extra += f", {100 * statistics.median(cpu):.1f}% ({100 * min(cpu):.1f}–{100 * max(cpu):.1f}%) in CPU time"
    if "verify_again_cpu_s" in rs[0]:
        again = [r["verify_again_cpu_s"] / r["generate_cpu_s"] for r in rs if r["generate_cpu_s"] > 0]
        extra += f" (checked again, as for another replica of the job: {100 * statistics.median(again):.1f}%)"
    if "check_cpu_s" in rs[0]:
        job = [r["check_cpu_s"] / r["generate_cpu_s"] for r in rs if r["generate_cpu_s"] > 0]
        extra += f"; checking them as a job (weights read and checked, decoder built, tokens judged) {100 * statistics.median(job):.1f}% ({100 * min(job):.1f}–{100 * max(job):.1f}%)"
    if "next_check_cpu_s" in rs[0]:
        job = [r["next_check_cpu_s"] / r["generate_cpu_s"] for r in rs if r["generate_cpu_s"] > 0]
        extra += f", the next job of the same model (decoder kept) {100 * statistics.median(job):.1f}% ({100 * min(job):.1f}–{100 * max(job):.1f}%)"
    prefill[side] = pre
    print(f"{side:9} batch {b}: prefill {statistics.median(pre):6.1f} tokens/s ({min(pre):.1f}–{max(pre):.1f}), "
          f"decode {decode}, {len(rs)} runs{extra}")
for anchor in ("llama.cpp", "pytorch"):
    if anchor in prefill:
        pairs = [ours / theirs for ours, theirs in zip(prefill["gpuchain"], prefill[anchor])]
        print(f"prefill, gpuchain / {anchor}: {statistics.median(prefill['gpuchain']) / statistics.median(prefill[anchor]):.2f} on the medians, "
              f"{min(pairs):.2f}–{max(pairs):.2f} run by run")
PY
