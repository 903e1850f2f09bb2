#!/usr/bin/env bash
# Session 40, four H100s, calls of ~560 s on one warm machine (state in /tmp/s40a, /tmp/s40b,
# /tmp/s40c):
#   bash results/runs/session40/plans/x4.sh 560
# Call 1, two chains side by side:
#   GPU 0: the 3xTF32 GPU tests (special values, then every valid config of the five 3xTF32
#          families on every form), gemm_tf32x3_wgmma_splitk's first time on a GPU;
#   GPUs 1-3: that family alone tuned on splitk-shapes.toml; its winners faster than cuBLAS
#          merged into the shipped database (merge keeps the faster of two entries);
# then on all four: the NT grid measured again (its portfolio may now take the new family, and
# every 3xTF32 config is measured under the accuracy rule), with its unaligned and in-between
# extensions (measuring the base grid drops them); then gemm on fresh seeds 3120 and 3121
# (every form) and the layer suite untuned.
set -uo pipefail
LIMIT=${1:-560}
P=results/runs/session40/plans
T=.gpu/gpu-tests
if [ ! -f /tmp/s40c/started ]; then
  (
    export CUDA_VISIBLE_DEVICES=0
    Q=/tmp/s40a
    source scripts/gpu-queue.sh
    step special 60 "$T" --ignored tf32x3_gives_ieee_results_for_special_values
    step forms 300 "$T" --ignored tf32x3_validates_every_form
    finish
  ) &
  (
    Q=/tmp/s40b
    source scripts/gpu-queue.sh
    step splitk 330 "$AT" tune --suite $P/splitk-shapes.toml --family gemm_tf32x3_wgmma_splitk \
      --strategy model-guided --budget 40 --time 20s --devices 1,2,3 --db "$Q/splitk.toml" \
      --summary "$Q/splitk.md"
    if [ -f "$Q/done/splitk" ] && [ ! -f /tmp/s40c/tuning.toml ]; then
      mkdir -p /tmp/s40c
      python3 results/runs/session39/plans/entries.py "$Q/splitk.toml" "$Q/won.toml" --min-vs-cublas 1.0
      "$AT" merge -o /tmp/s40c/tuning.toml results/tuning.toml "$Q/won.toml" >"$Q/logs/merge.log" 2>&1
      tail -3 "$Q/logs/merge.log"
    fi
    finish
  ) &
  wait
  mkdir -p /tmp/s40c && touch /tmp/s40c/started
  [ -f /tmp/s40c/tuning.toml ] || cp results/tuning.toml /tmp/s40c/tuning.toml
  cat /tmp/s40a/summary.txt /tmp/s40b/summary.txt
  cp /tmp/s40a/summary.txt "$OUT/summary-a.txt"; cp /tmp/s40b/summary.txt "$OUT/summary-b.txt"
  tar czf "$OUT/s40ab.tgz" -C /tmp s40a s40b
  LIMIT=$((LIMIT - SECONDS))
  SECONDS=0
fi
Q=/tmp/s40c
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
U=configs/coverage
C=(--devices all --db "$DB")
step nt 260 "$AT" cover --op gemm --layout nt "${C[@]}"
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
