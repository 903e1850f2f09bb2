#!/usr/bin/env bash
# Session 30, call 4: compute-sanitizer racecheck and synccheck over gemm_tf32x3's space ends and
# its shipped entries on the edge shapes of every form (memcheck ran in call 3).
set -uo pipefail
Q=/tmp/q4 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|validated|ERROR SUMMARY|RACECHECK SUMMARY"
for tool in racecheck synccheck; do
  step "san-$tool" 150 compute-sanitizer --tool "$tool" --print-limit 20 \
    "$AT" verify --edge-only --space-ends --in-process --db results/tuning.toml --family gemm_tf32x3
done
finish
