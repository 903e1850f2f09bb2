#!/usr/bin/env bash
# Session 29, call 2: the GPU tests one by one with their output (call 1's full run was cut at
# its time limit after every_gemm_config_validates_on_awkward_shapes had FAILED), then the
# sanitizers of queue1.sh. State in /tmp/q2.
set -uo pipefail
Q=/tmp/q2 LIMIT=${1:-570}
source scripts/gpu-queue.sh
RESULT_LINES='^test result|validated|failed|FAILED|panicked|SUMMARY| on [0-9]+x[0-9]+'
T=".gpu/gpu-tests --include-ignored --test-threads=1 --nocapture"
step gemm-awkward 300 $T every_gemm_config_validates_on_awkward_shapes
step full-forms 150 $T full_interface_families_validate_every_form
step rest 240 $T --skip every_gemm_config --skip every_gemv_config --skip full_interface --skip cross_isolates --skip deterministic --skip fault_suite
finish
