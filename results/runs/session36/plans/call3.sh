#!/usr/bin/env bash
# Session 36, call 3 on one H100 (nvidia-h100-x1; state in /tmp/s36q3): the plain gemv grid
# extended by the points between its powers of four (configs/coverage/gemv-between.toml), then
# the gemv problems the seeds 3111/3112 ran below 0.97x with the guard timed again
# (gemv-recheck.toml), and evaluate gemv on fresh seeds 3113 and 3114 (every form, no search).
set -uo pipefail
Q=/tmp/s36q3 LIMIT=${1:-570}
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step gemv-between 330 "$AT" cover --op gemv --extend --grid configs/coverage/gemv-between.toml --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
step gemv-recheck 30 "$AT" evaluate --shapes results/runs/session36/plans/gemv-recheck.toml \
  --db "$DB" --out "$Q/evaluate-gemv-recheck.md" --json "$Q/evaluate-gemv-recheck.json"
for seed in 3113 3114; do
  step "eval-gemv-$seed" 90 "$AT" evaluate --op gemv --random 60 --seed $seed --forms all \
    --db "$DB" --out "$Q/evaluate-gemv-$seed.md" --json "$Q/evaluate-gemv-$seed.json"
done
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
