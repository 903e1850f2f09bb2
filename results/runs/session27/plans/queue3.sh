#!/usr/bin/env bash
# Session 27 (issue 26), calls 7-8: this H100's plain gemm grid measured anew, now that the
# full-interface families gemm_general_small_k and gemm_general_small_m exist (the grid shipped
# was measured before them, so K <= 16 and M <= 16 problems of the plain form were predicted
# from plain families only): configs/coverage/gemm.toml, then --extend with gemm-unaligned.toml.
# Then evaluate on random problems of every form, fresh seeds 3061 and 3062, gemm (no search:
# the guard's numbers), and the gemm-small suite untuned (the database without its shapes'
# entries). State in /tmp/q3 on the machine; `bash .gpu/queue3.sh LIMIT` per call, as queue.sh.
set -uo pipefail
LIMIT=${1:-570}
Q=/tmp/q3; mkdir -p $Q/done $Q/logs
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
  grep -E "^cover: (gemm|measured)|^leave-one-out|^  x cuBLAS|^  regret|^Error|^summary|^policy|^runtime|^no guard|^nearest|^regret|geometric mean" $Q/logs/$name.log | cut -c1-220 | tee -a $Q/summary.txt
  [ $rc = 0 ] && touch $Q/done/$name
}
untuned_small() {
  python3 - "$DB" $Q/db-nosmall.toml <<'P' || return 1
import sys, re
src, dst = sys.argv[1], sys.argv[2]
shapes = set()
for line in open("configs/suites/gemm-small.toml"):
    shapes.update(re.findall(r'"(\d+x\d+x\d+[^"]*)"', line))
text = open(src).read()
# Entries are [[entry]] tables: drop the suite shapes' gemm entries.
parts = re.split(r'(?m)^(?=\[\[)', text)
keep = [p for p in parts if not (p.startswith("[[entry]]") and re.search(r'(?m)^shape = "(%s)"$' % "|".join(map(re.escape, shapes)), p) and 'op = "gemm"' in p)]
open(dst, "w").write("".join(keep))
print(len(parts) - len(keep), "entries dropped")
P
  $AT evaluate --shapes configs/suites/gemm-small.toml --db $Q/db-nosmall.toml --out $Q/evaluate-gemm-small-untuned.md --json $Q/evaluate-gemm-small-untuned.json
}
step cover-gemm 480 $AT cover --op gemm --db $DB
step cover-gemm-unaligned 80 $AT cover --op gemm --extend --grid configs/coverage/gemm-unaligned.toml --db $DB
step eval-gemm-3061 120 $AT evaluate --op gemm --random 60 --seed 3061 --forms all --db $DB --out $Q/evaluate-gemm-3061.md --json $Q/evaluate-gemm-3061.json
step eval-gemm-3062 120 $AT evaluate --op gemm --random 60 --seed 3062 --forms all --db $DB --out $Q/evaluate-gemm-3062.md --json $Q/evaluate-gemm-3062.json
step small 60 untuned_small
ls $Q/done | tr '\n' ' '; echo
tar czf $OUT/q3.tgz -C /tmp q3
