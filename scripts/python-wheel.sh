#!/usr/bin/env bash
# Builds the Python wheel (abi3: CPython >= 3.8, manylinux x86_64) into target/wheels/, with the
# `autotune` executable inside it for `python -m autotune` (python/autotune/__main__.py says
# why the command line is the executable). Needs cargo and python3 (PYTHON: the interpreter
# whose maturin builds; without maturin, one is installed in a venv under the target dir).
#   bash scripts/python-wheel.sh            # prints the wheel's path last
# Shares the root crate's target directory (CARGO_TARGET_DIR=target unless set), so the
# executable and the libraries a `cargo test --release` already built are reused.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
python=${PYTHON:-python3}
# A relative path stays valid after the `cd python` below.
case $python in */*) python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python") ;; esac
# maturin: the interpreter's own, else one in a venv kept in the target directory.
if ! "$python" -m maturin --version >/dev/null 2>&1; then
  venv=$CARGO_TARGET_DIR/maturin-venv
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2"
  python=$venv/bin/python
fi
# The executable, release (reused when `cargo test --release` or build-gpu.sh built it).
cargo build --release --bin autotune --quiet
mkdir -p python/autotune/_bin
cp "$CARGO_TARGET_DIR/release/autotune" python/autotune/_bin/autotune
# Only this build's wheel in the output directory, so the path printed is the one built.
rm -f "$CARGO_TARGET_DIR"/wheels/autotune-*.whl
(cd python && "$python" -m maturin build --release --quiet -i "$python" \
  --out "$CARGO_TARGET_DIR/wheels" >&2)
rm -rf python/autotune/_bin
ls "$CARGO_TARGET_DIR"/wheels/autotune-*.whl
