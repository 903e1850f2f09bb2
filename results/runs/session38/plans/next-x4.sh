#!/usr/bin/env bash
# Written in session 38 for the next machine of four GPUs (not run: no device time left),
# calls of ~560 s on one warm machine (state in /tmp/s39q):
#   bash results/runs/session38/plans/next-x4.sh 560
# gemm_tf32x3_wgmma_pipe (issue 28) into what untuned shapes get: tuned longer on the layer
# suite, then the plain and NT grids measured again (`cover` seeds each portfolio with the
# database's tuned winners, the pipe family's now among them, then its pool searches) with their
# extensions, then fresh seeds and the layer suite untuned (issue 26). The pipe family's tuned
# entries are merged by hand afterwards (only those faster than cuBLAS; the faster entry stays).
# Estimates are guesses from session 36's four-GPU calls.
set -uo pipefail
Q=/tmp/s39q LIMIT=${1:-560}
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
U=configs/coverage
C=(--devices all --db "$DB")
step pipe-layers 200 "$AT" tune --suite configs/suites/gemm-layers.toml --family gemm_tf32x3_wgmma_pipe \
  --strategy model-guided --budget 60 --time 30s --devices all --db "$Q/pipe-layers.toml" \
  --summary "$Q/pipe-layers.md"
step plain 200 "$AT" cover --op gemm "${C[@]}"
step plain-u 80 "$AT" cover --op gemm --extend --grid $U/gemm-unaligned.toml "${C[@]}"
step nt 200 "$AT" cover --op gemm --layout nt "${C[@]}"
step nt-u 80 "$AT" cover --op gemm --layout nt --extend --grid $U/gemm-nt-unaligned.toml "${C[@]}"
step nt-between 80 "$AT" cover --op gemm --layout nt --extend --grid $U/gemm-nt-between.toml "${C[@]}"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
for seed in 3118 3119; do
  step "eval-gemm-$seed" 230 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
    --tune-budget 30 "${C[@]}" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
done
step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
