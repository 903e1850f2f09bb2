#!/usr/bin/env bash
# Session 44, call 5: the layer suite untuned (the database without the suite's entries)
# through the widened grids and the untuned rule of the pipe family's spaces (c3.sh says which):
# issue 26's "untuned >= 1.0x, none below 0.97x" and issue 28's untuned target.
#   bash results/runs/session44/plans/c5.sh 560
set -uo pipefail
LIMIT=${1:-560}
for f in .gpu44/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu
cp -f .gpu44/autotune .gpu/ && chmod +x .gpu/autotune
Q=/tmp/s44h200d
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step layers-untuned 90 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h200.md --json $Q/evaluate-gemm-layers-untuned-h200.json"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
