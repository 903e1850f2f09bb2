#!/usr/bin/env bash
# Session 29 (issues 27 and 26): after the templates were composed from shared headers (PTX
# fingerprints unchanged), check on the GPU that every shipped kernel still validates and runs
# as fast as recorded, then the GPU tests and compute-sanitizer over every family. On an H200,
# also issue 26's evaluations on fresh seeds. State in /tmp/q1 (kept while the machine is warm).
set -uo pipefail
Q=/tmp/q1 LIMIT=${1:-570}
source scripts/gpu-queue.sh
DB=results/tuning.toml
GPU=$(head -2 "$Q/gpu.txt" | tail -1)
echo "GPU: $GPU"
# Every entry of this GPU re-timed beside cuBLAS; the other GPU's validated.
step verify 330 "$AT" verify --db "$DB"
step gpu-tests 420 .gpu/gpu-tests --include-ignored --test-threads=1
for tool in memcheck racecheck synccheck; do
  step "san-$tool" 240 compute-sanitizer --tool "$tool" --print-limit 20 \
    "$AT" verify --edge-only --space-ends --in-process --db "$DB"
done
case "$GPU" in
*H200*)
  for seed in 4101 4102; do
    for op in gemm gemv; do
      step "eval-$op-$seed" 90 "$AT" evaluate --op $op --random 60 --seed $seed --forms all \
        --in-process --db "$DB" --out "$Q/evaluate-$op-$seed.md" --json "$Q/evaluate-$op-$seed.json"
    done
  done
  ;;
esac
finish
