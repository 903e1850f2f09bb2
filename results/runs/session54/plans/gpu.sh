#!/usr/bin/env bash
# Session 54's plan, one GPU (H100 or H200; files named by the GPU):
#   bash results/runs/session54/plans/gpu.sh 570
# Binaries: autotune built from this tree, xz-compressed into .gpu54/. A later call goes on from
# the last call's state: copy its $OUT/s54-GPU.tgz into .gpu54/ first (resume_from).
# On an H100, issue 26:
# 1. Parts 3-5 of session 53's gemm evaluation of seed 3147 with --tune-budget 30 (the same
#    draw: same seed and code), joined by --rescore with its parts 1-2
#    (results/runs/session53/): x cuBLAS with and without the guard, and the kernel regret.
# 2. Both NT grids (plain and beta) extended with configs/coverage/gemm-nt-between-m.toml: 3, 6
#    and 12 rows at the layer widths between the powers of four (10x2264x9300:nt of seed 3146
#    was predicted from 8 and 16 rows and lost to cuBLAS).
# 3. gemm on fresh seed 3148 with --tune-budget 30 in five parts, joined, with the new grids;
#    then the layer suite untuned (every entry of its shapes dropped) with them.
# On an H200: session 53's H200 part (its transposed gemv grids made denser in M, then gemv and
#   gemm on seeds 3147 and 3148), never run there.
set -uo pipefail
LIMIT=${1:-570}
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
*H100*) G=h100 ;;
*H200*) G=h200 ;;
*) G=gpu ;;
esac
Q=/tmp/s54-$G
source scripts/gpu-queue.sh
carried .gpu54 autotune || exit 1
resume_from .gpu54/s54-$G.tgz
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
RESULT_LINES="$RESULT_LINES|^cover: extending"
ev() { # name estimate op seed extra...
  local name=$1 est=$2 op=$3 seed=$4
  shift 4
  step "$name" "$est" "$AT" evaluate --op "$op" --random 60 --seed "$seed" --forms all \
    --db "$DB" --out "$Q/evaluate-$name-$G.md" --json "$Q/evaluate-$name-$G.json" "$@"
}
joined() { # name parts-json...
  local name=$1
  shift
  step "$name" 20 "$AT" evaluate --db "$DB" --rescore "$@" \
    --out "$Q/evaluate-$name-$G.md" --json "$Q/evaluate-$name-$G.json"
}
if [ "$G" = h200 ]; then
  step tdense 80 "$AT" cover --op gemv --layout t --extend --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  step tdense-beta 80 "$AT" cover --op gemv --layout t --beta 1 --extend \
    --grid configs/coverage/gemv-t-dense.toml --db "$DB"
  ev gemv-3147-tb 110 gemv 3147 --tune-budget 30
  ev gemv-3148-tb 110 gemv 3148 --tune-budget 30
  ev gemm-3147 90 gemm 3147
  ev gemm-3148 90 gemm 3148
else
  S53=results/runs/session53
  for k in 3 4 5; do
    ev "gemm-3147-tb-p$k" 140 gemm 3147 --tune-budget 30 --part "$k/5"
  done
  joined gemm-3147-tb "$S53"/evaluate-gemm-3147-tb-p{1,2}-$G.json "$Q"/evaluate-gemm-3147-tb-p{3,4,5}-$G.json
  M=configs/coverage/gemm-nt-between-m.toml
  step nt-m 170 "$AT" cover --op gemm --layout nt --extend --grid $M --db "$DB"
  step ntb-m 170 "$AT" cover --op gemm --layout nt --beta 1 --extend --grid $M --db "$DB"
  for k in 1 2 3 4 5; do
    ev "gemm-3148-tb-p$k" 140 gemm 3148 --tune-budget 30 --part "$k/5"
  done
  joined gemm-3148-tb "$Q"/evaluate-gemm-3148-tb-p{1,2,3,4,5}-$G.json
  step layers-untuned 80 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-$G.md --json $Q/evaluate-gemm-layers-untuned-$G.json"
fi
cp "$DB" "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
