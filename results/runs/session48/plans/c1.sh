#!/usr/bin/env bash
# Session 48, one H200 (the only kind lent), first call:
#   bash results/runs/session48/plans/c1.sh 540
# Issue 28: the truncating split (TRUNC 1 / 2, include/split_tiles.cuh) in four families:
# gemm_tf32x3_wgmma_trunc, _cols_trunc, _splitk_trunc, _cols_splitk_trunc.
# 1. GPU tests: the four on every form they compute, and the special values of every 3xTF32
#    family.
# 2. The shipped H200 entries of two NN problems re-timed beside cuBLAS (verify), for an A/B
#    with the new families' same tile on this machine.
# 3. The NN families tuned exhaustively on ../trunc-nn-shapes.toml, the NT ones on
#    ../trunc-nt-shapes.toml, into databases of their own.
set -uo pipefail
LIMIT=${1:-540}
for f in .gpu48/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu && cp -f .gpu48/autotune .gpu48/gpu-tests .gpu/ && chmod +x .gpu/autotune .gpu/gpu-tests
Q=/tmp/s48c1
R=results/runs/session48
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^test |panicked|x cuBLAS"
step tests 90 env AUTOTUNE_TF32X3_FAMILIES=gemm_tf32x3_wgmma_trunc,gemm_tf32x3_wgmma_cols_trunc,gemm_tf32x3_wgmma_splitk_trunc,gemm_tf32x3_wgmma_cols_splitk_trunc \
  .gpu/gpu-tests --include-ignored tf32x3
for s in 1024x14336x4096 4096x4096x4096; do
  step "verify-$s" 20 "$AT" verify --db results/tuning.toml --op gemm -s "$s"
done
step nn 240 "$AT" tune --suite $R/trunc-nn-shapes.toml \
  --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc \
  --strategy exhaustive --time 40s --db "$Q/nn.toml" --summary "$Q/nn.md" --journal-dir "$Q/journals"
step nt 170 "$AT" tune --suite $R/trunc-nt-shapes.toml \
  --family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc \
  --strategy exhaustive --time 40s --db "$Q/nt.toml" --summary "$Q/nt.md" --journal-dir "$Q/journals"
cp "$Q"/nn.toml "$Q"/nn.md "$Q"/nt.toml "$Q"/nt.md "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
