#!/usr/bin/env bash
# Session 26, call 3 (H100): compute-sanitizer over the full-interface families on every form
# (verify --edge-only --space-ends: edge shapes and edge forms), then the kernel regret on
# random problems of every form (evaluate --tune-budget) on one of the fresh seeds.
set -uo pipefail
R=$OUT
mkdir -p /tmp/d
OUT=/tmp/d DB_FROM=.gpu/db2.toml SKIP_TESTS=1 SHAPES= SANITIZE=1 SANITIZE_PER_FAMILY=1 \
  SANITIZE_FAMILIES="gemm_general gemm_general_splitk gemm_general_small_m gemm_general_small_k gemv_general" \
  SANITIZE_VERIFY_ARGS="--quick" EVALUATE="gemm:60" EVAL_SEEDS="3033" EVAL_ARGS="--forms all --tune-budget 30" \
  bash scripts/gpu.sh >/tmp/d.out 2>&1
cp /tmp/d/summary.txt "$R/summary.txt"
cp /tmp/d.out /tmp/d/
tar czf "$R/run3.tgz" -C /tmp d
grep -E "^== |SUMMARY|runtime|no guard|regret" "$R/summary.txt" | head -60
