#!/usr/bin/env bash
# Session 41, the call after c1.sh on the same warm machine (two GPUs):
#   bash results/runs/session41/plans/c2.sh 560
# On H200s (issue 26): the NT grid for the H200, measured with the H100's NT portfolio (no pool
# search), as session 36's h200.sh plans it first; state in /tmp/h200q so that plan goes on.
# On H100s (issue 26): gemm evaluated on a fresh seed, 3122, over every form with kernel regret
# (--tune-budget 30), through the shipped database.
set -uo pipefail
if nvidia-smi -L | grep -q H200; then
  Q=/tmp/h200q LIMIT=${1:-560}
  source scripts/gpu-queue.sh
  RESULT_LINES="$RESULT_LINES|^cover: the portfolio"
  DB=$Q/tuning.toml
  [ -f "$DB" ] || cp results/tuning.toml "$DB"
  step nt 500 "$AT" cover --op gemm --layout nt --portfolio-from h100 --devices all --db "$DB"
  cp "$DB" "$OUT/tuning-h200.toml" 2>/dev/null
else
  Q=/tmp/s41e LIMIT=${1:-560}
  source scripts/gpu-queue.sh
  step eval-gemm-3122 520 "$AT" evaluate --op gemm --random 60 --seed 3122 --forms all \
    --tune-budget 30 --devices all --db results/tuning.toml \
    --out "$Q/evaluate-gemm-3122.md" --json "$Q/evaluate-gemm-3122.json"
fi
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
