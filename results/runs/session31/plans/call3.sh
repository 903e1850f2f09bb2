#!/usr/bin/env bash
# Session 31, call 3: the layer calls with a dimension below 1024 (tc-b.toml) tuned with
# gemm_tf32x3_wgmma (the binary now records cuBLAS SGEMM's error on the same inputs); Triton's
# tf32x3 beside cuBLAS SGEMM on issue 28's target problems; the SASS of a winner; ncu's
# sections for our 4096^3 winner and cuBLAS's SGEMM and TF32 kernels.
set -uo pipefail
Q=/tmp/q3 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|HGMMA|spill|REG|Triton|^\| [0-9]"
P=results/runs/session31/plans
W=$Q/wgmma.toml
step sass 20 bash -c "$AT export --format cubin --db $P/ncu-4096.toml --shape 4096x4096x4096 -o $Q/w.cubin &&
  cuobjdump --dump-sass $Q/w.cubin > $Q/w.sass && echo HGMMA \$(grep -c HGMMA $Q/w.sass) &&
  grep -o 'HGMMA[^ ;]*' $Q/w.sass | sort | uniq -c && cuobjdump --dump-resource-usage $Q/w.cubin"
step triton 150 python3 scripts/triton-tf32x3.py $P/tc-a.toml --out "$Q/triton.md"
step tc-b 220 "$AT" tune --suite $P/tc-b.toml --family gemm_tf32x3_wgmma \
  --strategy exhaustive --time 15s --db "$W"
cp "$W" "$OUT/" 2>/dev/null
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy"
step ncu-ours 60 ncu --clock-control none -k regex:gemm_tf32x3_wgmma -c 1 $SECTIONS \
  "$AT" verify --db $P/ncu-4096.toml --in-process
step ncu-cublas 60 ncu --clock-control none -k regex:'gemm|sm90|cutlass' -c 6 --section SpeedOfLight \
  --section ComputeWorkloadAnalysis python3 $P/cublas_tf32.py
finish
