#!/usr/bin/env bash
# Session 40, last call (asked as nvidia-h200; such a call may get an H100):
#   bash results/runs/session40/plans/verify.sh 400
# `autotune verify` of every shipped entry of the GPU there (issue 27: every entry current and
# within noise of its recorded time; on an H100 also this session's new split-K entries).
set -uo pipefail
Q=/tmp/s40v LIMIT=${1:-400}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^verify: [0-9]"
step verify 300 "$AT" verify --db results/tuning.toml --in-process
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
