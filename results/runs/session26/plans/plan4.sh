#!/usr/bin/env bash
# Session 26, call 4 (H100), after tvec was dropped: the layer-call suite untuned (the shipped
# database of before plus this GPU's NT coverage grid), compute-sanitizer over the full-interface
# families on every form (verify runs a config only on forms its space offers it for), and the
# final evaluation on random problems of every form, two fresh seeds, gemm and gemv.
set -uo pipefail
R=$OUT
mkdir -p /tmp/e/run
[ -f /tmp/e/evaluate-gemm-layers-untuned.md ] || .gpu/autotune evaluate --shapes configs/suites/gemm-layers.toml --db .gpu/db-untuned.toml \
  --out /tmp/e/evaluate-gemm-layers-untuned.md --json /tmp/e/evaluate-gemm-layers-untuned.json >/tmp/e/layers.log 2>&1
grep -A6 "^summary" /tmp/e/layers.log
OUT=/tmp/e/run SKIP_TESTS=1 SHAPES= SANITIZE=1 SANITIZE_PER_FAMILY=1 \
  SANITIZE_FAMILIES="gemm_general gemm_general_splitk gemm_general_small_m gemm_general_small_k gemv_general" \
  EVALUATE="gemm:60 gemv:60" EVAL_SEEDS="3041 3042" EVAL_ARGS="--forms all" \
  bash scripts/gpu.sh >/tmp/e/run.out 2>&1
cp /tmp/e/run/summary.txt "$R/summary.txt"
tar czf "$R/run4.tgz" -C /tmp e
grep -E "^== |SUMMARY|^runtime|^no guard" "$R/summary.txt" | cut -c1-200
