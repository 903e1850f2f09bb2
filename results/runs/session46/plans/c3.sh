#!/usr/bin/env bash
# Session 46, call 3 (one H200): issue 26's batched grids on problems they were not fitted on:
# the first 20 batched problems of a fresh gemm draw (seed 3136, results/runs/session46/
# batched-3136.toml), through the database with the batched NN, TN, TT and NT grids, with
# --tune-budget 30 for the kernel regret.
#   bash results/runs/session46/plans/c3.sh 540
set -uo pipefail
LIMIT=${1:-540}
for f in .gpu46/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu
cp -f .gpu46/autotune .gpu/ && chmod +x .gpu/autotune
Q=/tmp/s46h200c3
source scripts/gpu-queue.sh
step eval-batched-3136 300 "$AT" evaluate --shapes results/runs/session46/batched-3136.toml \
  --tune-budget 30 --devices all --db results/tuning.toml \
  --out "$OUT/evaluate-gemm-batched-3136-h200.md" --json "$OUT/evaluate-gemm-batched-3136-h200.json"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
