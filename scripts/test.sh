#!/usr/bin/env bash
# The test command: sets up NVRTC 12 and 13 (PyPI wheels, in .venv) and runs every test.
#   bash scripts/test.sh                 # all tests
#   bash scripts/test.sh --test nvrtc    # extra arguments go to `cargo test --release`
# Needs cargo and python3 (with venv); no GPU. The NVRTC tests compile every kernel config
# for sm_90 (NVRTC 13) and sm_61 (NVRTC 12): a few minutes. With CI set, a missing NVRTC
# fails the tests instead of skipping them. AUTOTUNE_TEST_VENV chooses another virtual
# environment than .venv for the wheels.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${AUTOTUNE_TEST_VENV:-.venv}
# The wheels, pinned: the fingerprint test hashes PTX, which moves with the compiler. An
# installed other version is replaced. To move a pin, change it here and regenerate the
# fingerprints (docs/fingerprints.md).
pins=(nvidia-cuda-nvrtc==13.5.37 nvidia-cuda-nvrtc-cu12==12.9.86)
# The wheels' lib directories (empty when not installed).
find_dirs() {
  nvrtc13=$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cu13/lib 2>/dev/null | head -n1 || true)
  nvrtc12=$(ls -d "$venv"/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib 2>/dev/null | head -n1 || true)
}

# The version of package $1 installed in the venv (empty when none).
installed() {
  "$venv/bin/python" -c 'import sys, importlib.metadata as m
try:
    print(m.version(sys.argv[1]))
except m.PackageNotFoundError:
    pass' "$1" 2>/dev/null || true
}

if [ ! -x "$venv/bin/python" ]; then
  echo "test.sh: creating $venv"
  python3 -m venv "$venv"
fi
need=()
for pin in "${pins[@]}"; do
  have=$(installed "${pin%%==*}")
  if [ "$have" != "${pin##*==}" ]; then
    echo "test.sh: installing $pin into $venv (installed: ${have:-none})"
    need+=("$pin")
  fi
done
if [ ${#need[@]} -gt 0 ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${need[@]}"
fi
find_dirs
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
