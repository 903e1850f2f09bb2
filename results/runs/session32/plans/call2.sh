#!/usr/bin/env bash
# Session 32, call 2 (same warm machine as call 1): the SASS of the new family's winner of the
# layer call 1024x14336x4096:nt (HGMMA, spills), and ncu's sections of it (tensor pipe) beside
# session 31's cuBLAS TF32 reading.
set -uo pipefail
Q=/tmp/s32q1 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|HGMMA|spill|REG|Tensor|Throughput|Duration"
W=$Q/rs.toml
P=results/runs/session32/plans
S=1024x14336x4096:nt
step one 5 python3 $P/one-entry.py "$W" $S "$Q/one.toml"
step sass 20 bash -c "$AT export --format cubin --db $Q/one.toml --shape $S -o $Q/w.cubin &&
  cuobjdump --dump-sass $Q/w.cubin > $Q/w.sass && echo HGMMA \$(grep -c HGMMA $Q/w.sass) &&
  grep -o 'HGMMA[^ ;]*' $Q/w.sass | sort | uniq -c && cuobjdump --dump-resource-usage $Q/w.cubin"
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy"
step ncu 90 ncu --clock-control none -k regex:gemm_tf32x3_wgmma_rs -c 1 $SECTIONS \
  "$AT" verify --db "$Q/one.toml" --in-process
finish
