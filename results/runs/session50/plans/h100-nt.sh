#!/usr/bin/env bash
# Session 50's second plan, one H100, on the device time h100.sh left:
#   bash results/runs/session50/plans/h100-nt.sh 540
# 1. The H100's NT gemm grid (the layer call X W^T) widened with the three winners of the
#    truncating families that may serve shapes nobody tuned (TRUNC 1, chains of one K tile:
#    h100.sh's 1024x14336x4096:nt, 256x4096x4096:nt and 256x5120x13824:nt), into $Q/tuning.toml.
# 2. The layer suite untuned through it.
set -uo pipefail
LIMIT=${1:-540}
Q=/tmp/s50nt
source scripts/gpu-queue.sh
carried .gpu50 autotune || exit 1
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step cover-nt 420 "$AT" cover --op gemm --layout nt --add-winners 3 \
  --family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc --db "$DB"
cp "$DB" "$OUT/tuning.toml"
step layers-untuned 80 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h100.md --json $Q/evaluate-gemm-layers-untuned-h100.json"
cp "$Q"/evaluate-*.md "$Q"/evaluate-*.json "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
