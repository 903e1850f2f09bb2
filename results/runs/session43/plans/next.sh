#!/usr/bin/env bash
# Written in session 43 for the next session (not run): calls of ~560 s on one warm machine of
# two GPUs; send each next call at once (a machine idle for 30 s is given back):
#   bash results/runs/session43/plans/next.sh 560
# On H200s (issue 26): the grids of the other forms hold only the older tensor-core families
# (gemm_tf32x3_wgmma, _rs): widen each with the two fastest current pipe/promote winners (the
# full interface: NN and NT winners compute every layout), then gemm on fresh seeds 3130/3131.
# On H100s (issues 26, 27, 28): session 41's list (96x200x7919 tuned again; the layer suite
# untuned after the promote_splitk step session 42 took on the H200; gemm and gemv on fresh
# seeds 3126/3127), with the H100's grids widened the same way first.
set -uo pipefail
LIMIT=${1:-560}
W=(--add-winners 2 --family gemm_tf32x3_wgmma_promote --family gemm_tf32x3_wgmma_pipe)
if nvidia-smi -L | grep -q H200; then
  Q=/tmp/s44h200
  source scripts/gpu-queue.sh
  RESULT_LINES="$RESULT_LINES|^cover: widening"
  DB=$Q/tuning.toml
  [ -f "$DB" ] || cp results/tuning.toml "$DB"
  for form in "tn:--layout tn" "tt:--layout tt" "tnb:--layout tn --beta 1" \
    "ttb:--layout tt --beta 1" "ntb:--layout nt --beta 1"; do
    name=${form%%:*} flags=${form#*:}
    est=90
    [ "$name" = ntb ] && est=170 # 278 points, the others 142
    # shellcheck disable=SC2086
    step "widen-$name" $est "$AT" cover --op gemm $flags "${W[@]}" --devices all --db "$DB"
  done
  cp "$DB" "$OUT/tuning.toml" 2>/dev/null
  for seed in 3130 3131; do
    step "eval-gemm-$seed" 380 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
      --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed-h200.md" \
      --json "$Q/evaluate-gemm-$seed-h200.json"
  done
else
  Q=/tmp/s44h100
  source scripts/gpu-queue.sh
  RESULT_LINES="$RESULT_LINES|^cover: widening"
  DB=$Q/tuning.toml
  [ -f "$DB" ] || cp results/tuning.toml "$DB"
  P=results/runs/session42/plans
  step retune-96 60 "$AT" tune --shape 96x200x7919 --time 30s --devices all --db "$Q/fix96.toml" \
    --summary "$Q/fix96.md"
  step psk 130 "$AT" tune --suite "$P/psk-shapes.toml" --family gemm_tf32x3_wgmma_promote_splitk \
    --strategy exhaustive --time 40s --devices all --db "$DB" --summary "$Q/psk.md"
  step add-psk 300 "$AT" cover --layout nt --add-winners 3 \
    --family gemm_tf32x3_wgmma_promote_splitk --devices all --db "$DB"
  for form in "plain:" "alpha:--alpha 2" "beta:--beta 1" "tn:--layout tn" "tt:--layout tt" \
    "tnb:--layout tn --beta 1" "ttb:--layout tt --beta 1" "ntb:--layout nt --beta 1"; do
    name=${form%%:*} flags=${form#*:}
    # shellcheck disable=SC2086
    step "widen-$name" 150 "$AT" cover --op gemm $flags "${W[@]}" --devices all --db "$DB"
  done
  cp "$DB" "$OUT/tuning.toml" 2>/dev/null
  step layers-untuned 60 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h100.md --json $Q/evaluate-gemm-layers-untuned-h100.json"
  for seed in 3126 3127; do
    step "eval-gemv-$seed" 90 "$AT" evaluate --op gemv --random 60 --seed "$seed" --forms all \
      --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemv-$seed-h100.md" \
      --json "$Q/evaluate-gemv-$seed-h100.json"
    step "eval-gemm-$seed" 380 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
      --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed-h100.md" \
      --json "$Q/evaluate-gemm-$seed-h100.json"
  done
fi
# Issue 29: where a Python call's host time goes (torch_call, launch_plan with and without the
# GIL, the Rust call in the same process), never measured since torch_call landed; needs the
# wheel and call_overhead that scripts/build-gpu.sh puts in .gpu/ (carry them).
if ls .gpu/autotune-*.whl >/dev/null 2>&1; then
  step py-overhead 120 bash -c "rm -rf /tmp/site && python3 -m pip install -q --no-deps \
    --no-index --target /tmp/site .gpu/autotune-*.whl && cd /tmp && PYTHONPATH=/tmp/site \
    python3 $PWD/python/tests/overhead_bench.py --gpu --rust $PWD/.gpu/call_overhead \
    >$Q/overhead-gpu.txt 2>&1"
fi
cp "$Q"/evaluate-* "$Q"/overhead-gpu.txt "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
