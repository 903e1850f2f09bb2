#!/usr/bin/env bash
# Session 32, call 3 (a machine with two GPUs of one kind): on an H200, issue 27's verify of the
# shipped database's H200 entries first; issue 29's GPU checks (the C and C++ examples beside
# cuBLAS, scripts/capi-gpu.sh; the Python package beside torch.mm with its per-call overhead
# beside the Rust runtime's, scripts/python-gpu.sh); then issue 30's plan
# (scripts/multi-gpu-plan.sh, state in /tmp/multi-gpu), which the next call on the same warm
# machine continues (plans/call4.sh).
set -uo pipefail
Q=/tmp/s32q3 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^verify|^pytest|max rel|capi-gpu|^  sgemm"
nvidia-smi -L | tee -a "$Q/summary.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | head -n1 | grep -q H200; then
  step verify-h200 300 "$AT" verify --db results/tuning.toml
fi
step capi 90 env OUT="$Q/capi" bash scripts/capi-gpu.sh
step python 200 env OUT="$Q/python" bash scripts/python-gpu.sh
tar czf "$OUT/s32q3.tgz" -C /tmp s32q3
LIMIT=$((LIMIT - SECONDS)) bash scripts/multi-gpu-plan.sh
