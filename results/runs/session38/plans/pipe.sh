#!/usr/bin/env bash
# Session 38, one H100: the first GPU check of gemm_tf32x3_wgmma_pipe (issue 28), two calls on
# one warm machine (state in /tmp/s38p):
#   bash results/runs/session38/plans/pipe.sh 560
# 1. The 3xTF32 families' special values (GPU test).
# 2. gemm_tf32x3_wgmma_pipe and gemm_tf32x3_wgmma (the same template without the pipeline)
#    tuned apart, model-guided, 40 candidates each, on large problems of both layer forms, each
#    timed against cuBLAS in the same process.
# 3. Every valid config of the 3xTF32 families on every form (GPU test).
set -uo pipefail
Q=/tmp/s38p LIMIT=${1:-560}
source scripts/gpu-queue.sh
T=.gpu/gpu-tests
step special 120 "$T" --ignored tf32x3_gives_ieee_results_for_special_values
for shape in 4096x4096x4096 4096x4096x4096:nt 1024x14336x4096:nt 2048x2048x2048; do
  IFS=: read -r mnk layout <<<"$shape"
  for fam in gemm_tf32x3_wgmma_pipe gemm_tf32x3_wgmma; do
    step "$fam-$mnk-${layout:-nn}" 60 "$AT" tune --shape "$mnk" ${layout:+--layout $layout} \
      --family $fam --strategy model-guided --budget 40 --time 45s --top 5 --db "$Q/$fam.toml"
  done
done
step every-form 300 "$T" --ignored tf32x3_validates_every_form
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
