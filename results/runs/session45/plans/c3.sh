#!/usr/bin/env bash
# Session 45, call 4 (the device time left, 257 s): gemm on seed 3135, which c2.sh's third
# call left for lack of time, run directly against results/tuning.toml as c2.sh's calls left it
# (the NT grids extended, the batched NN grid whole), output to $OUT.
[ -x .gpu/autotune ] || { xz -d -k -f .gpu45/autotune.xz; mkdir -p .gpu; cp .gpu45/autotune .gpu/; chmod +x .gpu/autotune; }
export AUTOTUNE_BIN=$PWD/.gpu/autotune
timeout 235 .gpu/autotune evaluate --op gemm --random 60 --seed 3135 --forms all --tune-budget 30 \
  --devices all --db results/tuning.toml --out "$OUT/evaluate-gemm-3135-h200.md" \
  --json "$OUT/evaluate-gemm-3135-h200.json" >"$OUT/eval-gemm-3135.log" 2>&1
echo "rc=$?"
tail -8 "$OUT/eval-gemm-3135.log" | cut -c1-250
