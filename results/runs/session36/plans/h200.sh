#!/usr/bin/env bash
# Written in session 36 for the first machine of H200s that comes (not run: every call got
# H100s). Its estimates add up to about 3500 s on four GPUs, more than one session's device
# time: calls of 560 s on one warm machine (state in /tmp/h200q, so a call on the same warm
# machine goes on where the last stopped), the most needed first (NT, the layer call; gemv;
# one seed; then the other forms, the second seed, the suites, verify):
#   bash results/runs/session36/plans/h200.sh 560
# Every gemm and gemv form's grid the H100 has, measured with the H100's portfolio of that form
# (cover --portfolio-from h100: no pool search) and the extensions the H100's grids have
# (misaligned points; gemv's points between powers of four), then evaluate on fresh seeds
# (gemm and gemv, every form, --tune-budget 30), the layer suite untuned, the gemm-layouts
# suite tuned with every family, and verify of the shipped H200 entries. On anything but an
# H200 it stops at once.
set -uo pipefail
Q=/tmp/h200q LIMIT=${1:-570}
source scripts/gpu-queue.sh
nvidia-smi -L | grep -q H200 || { echo "h200.sh: no H200 here"; exit 2; }
RESULT_LINES="$RESULT_LINES|^cover: the portfolio|^verify: [0-9]"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
U=configs/coverage
C=(--devices all --db "$DB")
F=(--portfolio-from h100 "${C[@]}")
evaluate_seed() {
  step "eval-gemv-$1" 60 "$AT" evaluate --op gemv --random 60 --seed "$1" --forms all --tune-budget 30 \
    --devices all --db "$DB" --out "$Q/evaluate-gemv-$1.md" --json "$Q/evaluate-gemv-$1.json"
  step "eval-gemm-$1" 220 "$AT" evaluate --op gemm --random 60 --seed "$1" --forms all --tune-budget 30 \
    --devices all --db "$DB" --out "$Q/evaluate-gemm-$1.md" --json "$Q/evaluate-gemm-$1.json"
}
step nt 200 "$AT" cover --op gemm --layout nt "${F[@]}"
step nt-u 80 "$AT" cover --op gemm --layout nt --extend --grid $U/gemm-nt-unaligned.toml "${C[@]}"
step ntb 200 "$AT" cover --op gemm --layout nt --beta 1 "${F[@]}"
step ntb-u 80 "$AT" cover --op gemm --layout nt --beta 1 --extend --grid $U/gemm-nt-unaligned.toml "${C[@]}"
step gemv-u 40 "$AT" cover --op gemv --extend --grid $U/gemv-unaligned.toml "${C[@]}"
step gemv-between 60 "$AT" cover --op gemv --extend --grid $U/gemv-between.toml "${C[@]}"
for form in "gemv-t:--layout t" "gemv-alpha:--alpha 2" "gemv-beta:--beta 1" "gemv-t-beta:--layout t --beta 1"; do
  name=${form%%:*} flags=${form#*:}
  # shellcheck disable=SC2086
  step "$name" 60 "$AT" cover --op gemv $flags "${F[@]}"
  # shellcheck disable=SC2086
  step "$name-u" 40 "$AT" cover --op gemv $flags --extend --grid $U/gemv-unaligned.toml "${C[@]}"
  # shellcheck disable=SC2086
  step "$name-between" 60 "$AT" cover --op gemv $flags --extend --grid $U/gemv-between.toml "${C[@]}"
done
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
evaluate_seed 3116
for form in "tn:--layout tn" "tt:--layout tt" "alpha:--alpha 2" "beta:--beta 1" \
  "tnb:--layout tn --beta 1" "ttb:--layout tt --beta 1"; do
  name=${form%%:*} flags=${form#*:}
  # shellcheck disable=SC2086
  step "$name" 150 "$AT" cover --op gemm $flags "${F[@]}"
  # shellcheck disable=SC2086
  step "$name-u" 60 "$AT" cover --op gemm $flags --extend --grid $U/gemm-forms-unaligned.toml "${C[@]}"
done
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
evaluate_seed 3117
step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
step layouts 200 "$AT" tune --suite configs/suites/gemm-layouts.toml --time 30s --devices all \
  --db "$Q/layouts.toml" --summary "$Q/layouts.md"
step verify 200 "$AT" verify --db results/tuning.toml --in-process
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
