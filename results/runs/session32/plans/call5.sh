#!/usr/bin/env bash
# Session 32, call 5 (a machine with four GPUs): the Python GPU tests again (one test fixed),
# then issue 30's plan without the steps calls 3-4 measured on two H100s (gemm suite, one
# exhaustive shape): the 24-shape suite on one, two and four GPUs at 4 s a shape, cover on a
# 48-point grid on one and two, the two-nodes recipe.
set -uo pipefail
Q=/tmp/s32q5 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^pytest"
nvidia-smi -L | tee -a "$Q/summary.txt"
step python 60 env OUT="$Q/python" bash scripts/python-gpu.sh
tar czf "$OUT/s32q5.tgz" -C /tmp s32q5
SKIP="warm-gemm gemm-1 gemm-2 exhaustive-1 exhaustive-2" LIMIT=$((LIMIT - SECONDS)) \
  bash scripts/multi-gpu-plan.sh
