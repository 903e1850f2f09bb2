#!/usr/bin/env bash
# Session 50's plan, one H100 (the first H100 lent since session 40's tensor-core work):
#   bash results/runs/session50/plans/h100.sh 560
# Binaries: autotune built from this tree, xz-compressed into .gpu50/. More than one call's
# work: a later call on the same warm machine goes on from its state; on a fresh one, copy the
# last call's $OUT/s50.tgz (every log, journal and database of the plan) into .gpu50/ first
# (resume_from).
# 1. Issue 26/28: compute-sanitizer over the truncating families' space ends (the last config
#    has FASTLOAD 2, never run on a GPU before) on the edge shapes of every form.
# 2. Issue 28, H100: the four truncating families tuned exhaustively over FASTLOAD 1 and 2 on
#    session 48's NN and NT problems (the H100 has no entry of these families yet); 8192^3 on
#    its 128 x 128 tiles alone (a 40 s budget ends before them).
# 3. The layer suite untuned through the shipped database (issue 26: none below 0.97x; issue 28:
#    geomean >= 1.3x).
# 4. Issue 27: verify of every shipped H100 entry.
# 5. Issue 26: gemm and gemv on fresh seeds 3141 and 3142, 60 problems each over every form,
#    with and without the guard.
set -uo pipefail
LIMIT=${1:-560}
Q=/tmp/s50
source scripts/gpu-queue.sh
carried .gpu50 autotune || exit 1
resume_from .gpu50/s50.tgz
R=results/runs/session50
TRUNC="gemm_tf32x3_wgmma_trunc gemm_tf32x3_wgmma_cols_trunc gemm_tf32x3_wgmma_splitk_trunc gemm_tf32x3_wgmma_cols_splitk_trunc"
step sanitizer 50 bash results/runs/session48/plans/sanitize.sh "$Q/sanitizer" 40 $TRUNC
step fl-nn 220 "$AT" tune --suite $R/nn-shapes.toml --where "FASTLOAD >= 1" \
  --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc \
  --strategy exhaustive --time 40s --db "$Q/fl-nn.toml" --summary "$Q/fl-nn.md" --journal-dir "$Q/journals"
step fl-nt 170 "$AT" tune --suite results/runs/session48/trunc-nt-shapes.toml --where "FASTLOAD >= 1" \
  --family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc \
  --strategy exhaustive --time 40s --db "$Q/fl-nt.toml" --summary "$Q/fl-nt.md" --journal-dir "$Q/journals"
step layers-untuned 60 bash -c "$(declare -f without_suite); without_suite results/tuning.toml configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h100.md --json $Q/evaluate-gemm-layers-untuned-h100.json"
step fl-big 110 "$AT" tune --shape 8192x8192x8192 --family gemm_tf32x3_wgmma_cols_trunc \
  --where "FASTLOAD >= 1 && BM == 128 && BN == 128" --strategy exhaustive --time 90s \
  --db "$Q/fl-big.toml" --journal-dir "$Q/journals"
step verify 200 "$AT" verify --db results/tuning.toml
for seed in 3141 3142; do
  for op in gemm gemv; do
    step "eval-$op-$seed" 110 "$AT" evaluate --op $op --random 60 --seed $seed --forms all \
      --db results/tuning.toml --out "$Q/evaluate-$op-$seed-h100.md" --json "$Q/evaluate-$op-$seed-h100.json"
  done
done
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
