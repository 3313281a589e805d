#!/usr/bin/env bash
# Creates (once) a virtual environment with the official OpenAI Python client (pinned in
# clients/openai/requirements.txt) under the cache and prints the path of its python: the
# client that checks gpuchain's OpenAI-compatible endpoints. A second run only checks it.
set -euo pipefail
source "$(dirname "$0")/env.sh"
exec bash "$GPUCHAIN_ROOT/scripts/venv.sh" venv-openai \
  "$GPUCHAIN_ROOT/clients/openai/requirements.txt" 'import openai'
