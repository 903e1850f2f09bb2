#!/usr/bin/env bash
# Session 52's plan, one GPU (H100 or H200: the same steps, files named by the GPU):
#   bash results/runs/session52/plans/gpu.sh 570
# Binaries: autotune built from this tree, xz-compressed into .gpu52/. A later call on the same
# warm machine goes on from its state; on a fresh one, copy the last call's $OUT/s52-GPU.tgz
# into .gpu52/ first (resume_from).
# 1. Issue 26: the transposed gemv grids (t, t with beta) get rows between their powers of
#    four (configs/coverage/gemv-t-dense.toml), where cuBLAS's time jumps with the row count.
# 2. Issue 26: gemv and gemm on fresh seeds 3145 and 3146, 60 problems each over every form,
#    with this build's selection (a padded gemv is judged by the grid's aligned rows).
# 3. Issue 28 (H200): the plain grid widened with TRUNC 1 FASTLOAD 3xTF32 winners, as session
#    51 did on the H100, and the layer suite untuned through the result.
# 4. Issue 26 (H100): the gemv evaluations again with --tune-budget 30 (each problem tuned with
#    30 candidates: the kernel regret of the runtime's choice).
set -uo pipefail
LIMIT=${1:-570}
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
*H100*) G=h100 ;;
*H200*) G=h200 ;;
*) G=gpu ;;
esac
Q=/tmp/s52-$G
source scripts/gpu-queue.sh
carried .gpu52 autotune || exit 1
resume_from .gpu52/s52-$G.tgz
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step tdense 80 "$AT" cover --op gemv --layout t --extend --grid configs/coverage/gemv-t-dense.toml --db "$DB"
step tdense-beta 80 "$AT" cover --op gemv --layout t --beta 1 --extend \
  --grid configs/coverage/gemv-t-dense.toml --db "$DB"
for seed in 3145 3146; do
  step "eval-gemv-$seed" 60 "$AT" evaluate --op gemv --random 60 --seed $seed --forms all \
    --db "$DB" --out "$Q/evaluate-gemv-$seed-$G.md" --json "$Q/evaluate-gemv-$seed-$G.json"
done
for seed in 3145 3146; do
  step "eval-gemm-$seed" 110 "$AT" evaluate --op gemm --random 60 --seed $seed --forms all \
    --db "$DB" --out "$Q/evaluate-gemm-$seed-$G.md" --json "$Q/evaluate-gemm-$seed-$G.json"
done
cp "$DB" "$Q/summary.txt" "$OUT/" 2>/dev/null
if [ "$G" = h200 ]; then
  T1="TRUNC == 1 && CHAIN == 1 && FASTLOAD >= 1"
  step t1-nn 70 "$AT" tune --shape 3072x4096x4096 --family gemm_tf32x3_wgmma_cols_trunc \
    --where "$T1" --strategy exhaustive --time 50s --db "$DB" --journal-dir "$Q/journals"
  step t1-sk 70 "$AT" tune --shape 512x4096x8192 --family gemm_tf32x3_wgmma_cols_splitk_trunc \
    --where "$T1" --strategy exhaustive --time 50s --db "$DB" --journal-dir "$Q/journals"
  step cover-nn 400 "$AT" cover --op gemm --add-winners 3 \
    --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc --db "$DB"
  step layers-untuned 80 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-$G.md --json $Q/evaluate-gemm-layers-untuned-$G.json"
  cp "$DB" "$Q/summary.txt" "$OUT/" 2>/dev/null
fi
if [ "$G" = h100 ]; then
  for seed in 3145 3146; do
    step "eval-gemv-$seed-tb" 200 "$AT" evaluate --op gemv --random 60 --seed $seed --forms all \
      --tune-budget 30 --db "$DB" --out "$Q/evaluate-gemv-$seed-tb-$G.md" \
      --json "$Q/evaluate-gemv-$seed-tb-$G.json"
  done
fi
finish
