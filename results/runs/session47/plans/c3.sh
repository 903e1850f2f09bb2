#!/usr/bin/env bash
# Session 47, one H200, third plan:
#   bash results/runs/session47/plans/c3.sh 570
# 1. Nsight Compute on 1024x14336x4096, NN (gemm_tf32x3_wgmma_cols, c1) and NT
#    (gemm_tf32x3_wgmma_pipe), with the warps' stall reasons and shared-memory wavefronts: why
#    the NN kernel is ~10% slower than the NT one on the same tile even with B read by
#    columns.
# 2. gemm on a fresh seed (3137), 60 random problems over every form, with the guard and
#    without (no tuning: no kernel regret), through $DB (c2's database, carried as
#    .gpu47/tuning.toml).
# 3. c2's last steps: the alpha and beta NN grids widened with three of the new column-read
#    families' winners, checkpointed into $DB.
set -uo pipefail
LIMIT=${1:-570}
for f in .gpu47/*.xz; do xz -d -k -f "$f"; done
mkdir -p .gpu && cp -f .gpu47/autotune .gpu/ && chmod +x .gpu/autotune
Q=/tmp/s47c3
source scripts/gpu-queue.sh
DB=$Q/tuning.toml
[ -f "$DB" ] || cp .gpu47/tuning.toml "$DB"
FAM="--family gemm_tf32x3_wgmma_cols --family gemm_tf32x3_wgmma_cols_splitk"

ncu_all() {
  local gpu d S M=1024 N=14336 K=4096 name form flag helper label
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
  S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
  d=/tmp/ncu; mkdir -p $d; cp examples/cuda-header/profile.cu $d/
  for v in "nn::" "nt:nt:-DPROF_NT"; do
    IFS=: read -r name form flag <<<"$v"
    label=${M}x${N}x${K}${form:+:$form}; helper=autotune_gemm_${M}x${N}x${K}${form:+_$form}
    .gpu/autotune export --format cuda-header --gpu "$gpu" --op gemm --shape "$label" \
      --db "$DB" -o $d/gemm.cuh >"$Q/ncu-$name.txt" 2>&1
    (cd $d && nvcc -std=c++17 -O2 -arch=sm_90a -DHELPER=$helper -DPROF_M=$M -DPROF_N=$N \
      -DPROF_K=$K $flag profile.cu -o profile-$name) >>"$Q/ncu-$name.txt" 2>&1
    timeout 120 ncu --clock-control none --launch-skip 1 --launch-count 1 $S $d/profile-$name \
      >>"$Q/ncu-$name.txt" 2>&1
    echo "== $name rc $?"
  done
}
step ncu 120 bash -c "$(declare -f ncu_all); Q=$Q; DB=$DB; ncu_all"
cp "$Q"/ncu-*.txt "$OUT/" 2>/dev/null
step eval-gemm-3137 200 "$AT" evaluate --op gemm --random 60 --seed 3137 --forms all \
  --db "$DB" --out "$Q/evaluate-gemm-3137-h200.md" --json "$Q/evaluate-gemm-3137-h200.json"
cp "$Q"/evaluate-*.md "$Q"/evaluate-*.json "$OUT/" 2>/dev/null
step cover-alpha 140 "$AT" cover --op gemm --alpha 2 --add-winners 3 $FAM --db "$DB"
cp "$DB" "$OUT/tuning.toml"
step cover-beta 140 "$AT" cover --op gemm --beta 1 --add-winners 3 $FAM --db "$DB"
cp "$DB" "$OUT/tuning.toml"
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
