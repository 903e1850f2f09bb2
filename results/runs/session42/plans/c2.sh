#!/usr/bin/env bash
# Session 42, second call, two H200s (nvidia-h200-x2):
#   bash results/runs/session42/plans/c2.sh 480
# gemm_tf32x3_wgmma_ws with the producer's cp.async ring (RING 3, 4) beside its register path
# (RING 0), tuned exhaustively on issue 28's ten target problems, ws-a.toml on GPU 0 and
# ws-b.toml on GPU 1, in the order written (the first three of each are the ones that count
# most: the time limit may stop a GPU before the last two).
set -uo pipefail
LIMIT=${1:-480}
P=results/runs/session42/plans
for g in 0 1; do
  (
    export CUDA_VISIBLE_DEVICES=$g
    Q=/tmp/s42c2g$g
    source scripts/gpu-queue.sh
    s=$([ $g = 0 ] && echo a || echo b)
    step "ws-$s" $((LIMIT - 20)) "$AT" tune --suite "$P/ws-$s.toml" --family gemm_tf32x3_wgmma_ws \
      --strategy exhaustive --time 80s --db "$Q/ws.toml" --summary "$Q/ws.md" \
      --journal-dir "$Q/journals"
    finish
  ) &
done
wait
cat /tmp/s42c2g*/summary.txt | tee "$OUT/summary-c2.txt"
