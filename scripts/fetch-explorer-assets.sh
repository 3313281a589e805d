#!/usr/bin/env bash
# Fetches the explorer's one third-party asset, the uPlot charting library, from the npm
# registry (pinned version, checked against the registry's sha512 integrity), and unpacks its
# built files under the cache; prints the directory. `gpuchain-explorer --assets DIR` serves
# them (its default is this directory). A second run only checks the files are there.
#
#   scripts/fetch-explorer-assets.sh [DIR]
set -euo pipefail
source "$(dirname "$0")/env.sh"
version=1.6.32
integrity='sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=='
dir="${1:-$GPUCHAIN_CACHE/explorer-assets}"
target="$dir/uplot-$version"
if [ -f "$target/uPlot.iife.min.js" ] && [ -f "$target/uPlot.min.css" ]; then
  echo "$target"
  exit 0
fi
command -v npm >/dev/null || { echo "error: npm is needed to fetch uPlot from the npm registry" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "uplot@$version" >/dev/null)
tarball="$tmp/uplot-$version.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$got" != "$integrity" ]; then
  echo "error: uplot-$version.tgz has integrity $got, expected $integrity" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$tmp"
mkdir -p "$target"
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$tmp/package/LICENSE" "$target/"
echo "$target"
