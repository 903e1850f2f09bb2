#!/usr/bin/env bash
# Session 49's plan for the next device time, one H200:
#   bash results/runs/session49/plans/next.sh 540
# Binaries: autotune built from this tree (scripts/build-gpu.sh), xz-compressed into .gpu49/.
# More than one call's work. When a call ends, copy its $OUT/s49next.tgz into .gpu49/: on a
# fresh machine (the last one goes back after a short idle time) the queue goes on from it.
# 1. FASTLOAD 2 (the reads' addresses computed again each K tile; added after session 49's
#    calls, not yet on a GPU) under compute-sanitizer: each truncating family's first and last
#    config (the last has FASTLOAD 2) on the edge shapes of every form.
# 2. FASTLOAD 2 tuned (`--where`) on session 48's problems, into databases of their own; the
#    8192^3 problem on its 128 x 128 tiles only (session 49's 60 s ended before them).
# 3. The TT, alpha and beta gemm grids widened with three TRUNC 1 winners of the truncating
#    families each (cover --add-winners), as session 49 did the TN grid.
# Then, where cargo is: autotune merge -o results/tuning.toml results/tuning.toml
#   $OUT/fl2-*.toml $OUT/tuning.toml (the faster entry stays; widened records are dated when
#   widened, so the merge keeps them), scripts/loo-table.sh, commit, scripts/results-readme.sh,
#   commit.
set -uo pipefail
LIMIT=${1:-540}
Q=/tmp/s49next
source scripts/gpu-queue.sh
carried .gpu49 autotune || exit 1
resume_from .gpu49/s49next.tgz
R=results/runs/session48
TRUNC="gemm_tf32x3_wgmma_trunc gemm_tf32x3_wgmma_cols_trunc gemm_tf32x3_wgmma_splitk_trunc gemm_tf32x3_wgmma_cols_splitk_trunc"
step sanitizer 60 bash $R/plans/sanitize.sh "$Q/sanitizer" 50 $TRUNC
step fl2-nn 200 "$AT" tune --suite $R/trunc-nn-shapes.toml --where "FASTLOAD == 2" \
  --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc \
  --strategy exhaustive --time 40s --db "$Q/fl2-nn.toml" --summary "$Q/fl2-nn.md" --journal-dir "$Q/journals"
step fl2-nt 150 "$AT" tune --suite $R/trunc-nt-shapes.toml --where "FASTLOAD == 2" \
  --family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc \
  --strategy exhaustive --time 40s --db "$Q/fl2-nt.toml" --summary "$Q/fl2-nt.md" --journal-dir "$Q/journals"
step fl2-big 120 "$AT" tune --shape 8192x8192x8192 --family gemm_tf32x3_wgmma_cols_trunc \
  --where "FASTLOAD >= 1 && BM == 128 && BN == 128" --strategy exhaustive --time 100s \
  --db "$Q/fl2-big.toml" --journal-dir "$Q/journals"
cp "$Q"/fl2-*.toml "$Q"/fl2-*.md "$OUT/" 2>/dev/null
DB=$Q/tuning.toml
if [ ! -f "$DB" ]; then
  # cover --add-winners adds only configs that may serve shapes nobody tuned (TRUNC 1, chains
  # of one K tile): the database's TRUNC 2 entries make way for session 48's t1.toml.
  without_param results/tuning.toml 'TRUNC = 2' "$Q/no-trunc2.toml" || exit 1
  "$AT" merge -o "$DB" "$Q/no-trunc2.toml" $R/t1.toml
fi
FAM=$(printf -- '--family %s ' $TRUNC)
# name, estimate (s), the grid's form
for grid in "tt 140 --layout tt" "alpha 140 --alpha 2" "beta 140 --beta 1"; do
  set -- $grid
  step "cover-$1" "$2" "$AT" cover --op gemm "$3" "$4" --add-winners 3 $FAM --db "$DB"
  cp "$DB" "$OUT/tuning.toml"
done
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
