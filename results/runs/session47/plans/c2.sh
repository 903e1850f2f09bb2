#!/usr/bin/env bash
# Session 47, one H200, second plan (as many calls as it takes):
#   bash results/runs/session47/plans/c2.sh 570
# Issue 28: after c1's winners were merged into results/tuning.toml (this tree's):
# 1. GPU test: both new families on every form they compute (the test skipped NT shapes).
# 2. The H200's plain (NN) gemm coverage widened with three of the new families' winners
#    (cover --add-winners), checkpointed into $DB; then the layer suite untuned through it.
# 3. The same for the TN, TT, alpha and beta grids, as the time allows.
set -uo pipefail
LIMIT=${1:-570}
for f in .gpu47/*.xz; do xz -d -k -f "$f"; done
mkdir -p .gpu && cp -f .gpu47/autotune .gpu47/gpu-tests .gpu/ && chmod +x .gpu/autotune .gpu/gpu-tests
Q=/tmp/s47c2
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^test |panicked"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
FAM="--family gemm_tf32x3_wgmma_cols --family gemm_tf32x3_wgmma_cols_splitk"
step tests 90 env AUTOTUNE_TF32X3_FAMILIES=gemm_tf32x3_wgmma_cols,gemm_tf32x3_wgmma_cols_splitk \
  .gpu/gpu-tests --include-ignored tf32x3_validates_every_form
step cover-nn 200 "$AT" cover --op gemm --add-winners 3 $FAM --db "$DB"
cp "$DB" "$OUT/tuning.toml"
step layers-untuned 60 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h200.md --json $Q/evaluate-gemm-layers-untuned-h200.json"
cp "$Q"/evaluate-*.md "$OUT/" 2>/dev/null
step cover-tn 120 "$AT" cover --op gemm --layout tn --add-winners 3 $FAM --db "$DB"
cp "$DB" "$OUT/tuning.toml"
step cover-tt 140 "$AT" cover --op gemm --layout tt --add-winners 3 $FAM --db "$DB"
cp "$DB" "$OUT/tuning.toml"
step cover-alpha 140 "$AT" cover --op gemm --alpha 2 --add-winners 3 $FAM --db "$DB"
cp "$DB" "$OUT/tuning.toml"
step cover-beta 140 "$AT" cover --op gemm --beta 1 --add-winners 3 $FAM --db "$DB"
cp "$DB" "$OUT/tuning.toml"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
