#!/usr/bin/env bash
# Session 36, call 4 on one H100 (state in /tmp/s36q4): seed 3113's 375x3 outlier timed again,
# after the problem that preceded it (gemv-375x3.toml), twice, with the database call 3 left (now results/tuning.toml).
set -uo pipefail
Q=/tmp/s36q4 LIMIT=${1:-200}
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
for i in 1 2; do
  step "gemv-375x3-$i" 30 "$AT" evaluate --shapes results/runs/session36/plans/gemv-375x3.toml \
    --db "$DB" --out "$Q/evaluate-gemv-375x3-$i.md" --json "$Q/evaluate-gemv-375x3-$i.json"
done
grep -h '^\[' "$Q"/logs/*.log
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
