#!/usr/bin/env bash
# Session 26, call 5 (H200): this GPU's NT coverage grid, the layer-call suite untuned through
# the database with it, the suite's NT problems with M <= 16 tuned, then random problems of every
# form (seed 3041), gemm and gemv.
set -uo pipefail
R=$OUT
W=/tmp/f; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv >$W/gpu.txt
cp results/tuning.toml $W/tuning.toml
DB=$W/tuning.toml
save() { cp $DB "$R/tuning.toml"; cp $W/summary.txt "$R/summary.txt"; tar czf "$R/run5.tgz" -C /tmp f; }
s=$SECONDS; .gpu/autotune cover --op gemm --layout nt --db $DB >$W/cover-nt.log 2>&1; echo "== cover nt: $((SECONDS-s)) s rc $?" | tee -a $W/summary.txt
grep -E "^cover:|^portfolio|^leave-one-out|^Error" $W/cover-nt.log | tee -a $W/summary.txt
save
s=$SECONDS; .gpu/autotune evaluate --shapes configs/suites/gemm-layers.toml --db $DB --out $W/evaluate-gemm-layers-untuned.md --json $W/evaluate-gemm-layers-untuned.json >$W/layers-untuned.log 2>&1
{ echo "== layers untuned: $((SECONDS-s)) s"; grep -A5 "^summary" $W/layers-untuned.log; } | tee -a $W/summary.txt
s=$SECONDS; .gpu/autotune --suite .gpu/layers-few.toml --db $DB --top 3 --strategy model-guided --budget 40 --time 8s --summary $W/suite-layers-few.md >$W/suite-layers-few.log 2>&1
{ echo "== layers NT M<=16 tuned: $((SECONDS-s)) s"; cat $W/suite-layers-few.md; } | tee -a $W/summary.txt
save
for op in gemm gemv; do
  s=$SECONDS; .gpu/autotune evaluate --op $op --random 60 --seed 3041 --forms all --db $DB --out $W/evaluate-$op-3041.md --json $W/evaluate-$op-3041.json >$W/evaluate-$op-3041.log 2>&1
  { echo "== evaluate $op 3041: $((SECONDS-s)) s"; grep -A5 "^summary" $W/evaluate-$op-3041.log; } | tee -a $W/summary.txt
  save
done
save
