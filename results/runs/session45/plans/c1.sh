#!/usr/bin/env bash
# Session 45, H200s (the x4 kind where lent, else x2), one plan over as many calls as it takes
# (send each next call at once: a machine idle for 30 s is given back):
#   bash results/runs/session45/plans/c1.sh 560
# Issue 26 on the H200:
# - the NT and NT-beta grids get the few-token shapes between their widths
#   (gemm-nt-between.toml: M 1 to 16, N and K of 768, 3072, 12288 beside the powers of 4), as
#   the H100's have: the guard vetoed our kernel on most NT problems of 2-16 rows that it won
#   by 1.1-2x, from neighbours up to 4x away in N or K;
# - batched gemm gets grids of its own (gemm-batched.toml: points at batch counts 2, 12, 80
#   and 512) for NN, TT and TN, the layouts random batched problems draw, each with the
#   portfolio of its layout's unbatched grid (its configs that compute batches): batched
#   problems had no grid and always went to cuBLAS (37 of 416 recorded problems, where the
#   best kernel found ran at 1.18x cuBLAS geomean);
# - then the layer suite untuned, gemv and gemm on fresh seeds (3132/3133, 3134/3135: every
#   form, 60 problems each, --tune-budget 30), and last NT batched (attention's QK^T).
set -uo pipefail
LIMIT=${1:-560}
for f in .gpu45/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu
cp -f .gpu45/autotune .gpu/ && chmod +x .gpu/autotune
Q=/tmp/s45h200
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: extending|^cover: the portfolio"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step extend-nt 150 "$AT" cover --op gemm --layout nt --extend \
  --grid configs/coverage/gemm-nt-between.toml --devices all --db "$DB"
step extend-ntb 150 "$AT" cover --op gemm --layout nt --beta 1 --extend \
  --grid configs/coverage/gemm-nt-between.toml --devices all --db "$DB"
for lay in nn tt tn; do
  step "batched-$lay" 150 "$AT" cover --op gemm --layout "$lay" --batch 16 \
    --portfolio-from h200 --devices all --db "$DB"
done
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
step layers-untuned 60 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h200.md --json $Q/evaluate-gemm-layers-untuned-h200.json"
ev() { # op seed estimate
  step "eval-$1-$2" "$3" "$AT" evaluate --op "$1" --random 60 --seed "$2" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-$1-$2-h200.md" \
    --json "$Q/evaluate-$1-$2-h200.json"
}
ev gemv 3132 70
ev gemv 3133 70
ev gemm 3134 400
ev gemm 3135 400
step batched-nt 150 "$AT" cover --op gemm --layout nt --batch 16 \
  --portfolio-from h200 --devices all --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
