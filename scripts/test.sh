#!/usr/bin/env bash
# The test command: installs what is missing, builds once into a cached target dir, then
# runs unit, integration and end-to-end tests (real CometBFT processes on 127.0.0.1).
# Slow soak tests run only with GPUCHAIN_SOAK=1 (see docs/reliability.md).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$GPUCHAIN_ROOT"
bash scripts/install-deps.sh
bash scripts/install-cometbft.sh >/dev/null
export COMETBFT_BIN
# The Python reference client's environment (PyNaCl, blake3); its test runs it on a localnet.
bash scripts/python-env.sh >/dev/null
# The explorer's chart library (npm registry) and its browser test's Playwright environment
# (Debian's chromium is installed by install-deps.sh).
bash scripts/fetch-explorer-assets.sh >/dev/null
bash scripts/browser-env.sh >/dev/null
# Formatting is checked first: it takes a second and a diff is cheaper to read than a review.
command -v rustfmt >/dev/null || rustup component add rustfmt
cargo fmt --all -- --check
# The build and the test build report what they made; older executables in the cached
# target dir are deleted (scripts/prune-target.sh), so that repeated runs do not fill the disk.
built="$(mktemp)"
cargo build --workspace --all-targets --locked --message-format=json-render-diagnostics >"$built"
cargo test --workspace --locked --no-run --message-format=json-render-diagnostics >>"$built"
bash scripts/prune-target.sh "$built"
rm -f "$built"
# CometBFT with the app inside its process, linked from the library the build just made.
bash scripts/build-cometbft-gpuchain.sh --test
# End-to-end tests start several CometBFT nodes each; two test binaries at a time is what
# two cores sustain without timeouts.
cargo test --workspace --locked -- --test-threads=2 "$@"
# Lints as errors, with the determinism bans of clippy.toml (no hash maps, floats, clocks or
# OS randomness in chain/ and x/). After the tests, so their results come first; on an empty
# cache this also compiles RocksDB's C++ once more for check mode (about 20 minutes on 2
# cores), then it takes under a minute.
command -v cargo-clippy >/dev/null || rustup component add clippy
cargo clippy --workspace --all-targets --locked -- -D warnings
