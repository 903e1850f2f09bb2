#!/usr/bin/env bash
# Session 41, calls 3 to 5 on the same four H200s (sent inline; written down here as run), after
# c2.sh had measured the NT, NT-beta and gemv grids of session 36's h200.sh (state in /tmp/h200q):
#   call 3: gemv and gemm evaluated on fresh seeds 3124 and 3125 (every form, 60 problems each,
#           kernel regret with --tune-budget 30) through the database as it then stood;
#   call 4: the layer suite untuned, the gemm-layouts suite tuned with every family, the
#           gemv:beta grid and its extensions;
#   call 5: the gemv:t:beta grid and its extensions, the gemm:tn grid.
set -uo pipefail
Q=/tmp/h200q LIMIT=${1:-550}
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
U=configs/coverage
F=(--portfolio-from h100 --devices all --db "$DB")
for s in 3124 3125; do
  step "eval-gemv-$s" 60 "$AT" evaluate --op gemv --random 60 --seed $s --forms all --tune-budget 30 \
    --devices all --db "$DB" --out "$Q/evaluate-gemv-$s.md" --json "$Q/evaluate-gemv-$s.json"
done
for s in 3124 3125; do
  step "eval-gemm-$s" 200 "$AT" evaluate --op gemm --random 60 --seed $s --forms all --tune-budget 30 \
    --devices all --db "$DB" --out "$Q/evaluate-gemm-$s.md" --json "$Q/evaluate-gemm-$s.json"
done
step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
step layouts 200 "$AT" tune --suite configs/suites/gemm-layouts.toml --time 30s --devices all \
  --db "$Q/layouts.toml" --summary "$Q/layouts.md"
step gemv-beta 60 "$AT" cover --op gemv --beta 1 "${F[@]}"
step gemv-beta-u 40 "$AT" cover --op gemv --beta 1 --extend --grid $U/gemv-unaligned.toml --devices all --db "$DB"
step gemv-beta-between 60 "$AT" cover --op gemv --beta 1 --extend --grid $U/gemv-between.toml --devices all --db "$DB"
step gemv-t-beta 60 "$AT" cover --op gemv --layout t --beta 1 "${F[@]}"
step gemv-t-beta-u 40 "$AT" cover --op gemv --layout t --beta 1 --extend --grid $U/gemv-unaligned.toml --devices all --db "$DB"
step gemv-t-beta-between 60 "$AT" cover --op gemv --layout t --beta 1 --extend --grid $U/gemv-between.toml --devices all --db "$DB"
step tn 150 "$AT" cover --op gemm --layout tn "${F[@]}"
cp "$DB" "$OUT/tuning.toml"
cp "$Q/summary.txt" "$OUT/"
finish
