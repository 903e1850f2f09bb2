#!/usr/bin/env bash
# Session 46, one H200 (the only kind lent), one plan over as many calls as it takes:
#   bash results/runs/session46/plans/c1.sh 570
# Issue 29: the Python call on PyTorch tensors with the C++ tensor reader
# (python/autotune/_torchreader.py): built here against this machine's PyTorch (or the
# carried one built against the same PyTorch release where this machine has no compiler), the
# Python GPU tests with it (scripts/python-gpu.sh), then overhead_bench.py --gpu: the call
# reading attributes, the call through the reader, and the Rust call, in one process.
# Issue 26: the batched TN grid (the H200's TN portfolio's configs that compute batches),
# checkpointed into $DB, copied to $OUT after the step whether or not it ended.
set -uo pipefail
LIMIT=${1:-570}
for f in .gpu46/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu/pywheels
cp -f .gpu46/autotune .gpu46/call_overhead .gpu/ && chmod +x .gpu/autotune .gpu/call_overhead
rm -f .gpu/autotune-*.whl
cp -f .gpu46/autotune-*.whl .gpu/ && cp -f .gpu46/pywheels/*.whl .gpu/pywheels/
Q=/tmp/s46h200
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^pytest|^(FAILED|ERROR)|^  (Tuned|extension|torch_call|launch|Rust|Python|C\+\+|the C\+\+|runs)|reader"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step reader 120 bash -c "rm -rf /tmp/site && python3 -m pip install -q --no-deps --no-index \
  --target /tmp/site .gpu/autotune-*.whl && which c++ g++; cd /tmp && s=\$SECONDS && \
  PYTHONPATH=/tmp/site python3 -m autotune torch-reader && echo \"reader built in \$((SECONDS - s)) s\""
[ -f "$Q/done/reader" ] || export AUTOTUNE_TORCH_READER=$PWD/.gpu46/reader-torch211.so
step python 240 env OUT="$Q/python" bash scripts/python-gpu.sh
step overhead 90 bash -c "cd /tmp && PYTHONPATH=/tmp/site python3 $PWD/python/tests/overhead_bench.py \
  --gpu --rust $PWD/.gpu/call_overhead"
cp "$Q/python/python-gpu.md" "$Q/python/pytest.log" "$OUT/" 2>/dev/null
# A cut run leaves its checkpoint in $DB: the next call goes on from it (--extend).
[ -f "$Q/logs/batched-tn.log" ] && touch "$Q/done/batched-tn"
step batched-tn 60 "$AT" cover --op gemm --layout tn --batch 16 --portfolio-from h200 \
  --devices all --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
step batched-tn-rest 60 "$AT" cover --op gemm --layout tn --batch 16 --extend --devices all \
  --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
