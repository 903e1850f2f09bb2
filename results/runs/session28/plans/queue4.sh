#!/usr/bin/env bash
# Session 28 (issue 26): one warm machine, state in /tmp/q4 there; `bash <this> LIMIT` per call
# (steps already done are skipped, a step that would not fit in LIMIT seconds waits for the
# next call). Always packs /tmp/q4 into $OUT.
# - H100: the misaligned points of the form grids (`cover --extend` with
#   configs/coverage/{gemm-nt,gemm-forms,gemv}-unaligned.toml and each form's flags), then
#   evaluate on random problems of every form, fresh seeds 3071 and 3072 (guard numbers, no
#   search), gemm and gemv.
# - H200: its NT and gemv-T grids (it has only the plain ones), then the layer suite untuned
#   and the same evaluations.
set -uo pipefail
LIMIT=${1:-570}
Q=/tmp/q4; mkdir -p $Q/done $Q/logs
[ -f $Q/tuning.toml ] || cp ${SEED_DB:-results/tuning.toml} $Q/tuning.toml
[ -f $Q/gpu.txt ] || nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >$Q/gpu.txt
DB=$Q/tuning.toml
AT=.gpu/autotune
step() { # name estimate-seconds command...
  local name=$1 est=$2; shift 2
  [ -f $Q/done/$name ] && return 0
  if [ $((SECONDS + est)) -gt "$LIMIT" ]; then echo "== $name: left for the next call (needs ~$est s, $((LIMIT - SECONDS)) s left)"; return 0; fi
  local s=$SECONDS
  timeout $((LIMIT - SECONDS)) "$@" >$Q/logs/$name.log 2>&1
  local rc=$?
  echo "== $name: rc $rc, $((SECONDS - s)) s" | tee -a $Q/summary.txt
  grep -E "^cover: (gemm|gemv|measured)|^leave-one-out|^  x cuBLAS|^  regret|^Error|^summary|^policy|^runtime|^no guard|^nearest|^regret|geometric mean" $Q/logs/$name.log | cut -c1-220 | tee -a $Q/summary.txt
  [ $rc = 0 ] && touch $Q/done/$name
}
U=configs/coverage
if grep -q H200 $Q/gpu.txt; then
  step cover-nt 560 $AT cover --op gemm --layout nt --db $DB
  step cover-gemv-t 200 $AT cover --op gemv --layout t --db $DB
  step layers 150 $AT evaluate --shapes configs/suites/gemm-layers.toml --db $DB --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json
else
  step nt-unaligned 300 $AT cover --op gemm --layout nt --extend --grid $U/gemm-nt-unaligned.toml --db $DB
  step tn-unaligned 150 $AT cover --op gemm --layout tn --extend --grid $U/gemm-forms-unaligned.toml --db $DB
  step tt-unaligned 150 $AT cover --op gemm --layout tt --extend --grid $U/gemm-forms-unaligned.toml --db $DB
  step alpha-unaligned 150 $AT cover --op gemm --alpha 2 --extend --grid $U/gemm-forms-unaligned.toml --db $DB
  step gemv-unaligned 80 $AT cover --op gemv --extend --grid $U/gemv-unaligned.toml --db $DB
  step gemv-t-unaligned 80 $AT cover --op gemv --layout t --extend --grid $U/gemv-unaligned.toml --db $DB
  step gemv-alpha-unaligned 80 $AT cover --op gemv --alpha 2 --extend --grid $U/gemv-unaligned.toml --db $DB
fi
step eval-gemm-3071 150 $AT evaluate --op gemm --random 60 --seed 3071 --forms all --in-process --db $DB --out $Q/evaluate-gemm-3071.md --json $Q/evaluate-gemm-3071.json
step eval-gemv-3071 100 $AT evaluate --op gemv --random 60 --seed 3071 --forms all --in-process --db $DB --out $Q/evaluate-gemv-3071.md --json $Q/evaluate-gemv-3071.json
step eval-gemm-3072 150 $AT evaluate --op gemm --random 60 --seed 3072 --forms all --in-process --db $DB --out $Q/evaluate-gemm-3072.md --json $Q/evaluate-gemm-3072.json
step eval-gemv-3072 100 $AT evaluate --op gemv --random 60 --seed 3072 --forms all --in-process --db $DB --out $Q/evaluate-gemv-3072.md --json $Q/evaluate-gemv-3072.json
ls $Q/done | tr '\n' ' '; echo
tar czf $OUT/q4.tgz -C /tmp q4
