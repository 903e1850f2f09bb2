#!/usr/bin/env bash
# Session 44, call 6 (the device time left): what each tensor read of torch_call costs in
# Python on the GPU machine (issue 29: torch_call spends 3.3 us over launch_plan), then gemm on
# one more fresh seed after the untuned rule (3133), if the time allows.
#   bash results/runs/session44/plans/c6.sh 330
set -uo pipefail
LIMIT=${1:-330}
for f in .gpu44/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu
cp -f .gpu44/autotune .gpu/ && chmod +x .gpu/autotune
Q=/tmp/s44h200e
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^ns per read|^  [a-z]"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step torch-attr 40 python3 results/runs/session44/torch-attr-cost.py
step eval-gemm-3133 250 "$AT" evaluate --op gemm --random 60 --seed 3133 --forms all \
  --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-3133-h200.md" \
  --json "$Q/evaluate-gemm-3133-h200.json"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
