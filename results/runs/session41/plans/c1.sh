#!/usr/bin/env bash
# Session 41, first call, four GPUs (asked as nvidia-h200-x4; H100s may come):
#   bash results/runs/session41/plans/c1.sh 560
# Every GPU: gemm_tf32x3_wgmma_promote (new) and gemm_tf32x3_wgmma_pipe tuned together
# (--family twice: one process, the same inputs, each candidate's time and error in the journal)
# on the public suites' problems with every dimension >= 1024 (promote-shapes.toml, issue 28's
# targets), a quarter of them per GPU (--shard).
# GPU 0 first: the 3xTF32 special-value test (with the new family), then
# - on an H200 (issue 27): verify of every shipped H200 entry;
# - on an H100: 96x200x7919, the one H100 entry that verify found 2.14x slower than recorded
#   (session 40), tuned again into a database of its own.
set -uo pipefail
LIMIT=${1:-560}
P=results/runs/session41/plans
T=.gpu/gpu-tests
F=(--suite $P/promote-shapes.toml --family gemm_tf32x3_wgmma_promote --family gemm_tf32x3_wgmma_pipe
  --strategy model-guided --budget 60 --time 30s)
(
  export CUDA_VISIBLE_DEVICES=0
  Q=/tmp/s41a
  source scripts/gpu-queue.sh
  RESULT_LINES="$RESULT_LINES|^verify: [0-9]"
  step special 30 "$T" --ignored tf32x3_gives_ieee_results_for_special_values
  if nvidia-smi -L | grep -q H200; then
    step verify-h200 200 "$AT" verify --db results/tuning.toml --in-process
  else
    step retune-96 60 "$AT" tune --shape 96x200x7919 --time 30s --db "$Q/fix96.toml" \
      --summary "$Q/fix96.md"
  fi
  step tf32-3 150 "$AT" tune "${F[@]}" --shard 3/4 --db "$Q/tf32.toml" --summary "$Q/tf32.md"
  finish
) &
for g in 1 2 3; do
  (
    export CUDA_VISIBLE_DEVICES=$g
    Q=/tmp/s41g$g
    source scripts/gpu-queue.sh
    step "tf32-$((g - 1))" 200 "$AT" tune "${F[@]}" --shard $((g - 1))/4 --db "$Q/tf32.toml" \
      --summary "$Q/tf32.md"
    finish
  ) &
done
wait
cat /tmp/s41a/summary.txt /tmp/s41g*/summary.txt | tee "$OUT/summary-c1.txt"
