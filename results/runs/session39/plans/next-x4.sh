#!/usr/bin/env bash
# Written in session 39 for the next machine of four GPUs (not run), calls of ~560 s on one
# warm machine (state in /tmp/s40q):
#   bash results/runs/session39/plans/next-x4.sh 560
# The accuracy rule (a tf32x3 kernel less accurate than cuBLAS SGEMM from K = 256 fails
# validation) came after this session's grids: measure every gemm grid of the H100 again under
# it (plain and NT with their extensions), then fresh seeds and the layer suite untuned.
set -uo pipefail
Q=/tmp/s40q LIMIT=${1:-560}
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
U=configs/coverage
C=(--devices all --db "$DB")
step plain 320 "$AT" cover --op gemm "${C[@]}"
step plain-u 60 "$AT" cover --op gemm --extend --grid $U/gemm-unaligned.toml "${C[@]}"
step nt 250 "$AT" cover --op gemm --layout nt "${C[@]}"
step nt-u 70 "$AT" cover --op gemm --layout nt --extend --grid $U/gemm-nt-unaligned.toml "${C[@]}"
step nt-between 80 "$AT" cover --op gemm --layout nt --extend --grid $U/gemm-nt-between.toml "${C[@]}"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
for seed in 3120 3121; do
  step "eval-gemm-$seed" 160 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
    --tune-budget 30 "${C[@]}" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
done
step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
