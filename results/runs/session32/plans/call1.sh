#!/usr/bin/env bash
# Session 32, call 1: gemm_tf32x3_wgmma_rs (A kept raw in the cp.async ring and split in each
# thread's registers, wgmma with A from registers): the special-value test of the tf32x3
# families, issue 28's target problems tuned with the new family on every GPU of the machine
# (the tune records cuBLAS SGEMM's time and errors on the same inputs), Triton's tf32x3 on the
# same problems, the every-form test.
set -uo pipefail
Q=/tmp/s32q1 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^\| [0-9]|x cuBLAS"
W=$Q/rs.toml
TC=results/runs/session31/plans/tc-a.toml
nvidia-smi -L | tee -a "$Q/summary.txt"
step special 40 .gpu/gpu-tests --include-ignored --test-threads=1 --nocapture tf32x3_gives_ieee
step tc-a 260 "$AT" tune --suite $TC --family gemm_tf32x3_wgmma_rs --strategy exhaustive \
  --time 30s --devices all --db "$W"
cp "$W" "$OUT/" 2>/dev/null
step triton 170 python3 scripts/triton-tf32x3.py $TC --out "$Q/triton.md"
cp "$Q/triton.md" "$OUT/" 2>/dev/null
step forms 150 .gpu/gpu-tests --include-ignored --test-threads=1 tf32x3_validates_every_form
finish
