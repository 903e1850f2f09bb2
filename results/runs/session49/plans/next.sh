#!/usr/bin/env bash
# Session 49's plan for the next device time, one H200 (what session 48's plan,
# ../../session48/plans/next.sh, left undone):
#   bash results/runs/session49/plans/next.sh 540
# Binaries: autotune built from this tree (scripts/build-gpu.sh), xz-compressed into .gpu49/.
# The TT, alpha and beta gemm grids widened with three TRUNC 1 winners of the truncating
# families each (cover --add-winners), as session 49 did the TN grid. On a fresh machine with a
# call's archive carried (copy $OUT/s49next.tgz into .gpu49/), the queue goes on from it.
# Then, where cargo is: autotune merge -o results/tuning.toml results/tuning.toml $OUT/tuning.toml
# (the widened records are dated when widened, so the merge keeps them), scripts/loo-table.sh,
# commit, scripts/results-readme.sh, commit.
set -uo pipefail
LIMIT=${1:-540}
Q=/tmp/s49next
source scripts/gpu-queue.sh
carried .gpu49 autotune || exit 1
resume_from .gpu49/s49next.tgz
DB=$Q/tuning.toml
if [ ! -f "$DB" ]; then
  # cover --add-winners adds only configs that may serve shapes nobody tuned (TRUNC 1, chains
  # of one K tile): the database's TRUNC 2 entries make way for session 48's t1.toml.
  without_param results/tuning.toml 'TRUNC = 2' "$Q/no-trunc2.toml" || exit 1
  "$AT" merge -o "$DB" "$Q/no-trunc2.toml" results/runs/session48/t1.toml
fi
FAM="--family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_splitk_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc"
# name, estimate (s), the grid's form
for grid in "tt 140 --layout tt" "alpha 140 --alpha 2" "beta 140 --beta 1"; do
  set -- $grid
  step "cover-$1" "$2" "$AT" cover --op gemm "$3" "$4" --add-winners 3 $FAM --db "$DB"
  cp "$DB" "$OUT/tuning.toml"
done
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
