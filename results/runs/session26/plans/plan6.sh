#!/usr/bin/env bash
# Session 26, call 6 (H100): outer products (K <= 2) and M = 1, untuned through the shipped
# database, then tuned.
set -uo pipefail
R=$OUT; W=/tmp/g; mkdir -p $W/run
.gpu/autotune evaluate --shapes configs/suites/gemm-small.toml --db results/tuning.toml \
  --out $W/evaluate-gemm-small-untuned.md --json $W/evaluate-gemm-small-untuned.json >$W/small-untuned.log 2>&1
grep -A5 "^summary" $W/small-untuned.log
OUT=$W/run SKIP_TESTS=1 SHAPES= SUITES=configs/suites/gemm-small.toml \
  AUTOTUNE_ARGS="--strategy model-guided --budget 60 --time 12s" bash scripts/gpu.sh >$W/run.out 2>&1
cp $W/run/tuning.toml "$R/tuning.toml"; cp $W/run/summary.txt "$R/summary.txt"
tar czf "$R/run6.tgz" -C /tmp g
grep -E "^\||geometric" "$R/summary.txt" | cut -c1-220
