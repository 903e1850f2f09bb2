#!/usr/bin/env bash
# Written in session 37 (no device time was left to run it) for the next H100 call (state in
# /tmp/s37q, so a second call on the same warm machine goes on where the first stopped):
#   bash results/runs/session37/plans/h100.sh 570
# 1. The NT grids (plain and beta) extended by configs/coverage/gemm-nt-between.toml: 1 to 16
#    tokens at widths 768 / 3072 / 12288 beside the powers of four, where the guard vetoed 135 of
#    1320 recorded random problems whose predicted kernel ran at 1.22x cuBLAS geomean
#    (results/runs/session37/README.md).
# 2. Fresh seeds 3116 and 3117 (gemm and gemv, every form, --tune-budget 30, as 3111/3112) with
#    the database the extensions leave and this build's guard (ALTERNATIVES, product::select).
# 3. Leave-one-out of every grid on that database.
set -uo pipefail
Q=/tmp/s37q LIMIT=${1:-570}
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
G=configs/coverage/gemm-nt-between.toml
step nt-between 200 "$AT" cover --op gemm --layout nt --extend --grid $G --db "$DB"
step ntb-between 200 "$AT" cover --op gemm --layout nt --beta 1 --extend --grid $G --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
for seed in 3116 3117; do
  step "eval-gemm-$seed" 300 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --db "$DB" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
  step "eval-gemv-$seed" 60 "$AT" evaluate --op gemv --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --db "$DB" --out "$Q/evaluate-gemv-$seed.md" --json "$Q/evaluate-gemv-$seed.json"
done
step loo 60 env AUTOTUNE="$AT" DB="$DB" OUT="$Q/leave-one-out.md" bash scripts/loo-table.sh
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
