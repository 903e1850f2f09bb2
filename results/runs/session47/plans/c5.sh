#!/usr/bin/env bash
# Session 47, one H200, fifth plan, on the device time left:
#   bash results/runs/session47/plans/c5.sh 240
# Issue 29: the Python extension as session 46 left it (its last change, the reader branch
# removed and the hit map's hasher reading a word at a time, never ran on a GPU): the Python
# GPU tests (scripts/python-gpu.sh), then overhead_bench.py --gpu beside the Rust call in the
# same process.
set -uo pipefail
LIMIT=${1:-240}
for f in .gpu47/*.xz; do xz -d -k -f "$f"; done
mkdir -p .gpu/pywheels
cp -f .gpu47/autotune .gpu47/call_overhead .gpu/ && chmod +x .gpu/autotune .gpu/call_overhead
rm -f .gpu/autotune-*.whl
cp -f .gpu47/autotune-*.whl .gpu/ && cp -f .gpu47/pywheels/*.whl .gpu/pywheels/
Q=/tmp/s47c5
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^pytest|^(FAILED|ERROR)|^  (Tuned|extension|torch_call|launch|Rust|Python|runs)"
step python 150 env OUT="$Q/python" bash scripts/python-gpu.sh
step overhead 40 bash -c "cd /tmp && PYTHONPATH=/tmp/site python3 $PWD/python/tests/overhead_bench.py \
  --gpu --rust $PWD/.gpu/call_overhead"
cp "$Q/python/python-gpu.md" "$Q/python/pytest.log" "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
