#!/usr/bin/env bash
# Session 36, call 5 on one H100 (nvidia-h100-x1; state in /tmp/s36q5): the other gemv forms'
# grids (y = A^T x, beta != 0 both ways, alpha != 1) extended by the points between the powers
# of four, as plan 3 did for the plain form (configs/coverage/gemv-between.toml); then evaluate
# gemv on fresh seed 3115 (every form, no search). The database is copied out after each step.
set -uo pipefail
Q=/tmp/s36q5 LIMIT=${1:-570}
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
G=configs/coverage/gemv-between.toml
for form in "t:--layout t" "beta:--beta 1" "t-beta:--layout t --beta 1" "alpha:--alpha 2"; do
  name=${form%%:*} flags=${form#*:}
  # shellcheck disable=SC2086
  step "between-$name" 110 "$AT" cover --op gemv $flags --extend --grid $G --db "$DB"
  cp "$DB" "$OUT/tuning.toml" 2>/dev/null
done
step eval-gemv-3115 45 "$AT" evaluate --op gemv --random 60 --seed 3115 --forms all \
  --db "$DB" --out "$Q/evaluate-gemv-3115.md" --json "$Q/evaluate-gemv-3115.json"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
