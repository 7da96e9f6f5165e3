#!/usr/bin/env bash
# Installs the Debian and Python packages Loom needs, only when missing.
# Idempotent and non-interactive; safe to run on every build.
set -euo pipefail

packages=(
  cmake ninja-build ccache pkg-config
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libclang-rt-22-dev
  libabsl-dev libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  libgtest-dev googletest
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# lit drives the test suite; Debian ships it inside llvm-22-tools, so only check it.
if [[ ! -x /usr/lib/llvm-22/bin/lit && ! -x /usr/lib/llvm-22/build/utils/lit/lit.py ]]; then
  if ! python3 -c 'import lit' 2>/dev/null; then
    python3 -m pip install -q lit
  fi
fi
# numpy and scipy: the interpreter's numeric tests and the GPT-mini cross-check
# compare against them (scipy for erf). pip where it may install (pyenv,
# venvs); Debian's own python3 gets them from apt.
if ! python3 -c 'import numpy, scipy' 2>/dev/null; then
  if ! python3 -m pip install -q numpy scipy 2>/dev/null; then
    sudo_cmd=()
    if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
      --no-install-recommends python3-numpy python3-scipy >/dev/null
  fi
fi
echo "setup: all dependencies present"
