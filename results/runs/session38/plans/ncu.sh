#!/usr/bin/env bash
# Session 38: where the 3xTF32 wgmma kernels' cycles go at 4096^3 (issue 28), next to cuBLAS's
# SGEMM: the plain winner (gemm_tf32x3_wgmma_rs, exact entry) and the NT prediction
# (gemm_tf32x3_wgmma), each exported as a CUDA header and launched by
# examples/cuda-header/profile.cu under Nsight Compute.
set -uo pipefail
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats"
d=/tmp/ncu; mkdir -p $d; cp examples/cuda-header/profile.cu $d/
for v in "nn:4096x4096x4096:" "nt:4096x4096x4096:nt:-DPROF_NT"; do
  IFS=: read -r name shape form flag <<<"$v"
  label=$shape${form:+:$form}; helper=autotune_gemm_$shape${form:+_$form}
  .gpu/autotune export --format cuda-header --gpu "$gpu" --op gemm --shape "$label" --db results/tuning.toml -o $d/gemm.cuh >$OUT/ncu-$name.txt 2>&1
  (cd $d && nvcc -std=c++17 -O2 -arch=sm_90a -DHELPER=$helper -DPROF_M=4096 -DPROF_N=4096 -DPROF_K=4096 $flag profile.cu -o profile-$name) >>$OUT/ncu-$name.txt 2>&1
  timeout 200 ncu --clock-control none --launch-skip 1 --launch-count 1 $S $d/profile-$name >>$OUT/ncu-$name.txt 2>&1
  echo "== $name rc $?"
done
timeout 200 ncu --clock-control none -k regex:gemm --launch-skip 1 --launch-count 1 $S python3 -c "
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.zeros(4096, 4096, device='cuda'); b = torch.zeros(4096, 4096, device='cuda')
for _ in range(3): c = a @ b
torch.cuda.synchronize()" >$OUT/ncu-cublas.txt 2>&1
echo "== cublas rc $?"
for f in $OUT/ncu-*.txt; do echo "## $f"; grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall|L1/TEX Hit|Bank|Executed Ipc A" $f | head -24; done
