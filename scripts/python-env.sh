#!/usr/bin/env bash
# Creates (once) the virtual environment of the Python reference client under the cache and
# prints the path of its python. A second run only checks it.
set -euo pipefail
source "$(dirname "$0")/env.sh"
exec bash "$GPUCHAIN_ROOT/scripts/venv.sh" venv-pyclient \
  "$GPUCHAIN_ROOT/clients/python/requirements.txt" 'import nacl.signing, blake3'
