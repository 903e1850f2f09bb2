#!/usr/bin/env bash
# Session 31, call 6 (asked for an H200): verify re-validates and re-times every shipped entry
# of this GPU against cuBLAS (issue 27: every entry within noise of its recorded time after the
# refactors; issue 26 on the H200 where one comes).
set -uo pipefail
Q=/tmp/q6 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^verify"
step verify 520 "$AT" verify --db results/tuning.toml
finish
