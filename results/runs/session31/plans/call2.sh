#!/usr/bin/env bash
# Session 31, call 2: gemm_tf32x3_wgmma revision 2 (a cp.async ring as a second way to read
# tiles): the special-value test of both tf32x3 families, the tune of issue 28's target problems
# (tc-a.toml), the every-form validation of both families.
set -uo pipefail
Q=/tmp/q2 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|validated|failed|vs cuBLAS|best"
W=$Q/wgmma.toml
step special 30 .gpu/gpu-tests --include-ignored --test-threads=1 --nocapture tf32x3_gives_ieee
step tc-a 300 "$AT" tune --suite results/runs/session31/plans/tc-a.toml --family gemm_tf32x3_wgmma \
  --strategy exhaustive --time 25s --db "$W"
cp "$W" "$OUT/" 2>/dev/null
step forms 240 .gpu/gpu-tests --include-ignored --test-threads=1 tf32x3_validates_every_form
finish
