#!/usr/bin/env bash
# Session 33, call 4 (a machine of several GPUs): the Python package again (driver pointer
# checks skipped for PyTorch tensors), then long-K problems of small M x N tuned in the forms
# whose coverage lacked a deep split (plans/longk.toml), their winners of the split families
# added to the TN, TT and scaled coverages (cover --add-winners), and evaluate on fresh seeds
# 3103 and 3104 (gemm, every form, --tune-budget 30). State in /tmp/s33q4.
set -uo pipefail
Q=/tmp/s33q4 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^pytest|us per call|^widening|^\| 64x64x64|^\| gemv 64"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
SPLIT=(--family gemm_general_splitk --family gemm_general_small_m_splitk)
nvidia-smi -L | tee -a "$Q/summary.txt"
step python 120 env OUT="$Q/python" bash scripts/python-gpu.sh
step longk 120 "$AT" tune --suite results/runs/session33/plans/longk.toml --time 15s --devices all \
  --db "$Q/longk.toml" --summary "$Q/longk.md"
cp "$Q/longk.toml" "$Q/longk.md" "$OUT/" 2>/dev/null
step merge 20 "$AT" merge --output "$DB" "$DB" "$Q/longk.toml"
step widen-tn 80 "$AT" cover --op gemm --layout tn --add-winners 5 "${SPLIT[@]}" --devices all --db "$DB"
step widen-alpha 80 "$AT" cover --op gemm --alpha 2 --add-winners 5 "${SPLIT[@]}" --devices all --db "$DB"
step widen-tt 80 "$AT" cover --op gemm --layout tt --add-winners 5 "${SPLIT[@]}" --devices all --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
for seed in 3103 3104; do
  step "eval-gemm-$seed" 150 "$AT" evaluate --op gemm --random 60 --seed $seed --forms all \
    --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-gemm-$seed.md" --json "$Q/evaluate-gemm-$seed.json"
done
finish
