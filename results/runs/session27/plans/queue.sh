#!/usr/bin/env bash
# Session 27 (issue 26): one queue of GPU steps run over several calls on one warm machine.
# State lives in /tmp/q on the GPU machine (kept while it stays warm): the database every step
# updates, a log per step, and done/<step> markers. Each call runs `bash .gpu/queue.sh LIMIT`:
# it skips the steps done, starts a step only if its estimate fits in what is left of LIMIT
# seconds, and packs /tmp/q into $OUT/q.tgz. Steps:
#   cover-gemm-nt (where this GPU has none), cover-gemm-tn, cover-gemv-t, cover-gemv-alpha, cover-gemm-tt, cover-gemm-alpha: coverage
#     grids of the forms products call, by the families of the full interface;
#   eval-<op>-<seed>: random problems of every form with --tune-budget 30 (kernel regret), on
#     seeds not used before;
#   layers, small: the public layer-call and small-K / M = 1 suites, untuned through the
#     database the steps ended with.
set -uo pipefail
LIMIT=${1:-560}
Q=/tmp/q; mkdir -p $Q/done $Q/logs
[ -f $Q/tuning.toml ] || cp results/tuning.toml $Q/tuning.toml
[ -f $Q/gpu.txt ] || nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >$Q/gpu.txt
DB=$Q/tuning.toml
AT=.gpu/autotune
step() { # name estimate-seconds command...
  local name=$1 est=$2; shift 2
  [ -f $Q/done/$name ] && return 0
  if [ $((SECONDS + est)) -gt "$LIMIT" ]; then echo "== $name: left for the next call (needs ~$est s, $((LIMIT - SECONDS)) s left)"; return 0; fi
  local s=$SECONDS
  "$@" >$Q/logs/$name.log 2>&1
  local rc=$?
  echo "== $name: rc $rc, $((SECONDS - s)) s" | tee -a $Q/summary.txt
  grep -E "^cover:|^leave-one-out|^Error|^summary|^policy|^runtime|^no guard|^nearest|^regret|geometric mean" $Q/logs/$name.log | cut -c1-220 | tee -a $Q/summary.txt
  touch $Q/done/$name
}
cover() { $AT cover --db $DB "$@"; }
evaluate() { local op=$1 seed=$2; $AT evaluate --op $op --random 60 --seed $seed --forms all --tune-budget 30 --db $DB --out $Q/evaluate-$op-$seed.md --json $Q/evaluate-$op-$seed.json; }
suite() { local name=$1; $AT evaluate --shapes configs/suites/$name.toml --db $DB --out $Q/evaluate-$name-untuned.md --json $Q/evaluate-$name-untuned.json; }
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
# This GPU's NT grid, where the database lacks one (the H100 has it).
nt_grid() { $AT cover --db $DB --loo --gpu "$GPU" --op gemm --layout nt >/dev/null 2>&1 && { echo "has an NT grid"; return 0; }; cover --op gemm --layout nt; }
step cover-gemm-nt 450 nt_grid
step cover-gemm-tn 330 cover --op gemm --layout tn
step cover-gemv-t 150 cover --op gemv --layout t
step cover-gemv-alpha 150 cover --op gemv --alpha 2
step cover-gemm-tt 330 cover --op gemm --layout tt
step cover-gemm-alpha 330 cover --op gemm --alpha 2
step eval-gemm-3051 240 evaluate gemm 3051
step eval-gemm-3052 240 evaluate gemm 3052
step eval-gemv-3051 150 evaluate gemv 3051
step eval-gemv-3052 150 evaluate gemv 3052
step layers 80 suite gemm-layers
step small 60 suite gemm-small
ls $Q/done | tr '\n' ' '; echo
tar czf $OUT/q.tgz -C /tmp q
cp $DB $OUT/tuning.toml
