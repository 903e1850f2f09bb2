#!/usr/bin/env bash
# Session 53's plan, one GPU (H100 or H200; files named by the GPU):
#   bash results/runs/session53/plans/gpu.sh 570
# Binaries: autotune built from this tree, xz-compressed into .gpu53/. A later call on the same
# warm machine goes on from its state; on a fresh one, copy the last call's $OUT/s53-GPU.tgz
# into .gpu53/ first (resume_from).
# Issue 26, on fresh seeds 3147 and 3148 (never evaluated, fitted or tuned on):
# - gemv with --tune-budget 30: x cuBLAS with and without the guard, and the kernel regret,
#   where another kernel was found faster timed again side by side with the runtime's
#   (evaluate's new confirmation: the best of many single timings is biased low).
# - gemm on 3147 with --tune-budget 30 in five parts (--part K/5: the whole takes ~1100 s, more
#   than one call), read together by --rescore; gemm on 3148 without a budget.
# On an H200 first: its transposed gemv grids made denser in M (gemv-t-dense.toml, as the
#   H100's in session 52), then the same evaluations, the gemm ones without a budget.
set -uo pipefail
LIMIT=${1:-570}
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
*H100*) G=h100 ;;
*H200*) G=h200 ;;
*) G=gpu ;;
esac
Q=/tmp/s53-$G
source scripts/gpu-queue.sh
carried .gpu53 autotune || exit 1
resume_from .gpu53/s53-$G.tgz
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
ev() { # name estimate op seed extra...
  local name=$1 est=$2 op=$3 seed=$4
  shift 4
  step "$name" "$est" "$AT" evaluate --op "$op" --random 60 --seed "$seed" --forms all \
    --db "$DB" --out "$Q/evaluate-$name-$G.md" --json "$Q/evaluate-$name-$G.json" "$@"
}
if [ "$G" = h200 ]; then
  step tdense 80 "$AT" cover --op gemv --layout t --extend --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  step tdense-beta 80 "$AT" cover --op gemv --layout t --beta 1 --extend \
    --grid configs/coverage/gemv-t-dense.toml --db "$DB"
fi
ev gemv-3147-tb 110 gemv 3147 --tune-budget 30
ev gemv-3148-tb 110 gemv 3148 --tune-budget 30
if [ "$G" = h200 ]; then
  ev gemm-3147 90 gemm 3147
  ev gemm-3148 90 gemm 3148
else
  for k in 1 2 3 4 5; do
    ev "gemm-3147-tb-p$k" 230 gemm 3147 --tune-budget 30 --part "$k/5"
  done
  step gemm-3147-tb 20 "$AT" evaluate --db "$DB" --rescore \
    "$Q"/evaluate-gemm-3147-tb-p{1,2,3,4,5}-$G.json \
    --out "$Q/evaluate-gemm-3147-tb-$G.md" --json "$Q/evaluate-gemm-3147-tb-$G.json"
  ev gemm-3148 90 gemm 3148
fi
cp "$DB" "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
