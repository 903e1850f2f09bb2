#!/usr/bin/env bash
# Session 33, call 3 (a machine of several GPUs): the Python package after its plan cache and
# torch fast path (scripts/python-gpu.sh: every GPU test, the per-call cost against the Rust
# runtime's), then the gemm-layouts suite tuned with every family on all GPUs now that a tune
# lists candidates as the model ranks them (call 1's 20 s a shape measured gemm_general only).
set -uo pipefail
Q=/tmp/s33q3 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^pytest|us per call|^\| (gemm|gemv|nt|NT)"
nvidia-smi -L | tee -a "$Q/summary.txt"
step python 240 env OUT="$Q/python" bash scripts/python-gpu.sh
step layouts 200 "$AT" tune --suite configs/suites/gemm-layouts.toml --time 30s --devices all \
  --db "$Q/layouts.toml" --summary "$Q/layouts.md"
cp "$Q/layouts.toml" "$Q/layouts.md" "$OUT/" 2>/dev/null
finish
