#!/usr/bin/env bash
# Session 30, call 2 (issue 26, M = 1): the new family gemm_small_m_stream validated on the shapes
# its space skips, tuned exhaustively on every plain few-row problem the database holds for this
# GPU, merged into a copy of the shipped database (the faster entry stays), the merged entries
# re-checked by verify, and compute-sanitizer over its space ends on the edge shapes. First, for
# issue 28: the mma.sync m16n8k8 TF32 fragment layout and cvt.rna.tf32 on special values.
set -uo pipefail
Q=/tmp/q2 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^mma|^cvt|validated|FAILED|panicked|ERROR SUMMARY"
T=".gpu/gpu-tests --include-ignored --test-threads=1 --nocapture"
P=results/runs/session30/plans
E=results/runs/session30/exp
step mma-layout 30 bash -c "nvcc -O2 -arch=sm_90a $E/mma_layout.cu -o $Q/mma_layout && $Q/mma_layout"
step gpu-test 90 $T gemv_shaped_gemm_configs_are_correct_on_shapes_their_spaces_skip
step tune 300 "$AT" tune --suite $P/small-m.toml --family gemm_small_m_stream --strategy exhaustive \
  --db "$Q/stream.toml" --journal-dir "$Q/journal"
step merge 10 "$AT" merge --output "$Q/merged.toml" results/tuning.toml "$Q/stream.toml"
step verify 90 "$AT" verify --db "$Q/merged.toml" --family gemm_small_m_stream
step summary 5 "$AT" summary --suite $P/small-m.toml --gpu h100 --db "$Q/merged.toml"
for tool in memcheck racecheck synccheck; do
  step "san-$tool" 60 compute-sanitizer --tool "$tool" --print-limit 20 \
    "$AT" verify --edge-only --space-ends --in-process --db "$Q/merged.toml" --family gemm_small_m_stream
done
finish
