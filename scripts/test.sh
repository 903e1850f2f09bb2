#!/usr/bin/env bash
# The test command: sets up NVRTC 12 and 13 (PyPI wheels, in .venv) and runs every test.
#   bash scripts/test.sh                          # all tests
#   bash scripts/test.sh --test nvrtc fingerprints   # arguments go to `cargo test --release`
# Needs cargo, python3 (with venv) and g++; no GPU. Two passes of `cargo test --release
# --no-fail-fast ARGS`: the first runs what ARGS select, where the tests that need NVRTC, g++
# or a GPU show as ignored; the second runs the ignored tests of the NVRTC and emulator
# binaries (tests/nvrtc.rs, tests/emulate.rs) among those ARGS select, with `--ignored`: every
# config compiled for sm_90 (NVRTC 13) and sm_61 (NVRTC 12), and the CPU emulator. The GPU
# tests stay ignored (scripts/gpu.sh runs them). Without g++ the emulator tests are left out
# with a message, unless CI is set (they fail there). AUTOTUNE_TEST_VENV chooses another
# virtual environment than .venv for the wheels.
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

# The binaries whose ignored tests this script can run: it provides NVRTC, and g++ is here.
special=(nvrtc)
if command -v g++ >/dev/null 2>&1 || [ -n "${CI:-}" ]; then
  special+=(emulate)
else
  echo "test.sh: no g++: the emulator tests (tests/emulate.rs) stay ignored; CI runs them" >&2
fi

# ARGS split at `--`: cargo's arguments, then the harness's. The second pass keeps cargo's
# arguments but the target selections (`--test X`, `--lib`, ...), selecting instead each
# special binary that ARGS select (all of them where ARGS select no target, or every test).
args="$*"
cargo_args=() harness_args=() selected=() rest=() any_target=0 all_tests=0
seen_dashes=0
while [ $# -gt 0 ]; do
  if [ "$seen_dashes" = 1 ]; then
    harness_args+=("$1")
  else
    case "$1" in
      --) seen_dashes=1 ;;
      --test) any_target=1 selected+=("$2") cargo_args+=("$1" "$2"); shift ;;
      --test=*) any_target=1 selected+=("${1#--test=}") cargo_args+=("$1") ;;
      --tests | --all-targets) any_target=1 all_tests=1 cargo_args+=("$1") ;;
      --lib | --bins | --examples | --doc | --benches) any_target=1 cargo_args+=("$1") ;;
      --bin | --example | --bench) any_target=1 cargo_args+=("$1" "$2"); shift ;;
      --bin=* | --example=* | --bench=*) any_target=1 cargo_args+=("$1") ;;
      *) cargo_args+=("$1") rest+=("$1") ;;
    esac
  fi
  shift
done
second=()
for name in "${special[@]}"; do
  if [ "$any_target" = 0 ] || [ "$all_tests" = 1 ] || [[ " ${selected[*]-} " == *" $name "* ]]; then
    second+=(--test "$name")
  fi
done

# --no-fail-fast: run every test binary and report every failure, not just the first.
status=0
echo "test.sh: cargo test --release --no-fail-fast $args"
cargo test --release --no-fail-fast "${cargo_args[@]}" -- "${harness_args[@]}" || status=$?
if [ ${#second[@]} -gt 0 ]; then
  echo "test.sh: the tests that need NVRTC or g++ (ignored above): ${second[*]} -- --ignored"
  cargo test --release --no-fail-fast "${rest[@]}" "${second[@]}" -- "${harness_args[@]}" --ignored || status=$?
fi
exit "$status"
