#!/usr/bin/env bash
# Session 26, call 1 (H100): gemm-layouts re-tuned with TVEC in the space (the tvec decision),
# the layer-call suite evaluated untuned through the shipped database, then tuned.
set -uo pipefail
R=$OUT
mkdir -p /tmp/a /tmp/b
OUT=/tmp/a SKIP_TESTS=1 SHAPES= EVAL_FIRST=configs/suites/gemm-layers.toml \
  SUITES=configs/suites/gemm-layouts.toml AUTOTUNE_ARGS="--strategy model-guided --budget 80 --time 20s" \
  bash scripts/gpu.sh >/tmp/a.out 2>&1
cp /tmp/a/tuning.toml "$R/tuning.toml"
OUT=/tmp/b DB_FROM=/tmp/a/tuning.toml SKIP_TESTS=1 SHAPES= \
  SUITES=configs/suites/gemm-layers.toml AUTOTUNE_ARGS="--strategy model-guided --budget 50 --time 10s" \
  bash scripts/gpu.sh >/tmp/b.out 2>&1
cp /tmp/b/tuning.toml "$R/tuning.toml"
cat /tmp/a/summary.txt /tmp/b/summary.txt >"$R/summary.txt"
cp /tmp/a.out /tmp/b.out /tmp/a/ 2>/dev/null
tar czf "$R/run1.tgz" -C /tmp a b
grep -E "^== |geometric mean|^\| (runtime|no guard)" "$R/summary.txt"
