#!/usr/bin/env bash
# Session 28 (issue 26), call 7: the new family gemm_general_small_m_splitk alone, searched
# longer on the NT layer calls with 16 to 64 rows it did not win in call 4 (model-guided, 120
# candidates or 60 s a shape), into a scratch database merged into the shipped one (of two
# entries the faster stays); then gemv 1101x169 (seed 3072's 0.618x) timed again with its
# neighbours through the database. State in /tmp/q6.
set -uo pipefail
LIMIT=${1:-570}
Q=/tmp/q6; mkdir -p $Q/done $Q/logs
[ -f $Q/tuning.toml ] || cp results/tuning.toml $Q/tuning.toml
[ -f $Q/gpu.txt ] || nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >$Q/gpu.txt
DB=$Q/tuning.toml
AT=$PWD/.gpu/autotune
export AUTOTUNE_BIN=$AT
cat >$Q/few16.toml <<'S'
op = "gemm"
shapes = ["16x4096x11008:nt", "16x3072x768:nt", "64x12288x4096:nt", "64x4096x14336:nt", "16x14336x4096:nt"]
S
cat >$Q/gemv-odd.toml <<'S'
op = "gemv"
shapes = ["1101x169", "1024x169", "1101x168", "1101x255", "668x35", "7x15696", "2x327"]
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
  grep -E "^Error|^summary|^policy|^runtime|^no guard|geometric mean|^\| [0-9]" $Q/logs/$name.log | cut -c1-200 | tee -a $Q/summary.txt
  [ $rc = 0 ] && touch $Q/done/$name
}
step gemv-odd 60 $AT evaluate --shapes $Q/gemv-odd.toml --db $DB --out $Q/evaluate-gemv-odd.md --json $Q/evaluate-gemv-odd.json
step few16 420 $AT --suite $Q/few16.toml --family gemm_general_small_m_splitk --db $Q/few16-db.toml --strategy model-guided --budget 120 --time 60s --summary $Q/few16.md
step merge 30 $AT merge --output $DB $DB $Q/few16-db.toml
ls $Q/done | tr '\n' ' '; echo
tar czf $OUT/q6.tgz -C /tmp q6
