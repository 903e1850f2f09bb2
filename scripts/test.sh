#!/usr/bin/env bash
# The test command: sets up NVRTC 12 and 13 (PyPI wheels, in .venv) and runs every test.
#   bash scripts/test.sh                 # all tests
#   bash scripts/test.sh --test nvrtc    # extra arguments go to `cargo test --release`
# Needs cargo and python3 (with venv); no GPU. The NVRTC tests compile every kernel config
# for sm_90 (NVRTC 13) and sm_61 (NVRTC 12): a few minutes. With CI set, a missing NVRTC
# fails the tests instead of skipping them.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv
# The wheels' lib directories (empty when not installed).
find_dirs() {
  nvrtc13=$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cu13/lib 2>/dev/null | head -n1 || true)
  nvrtc12=$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib 2>/dev/null | head -n1 || true)
}

find_dirs
if [ -z "$nvrtc13" ] || [ -z "$nvrtc12" ]; then
  if [ ! -x "$venv/bin/python" ]; then
    echo "test.sh: creating $venv"
    python3 -m venv "$venv"
  fi
  echo "test.sh: installing NVRTC 13 and 12 (nvidia-cuda-nvrtc, nvidia-cuda-nvrtc-cu12) into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvrtc nvidia-cuda-nvrtc-cu12
  find_dirs
fi
if [ -z "$nvrtc13" ] || [ -z "$nvrtc12" ]; then
  echo "test.sh: NVRTC lib directories not found under $venv (cu13: '${nvrtc13}', cuda_nvrtc: '${nvrtc12}')" >&2
  exit 1
fi

AUTOTUNE_NVRTC13_DIR=$(cd "$nvrtc13" && pwd)
AUTOTUNE_NVRTC12_DIR=$(cd "$nvrtc12" && pwd)
export AUTOTUNE_NVRTC13_DIR AUTOTUNE_NVRTC12_DIR
echo "test.sh: AUTOTUNE_NVRTC13_DIR=$AUTOTUNE_NVRTC13_DIR"
echo "test.sh: AUTOTUNE_NVRTC12_DIR=$AUTOTUNE_NVRTC12_DIR"
if [ -n "${CI:-}" ]; then
  export AUTOTUNE_REQUIRE_NVRTC=1
fi

# --no-fail-fast: run every test binary and report every failure, not just the first.
exec cargo test --release --no-fail-fast "$@"
