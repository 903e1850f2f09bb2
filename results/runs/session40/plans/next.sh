#!/usr/bin/env bash
# Written in session 40 for the next session (not run), calls of ~560 s on one warm machine
# (state in /tmp/s41q); send each next call at once: a machine idle for 30 s is given back.
#   bash results/runs/session40/plans/next.sh 560
# On an H200 (issue 27): verify of every shipped H200 entry, first. On H100s: the plain grid
# and its unaligned extension measured again, so that its portfolio may take
# gemm_tf32x3_wgmma_splitk and its 3xTF32 configs are timed under the accuracy rule (the NT
# grid was in session 40); then the layer suite untuned and gemm on fresh seeds 3122/3123.
set -uo pipefail
Q=/tmp/s41q LIMIT=${1:-560}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^verify: [0-9]"
if nvidia-smi -L | grep -q H200; then
  step verify-h200 300 "$AT" verify --db results/tuning.toml --in-process
else
  DB=$Q/tuning.toml
  [ -f "$DB" ] || cp results/tuning.toml "$DB"
  C=(--devices all --db "$DB")
  step plain 320 "$AT" cover --op gemm "${C[@]}"
  step plain-u 60 "$AT" cover --op gemm --extend --grid configs/coverage/gemm-unaligned.toml "${C[@]}"
  cp "$DB" "$OUT/tuning.toml" 2>/dev/null
  step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
  for seed in 3122 3123; do
    step "eval-gemm-$seed" 240 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
      --tune-budget 30 "${C[@]}" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
  done
fi
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
