#!/usr/bin/env bash
# Session 41, the calls after c1.sh on the same warm machine (four GPUs), each sent at once:
#   bash results/runs/session41/plans/c2.sh 560
# On H200s (issues 26, 27): session 36's plan for the H200 (every form's grid with the H100's
# portfolios, then evaluations on fresh seeds, the layer suite untuned, the layouts suite, verify),
# which goes on where the last call on this machine stopped (state in /tmp/h200q).
# On H100s (issues 26, 28): session 40's plan: the plain grid and its unaligned extension
# measured again (the portfolio may now take the split-K and promote families, their 3xTF32
# configs timed under the accuracy rule), then the layer suite untuned and gemm on fresh seeds
# 3122 and 3123 (state in /tmp/s41q).
set -uo pipefail
if nvidia-smi -L | grep -q H200; then
  bash results/runs/session36/plans/h200.sh "${1:-560}"
else
  bash results/runs/session40/plans/next.sh "${1:-560}"
fi
