#!/usr/bin/env bash
# Session 31, call 1: the first GPU run of gemm_tf32x3_wgmma. A probe tune of two shapes (every
# config validated before it is timed; stops the plan when none passes), the special-value
# test of both tf32x3 families, the tune of issue 28's problems, the every-form validation.
set -uo pipefail
Q=/tmp/q1 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|validated|failed|vs cuBLAS|best"
W=$Q/wgmma.toml
step probe 100 "$AT" tune --shape 4096x4096x4096:nt --family gemm_tf32x3_wgmma \
  --strategy exhaustive --time 20s --db "$W"
if ! grep -q gemm_tf32x3_wgmma "$W" 2>/dev/null; then
  echo "no wgmma entry: stopping" | tee -a "$Q/summary.txt"
  STOP=1
fi
step special 60 .gpu/gpu-tests --include-ignored --test-threads=1 --nocapture tf32x3_gives_ieee
step tc 360 "$AT" tune --suite results/runs/session31/plans/tc.toml --family gemm_tf32x3_wgmma \
  --strategy exhaustive --time 12s --db "$W"
step forms 240 .gpu/gpu-tests --include-ignored --test-threads=1 tf32x3_validates_every_form
cp "$W" "$OUT/" 2>/dev/null
finish
