#!/usr/bin/env bash
# Session 43, first call, two H200s (nvidia-h200-x2):
#   bash results/runs/session43/plans/c1.sh 560
# Issue 26: the gemm grids the H200 still lacks, with the H100's portfolios (no pool search),
# each with its unaligned extension: the alpha grid's extension, beta (NN), TN-beta; TT-beta
# follows in the next call if this one runs out.
set -uo pipefail
LIMIT=${1:-560}
Q=/tmp/s43q
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: the portfolio"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
U=configs/coverage
F=(--portfolio-from h100 --devices all --db "$DB")
step alpha-u 45 "$AT" cover --op gemm --alpha 2 --extend --grid $U/gemm-forms-unaligned.toml \
  --devices all --db "$DB"
for form in "beta:--beta 1" "tnb:--layout tn --beta 1" "ttb:--layout tt --beta 1"; do
  name=${form%%:*} flags=${form#*:}
  # shellcheck disable=SC2086
  step "$name" 180 "$AT" cover --op gemm $flags "${F[@]}"
  # shellcheck disable=SC2086
  step "$name-u" 45 "$AT" cover --op gemm $flags --extend --grid $U/gemm-forms-unaligned.toml \
    --devices all --db "$DB"
done
cp "$DB" "$OUT/tuning.toml"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
