#!/usr/bin/env bash
# Session 26, call 2 (H100): the NT coverage grid (the layer call), then evaluate on random
# problems of every form, two fresh seeds, gemm and gemv, with and without the guard.
set -uo pipefail
R=$OUT
mkdir -p /tmp/c
OUT=/tmp/c DB_FROM=.gpu/db1.toml SKIP_TESTS=1 SHAPES= COVER=gemm COVER_ARGS="--layout nt" \
  EVALUATE="gemm:60 gemv:60" EVAL_SEEDS="3031 3032" EVAL_ARGS="--forms all" \
  bash scripts/gpu.sh >/tmp/c.out 2>&1
cp /tmp/c/tuning.toml "$R/tuning.toml"
cp /tmp/c/summary.txt "$R/summary.txt"
cp /tmp/c.out /tmp/c/
tar czf "$R/run2.tgz" -C /tmp c
grep -E "^== |runtime|no guard|nearest" "$R/summary.txt"
