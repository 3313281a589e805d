#!/usr/bin/env bash
# Creates (once) a virtual environment with Playwright for Python (pinned in
# clients/browser/requirements.txt) under the cache and prints the path of its python. The
# browser is Debian's chromium (scripts/install-deps.sh installs it); Playwright's own browser
# downloads are never used.
set -euo pipefail
source "$(dirname "$0")/env.sh"
exec bash "$GPUCHAIN_ROOT/scripts/venv.sh" venv-browser \
  "$GPUCHAIN_ROOT/clients/browser/requirements.txt" 'import playwright.sync_api'
