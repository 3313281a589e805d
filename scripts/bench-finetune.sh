#!/usr/bin/env bash
# The fine-tuning figures of docs/benchmarks.md: all-MiniLM-L6-v2 fine-tuned on the Rotten
# Tomatoes snippets over 3 simulated workers, 8 rounds, seeds 1-3, three ways: top-1%
# updates with error feedback and 16-bit values (the job the demo runs), the same job with
# dense f32 updates, and the linear probe (the head alone on the pretrained encoder, dense).
# Runs the dev-profile example (compute at opt-level 3, as providers run it); prints JSON
# lines, each with the machine's load average before and after. Run it on an idle machine.
#
# Usage: scripts/bench-finetune.sh > finetune.jsonl
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$GPUCHAIN_ROOT"
bash scripts/fetch-minilm.sh >&2
bash scripts/fetch-reviews.sh >&2
cargo build --workspace --all-targets --locked >&2
bin="$CARGO_TARGET_DIR/debug/examples/finetune"
run() {
    local name="$1"; shift
    local before after
    before="$(cut -d' ' -f1-3 /proc/loadavg)"
    "$bin" "$@" | while IFS= read -r line; do
        after="$(cut -d' ' -f1-3 /proc/loadavg)"
        printf '{"case":"%s","load_before":"%s","load_after":"%s","result":%s}\n' \
            "$name" "$before" "$after" "$line"
    done
}
run "top-1% EF f16" '{"rounds":8}' --seeds 1,2,3
run "dense f32" '{"rounds":8,"topk_ppm":1000000,"value_bits":"32","error_feedback":false,"momentum_correction":false}' --seeds 1,2,3
run "linear probe, dense f32" '{"rounds":8,"topk_ppm":1000000,"value_bits":"32","error_feedback":false,"momentum_correction":false}' --head-only --seeds 1,2,3
