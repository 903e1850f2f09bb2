#!/usr/bin/env bash
# Session 29, call 3: the GPU tests that failed in call 2 (test fixes: the awkward-shapes test's
# family list, the sweep's off-space configs), then compute-sanitizer over every family's space
# ends and this GPU's winners on the edge shapes of every form. State in /tmp/q3.
set -uo pipefail
Q=/tmp/q3 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES='^test result|validated|failed|FAILED|panicked|SUMMARY|runs failed'
T=".gpu/gpu-tests --include-ignored --test-threads=1 --nocapture"
step gemm-awkward 200 $T every_gemm_config_validates_on_awkward_shapes
step sweeps 150 $T randomized_sweep
for tool in memcheck racecheck synccheck; do
  step "san-$tool" 150 compute-sanitizer --tool "$tool" --print-limit 20 \
    "$AT" verify --edge-only --space-ends --in-process --db results/tuning.toml
done
finish
