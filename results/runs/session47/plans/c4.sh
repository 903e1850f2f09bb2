#!/usr/bin/env bash
# Session 47, one H200, fourth plan, on the device time left:
#   bash results/runs/session47/plans/c4.sh 420
# 1. gemm on another fresh seed (3138), 60 random problems over every form, with the guard and
#    without, through $DB (c3's database: every NN, TN and TT grid widened with the column-read
#    families), as c3 did on 3137.
# 2. The layer suite's other NN problems tuned with the column-read families (exhaustive),
#    into a database of their own, merged afterwards (the faster entry kept).
# 3. gemv on a fresh seed (3134), every form.
set -uo pipefail
LIMIT=${1:-420}
for f in .gpu47/*.xz; do xz -d -k -f "$f"; done
mkdir -p .gpu && cp -f .gpu47/autotune .gpu/ && chmod +x .gpu/autotune
Q=/tmp/s47c4
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp .gpu47/tuning.toml "$DB"
step eval-gemm-3138 150 "$AT" evaluate --op gemm --random 60 --seed 3138 --forms all \
  --db "$DB" --out "$Q/evaluate-gemm-3138-h200.md" --json "$Q/evaluate-gemm-3138-h200.json"
cp "$Q"/evaluate-*.md "$Q"/evaluate-*.json "$OUT/" 2>/dev/null
step layers-nn 90 "$AT" tune --suite results/runs/session47/layers-nn-shapes.toml \
  --family gemm_tf32x3_wgmma_cols --family gemm_tf32x3_wgmma_cols_splitk --strategy exhaustive \
  --time 45s --db "$Q/layers-nn.toml" --summary "$Q/layers-nn.md" --journal-dir "$Q/journals"
cp "$Q/layers-nn.toml" "$Q/layers-nn.md" "$OUT/" 2>/dev/null
step eval-gemv-3134 90 "$AT" evaluate --op gemv --random 60 --seed 3134 --forms all \
  --db "$DB" --out "$Q/evaluate-gemv-3134-h200.md" --json "$Q/evaluate-gemv-3134-h200.json"
cp "$Q"/evaluate-*.md "$Q"/evaluate-*.json "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
