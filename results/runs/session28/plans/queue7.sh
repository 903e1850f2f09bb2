#!/usr/bin/env bash
# Session 28 (issue 26), calls 8-9 on the warm machine of call 7 (/tmp/q6 holds its database):
# the new family searched longer on the other NT layer calls with few rows (merged: the faster
# entry stays), then the NT coverage grid measured anew so that its portfolio is seeded by the
# new winners (and its misaligned points), then the layer suite untuned and evaluate on fresh
# seeds 3091 and 3092 (gemm, every form, no search). State in /tmp/q7.
set -uo pipefail
LIMIT=${1:-570}
Q=/tmp/q7; mkdir -p $Q/done $Q/logs
[ -f $Q/tuning.toml ] || cp ${SEED_DB:-/tmp/q6/tuning.toml} $Q/tuning.toml
[ -f $Q/gpu.txt ] || nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >$Q/gpu.txt
DB=$Q/tuning.toml
AT=$PWD/.gpu/autotune
export AUTOTUNE_BIN=$AT
cat >$Q/few8.toml <<'S'
op = "gemm"
shapes = ["8x11008x4096:nt", "8x13824x5120:nt", "4x4096x4096:nt", "16x768x3072:nt", "2x4096x14336:nt", "4x1024x4096:nt"]
S
STOP=0
step() { # name estimate-seconds command... (in order)
  local name=$1 est=$2; shift 2
  [ -f $Q/done/$name ] && return 0
  [ $STOP = 1 ] && return 0
  if [ $((SECONDS + est)) -gt "$LIMIT" ]; then STOP=1; echo "== $name: left for the next call (needs ~$est s, $((LIMIT - SECONDS)) s left)"; return 0; fi
  local s=$SECONDS
  timeout $((LIMIT - SECONDS)) "$@" >$Q/logs/$name.log 2>&1
  local rc=$?
  echo "== $name: rc $rc, $((SECONDS - s)) s" | tee -a $Q/summary.txt
  grep -E "^cover: (gemm|measured)|^leave-one-out|^  x cuBLAS|^Error|^summary|^policy|^runtime|^no guard|^regret|geometric mean|^\| [0-9]" $Q/logs/$name.log | cut -c1-200 | tee -a $Q/summary.txt
  [ $rc = 0 ] && touch $Q/done/$name
}
without_suite() { # suite out
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
step few8 200 $AT --suite $Q/few8.toml --family gemm_general_small_m_splitk --db $Q/few8-db.toml --strategy model-guided --budget 120 --time 60s --summary $Q/few8.md
step merge 30 $AT merge --output $DB $DB $Q/few8-db.toml
step cover-nt 400 $AT cover --op gemm --layout nt --db $DB
step nt-unaligned 150 $AT cover --op gemm --layout nt --extend --grid configs/coverage/gemm-nt-unaligned.toml --db $DB
step layers-untuned 80 bash -c "$(declare -f without_suite); DB=$DB without_suite configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
for seed in 3091 3092; do
  step eval-gemm-$seed 60 $AT evaluate --op gemm --random 60 --seed $seed --forms all --in-process --db $DB --out $Q/evaluate-gemm-$seed.md --json $Q/evaluate-gemm-$seed.json
done
ls $Q/done | tr '\n' ' '; echo
tar czf $OUT/q7.tgz -C /tmp q7
