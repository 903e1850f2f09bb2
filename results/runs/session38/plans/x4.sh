#!/usr/bin/env bash
# Session 38, for a machine of four GPUs (nvidia-h200-x4, which may come as four H100s):
#   bash results/runs/session38/plans/x4.sh 560
# On H100s: the gemm half of session 37's plan, which one H100 could not finish (evaluate with
# --tune-budget 30 takes ~1000 s on one GPU; session 36 ran it on four): fresh seeds 3116 and
# 3117 (gemm, every form) on the database with the NT grids extended by gemm-nt-between.toml
# (results/tuning.toml at this commit), then the layer suite untuned. On H200s: session 36's
# H200 plan (its own state in /tmp/h200q), as far as the call's time goes.
set -uo pipefail
LIMIT=${1:-560}
if nvidia-smi -L | grep -q H200; then
  exec bash results/runs/session36/plans/h200.sh "$LIMIT"
fi
Q=/tmp/s38q
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
for seed in 3116 3117; do
  step "eval-gemm-$seed" 230 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed.md" \
    --json "$Q/evaluate-gemm-$seed.json"
done
step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
