#!/usr/bin/env bash
# The C ABI on the GPU machine (no cargo, no network): runs the C example prebuilt by
# scripts/build-gpu.sh into .gpu/ (sgemm-c, linked against .gpu/libautotune.so), which makes
# cuBLAS's calls (sgemm NN/TN/NT/TT, strided batched, sgemv N/T, strided batched) through
# libautotune and through cuBLAS on the same inputs, and prints each result's largest relative
# difference from cuBLAS's, the time per call of both and what libautotune chose; then the C++
# example (built without cuda_runtime.h: it explains the layer call it would run).
#   bash scripts/capi-gpu.sh [tuning.toml]      # default: the database built into the library
# Output: $OUT/capi-sgemm-c.txt and $OUT/capi-sgemm-cpp.txt (OUT default: a temp dir). Exit 1
# when a result differs from cuBLAS's or a call fails. AUTOTUNE_CUBLAS may name libcublas.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
for exe in .gpu/sgemm-c .gpu/sgemm-cpp .gpu/libautotune.so; do
  if [ ! -e "$exe" ]; then
    echo "capi-gpu.sh: $exe is missing: run scripts/build-gpu.sh where cargo is, and carry .gpu/" >&2
    exit 2
  fi
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/capi-gpu.txt"
status=0
start=$SECONDS
.gpu/sgemm-c "$@" 2>&1 | tee "$OUT/capi-sgemm-c.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
.gpu/sgemm-cpp 2>&1 | tee "$OUT/capi-sgemm-cpp.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
echo "capi-gpu.sh: exit $status in $((SECONDS - start)) s; output in $OUT" | tee -a "$OUT/capi-gpu.txt"
exit "$status"
