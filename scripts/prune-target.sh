#!/usr/bin/env bash
# Deletes the executables earlier builds left in the cached target dir: every test, example
# and binary that the builds just reported (cargo's JSON messages, in FILE) is kept, other
# executables in debug/deps and debug/examples are removed. Each change to a shared crate
# relinks some 60 test binaries of up to 500 MB under new names; without this the cache
# fills the disk within a few builds.
#
#   cargo build --workspace --all-targets --locked --message-format=json-render-diagnostics > FILE
#   cargo test --workspace --locked --no-run --message-format=json-render-diagnostics >> FILE
#   scripts/prune-target.sh FILE
set -euo pipefail
source "$(dirname "$0")/env.sh"
python3 - "$1" "$CARGO_TARGET_DIR/debug" <<'PY'
import json, os, re, sys
# Files are kept by inode: cargo reports a binary at its uplifted path (debug/NAME), a hard
# link to the copy in debug/deps.
def inode(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)

keep = set()
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact":
        for f in msg.get("filenames", []) + [msg.get("executable") or ""]:
            if inode(f):
                keep.add(inode(f))
if not keep:
    sys.exit("no artifacts reported: nothing pruned")
freed = 0
for sub in ("deps", "examples"):
    d = os.path.join(sys.argv[2], sub)
    if not os.path.isdir(d):
        continue
    for name in os.listdir(d):
        path = os.path.join(d, name)
        if re.search(r"-[0-9a-f]{16}$", name) and os.path.isfile(path) and os.access(path, os.X_OK) \
                and inode(path) not in keep:
            freed += os.path.getsize(path)
            os.remove(path)
            if os.path.exists(path + ".d"):
                os.remove(path + ".d")
print(f"pruned {freed / 1e9:.1f} GB of old executables from the target dir")
PY
