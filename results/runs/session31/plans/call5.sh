#!/usr/bin/env bash
# Session 31, call 5: revision 3 of gemm_tf32x3_wgmma and revision 2 of gemm_tf32x3, whose K
# tiles (K steps) now go into their own accumulators added in FP32 registers (the tensor cores
# add with truncation: revision 2's max error was ~10x cuBLAS SGEMM's). The special-value and
# every-form tests of both; issue 28's target problems and four layer calls tuned with the
# wgmma family; two problems with the mma.sync family, for its error beside cuBLAS's.
set -uo pipefail
Q=/tmp/q5 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^\| [0-9]"
P=results/runs/session31/plans
W=$Q/wgmma.toml
step special 30 .gpu/gpu-tests --include-ignored --test-threads=1 --nocapture tf32x3_gives_ieee
step tc-a 240 "$AT" tune --suite $P/tc-a.toml --family gemm_tf32x3_wgmma \
  --strategy exhaustive --time 25s --db "$W"
step tc-c 50 "$AT" tune --suite $P/tc-c.toml --family gemm_tf32x3_wgmma \
  --strategy exhaustive --time 12s --db "$W"
cp "$W" "$OUT/" 2>/dev/null
step mma 40 "$AT" tune --suite $P/mma.toml --family gemm_tf32x3 \
  --strategy model-guided --time 15s --db "$Q/mma.toml"
cp "$Q/mma.toml" "$OUT/" 2>/dev/null
step forms 200 .gpu/gpu-tests --include-ignored --test-threads=1 tf32x3_validates_every_form
finish
