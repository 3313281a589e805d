#!/usr/bin/env bash
# Creates (once) a virtual environment with the official OpenAI Python client (pinned in
# clients/openai/requirements.txt) under the cache and prints the path of its python: the
# client that checks gpuchain's OpenAI-compatible endpoints. A second run only checks it.
set -euo pipefail
source "$(dirname "$0")/env.sh"
venv="$GPUCHAIN_CACHE/venv-openai"
req="$GPUCHAIN_ROOT/clients/openai/requirements.txt"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$stamp"; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
  cp "$req" "$stamp"
fi
"$venv/bin/python" -c 'import openai' >&2
echo "$venv/bin/python"
