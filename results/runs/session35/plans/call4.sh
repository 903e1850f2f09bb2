#!/usr/bin/env bash
# Session 35, call 4 on (four H100s; state in /tmp/s35q4): gemv's beta grids (y = A x and
# y = A^T x, beta != 0) with their misaligned points; the two gemv problems earlier evaluations
# measured far off their neighbours, timed again with the clock warm-up (gemv-recheck.toml);
# evaluate on fresh seeds 3109 and 3110 (gemm and gemv, every form, with --tune-budget 30 for
# the kernel regret); the layer suite untuned.
set -uo pipefail
Q=/tmp/s35q4 LIMIT=${1:-570}
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
nvidia-smi -L | tee -a "$Q/summary.txt"
U=configs/coverage
C=(--devices all --db "$DB")
step gemv-beta 90 "$AT" cover --op gemv --beta 1 "${C[@]}"
step gemv-beta-u 40 "$AT" cover --op gemv --beta 1 --extend --grid $U/gemv-unaligned.toml "${C[@]}"
step gemv-t-beta 90 "$AT" cover --op gemv --layout t --beta 1 "${C[@]}"
step gemv-t-beta-u 40 "$AT" cover --op gemv --layout t --beta 1 --extend --grid $U/gemv-unaligned.toml "${C[@]}"
step gemv-recheck 30 "$AT" evaluate --shapes results/runs/session35/plans/gemv-recheck.toml --devices all \
  --db "$DB" --out "$Q/evaluate-gemv-recheck.md" --json "$Q/evaluate-gemv-recheck.json"
for seed in 3109 3110; do
  step "eval-gemv-$seed" 60 "$AT" evaluate --op gemv --random 60 --seed $seed --forms all --tune-budget 30 \
    --devices all --db "$DB" --out "$Q/evaluate-gemv-$seed.md" --json "$Q/evaluate-gemv-$seed.json"
  step "eval-gemm-$seed" 200 "$AT" evaluate --op gemm --random 60 --seed $seed --forms all --tune-budget 30 \
    --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
done
without_suite "$DB" configs/suites/gemm-layers.toml "$Q/db-nolayers.toml"
step layers-untuned 40 "$AT" evaluate --shapes configs/suites/gemm-layers.toml --devices all \
  --db "$Q/db-nolayers.toml" --out "$Q/evaluate-gemm-layers-untuned.md" --json "$Q/evaluate-gemm-layers-untuned.json"
# Few files come back: the database, the summary and one archive of the rest.
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
