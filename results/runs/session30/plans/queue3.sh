#!/usr/bin/env bash
# Session 30, call 3 (issue 28 begun): the new family gemm_tf32x3 (3xTF32 on mma.sync) validated
# on every form, tuned on the layer calls with >= 64 tokens (merged into a copy of the shipped
# database: the faster entry stays), the layers suite's table from the merged database, and
# compute-sanitizer memcheck over its space ends.
set -uo pipefail
Q=/tmp/q3 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|validated|FAILED|panicked|ERROR SUMMARY"
T=".gpu/gpu-tests --include-ignored --test-threads=1 --nocapture"
P=results/runs/session30/plans
step gpu-test 60 $T tf32x3_validates_every_form
step tune 200 "$AT" tune --suite $P/layers-tc.toml --family gemm_tf32x3 --strategy exhaustive \
  --time 12s --db "$Q/tc.toml" --journal-dir "$Q/journal"
step merge 10 "$AT" merge --output "$Q/merged.toml" results/tuning.toml "$Q/tc.toml"
step summary 5 "$AT" summary --suite configs/suites/gemm-layers.toml --gpu h100 --db "$Q/merged.toml"
step san-memcheck 60 compute-sanitizer --tool memcheck --print-limit 20 \
  "$AT" verify --edge-only --space-ends --in-process --db "$Q/merged.toml" --family gemm_tf32x3
finish
