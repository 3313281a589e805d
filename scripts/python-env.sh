#!/usr/bin/env bash
# Creates (once) the virtual environment of the Python reference client under the cache and
# prints the path of its python. A second run only checks it.
set -euo pipefail
source "$(dirname "$0")/env.sh"
venv="$GPUCHAIN_CACHE/venv-pyclient"
req="$GPUCHAIN_ROOT/clients/python/requirements.txt"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$stamp"; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
  cp "$req" "$stamp"
fi
"$venv/bin/python" -c 'import nacl.signing, blake3' >&2
echo "$venv/bin/python"
