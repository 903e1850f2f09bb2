#!/usr/bin/env bash
# Session 42, first call, two H200s (nvidia-h200-x2):
#   bash results/runs/session42/plans/c1.sh 420
# gemm_tf32x3_wgmma_ws (new: a producer warpgroup splits K tiles into stages, consumer
# warpgroups only issue wgmma) tuned exhaustively on the public suites' ten problems with every
# dimension >= 1024 (issue 28's targets: session 41's promote-shapes.toml), half per GPU. GPU 0
# first runs the 3xTF32 special-value test (the new family included).
set -uo pipefail
LIMIT=${1:-420}
T=.gpu/gpu-tests
F=(--suite results/runs/session41/plans/promote-shapes.toml --family gemm_tf32x3_wgmma_ws
  --strategy exhaustive --time 90s)
for g in 0 1; do
  (
    export CUDA_VISIBLE_DEVICES=$g
    Q=/tmp/s42g$g
    source scripts/gpu-queue.sh
    [ $g = 0 ] && step special 30 "$T" --ignored tf32x3_gives_ieee_results_for_special_values
    step "ws-$g" 300 "$AT" tune "${F[@]}" --shard $g/2 --db "$Q/ws.toml" --summary "$Q/ws.md" \
      --journal-dir "$Q/journals"
    finish
  ) &
done
wait
cat /tmp/s42g*/summary.txt | tee "$OUT/summary-c1.txt"
