#!/usr/bin/env bash
# Session 32, call 4 (the same warm machine as call 3): issue 30's plan goes on where call 3
# left it (scripts/gpu-queue.sh skips the steps done).
set -uo pipefail
LIMIT=${1:-570} bash scripts/multi-gpu-plan.sh
