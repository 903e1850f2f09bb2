#!/usr/bin/env bash
# Session 47, one H200 (the only kind lent), first call:
#   bash results/runs/session47/plans/c1.sh 570
# Issue 28: gemm_tf32x3_wgmma_cols and _cols_splitk (B of the plain layout read by columns).
# 1. GPU tests: both families on every form, and the special values of every 3xTF32 family.
# 2. The shipped H200 entries of three NN problems re-timed beside cuBLAS (verify), for an A/B
#    on this machine.
# 3. Both families tuned exhaustively on ../cols-shapes.toml into a database of their own.
set -uo pipefail
LIMIT=${1:-570}
for f in .gpu47/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu && cp -f .gpu47/autotune .gpu47/gpu-tests .gpu/ && chmod +x .gpu/autotune .gpu/gpu-tests
Q=/tmp/s47c1
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^test |panicked|slower|faster|x cuBLAS"
step tests 150 env AUTOTUNE_TF32X3_FAMILIES=gemm_tf32x3_wgmma_cols,gemm_tf32x3_wgmma_cols_splitk \
  .gpu/gpu-tests --include-ignored tf32x3
for s in 1024x11008x4096 4096x4096x4096 2048x2048x2048; do
  step "verify-$s" 20 "$AT" verify --db results/tuning.toml --op gemm -s "$s"
done
step cols 330 "$AT" tune --suite results/runs/session47/cols-shapes.toml \
  --family gemm_tf32x3_wgmma_cols --family gemm_tf32x3_wgmma_cols_splitk --strategy exhaustive \
  --time 45s --db "$Q/cols.toml" --summary "$Q/cols.md" --journal-dir "$Q/journals"
cp "$Q/cols.toml" "$Q/cols.md" "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
