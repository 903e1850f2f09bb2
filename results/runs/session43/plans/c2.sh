#!/usr/bin/env bash
# Session 43, second call, two H200s (nvidia-h200-x2):
#   bash results/runs/session43/plans/c2.sh 560
# Issue 26: gemm on two fresh seeds (3128, 3129), 60 random problems each over every form, through
# the database with call 1's grids merged, with the guard and without, and the kernel regret
# (--tune-budget 30).
set -uo pipefail
LIMIT=${1:-560}
Q=/tmp/s43c2
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
for seed in 3128 3129; do
  step "eval-gemm-$seed" 220 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed-h200.md" \
    --json "$Q/evaluate-gemm-$seed-h200.json"
done
cp "$Q"/evaluate-* "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
