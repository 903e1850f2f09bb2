#!/usr/bin/env bash
# Session 48, one H200, second call:
#   bash results/runs/session48/plans/c2.sh 540
# Issue 28: results/tuning.toml holds, for c1's problems, each one's fastest TRUNC 1 config
# with chains of one K tile (../t1.toml, from c1's journals: what shapes nobody tuned may run).
# 1. The H200's plain (NN) gemm coverage widened with three winners each of
#    gemm_tf32x3_wgmma_cols_trunc and _cols_splitk_trunc (cover --add-winners).
# 2. The NT coverage widened the same way with gemm_tf32x3_wgmma_trunc and _splitk_trunc.
# The database comes back as $OUT/tuning.toml after each step.
set -uo pipefail
LIMIT=${1:-540}
for f in .gpu48/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu && cp -f .gpu48/autotune .gpu48/gpu-tests .gpu/ && chmod +x .gpu/autotune .gpu/gpu-tests
Q=/tmp/s48c2
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step cover-nn 260 "$AT" cover --op gemm --add-winners 3 \
  --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc --db "$DB"
cp "$DB" "$OUT/tuning.toml"
step cover-nt 240 "$AT" cover --op gemm --layout nt --add-winners 3 \
  --family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc --db "$DB"
cp "$DB" "$OUT/tuning.toml"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
