#!/usr/bin/env bash
# Nsight Compute on the database's ($DB) kernels for three problems beside cuBLAS's SGEMM and
# TF32 GEMM (through PyTorch) on the same problem: stall reasons, pipe use, and the tensor
# pipes' utilization. Writes $1/ncu-*.txt.
set -uo pipefail
out=$1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --metrics regex:sm__pipe_tensor.*pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio"
d=/tmp/ncu39; mkdir -p $d; cp examples/cuda-header/profile.cu $d/
for v in "4096x4096x4096:nt" "1024x14336x4096:nt" "4096x4096x4096:"; do
  IFS=: read -r shape form <<<"$v"
  IFS=x read -r m n k <<<"$shape"
  name=$shape${form:+-$form}; helper=autotune_gemm_$shape${form:+_$form}
  flag=; [ "$form" = nt ] && flag=-DPROF_NT
  f=$out/ncu-$name.txt
  .gpu/autotune export --format cuda-header --gpu "$gpu" --op gemm --shape "$shape${form:+:$form}" --db "$DB" -o $d/gemm.cuh >$f 2>&1
  (cd $d && nvcc -std=c++17 -O2 -arch=sm_90a -DHELPER=$helper -DPROF_M=$m -DPROF_N=$n -DPROF_K=$k $flag profile.cu -o profile-$name) >>$f 2>&1
  timeout 100 ncu --clock-control none --launch-skip 1 --launch-count 1 --print-details all $S $d/profile-$name >>$f 2>&1
  echo "== ncu $name rc $?"
  [ "$shape" = 4096x4096x4096 ] || continue
  for tf32 in False True; do
    timeout 100 ncu --clock-control none -k regex:'gemm|sm90|xmma|cutlass' --launch-skip 1 --launch-count 1 --print-details all $S python3 -c "
import torch
torch.backends.cuda.matmul.allow_tf32 = $tf32
nt = '$form' == 'nt'
a = torch.rand($m, $k, device='cuda'); b = torch.rand(($n, $k) if nt else ($k, $n), device='cuda')
for _ in range(3): c = a @ (b.t() if nt else b)
torch.cuda.synchronize()" >$out/ncu-cublas-$name-tf32$tf32.txt 2>&1
    echo "== ncu cuBLAS $name tf32=$tf32 rc $?"
  done
done
