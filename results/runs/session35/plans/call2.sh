#!/usr/bin/env bash
# Session 35, call 2 (the warm machine of call 1): compute-sanitizer (memcheck, racecheck,
# synccheck) over gemm_general_small_m_splitk on the edge shapes of every form, one GPU a tool.
set -uo pipefail
mkdir -p "$OUT/san"
for i in 0 1 2; do
  tool=$(echo memcheck racecheck synccheck | cut -d' ' -f$((i + 1)))
  (CUDA_VISIBLE_DEVICES=$i timeout 500 compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 50 \
    .gpu/autotune verify --db results/tuning.toml --edge-only --space-ends --in-process \
    --family gemm_general_small_m_splitk >"$OUT/san/san-gemm_general_small_m_splitk-$tool.log" 2>&1
   echo "$tool: exit $? $(grep -hE '(ERROR|RACECHECK) SUMMARY' "$OUT/san/san-gemm_general_small_m_splitk-$tool.log" | tr '\n' ' ') $(grep -c 'kernel(s) validated, 0 failed' "$OUT/san/san-gemm_general_small_m_splitk-$tool.log") shapes ok") &
done
wait
