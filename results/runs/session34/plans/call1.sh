#!/usr/bin/env bash
# Session 34, call 1 (a machine of four GPUs): gemm_general_splitk's deep splits (24-128, two
# levels) tuned on few-tile long-K problems of every form (plans/longk2.toml) and merged; their
# winners added to the five gemm coverages (cover --add-winners 4 --family gemm_general_splitk);
# the leave-one-out check of each widened coverage; compute-sanitizer over gemm_general_splitk
# (the deep splits among its entries) and the two wgmma tf32x3 families on the edge shapes of
# every form. State in /tmp/s34q1; the widened database comes back as tuning.toml.
set -uo pipefail
Q=/tmp/s34q1 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^leave-one-out|^widening|SUMMARY"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
nvidia-smi -L | tee -a "$Q/summary.txt"
step longk2 240 "$AT" tune --suite results/runs/session34/plans/longk2.toml --time 10s --devices all \
  --family gemm_general_splitk --db "$Q/longk2.toml" --summary "$Q/longk2.md"
cp "$Q/longk2.toml" "$Q/longk2.md" "$OUT/" 2>/dev/null
step merge 20 "$AT" merge --output "$DB" "$DB" "$Q/longk2.toml"
SPLIT=(--add-winners 4 --family gemm_general_splitk --devices all --db "$DB")
step widen-nn 120 "$AT" cover --op gemm "${SPLIT[@]}"
step widen-alpha 80 "$AT" cover --op gemm --alpha 2 "${SPLIT[@]}"
step widen-nt 100 "$AT" cover --op gemm --layout nt "${SPLIT[@]}"
step widen-tn 80 "$AT" cover --op gemm --layout tn "${SPLIT[@]}"
step widen-tt 80 "$AT" cover --op gemm --layout tt "${SPLIT[@]}"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
# compute-sanitizer, one process per (family, tool), spread over the GPUs.
san() { # family tool gpu
  CUDA_VISIBLE_DEVICES=$3 timeout 400 compute-sanitizer --tool "$2" --error-exitcode 99 --print-limit 50 \
    "$AT" verify --db "$DB" --edge-only --space-ends --in-process --family "$1" >"$Q/san-$1-$2.log" 2>&1
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
export -f san; export AT DB Q
step sanitizer 420 bash -c "$(declare -f sanitize); sanitize"
for f in "$Q"/san-*.log; do [ -f "$f" ] && cp "$f" "$OUT/" 2>/dev/null; done
for form in "" "--alpha 2" "--layout nt" "--layout tn" "--layout tt"; do
  echo "== loo $form: $("$AT" cover --loo --gpu h100 --op gemm $form --db "$DB" 2>&1 | grep -E "regret \(|vendor guard" | tr '\n' ' ')" | tee -a "$Q/summary.txt"
done
finish
