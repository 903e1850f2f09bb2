#!/usr/bin/env bash
# Session 51's plan, one GPU (H100 or H200: the same steps, files named by the GPU):
#   bash results/runs/session51/plans/gpu.sh 570
# Binaries: autotune built from this tree, xz-compressed into .gpu51/. A later call on the same
# warm machine goes on from its state; on a fresh one, copy the last call's $OUT/s51-GPU.tgz
# into .gpu51/ first (resume_from).
# 1. Issue 26: the recorded gemv problems that ran at 0.25-0.62x cuBLAS, timed again; gemv on
#    fresh seeds 3143 and 3144 (60 problems each, every form) with the stricter gemv guard.
# 2. Issue 28: the plain (NN) grid gets 3xTF32 configs that may serve shapes nobody tuned
#    (TRUNC 1, chains of one K tile) with the reads without checks (FASTLOAD): two general
#    problems no suite holds are tuned over those configs alone, then the plain grid is widened
#    with the GPU's three fastest such winners of the plain form.
# 3. The layer suite untuned through the result (issue 28: >= 1.3x with the guard; issue 26:
#    none below 0.97x).
# 4. Issue 26: gemm on fresh seeds 3143 and 3144, 60 problems each over every form.
set -uo pipefail
LIMIT=${1:-570}
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
*H100*) G=h100 ;;
*H200*) G=h200 ;;
*) G=gpu ;;
esac
Q=/tmp/s51-$G
source scripts/gpu-queue.sh
carried .gpu51 autotune || exit 1
resume_from .gpu51/s51-$G.tgz
R=results/runs/session51
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
T1="TRUNC == 1 && CHAIN == 1 && FASTLOAD >= 1"
step recheck 40 "$AT" evaluate --shapes $R/gemv-recheck.toml --db results/tuning.toml \
  --out "$Q/recheck-$G.md" --json "$Q/recheck-$G.json"
for seed in 3143 3144; do
  step "eval-gemv-$seed" 60 "$AT" evaluate --op gemv --random 60 --seed $seed --forms all \
    --db "$DB" --out "$Q/evaluate-gemv-$seed-$G.md" --json "$Q/evaluate-gemv-$seed-$G.json"
done
step t1-nn 70 "$AT" tune --shape 3072x4096x4096 --family gemm_tf32x3_wgmma_cols_trunc \
  --where "$T1" --strategy exhaustive --time 50s --db "$DB" --journal-dir "$Q/journals"
step t1-sk 70 "$AT" tune --shape 512x4096x8192 --family gemm_tf32x3_wgmma_cols_splitk_trunc \
  --where "$T1" --strategy exhaustive --time 50s --db "$DB" --journal-dir "$Q/journals"
step cover-nn 400 "$AT" cover --op gemm --add-winners 3 \
  --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc --db "$DB"
step layers-untuned 80 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-$G.md --json $Q/evaluate-gemm-layers-untuned-$G.json"
for seed in 3143 3144; do
  step "eval-gemm-$seed" 100 "$AT" evaluate --op gemm --random 60 --seed $seed --forms all \
    --db "$DB" --out "$Q/evaluate-gemm-$seed-$G.md" --json "$Q/evaluate-gemm-$seed-$G.json"
done
cp "$DB" "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
