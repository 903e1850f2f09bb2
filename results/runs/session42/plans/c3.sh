#!/usr/bin/env bash
# Session 42, third call, two H200s (nvidia-h200-x2):
#   bash results/runs/session42/plans/c3.sh 520
# GPU 0 (issue 28, 26): 1024x11008x4096, the one target problem without an H200 entry (session
# 41's model-guided run never tried the 128 x 128 tile there), tuned exhaustively over the
# promote and pipe families; gemm_tf32x3_wgmma_promote_splitk tuned on three NT problems of
# split-K's regime that no suite holds (psk-shapes.toml), and its winners added to the H200's
# NT coverage (`cover --add-winners`, every NT grid point); then the layer suite untuned again.
# GPU 1 (issue 26): the layer suite's NT problems with M <= 16 tuned (layers-nt-small.toml).
set -uo pipefail
LIMIT=${1:-520}
P=results/runs/session42/plans
(
  export CUDA_VISIBLE_DEVICES=0
  Q=/tmp/s42c3g0
  source scripts/gpu-queue.sh
  DB=$Q/tuning.toml
  [ -f "$DB" ] || cp results/tuning.toml "$DB"
  step l11008 110 "$AT" tune --shape 1024x11008x4096 --family gemm_tf32x3_wgmma_promote \
    --family gemm_tf32x3_wgmma_pipe --strategy exhaustive --time 100s --db "$Q/l11008.toml" \
    --summary "$Q/l11008.md" --journal-dir "$Q/journals"
  step psk 130 "$AT" tune --suite "$P/psk-shapes.toml" --family gemm_tf32x3_wgmma_promote_splitk \
    --strategy exhaustive --time 40s --db "$DB" --summary "$Q/psk.md" --journal-dir "$Q/journals"
  step add-psk 130 "$AT" cover --layout nt --add-winners 3 \
    --family gemm_tf32x3_wgmma_promote_splitk --db "$DB"
  cp "$DB" "$OUT/tuning-c3.toml"
  step layers-untuned 120 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned.md --json $Q/evaluate-gemm-layers-untuned.json"
  finish
) &
(
  export CUDA_VISIBLE_DEVICES=1
  Q=/tmp/s42c3g1
  source scripts/gpu-queue.sh
  step layers-nt-small $((LIMIT - 30)) "$AT" tune --suite "$P/layers-nt-small.toml" --time 20s \
    --db "$Q/layers.toml" --summary "$Q/layers-nt-small.md" --journal-dir "$Q/journals"
  finish
) &
wait
cat /tmp/s42c3g*/summary.txt | tee "$OUT/summary-c3.txt"
