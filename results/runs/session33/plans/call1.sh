#!/usr/bin/env bash
# Session 33, call 1 (a machine of several GPUs; every step on all of them). On H100s: the
# tf32x3 winners added to every gemm coverage of the GPU (`cover --add-winners`, issue 28's
# coverage-only item), the layer suite through the database without its entries (coverage
# only), the gemm-layouts suite tuned with every family (issue 26), evaluate on fresh seeds 3101
# and 3102 (every form, with --tune-budget for the kernel regret), gemv on the same seeds.
# On H200s: verify (issue 27), issue 28's problems and the layouts suite tuned, the plain
# coverage widened, the same evaluations. State in /tmp/s33q1 (a second call goes on).
set -uo pipefail
Q=/tmp/s33q1 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^widening|^cover: measured|x cuBLAS|^  [0-9]+ problems"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
TC=(--family gemm_tf32x3_wgmma_rs --family gemm_tf32x3_wgmma --family gemm_tf32x3)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
nvidia-smi -L | tee -a "$Q/summary.txt"
without_suite() { # suite out: $DB without the suite's gemm entries
  python3 - "$DB" "$1" "$2" <<'P'
import sys, re
db, suite, dst = sys.argv[1:]
shapes = set(re.findall(r'"(\d+x\d+x\d+[^"]*)"', open(suite).read()))
parts = re.split(r'(?m)^(?=\[\[)', open(db).read())
keep = [p for p in parts if not (p.startswith("[[entry]]") and 'op = "gemm"' in p and re.search(r'(?m)^shape = "(%s)"$' % "|".join(map(re.escape, shapes)), p))]
open(dst, "w").write("".join(keep))
print(len(parts) - len(keep), "entries dropped")
P
}
layers_untuned() {
  DB=$DB without_suite configs/suites/gemm-layers.toml "$Q/db-nolayers.toml" &&
    "$AT" evaluate --shapes configs/suites/gemm-layers.toml --db "$Q/db-nolayers.toml" --devices all \
      --out "$Q/evaluate-gemm-layers-untuned.md" --json "$Q/evaluate-gemm-layers-untuned.json"
}
evals() {
  for seed in 3101 3102; do
    step "eval-gemm-$seed" 150 "$AT" evaluate --op gemm --random 60 --seed $seed --forms all \
      --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
  done
  for seed in 3101 3102; do
    step "eval-gemv-$seed" 90 "$AT" evaluate --op gemv --random 60 --seed $seed --forms all \
      --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemv-$seed.md" --json "$Q/evaluate-gemv-$seed.json"
  done
}
case "$gpu" in
*H200*)
  step verify 200 "$AT" verify --db "$DB" --gpu "$gpu"
  step tc-a 200 "$AT" tune --suite results/runs/session31/plans/tc-a.toml "${TC[@]}" --time 20s \
    --devices all --db "$Q/tc-a.toml"
  step layouts 150 "$AT" tune --suite configs/suites/gemm-layouts.toml --time 20s --devices all \
    --db "$Q/layouts.toml"
  step merge 20 "$AT" merge --output "$DB" "$DB" "$Q/tc-a.toml" "$Q/layouts.toml"
  step widen 200 "$AT" cover --op gemm --add-winners 8 "${TC[@]}" --devices all --db "$DB"
  step layers 150 bash -c "$(declare -f without_suite layers_untuned); AT=$AT DB=$DB Q=$Q layers_untuned"
  evals
  ;;
*)
  step widen-nn 200 "$AT" cover --op gemm --add-winners 8 "${TC[@]}" --devices all --db "$DB"
  step widen-nt 150 "$AT" cover --op gemm --layout nt --add-winners 8 "${TC[@]}" --devices all --db "$DB"
  step widen-alpha 100 "$AT" cover --op gemm --alpha 2 --add-winners 8 "${TC[@]}" --devices all --db "$DB"
  step widen-tn 100 "$AT" cover --op gemm --layout tn --add-winners 8 "${TC[@]}" --devices all --db "$DB"
  step widen-tt 100 "$AT" cover --op gemm --layout tt --add-winners 8 "${TC[@]}" --devices all --db "$DB"
  cp "$DB" "$OUT/tuning-widened.toml" 2>/dev/null
  step layers 150 bash -c "$(declare -f without_suite layers_untuned); AT=$AT DB=$DB Q=$Q layers_untuned"
  step layouts 150 "$AT" tune --suite configs/suites/gemm-layouts.toml --time 20s --devices all \
    --db "$Q/layouts.toml"
  cp "$Q/layouts.toml" "$OUT/" 2>/dev/null
  evals
  ;;
esac
finish
