#!/usr/bin/env bash
# Session 39, four GPUs, after the accuracy rule (a tf32x3 kernel no more accurate than cuBLAS
# SGEMM on the same inputs from K = 256 fails validation): the four shipped problems whose
# 3xTF32 winners were less accurate than cuBLAS tuned again, every family admitted.
#   bash results/runs/session39/plans/accuracy.sh 300
set -uo pipefail
Q=/tmp/s39f LIMIT=${1:-300}
source scripts/gpu-queue.sh
printf 'op = "gemm"\nshapes = ["256x4096x4096:nt", "256x5120x13824:nt", "4096x768x3072", "4096x768x3072:nt"]\n' >"$Q/acc4.toml"
step acc4 240 "$AT" tune --suite "$Q/acc4.toml" --strategy model-guided --budget 80 --time 40s \
  --devices all --db "$Q/acc4.toml.db" --summary "$Q/acc4.md"
grep -h -o "less accurate than cuBLAS SGEMM[^\"]*" "$Q"/journal/*.jsonl 2>/dev/null | head -5 >"$Q/refused.txt"
grep -c "less accurate than cuBLAS SGEMM" "$Q"/journal/*.jsonl 2>/dev/null | tee -a "$Q/summary.txt"
finish
