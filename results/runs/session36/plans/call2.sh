#!/usr/bin/env bash
# Session 36, call 2 on one H100 (nvidia-h100-x1; state in /tmp/s36q2): the gemv problems the
# fresh seeds measured below 0.97x with the guard, timed again (gemv-recheck.toml, twice); then
# the Python package's GPU tests and per-call timing on a one-GPU machine, where Tuned skips
# asking a tensor its GPU.
set -uo pipefail
Q=/tmp/s36q2 LIMIT=${1:-300}
source scripts/gpu-queue.sh
DB=results/tuning.toml
for i in 1 2; do
  step "gemv-recheck-$i" 40 "$AT" evaluate --shapes results/runs/session36/plans/gemv-recheck.toml \
    --db "$DB" --out "$Q/evaluate-gemv-recheck-$i.md" --json "$Q/evaluate-gemv-recheck-$i.json"
done
step python 120 env OUT="$Q/python" bash scripts/python-gpu.sh
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
