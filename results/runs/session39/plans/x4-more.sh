#!/usr/bin/env bash
# Session 39, the same four-GPU machine after x4.sh's calls (typed as each call's command line;
# kept here as run): fresh seeds for issue 26 on the database x4.sh left (/tmp/s39c), and the
# pipe family tuned again, with a larger budget, on the layer suite's problems with every
# dimension >= 1024 (the first tuning of 60 candidates missed 1024x11008x4096:nt's best tile).
#   bash results/runs/session39/plans/x4-more.sh gemm|gemv|big6
set -uo pipefail
case ${1:?gemm, gemv or big6} in
gemm | gemv)
  Q=/tmp/s39d LIMIT=430
  source scripts/gpu-queue.sh
  DB=/tmp/s39c/tuning.toml
  for seed in 3118 3119; do
    step "eval-$1-$seed" 150 "$AT" evaluate --op "$1" --random 60 --seed "$seed" --forms all \
      --tune-budget 30 --devices all --db "$DB" --out "$Q/evaluate-$1-$seed.md" \
      --json "$Q/evaluate-$1-$seed.json"
  done
  ;;
big6)
  Q=/tmp/s39e LIMIT=250
  source scripts/gpu-queue.sh
  printf 'op = "gemm"\nshapes = ["1024x11008x4096:nt", "1024x14336x4096:nt", "4096x1024x4096:nt", "1024x11008x4096", "1024x14336x4096", "4096x1024x4096"]\n' >/tmp/big6.toml
  step pipe-big6 200 "$AT" tune --suite /tmp/big6.toml --family gemm_tf32x3_wgmma_pipe \
    --strategy model-guided --budget 150 --time 50s --devices all --db "$Q/pipe-big6.toml" \
    --summary "$Q/pipe-big6.md"
  cp /tmp/big6.toml "$Q/"
  ;;
esac
finish
