#!/usr/bin/env bash
# Session 57's plan, one GPU (files named by the GPU):  bash results/runs/session57/plans/gpu.sh 540
# Binaries: autotune built from this tree, xz-compressed into .gpu57/. A later call goes on from
# the last call's state: copy its $OUT/s57-GPU.tgz into .gpu57/ first (resume_from). A later
# session goes on from the steps its committed summary-GPU.txt records (done_from), with the
# database they wrote committed as results/tuning.toml.
# On an H100, issue 26 (gemm kernel regret): on seed 3149 most of the log regret was problems of
# the NN-beta, NN-scaled, TT-beta and TN-beta forms where the best kernel was a 3xTF32 cols
# family (gemm_tf32x3_wgmma_cols_trunc / cols_splitk_trunc) that no grid of those forms holds,
# so the prediction fell back to gemm_general_splitk. Add the two fastest winners of those
# families to each of these grids, then the truncating NT families' to the NT beta grid; then
# gemm on fresh seed 3150 with --tune-budget 30 in five parts, joined.
# On an H200 (none came in sessions 52-56): the transposed gemv grids denser in M (as session 52
# did on the H100), gemv on fresh seeds 3151 and 3152 with --tune-budget 30 (the regret), then
# the same cols winners on the H200's NN-beta, TT-beta, NN-scaled and TN-beta grids, which lack
# them too; then gemm on fresh seeds 3151 and 3152 the same way.
set -uo pipefail
LIMIT=${1:-540}
PLAN=s57 source scripts/gpu-queue.sh
begin_plan .gpu57 "results/runs/session57/summary-$G.txt" || exit 1
RESULT_LINES="$RESULT_LINES|^cover: gemm.*adding"
COLS=(--family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc)
TRUNC=(--family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc)
cols_forms() {
  add_winners add-nnb 110 --beta 1 "${COLS[@]}"
  add_winners add-ttb 110 --layout tt --beta 1 "${COLS[@]}"
  add_winners add-nna 110 --alpha 2 "${COLS[@]}"
  add_winners add-tnb 110 --layout tn --beta 1 "${COLS[@]}"
}
if [ "$G" = h100 ]; then
  cols_forms
  add_winners add-ntb 160 --layout nt --beta 1 "${TRUNC[@]}"
  tb_seed 3150 130
else
  step tdense 60 "$AT" cover --op gemv --layout t --extend \
    --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  step tdense-beta 60 "$AT" cover --op gemv --layout t --beta 1 --extend \
    --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  ev gemv-3151-tb 110 gemv 3151 --tune-budget 30
  ev gemv-3152-tb 110 gemv 3152 --tune-budget 30
  cols_forms
  tb_seed 3151 130
  tb_seed 3152 130
fi
cp "$DB" "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
