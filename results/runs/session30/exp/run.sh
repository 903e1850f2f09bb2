#!/usr/bin/env bash
# Session 30 exploration call: M = 1 column-sum designs against cuBLAS (colsum.cu), and ncu on
# cuBLAS's kernels for the same problems. Output under $OUT/colsum.
set -u
cd "$(dirname "$0")"
o=$OUT/colsum; mkdir -p "$o"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$o/smi.txt" 2>&1
nvcc -O3 -std=c++17 -arch=sm_90a -Xptxas -v colsum.cu -lcublas -o "$o/colsum" > "$o/build.log" 2>&1 || { tail -30 "$o/build.log"; exit 1; }
(cd "$o" && timeout 300 ./colsum > table.md 2> err.log); echo "colsum rc $?"
(cd "$o" && timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__cluster_dim_x,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active ./colsum ncu > ncu.txt 2>&1); echo "ncu rc $?"
grep -E "^\s+[a-zA-Z_]+.*\(|gpu__time|grid_size|block_size|dram__throughput|dram__bytes" "$o/ncu.txt" | head -150 > "$o/ncu-short.txt"
cat "$o/table.md" | grep -v "^WRONG\|^NOLAUNCH" ; grep -c "^WRONG" "$o/table.md"; grep "^WRONG" "$o/table.md" | head -5; grep -c NOLAUNCH "$o/table.md"
