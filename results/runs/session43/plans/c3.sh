#!/usr/bin/env bash
# Session 43, third call, one H200 (nvidia-h200), issue 28 on the H200:
#   bash results/runs/session43/plans/c3.sh 540
# 1. Triton's tf32x3 (scripts/triton-tf32x3.py, autotuned over its configs, against cuBLAS SGEMM
#    through PyTorch in its own process) on session 39's tensor-core problems, for
#    scripts/tf32x3-vs-triton.py beside the H200's entries.
# 2. Nsight Compute on the shipped H200 winners of 1024x11008x4096, NN (gemm_tf32x3_wgmma_promote)
#    and NT (gemm_tf32x3_wgmma_pipe), each exported as a CUDA header and launched by
#    examples/cuda-header/profile.cu (zeros in, as session 38's), beside cuBLAS SGEMM and cuBLAS
#    TF32 (PyTorch, allow_tf32 off / on) on the same problem: where the NN kernel loses ~10% to
#    the NT one, and the tensor pipe's utilization of each.
set -uo pipefail
LIMIT=${1:-540}
Q=/tmp/s43c3
source scripts/gpu-queue.sh
step triton 200 python3 scripts/triton-tf32x3.py results/runs/session39/plans/tc-shapes.toml \
  --out "$Q/triton-h200.md"
cp "$Q/triton-h200.md" "$OUT/" 2>/dev/null

ncu_all() {
  local gpu d S M=1024 N=11008 K=4096 name form flag helper label
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
  S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__inst_executed.sum"
  d=/tmp/ncu; mkdir -p $d; cp examples/cuda-header/profile.cu $d/
  for v in "nn::" "nt:nt:-DPROF_NT"; do
    IFS=: read -r name form flag <<<"$v"
    label=${M}x${N}x${K}${form:+:$form}; helper=autotune_gemm_${M}x${N}x${K}${form:+_$form}
    .gpu/autotune export --format cuda-header --gpu "$gpu" --op gemm --shape "$label" \
      --db results/tuning.toml -o $d/gemm.cuh >"$Q/ncu-$name.txt" 2>&1
    (cd $d && nvcc -std=c++17 -O2 -arch=sm_90a -DHELPER=$helper -DPROF_M=$M -DPROF_N=$N \
      -DPROF_K=$K $flag profile.cu -o profile-$name) >>"$Q/ncu-$name.txt" 2>&1
    timeout 120 ncu --clock-control none --launch-skip 1 --launch-count 1 $S $d/profile-$name \
      >>"$Q/ncu-$name.txt" 2>&1
    echo "== $name rc $?"
  done
  for tf in 0 1; do
    timeout 120 ncu --clock-control none -k regex:'gemm|sm90|cutlass|xmma' --launch-skip 1 \
      --launch-count 1 $S python3 -c "
import torch
torch.backends.cuda.matmul.allow_tf32 = bool($tf)
a = torch.zeros($M, $K, device='cuda'); b = torch.zeros($K, $N, device='cuda')
for _ in range(3): c = a @ b
torch.cuda.synchronize()" >"$Q/ncu-cublas-tf32-$tf.txt" 2>&1
    echo "== cublas tf32=$tf rc $?"
  done
  for f in "$Q"/ncu-*.txt; do
    echo "## $f"
    grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Registers Per|Issue Slots Busy|No Eligible|Achieved Occupancy|tensor_op|pipe_fma|bank_conflicts|inst_executed.sum|Shared Memory Configuration Size|Dynamic Shared" "$f" | head -24
  done
}
step ncu 240 bash -c "$(declare -f ncu_all); Q=$Q; ncu_all"
cp "$Q"/ncu-*.txt "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
