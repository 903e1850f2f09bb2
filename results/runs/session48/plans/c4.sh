#!/usr/bin/env bash
# Session 48, one H200, fourth call (the device time left, 512 s):
#   bash results/runs/session48/plans/c4.sh 430
# c2's NT widening again, alone: the H200's NT coverage (413 points) widened with three winners
# of gemm_tf32x3_wgmma_trunc and _splitk_trunc (cover --add-winners), from results/tuning.toml
# as c2 left it; c2's call ran out at 270 s of it.
set -uo pipefail
LIMIT=${1:-430}
for f in .gpu48/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu && cp -f .gpu48/autotune .gpu/ && chmod +x .gpu/autotune
Q=/tmp/s48c4
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step cover-nt 340 "$AT" cover --op gemm --layout nt --add-winners 3 \
  --family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc --db "$DB"
cp "$DB" "$OUT/tuning.toml"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
