#!/usr/bin/env bash
# Session 58's plan, one GPU (files named by the GPU):  bash results/runs/session58/plans/gpu.sh 570
# Binaries: autotune built from this tree, xz-compressed into .gpu58/. A later call on a fresh
# machine goes on from the last call's state: copy its $OUT/s58-GPU.tgz into .gpu58/ first.
# Issue 26 (gemm kernel regret): the forms whose grids are 8x apart (TT, TN, their beta forms,
# NN with beta and scaled NN: 142 points each) have leave-one-out regret 1.05-1.09, against
# 1.01-1.02 on the NT grids (494 points); on seeds 3147-3149 their random problems carried 42%
# of the log kernel regret. Each gets the 62 shapes between its sizes
# (configs/coverage/gemm-forms-between.toml, its portfolio timed there), then gemm on fresh
# seed 3150 (H100) or 3151 (H200) with --tune-budget 30 in five parts, joined (the kernel
# regret with the wider grids); on an H100 session 57's last two steps follow if time is left.
# On an H200 first the dense transposed gemv grids and gemv on fresh seed 3151 (none came in
# sessions 52-58).
# Session 58 ran the first five btw-* steps on an H100 (summary-h100.txt; six tries for a machine
# failed first, so the device time ran out there). Run as is, a later session goes on from its
# committed summary with btw-nna (done_from), then the seed.
set -uo pipefail
LIMIT=${1:-570}
PLAN=s58 source scripts/gpu-queue.sh
begin_plan .gpu58 "results/runs/session58/summary-$G.txt" || exit 1
# Session 59 ran btw-nna too (its database is committed); the seed's parts it ran live only in
# its call's archive, so without that archive the seed starts again from part 1.
[ -f "results/runs/session59/summary-$G.txt" ] &&
  for n in $(sed -n 's/^== \(btw-[^:]*\): rc 0,.*/\1/p' "results/runs/session59/summary-$G.txt"); do
    touch "$Q/done/$n"
  done
RESULT_LINES="$RESULT_LINES|^cover: gemm"
between() { # name flags...
  local name=$1
  shift
  step "$name" 90 "$AT" cover --op gemm --extend --grid configs/coverage/gemm-forms-between.toml \
    --db "$DB" "$@"
}
if [ "$G" != h100 ]; then
  step tdense 60 "$AT" cover --op gemv --layout t --extend \
    --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  step tdense-beta 60 "$AT" cover --op gemv --layout t --beta 1 --extend \
    --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  ev gemv-3151-tb 110 gemv 3151 --tune-budget 30
fi
between btw-tt --layout tt
between btw-ttb --layout tt --beta 1
between btw-tn --layout tn
between btw-tnb --layout tn --beta 1
between btw-nnb --beta 1
between btw-nna --alpha 2
if [ "$G" = h100 ]; then
  tb_seed 3150 140
  COLS=(--family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc)
  add_winners add-tnb 110 --layout tn --beta 1 "${COLS[@]}"
  add_winners add-ntb 160 --layout nt --beta 1 --family gemm_tf32x3_wgmma_trunc \
    --family gemm_tf32x3_wgmma_splitk_trunc
else
  tb_seed 3151 140
fi
cp "$DB" "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
