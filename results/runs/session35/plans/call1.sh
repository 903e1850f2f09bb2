#!/usr/bin/env bash
# Session 35, calls 1-2 (a machine of four GPUs). On H200s: every gemm and gemv form's coverage
# grid the H100 has, measured with the H100's portfolio of that form (cover --portfolio-from
# h100: same chip, no pool search) and its misaligned points; the gemm-layouts suite tuned with
# every family; verify of the shipped H200 entries. On H100s instead: the beta grids (NN and
# NT), pool-searched. State in /tmp/s35q1; the database comes back as tuning.toml.
set -uo pipefail
Q=/tmp/s35q1 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: the portfolio|^geometric mean|entries? (ok|slower)|^  [a-z].*: (ok|SLOWER|FAILED)"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
nvidia-smi -L | tee -a "$Q/summary.txt"
U=configs/coverage
C=(--devices all --db "$DB")
if nvidia-smi -L | grep -q H200; then
  F=(--portfolio-from h100 "${C[@]}")
  step nt 200 "$AT" cover --op gemm --layout nt "${F[@]}"
  step nt-u 80 "$AT" cover --op gemm --layout nt --extend --grid $U/gemm-nt-unaligned.toml "${C[@]}"
  for form in "tn:--layout tn" "tt:--layout tt" "alpha:--alpha 2"; do
    name=${form%%:*} flags=${form#*:}
    # shellcheck disable=SC2086
    step "$name" 150 "$AT" cover --op gemm $flags "${F[@]}"
    # shellcheck disable=SC2086
    step "$name-u" 60 "$AT" cover --op gemm $flags --extend --grid $U/gemm-forms-unaligned.toml "${C[@]}"
  done
  step gemv-u 40 "$AT" cover --op gemv --extend --grid $U/gemv-unaligned.toml "${C[@]}"
  for form in "gemv-t:--layout t" "gemv-alpha:--alpha 2"; do
    name=${form%%:*} flags=${form#*:}
    # shellcheck disable=SC2086
    step "$name" 60 "$AT" cover --op gemv $flags "${F[@]}"
    # shellcheck disable=SC2086
    step "$name-u" 40 "$AT" cover --op gemv $flags --extend --grid $U/gemv-unaligned.toml "${C[@]}"
  done
  cp "$DB" "$OUT/tuning.toml" 2>/dev/null
  step layouts 200 "$AT" tune --suite configs/suites/gemm-layouts.toml --time 30s --devices all \
    --db "$Q/layouts.toml" --summary "$Q/layouts.md"
  cp "$Q/layouts.toml" "$Q/layouts.md" "$OUT/" 2>/dev/null
  step verify 200 "$AT" verify --db results/tuning.toml --in-process
else
  step beta-nn 300 "$AT" cover --op gemm --beta 1 "${C[@]}"
  step beta-nn-u 80 "$AT" cover --op gemm --beta 1 --extend --grid $U/gemm-forms-unaligned.toml "${C[@]}"
  step beta-nt 350 "$AT" cover --op gemm --layout nt --beta 1 "${C[@]}"
  step beta-nt-u 120 "$AT" cover --op gemm --layout nt --beta 1 --extend --grid $U/gemm-nt-unaligned.toml "${C[@]}"
fi
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
