#!/usr/bin/env bash
# Session 28 (issue 26), the new family gemm_general_small_m_splitk (few rows of C, K split
# across blocks, op(A)'s slice resident in shared memory) on one warm machine, state in /tmp/q5;
# `bash <this> LIMIT` per call as queue4.sh.
# 1. its validation on every form (the GPU test of full-interface families) and
#    compute-sanitizer (memcheck, racecheck, synccheck) over its space ends on the edge shapes
#    of every form (`verify --edge-only --space-ends`);
# 2. the NT layer calls with M <= 64 of configs/suites/gemm-layers.toml tuned with every family
#    (two shards, merged into the database: of two entries the faster stays);
# 3. the NT coverage grid measured anew (the portfolio's pools see the new family, seeded by the
#    tuned winners), its misaligned points added;
# 4. the layer suite untuned (the database without the suite's entries) and evaluate on
#    fresh seeds 3081 and 3082 (gemm, every form, no search).
set -uo pipefail
LIMIT=${1:-570}
Q=/tmp/q5; mkdir -p $Q/done $Q/logs
[ -f $Q/tuning.toml ] || cp ${SEED_DB:-results/tuning.toml} $Q/tuning.toml
[ -f $Q/gpu.txt ] || nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >$Q/gpu.txt
DB=$Q/tuning.toml
AT=$PWD/.gpu/autotune
F=gemm_general_small_m_splitk
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
export AUTOTUNE_BIN=$AT AUTOTUNE_REQUIRE_GPU=1
STOP=0
step() { # name estimate-seconds command... (in order: once one waits, the later ones wait too)
  local name=$1 est=$2; shift 2
  [ -f $Q/done/$name ] && return 0
  [ $STOP = 1 ] && return 0
  if [ $((SECONDS + est)) -gt "$LIMIT" ]; then STOP=1; echo "== $name: left for the next call (needs ~$est s, $((LIMIT - SECONDS)) s left)"; return 0; fi
  local s=$SECONDS
  timeout $((LIMIT - SECONDS)) "$@" >$Q/logs/$name.log 2>&1
  local rc=$?
  echo "== $name: rc $rc, $((SECONDS - s)) s" | tee -a $Q/summary.txt
  grep -E "^cover: (gemm|measured)|^leave-one-out|^  x cuBLAS|^Error|^summary|^policy|^runtime|^no guard|^regret|geometric mean|SUMMARY|^verify: [0-9]+ kernel|^test result|FAILED|panicked" $Q/logs/$name.log | cut -c1-220 | tee -a $Q/summary.txt
  [ $rc = 0 ] && touch $Q/done/$name
}
# The database without the gemm entries of a suite's shapes: what a product gets untuned.
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
for tool in memcheck racecheck synccheck; do
  step san-$tool 240 $SAN --tool $tool --error-exitcode 99 --print-limit 50 $AT verify --db $DB --edge-only --space-ends --in-process --family $F
done
T="--strategy model-guided --budget 50 --time 20s"
step layers-0 330 $AT --suite .gpu/layers-nt-few.toml --shard 0/2 --db $Q/layers.toml $T --summary $Q/layers-0.md
step layers-1 330 $AT --suite .gpu/layers-nt-few.toml --shard 1/2 --db $Q/layers.toml $T --summary $Q/layers-1.md
step layers-merge 30 $AT merge --output $DB $DB $Q/layers.shard-0-of-2.toml $Q/layers.shard-1-of-2.toml
step cover-nt 570 $AT cover --op gemm --layout nt --db $DB
step nt-unaligned 200 $AT cover --op gemm --layout nt --extend --grid configs/coverage/gemm-nt-unaligned.toml --db $DB
step layers-untuned 150 bash -c "$(declare -f without_suite); DB=$DB without_suite configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
for seed in 3081 3082; do
  step eval-gemm-$seed 120 $AT evaluate --op gemm --random 60 --seed $seed --forms all --in-process --db $DB --out $Q/evaluate-gemm-$seed.md --json $Q/evaluate-gemm-$seed.json
done
step gpu-test 300 .gpu/gpu-tests --include-ignored --test-threads=1 full_interface_families_validate_every_form
ls $Q/done | tr '\n' ' '; echo
tar czf $OUT/q5.tgz -C /tmp q5
