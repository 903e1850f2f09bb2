#!/usr/bin/env bash
# Session 31, call 4: the SASS and ncu sections of the 4096^3 winner (call 3's steps, with a
# whole database file); issue 28's target problems tuned again with gemm_tf32x3_wgmma by the
# binary that records cuBLAS SGEMM's errors on the same inputs (the error table), 8192^3 given
# longer (model-guided) since exhaustive search ran out of time there.
set -uo pipefail
Q=/tmp/q4 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|HGMMA|spill|REG|^\| [0-9]|Tensor|Throughput|Duration"
P=results/runs/session31/plans
W=$Q/wgmma.toml
step sass 20 bash -c "$AT export --format cubin --db $P/ncu-4096.toml --shape 4096x4096x4096 -o $Q/w.cubin &&
  cuobjdump --dump-sass $Q/w.cubin > $Q/w.sass && echo HGMMA \$(grep -c HGMMA $Q/w.sass) &&
  grep -o 'HGMMA[^ ;]*' $Q/w.sass | sort | uniq -c && cuobjdump --dump-resource-usage $Q/w.cubin"
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy"
step ncu-ours 60 ncu --clock-control none -k regex:gemm_tf32x3_wgmma -c 1 $SECTIONS \
  "$AT" verify --db $P/ncu-4096.toml --in-process
step tc-a 200 "$AT" tune --suite $P/tc-a.toml --family gemm_tf32x3_wgmma \
  --strategy exhaustive --time 15s --db "$W"
cp "$W" "$OUT/" 2>/dev/null
step big 80 "$AT" tune --shape 8192x8192x8192 --family gemm_tf32x3_wgmma \
  --strategy model-guided --time 60s --db "$Q/big.toml"
cp "$Q/big.toml" "$OUT/" 2>/dev/null
finish
