#!/usr/bin/env bash
# Session 34, calls 2-3 (a machine of four GPUs; one plan over two calls on the same warm
# machine): call 1's last widening (TT), evaluate on fresh seeds 3105 and 3106 (gemm and gemv,
# every form, --tune-budget 30) on the widened database, then compute-sanitizer (memcheck,
# racecheck, synccheck) on the edge shapes of every form over plans/sanitize.toml (the wgmma
# tf32x3 families' entries and gemm_general_splitk's deep splits, one entry per config) with
# the space ends of those families. State in /tmp/s34q2.
set -uo pipefail
Q=/tmp/s34q2 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^leave-one-out|^widening|SUMMARY|: exit"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
nvidia-smi -L | tee -a "$Q/summary.txt"
step widen-tt 90 "$AT" cover --op gemm --layout tt --add-winners 4 --family gemm_general_splitk --devices all --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
for seed in 3105 3106; do
  step "eval-gemm-$seed" 170 "$AT" evaluate --op gemm --random 60 --seed $seed --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
done
for seed in 3105 3106; do
  step "eval-gemv-$seed" 60 "$AT" evaluate --op gemv --random 60 --seed $seed --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemv-$seed.md" --json "$Q/evaluate-gemv-$seed.json"
done
SAN_DB=$PWD/results/runs/session34/plans/sanitize.toml
san() { # family tool gpu
  CUDA_VISIBLE_DEVICES=$3 timeout 420 compute-sanitizer --tool "$2" --error-exitcode 99 --print-limit 50 \
    "$AT" verify --db "$SAN_DB" --edge-only --space-ends --in-process --family "$1" >"$Q/san-$1-$2.log" 2>&1
  echo "$1 $2: exit $? $(grep -hE '(ERROR|RACECHECK) SUMMARY' "$Q/san-$1-$2.log" | sed 's/^========= //' | tr '\n' ' ') $(grep -c 'kernel(s) validated, 0 failed' "$Q/san-$1-$2.log") shapes ok"
}
sanitize() {
  local i=0
  for fam in gemm_general_splitk gemm_tf32x3_wgmma gemm_tf32x3_wgmma_rs; do
    for tool in memcheck racecheck synccheck; do
      san "$fam" "$tool" $((i % 4)) &
      i=$((i + 1))
    done
  done
  wait
}
export -f san; export AT SAN_DB Q
step sanitizer 440 bash -c "$(declare -f sanitize); sanitize"
tar czf "$OUT/sanitizer.tgz" -C "$Q" $(cd "$Q" && ls san-*.log 2>/dev/null) 2>/dev/null
finish
