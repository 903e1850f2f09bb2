#!/usr/bin/env bash
# Session 42, sixth call, one H200 (nvidia-h200), on the device time left:
#   bash results/runs/session42/plans/c6.sh
# 1024x11008x4096:nt over the promote and pipe families, exhaustive (its shipped H200 entry is a
# 192 x 64 tile at 1.112: session 41's model-guided run never tried 128 x 128 there).
set -uo pipefail
Q=/tmp/s42c6
mkdir -p $Q
.gpu/autotune tune --shape 1024x11008x4096:nt --family gemm_tf32x3_wgmma_promote \
  --family gemm_tf32x3_wgmma_pipe --strategy exhaustive --time 90s --db "$Q/l11008nt.toml" \
  --summary "$Q/l11008nt.md" --journal-dir "$Q/journals" 2>&1 | tail -16 | tee "$Q/log.txt"
tar czf "$OUT/s42c6.tgz" -C /tmp s42c6
