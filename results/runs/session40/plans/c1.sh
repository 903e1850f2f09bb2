#!/usr/bin/env bash
# Session 40, first call (asked as nvidia-h200; such a call may get an H100):
#   bash results/runs/session40/plans/c1.sh 400
# On an H200: `autotune verify` of every shipped H200 entry (issue 27: every entry current and
# within noise of its recorded time after the refactors). On an H100: gemv on fresh seeds 3120
# and 3121 over every form through the shipped database (issue 26), on the GPUs there are.
set -uo pipefail
Q=/tmp/s40q LIMIT=${1:-400}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^verify: [0-9]"
if nvidia-smi -L | grep -q H200; then
  step verify-h200 300 "$AT" verify --db results/tuning.toml --in-process
else
  for seed in 3120 3121; do
    step "eval-gemv-$seed" 150 "$AT" evaluate --op gemv --random 60 --seed "$seed" --forms all \
      --tune-budget 30 --devices all --db results/tuning.toml \
      --out "$Q/evaluate-gemv-$seed.md" --json "$Q/evaluate-gemv-$seed.json"
  done
fi
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
