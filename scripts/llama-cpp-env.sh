#!/usr/bin/env bash
# Installs (once) llama.cpp for Node as the npm package node-llama-cpp, pinned, with its prebuilt
# CPU-only linux-x64 binaries (@node-llama-cpp/linux-x64), under the cache, and prints the install
# directory (put it on NODE_PATH, or import from $DIR/node_modules/node-llama-cpp). llama.cpp is the
# reference ("anchor") that scripts/llama-cpp-anchor.mjs runs for tokenizer vectors and for speed.
# Nothing is built from source and nothing is fetched besides the npm registry: install scripts are
# off (node-llama-cpp's postinstall would otherwise try to download or compile llama.cpp), optional
# GPU variants are left out, and NODE_LLAMA_CPP_SKIP_DOWNLOAD=true is set for good measure. A second
# run only checks the files.
set -euo pipefail
source "$(dirname "$0")/env.sh"
VERSION="3.22.1"
dir="$GPUCHAIN_CACHE/node-llama-cpp"
bins="$dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
manifest="{\"name\":\"gpuchain-llama-cpp\",\"private\":true,\"dependencies\":{\"node-llama-cpp\":\"$VERSION\",\"@node-llama-cpp/linux-x64\":\"$VERSION\"}}"

[ "$(uname -sm)" = "Linux x86_64" ] || { echo "only linux-x64 is set up" >&2; exit 1; }
installed() {
  [ -f "$bins/llama-addon.node" ] && [ -f "$bins/libllama.v0.5.0.so" ] \
    && grep -q "\"version\": \"$VERSION\"" "$dir/node_modules/node-llama-cpp/package.json" \
    && grep -q "\"version\": \"$VERSION\"" "$dir/node_modules/@node-llama-cpp/linux-x64/package.json"
}
mkdir -p "$dir"
if [ "$(cat "$dir/package.json" 2>/dev/null)" != "$manifest" ] || ! installed; then
  echo "$manifest" >"$dir/package.json"
  (cd "$dir" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --no-save --omit=optional \
    --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
fi
installed || { echo "node-llama-cpp $VERSION or its linux-x64 binaries missing in $dir" >&2; exit 1; }
echo "$dir"
