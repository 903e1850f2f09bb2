#!/usr/bin/env bash
# Session 48, one H200, third call (the device time left):
#   bash results/runs/session48/plans/c3.sh 520
# Starts from results/tuning.toml as c2 left it (the plain grid widened with three
# gemm_tf32x3_wgmma_cols_trunc winners; c2's NT widening ran past the call's limit).
# 1. Issue 28: the layer suite untuned through that database (its entries of the suite's
#    problems dropped): what shapes nobody tuned get.
# 2. Issue 26: compute-sanitizer (memcheck, racecheck, synccheck) over the space ends of every
#    3xTF32 wgmma family without a sanitizer log in results/, on the edge shapes of every form
#    (plans/sanitize.sh).
# 3. Issue 28: 8192^3 with gemm_tf32x3_wgmma_cols_trunc exhaustively (c1's 40 s per problem
#    reached 70 of its 144 configs there).
set -uo pipefail
LIMIT=${1:-520}
for f in .gpu48/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu && cp -f .gpu48/autotune .gpu48/gpu-tests .gpu/ && chmod +x .gpu/autotune .gpu/gpu-tests
Q=/tmp/s48c3
R=results/runs/session48
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|SUMMARY|^gemm_tf32x3"
DB=results/tuning.toml
step layers-untuned 60 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h200.md --json $Q/evaluate-gemm-layers-untuned-h200.json"
cp "$Q"/evaluate-*.md "$Q"/evaluate-*.json "$OUT/" 2>/dev/null
step sanitizer 210 bash $R/plans/sanitize.sh "$Q/sanitizer" 200 \
  gemm_tf32x3_wgmma_pipe gemm_tf32x3_wgmma_promote gemm_tf32x3_wgmma_splitk \
  gemm_tf32x3_wgmma_promote_splitk gemm_tf32x3_wgmma_cols gemm_tf32x3_wgmma_cols_splitk \
  gemm_tf32x3_wgmma_trunc gemm_tf32x3_wgmma_cols_trunc gemm_tf32x3_wgmma_splitk_trunc \
  gemm_tf32x3_wgmma_cols_splitk_trunc
mkdir -p "$OUT/sanitizer" && cp "$Q"/sanitizer/*.log "$OUT/sanitizer/" 2>/dev/null
step big 150 "$AT" tune --shape 8192x8192x8192 --family gemm_tf32x3_wgmma_cols_trunc \
  --strategy exhaustive --time 130s --db "$Q/big.toml" --journal-dir "$Q/journals"
cp "$Q/big.toml" "$OUT/" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
