#!/usr/bin/env bash
# Session 39, four GPUs: gemm_tf32x3_wgmma_pipe revision 2 (issue 28: no check per split value,
# EARLY loads) on the GPU for the first time, calls of ~560 s on one warm machine (state in
# /tmp/s39a, /tmp/s39b, /tmp/s39c):
#   bash results/runs/session39/plans/x4.sh 560
# Call 1, two chains side by side:
#   GPU 0: the 3xTF32 GPU tests (special values, then every valid config on every form), then
#          Triton's tf32x3 on the same problems (scripts/triton-tf32x3.py);
#   GPUs 1-3: the pipe family alone tuned on tc-shapes.toml (layer calls with M >= 256, the
#          gemm suite's shapes with every dimension >= 1024);
#   then: its winners merged (the stale revision-1 entries dropped, only new entries faster
#   than cuBLAS merged) and Nsight Compute on three of them beside cuBLAS SGEMM and TF32.
# Call 2 (chain c): the plain and NT grids measured again, so that their portfolios hold the
# new family; the layer suite untuned (the database without its entries) and tuned.
set -uo pipefail
LIMIT=${1:-560}
P=results/runs/session39/plans
T=.gpu/gpu-tests
if [ ! -f /tmp/s39c/started ]; then
  (
    export CUDA_VISIBLE_DEVICES=0
    Q=/tmp/s39a
    source scripts/gpu-queue.sh
    step special 90 "$T" --ignored tf32x3_gives_ieee_results_for_special_values
    step forms 260 "$T" --ignored tf32x3_validates_every_form
    step triton 150 python3 scripts/triton-tf32x3.py $P/tc-shapes.toml --out "$Q/triton.md"
    finish
  ) &
  (
    Q=/tmp/s39b
    source scripts/gpu-queue.sh
    step pipe-tc 330 "$AT" tune --suite $P/tc-shapes.toml --family gemm_tf32x3_wgmma_pipe \
      --strategy model-guided --budget 60 --time 30s --devices 1,2,3 --db "$Q/pipe.toml" \
      --summary "$Q/pipe.md"
    if [ -f "$Q/done/pipe-tc" ] && [ ! -f /tmp/s39c/tuning.toml ]; then
      mkdir -p /tmp/s39c
      python3 $P/entries.py results/tuning.toml "$Q/base.toml" --drop-family gemm_tf32x3_wgmma_pipe --below-revision 2
      python3 $P/entries.py "$Q/pipe.toml" "$Q/won.toml" --min-vs-cublas 1.0
      "$AT" merge -o /tmp/s39c/tuning.toml "$Q/base.toml" "$Q/won.toml" >"$Q/logs/merge.log" 2>&1
      tail -3 "$Q/logs/merge.log"
    fi
    [ -f /tmp/s39c/tuning.toml ] && step ncu 120 env CUDA_VISIBLE_DEVICES=1 DB=/tmp/s39c/tuning.toml \
      bash $P/ncu.sh "$Q"
    finish
  ) &
  wait
  mkdir -p /tmp/s39c && touch /tmp/s39c/started
  cat /tmp/s39a/summary.txt /tmp/s39b/summary.txt
  exit 0
fi
Q=/tmp/s39c
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
U=configs/coverage
C=(--devices all --db "$DB")
step plain 200 "$AT" cover --op gemm "${C[@]}"
step nt 200 "$AT" cover --op gemm --layout nt "${C[@]}"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
step layers-untuned 40 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
step nt-between 80 "$AT" cover --op gemm --layout nt --extend --grid $U/gemm-nt-between.toml "${C[@]}"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
finish
