#!/usr/bin/env bash
# CI step for the Python package (no GPU): a fresh venv with maturin and pytest, the wheel
# (scripts/python-wheel.sh: the extension, release, plus the `autotune` executable), installed,
# imported, `python -m autotune --version` run, then pytest on python/tests (argument checking;
# the GPU tests show as skipped). .ci/run calls it after scripts/test.sh, whose `cargo test
# --release` already built the executable and many of the libraries in target/.
#   bash scripts/python-ci.sh
# PYTHON chooses the interpreter the venv is made from (default python3, >= 3.8).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$(date +%s)
venv=$root/target/python-ci-venv
rm -rf "$venv"
"${PYTHON:-python3}" -m venv "$venv"
py=$venv/bin/python
"$py" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" pytest numpy
echo "== python: building the wheel (scripts/python-wheel.sh)"
wheel=$(PYTHON="$py" bash scripts/python-wheel.sh | tail -n1)
echo "python-ci: built $wheel ($(du -h "$wheel" | cut -f1))"
"$py" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
echo "== python: import, python -m autotune --version"
# From another directory: the installed package is imported, not python/autotune.
(cd /tmp && "$py" -c 'import autotune; print("autotune", autotune.__version__, "imported; GPUs:", autotune.device_count())')
(cd /tmp && "$py" -m autotune --version)
echo "== python: pytest python/tests"
(cd /tmp && "$py" -m pytest -q -rs -p no:cacheprovider "$root/python/tests")
echo "python-ci: done in $(( $(date +%s) - start )) s"
