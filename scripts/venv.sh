#!/usr/bin/env bash
# Creates (once) a Python virtual environment under the cache from a pinned requirements file
# and prints the path of its python; a second run only checks it (it is made again when the
# requirements change).
#
#   scripts/venv.sh NAME REQUIREMENTS "import check"
set -euo pipefail
source "$(dirname "$0")/env.sh"
venv="$GPUCHAIN_CACHE/$1"
req="$2"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$stamp"; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
  cp "$req" "$stamp"
fi
"$venv/bin/python" -c "$3" >&2
echo "$venv/bin/python"
