#!/usr/bin/env bash
# Session 42, fifth call, two H200s (nvidia-h200-x2), on what the device time had left:
#   bash results/runs/session42/plans/c5.sh 300
# Issue 26: gemv on a second fresh seed (3127), every form; then the H200's gemm alpha grid with
# the H100's portfolio.
set -uo pipefail
LIMIT=${1:-300}
Q=/tmp/s42c5
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: the portfolio"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step eval-gemv-3127 90 "$AT" evaluate --op gemv --random 60 --seed 3127 --forms all \
  --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemv-3127-h200.md" \
  --json "$Q/evaluate-gemv-3127-h200.json"
step alpha 190 "$AT" cover --op gemm --alpha 2 --portfolio-from h100 --devices all --db "$DB"
cp "$DB" "$OUT/tuning-c5.toml"
finish
