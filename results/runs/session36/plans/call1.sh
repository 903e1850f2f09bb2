#!/usr/bin/env bash
# Session 36, calls 1 and after on one warm machine of four GPUs (state in /tmp/s36q1, so a
# call on the same warm machine goes on where the last stopped).
# On H100s: the beta grids of the transposed forms gemm lacked (TN and TT with beta != 0,
# pool-searched, then their misaligned points), then evaluate on fresh seeds 3111 and 3112
# (gemm and gemv, every form, --tune-budget 30 for the kernel regret), the layer suite
# untuned, and the Python package's GPU tests (the one-GPU fast path timed).
# On H200s: every form's grid the H100 has, measured with the H100's portfolio of that form
# (cover --portfolio-from h100) and its misaligned points, the same evaluations, the
# gemm-layouts suite tuned with every family, verify of the shipped H200 entries.
set -uo pipefail
Q=/tmp/s36q1 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: the portfolio|^verify: [0-9]|^pytest"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
nvidia-smi -L | tee -a "$Q/summary.txt"
U=configs/coverage
C=(--devices all --db "$DB")
evaluations() {
  for seed in 3111 3112; do
    step "eval-gemv-$seed" 60 "$AT" evaluate --op gemv --random 60 --seed $seed --forms all --tune-budget 30 \
      --devices all --db "$DB" --out "$Q/evaluate-gemv-$seed.md" --json "$Q/evaluate-gemv-$seed.json"
    step "eval-gemm-$seed" 220 "$AT" evaluate --op gemm --random 60 --seed $seed --forms all --tune-budget 30 \
      --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
  done
  step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
}
if nvidia-smi -L | grep -q H200; then
  F=(--portfolio-from h100 "${C[@]}")
  step nt 200 "$AT" cover --op gemm --layout nt "${F[@]}"
  step nt-u 80 "$AT" cover --op gemm --layout nt --extend --grid $U/gemm-nt-unaligned.toml "${C[@]}"
  for form in "tn:--layout tn" "tt:--layout tt" "alpha:--alpha 2" "beta:--beta 1"; do
    name=${form%%:*} flags=${form#*:}
    # shellcheck disable=SC2086
    step "$name" 150 "$AT" cover --op gemm $flags "${F[@]}"
    # shellcheck disable=SC2086
    step "$name-u" 60 "$AT" cover --op gemm $flags --extend --grid $U/gemm-forms-unaligned.toml "${C[@]}"
  done
  step ntb 200 "$AT" cover --op gemm --layout nt --beta 1 "${F[@]}"
  step ntb-u 80 "$AT" cover --op gemm --layout nt --beta 1 --extend --grid $U/gemm-nt-unaligned.toml "${C[@]}"
  step gemv-u 40 "$AT" cover --op gemv --extend --grid $U/gemv-unaligned.toml "${C[@]}"
  for form in "gemv-t:--layout t" "gemv-alpha:--alpha 2" "gemv-beta:--beta 1" "gemv-t-beta:--layout t --beta 1"; do
    name=${form%%:*} flags=${form#*:}
    # shellcheck disable=SC2086
    step "$name" 60 "$AT" cover --op gemv $flags "${F[@]}"
    # shellcheck disable=SC2086
    step "$name-u" 40 "$AT" cover --op gemv $flags --extend --grid $U/gemv-unaligned.toml "${C[@]}"
  done
  cp "$DB" "$OUT/tuning.toml" 2>/dev/null
  evaluations
  step layouts 200 "$AT" tune --suite configs/suites/gemm-layouts.toml --time 30s --devices all \
    --db "$Q/layouts.toml" --summary "$Q/layouts.md"
  step verify 200 "$AT" verify --db results/tuning.toml --in-process
else
  for form in "tnb:--layout tn --beta 1" "ttb:--layout tt --beta 1"; do
    name=${form%%:*} flags=${form#*:}
    # shellcheck disable=SC2086
    step "$name" 160 "$AT" cover --op gemm $flags "${C[@]}"
    # shellcheck disable=SC2086
    step "$name-u" 50 "$AT" cover --op gemm $flags --extend --grid $U/gemm-forms-unaligned.toml "${C[@]}"
  done
  cp "$DB" "$OUT/tuning.toml" 2>/dev/null
  evaluations
  step python 150 env OUT="$Q/python" bash scripts/python-gpu.sh
fi
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
