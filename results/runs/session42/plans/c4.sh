#!/usr/bin/env bash
# Session 42, fourth call, two H200s (nvidia-h200-x2):
#   bash results/runs/session42/plans/c4.sh 470
# Issue 26: the H200's gemm TT grid with the H100's TT portfolio, then its unaligned extension,
# both GPUs sharing the work; then gemv on a fresh seed (3126), every form, with the guard and
# kernel regret (--tune-budget 30).
set -uo pipefail
LIMIT=${1:-470}
Q=/tmp/s42c4
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: the portfolio"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
U=configs/coverage
step tt 260 "$AT" cover --op gemm --layout tt --portfolio-from h100 --devices all --db "$DB"
step tt-u 90 "$AT" cover --op gemm --layout tt --extend --grid $U/gemm-forms-unaligned.toml \
  --devices all --db "$DB"
cp "$DB" "$OUT/tuning-c4.toml"
step eval-gemv-3126 110 "$AT" evaluate --op gemv --random 60 --seed 3126 --forms all \
  --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemv-3126-h200.md" \
  --json "$Q/evaluate-gemv-3126-h200.json"
finish
