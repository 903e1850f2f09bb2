#!/usr/bin/env bash
# Session 27 (issue 26), calls 5-6 on a fresh machine: the gemm evaluations of queue.sh that did
# not fit (60 random problems of every form, --tune-budget 30, seeds 3051 and 3052), on the
# database calls 1-4 ended with (results/tuning.toml), one per call, kernels run in-process
# (no worker per kernel: the validated configs of the database and the search).
set -uo pipefail
LIMIT=${1:-570}
Q=/tmp/q2; mkdir -p $Q/done $Q/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >$Q/gpu.txt
DB=results/tuning.toml
for seed in 3051 3052; do
  [ -f $Q/done/eval-gemm-$seed ] && continue
  s=$SECONDS
  .gpu/autotune evaluate --op gemm --random 60 --seed $seed --forms all --tune-budget 30 --in-process --db $DB \
    --out $Q/evaluate-gemm-$seed.md --json $Q/evaluate-gemm-$seed.json >$Q/logs/eval-gemm-$seed.log 2>&1
  echo "== eval-gemm-$seed: rc $?, $((SECONDS - s)) s" | tee -a $Q/summary.txt
  grep -E "^summary|^policy|^runtime|^no guard|^nearest|^regret" $Q/logs/eval-gemm-$seed.log | cut -c1-220 | tee -a $Q/summary.txt
  touch $Q/done/eval-gemm-$seed
  break
done
tar czf $OUT/q2.tgz -C /tmp q2
