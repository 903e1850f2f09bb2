#!/usr/bin/env bash
# Session 56's plan, one GPU (H100 or H200; files named by the GPU):
#   bash results/runs/session56/plans/gpu.sh 570
# Binaries: autotune built from this tree, xz-compressed into .gpu56/. A later call goes on from
# the last call's state: copy its $OUT/s56-GPU.tgz into .gpu56/ first (resume_from).
# On an H100, issue 26 (gemm kernel regret on fresh seeds):
# 1. The H100's TT and TN grids (plain and beta) were measured before the 3xTF32 families with
#    truncated splits existed; on seeds 3147/3148 the search's best on big TT and batched TT/NN
#    problems was gemm_tf32x3_wgmma_cols_trunc, which no H100 grid of those forms holds. Add the
#    two fastest H100 winners of the cols families (cover --add-winners) to the TT and TN grids.
# 2. gemm on fresh seed 3149 with --tune-budget 30 in five parts, joined; the layer suite
#    untuned.
# 3. The same winners added to the beta grids of TT, TN and NN and the scaled NN grid, the
#    truncating NT families' to the NT beta grid; then fresh seed 3150 the same way.
# On an H200: session 54's H200 part (the transposed gemv grids denser in M, gemv on seeds 3147
#   and 3148 with the regret) and gemm on the same seeds with --tune-budget 30.
set -uo pipefail
LIMIT=${1:-570}
PLAN=s56 source scripts/gpu-queue.sh
begin_plan .gpu56 || exit 1
RESULT_LINES="$RESULT_LINES|^cover: gemm.*adding"
COLS=(--family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc)
TRUNC=(--family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc)
layers_untuned() {
  step layers-untuned 80 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-$G.md --json $Q/evaluate-gemm-layers-untuned-$G.json"
}
if [ "$G" = h200 ]; then
  step tdense 80 "$AT" cover --op gemv --layout t --extend --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  step tdense-beta 80 "$AT" cover --op gemv --layout t --beta 1 --extend \
    --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  ev gemv-3147-tb 110 gemv 3147 --tune-budget 30
  ev gemv-3148-tb 110 gemv 3148 --tune-budget 30
  tb_seed 3147 130
  tb_seed 3148 130
else
  add_winners add-tt 160 --layout tt "${COLS[@]}"
  add_winners add-tn 160 --layout tn "${COLS[@]}"
  tb_seed 3149 130
  layers_untuned
  add_winners add-ttb 160 --layout tt --beta 1 "${COLS[@]}"
  add_winners add-tnb 160 --layout tn --beta 1 "${COLS[@]}"
  add_winners add-nnb 160 --beta 1 "${COLS[@]}"
  add_winners add-nna 160 --alpha 2 "${COLS[@]}"
  add_winners add-ntb 250 --layout nt --beta 1 "${TRUNC[@]}"
  tb_seed 3150 130
fi
cp "$DB" "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
