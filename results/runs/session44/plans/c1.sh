#!/usr/bin/env bash
# Session 44, H200s (the x4 kind where lent, else x2), one plan over as many calls as it
# takes (send each next call at once: a machine idle for 30 s is given back):
#   bash results/runs/session44/plans/c1.sh 560
# Issue 29: where a Python call's host time goes (torch_call, launch_plan with and without the
# GIL, the Rust call in the same process), with the wheel and call_overhead that
# scripts/build-gpu.sh builds (carried xz-compressed in .gpu44/).
# Issue 26: the grids of the other gemm forms (TN, TT, their beta forms, NT-beta) hold only the
# older tensor-core families: widen each with the two fastest pipe/promote winners (the full
# interface: NN and NT winners compute every layout), as session 43 did for the plain, alpha
# and beta grids; then gemm and gemv on fresh seeds 3130/3131 (every form, 60 problems each,
# --tune-budget 30 for the kernel regret).
set -uo pipefail
LIMIT=${1:-560}
for f in .gpu44/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu
cp -f .gpu44/autotune .gpu44/call_overhead .gpu/ && chmod +x .gpu/autotune .gpu/call_overhead
W=(--add-winners 2 --family gemm_tf32x3_wgmma_promote --family gemm_tf32x3_wgmma_pipe)
Q=/tmp/s44h200
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: widening|^ *(gemm|gemv|torch|cai|rust|launch|plan)"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step py-overhead 120 bash -c "rm -rf /tmp/site && python3 -m pip install -q --no-deps \
  --no-index --target /tmp/site .gpu44/autotune-*.whl && cd /tmp && PYTHONPATH=/tmp/site \
  python3 $PWD/python/tests/overhead_bench.py --gpu --rust $PWD/.gpu/call_overhead \
  >$Q/overhead-gpu.txt 2>&1; rc=\$?; cat $Q/overhead-gpu.txt; exit \$rc"
for form in "tn:--layout tn" "tt:--layout tt" "tnb:--layout tn --beta 1" \
  "ttb:--layout tt --beta 1" "ntb:--layout nt --beta 1"; do
  name=${form%%:*} flags=${form#*:}
  est=60
  [ "$name" = ntb ] && est=110 # 278 points, the others 142
  # shellcheck disable=SC2086
  step "widen-$name" $est "$AT" cover --op gemm $flags "${W[@]}" --devices all --db "$DB"
done
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
for seed in 3130 3131; do
  step "eval-gemm-$seed" 260 "$AT" evaluate --op gemm --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed-h200.md" \
    --json "$Q/evaluate-gemm-$seed-h200.json"
done
for seed in 3130 3131; do
  step "eval-gemv-$seed" 70 "$AT" evaluate --op gemv --random 60 --seed "$seed" --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemv-$seed-h200.md" \
    --json "$Q/evaluate-gemv-$seed-h200.json"
done
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
