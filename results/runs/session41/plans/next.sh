#!/usr/bin/env bash
# Written in session 41 for the next session (not run), calls of ~560 s on one warm machine of
# four GPUs; send each next call at once (a machine idle for 30 s is given back):
#   bash results/runs/session41/plans/next.sh 560
# On H200s (issue 26): the gemm grids the H200 still lacks (TT, alpha, beta, TN-beta, TT-beta,
# with the H100's portfolios), then gemm and gemv on fresh seeds 3126/3127 and the layer suite
# untuned. On H100s (issues 26, 27, 28): 96x200x7919 tuned again (verify found its recorded
# time 2.14x off in session 40); the plain grid measured again with a pool search, so its
# portfolio may take gemm_tf32x3_wgmma_promote and _splitk, and its unaligned extension; then
# the layer suite untuned and gemm on fresh seeds 3126/3127.
set -uo pipefail
LIMIT=${1:-560}
if nvidia-smi -L | grep -q H200; then
  Q=/tmp/h200q
  source scripts/gpu-queue.sh
  RESULT_LINES="$RESULT_LINES|^cover: the portfolio"
  DB=$Q/tuning.toml
  [ -f "$DB" ] || cp results/tuning.toml "$DB"
  U=configs/coverage
  F=(--portfolio-from h100 --devices all --db "$DB")
  step tn-u 60 "$AT" cover --op gemm --layout tn --extend --grid $U/gemm-forms-unaligned.toml --devices all --db "$DB"
  for form in "tt:--layout tt" "alpha:--alpha 2" "beta:--beta 1" "tnb:--layout tn --beta 1" \
    "ttb:--layout tt --beta 1"; do
    name=${form%%:*} flags=${form#*:}
    # shellcheck disable=SC2086
    step "$name" 150 "$AT" cover --op gemm $flags "${F[@]}"
    # shellcheck disable=SC2086
    step "$name-u" 60 "$AT" cover --op gemm $flags --extend --grid $U/gemm-forms-unaligned.toml \
      --devices all --db "$DB"
  done
else
  Q=/tmp/s42q
  source scripts/gpu-queue.sh
  DB=$Q/tuning.toml
  [ -f "$DB" ] || cp results/tuning.toml "$DB"
  step retune-96 60 "$AT" tune --shape 96x200x7919 --time 30s --devices all --db "$Q/fix96.toml" \
    --summary "$Q/fix96.md"
  step plain 320 "$AT" cover --op gemm --devices all --db "$DB"
  step plain-u 60 "$AT" cover --op gemm --extend --grid configs/coverage/gemm-unaligned.toml \
    --devices all --db "$DB"
fi
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
for seed in 3126 3127; do
  step "eval-gemv-$seed" 60 "$AT" evaluate --op gemv --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemv-$seed.md" \
    --json "$Q/evaluate-gemv-$seed.json"
  step "eval-gemm-$seed" 220 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed.md" \
    --json "$Q/evaluate-gemm-$seed.json"
done
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
