#!/usr/bin/env bash
# Session 45, call 2 on: c1.sh's first call extended the NT grids and cut the batched NN grid at
# 105 of 110 points (its checkpoint is in results/tuning.toml, from that call's $OUT); the TT
# and TN batched grids (about 430 s each at 38 configs) are left for a later session. Here:
# the NN batched grid's last points (--extend), then the layer suite untuned and gemv and gemm
# on fresh seeds (3132/3133, 3134/3135).
#   bash results/runs/session45/plans/c2.sh 560
set -uo pipefail
LIMIT=${1:-560}
for f in .gpu45/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu
cp -f .gpu45/autotune .gpu/ && chmod +x .gpu/autotune
Q=/tmp/s45h200b
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: extending"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step batched-nn-rest 100 "$AT" cover --op gemm --batch 16 --extend --devices all --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
step layers-untuned 60 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h200.md --json $Q/evaluate-gemm-layers-untuned-h200.json"
ev() { # op seed estimate
  step "eval-$1-$2" "$3" "$AT" evaluate --op "$1" --random 60 --seed "$2" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-$1-$2-h200.md" \
    --json "$Q/evaluate-$1-$2-h200.json"
}
ev gemv 3132 60
ev gemv 3133 60
ev gemm 3134 300
ev gemm 3135 300
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
