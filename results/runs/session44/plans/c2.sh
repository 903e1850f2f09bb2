#!/usr/bin/env bash
# Session 44, call 2: c1.sh with the steps its first call finished taken out (the machine was
# given back between calls; its widened database is results/tuning.toml now), over as many
# calls as it takes (send each next call at once: a machine idle for 30 s is given back):
#   bash results/runs/session44/plans/c2.sh 560
# Issue 29: where a Python call's host time goes (torch_call, launch_plan with and without the
# GIL, the Rust call in the same process), with the wheel and call_overhead that
# scripts/build-gpu.sh builds (carried xz-compressed in .gpu44/).
# Issue 26: the grids of the other gemm forms (TN, TT, their beta forms, NT-beta) hold only the
# older tensor-core families: widen each with the two fastest pipe/promote winners (the full
# interface: NN and NT winners compute every layout), as session 43 did for the plain, alpha
# and beta grids; then gemm and gemv on fresh seeds 3130/3131 (every form, 60 problems each,
# --tune-budget 30 for the kernel regret).
set -uo pipefail
LIMIT=${1:-560}
for f in .gpu44/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu
cp -f .gpu44/autotune .gpu44/call_overhead .gpu/ && chmod +x .gpu/autotune .gpu/call_overhead
W=(--add-winners 2 --family gemm_tf32x3_wgmma_promote --family gemm_tf32x3_wgmma_pipe)
Q=/tmp/s44h200b
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: widening|^ *(gemm|gemv|torch|cai|rust|launch|plan)"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
for seed in 3130 3131; do
  step "eval-gemm-$seed" 260 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed-h200.md" \
    --json "$Q/evaluate-gemm-$seed-h200.json"
done
for seed in 3130 3131; do
  step "eval-gemv-$seed" 70 "$AT" evaluate --op gemv --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemv-$seed-h200.md" \
    --json "$Q/evaluate-gemv-$seed-h200.json"
done
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
