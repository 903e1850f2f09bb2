#!/usr/bin/env bash
# GPU plan for issue 30 (several GPUs at full speed): the must-show measurements, on a machine
# with two GPUs of one kind (nvidia-h100-x2 / nvidia-h200-x2), without cargo: the binaries are
# in .gpu/ (bash scripts/build-gpu.sh on the build machine). Run from the repository root:
#
#   bash scripts/multi-gpu-plan.sh
#
# Measured on two H100s (session 32): warming the compile cache ~2 min; gemm suite, 8 shapes x
# 6 s, one GPU 51 s then two 27 s; one 4096^3 shape, exhaustive over its first 400 candidates,
# 73 s then 41 s. On a machine with four GPUs the 24-shape suite also runs on all four. It keeps
# within one call (LIMIT, default 570 s) and, through scripts/gpu-queue.sh, goes on where it
# stopped if called again on the same machine; SKIP="step ..." leaves out steps measured before.
# Every step logs under $Q/logs (archived to $OUT); the last lines printed are a table of the
# speedups (one GPU's wall time over two GPUs') and each device's busy time.
set -uo pipefail
cd "$(dirname "$0")/.."
export Q=${Q:-/tmp/multi-gpu}
export LIMIT=${LIMIT:-570}
# Lines of a step's log worth keeping in the summary.
export RESULT_LINES='unit\(s\), busy|^compile: NVRTC|^devices:|^Error|^error|two nodes|^node|SUMMARY'
# shellcheck source=scripts/gpu-queue.sh
source scripts/gpu-queue.sh
mkdir -p "$Q/db"
n=$(nvidia-smi -L | wc -l)
echo "GPUs: $n"; nvidia-smi -L
if [ "$n" -lt 2 ]; then
  echo "this plan needs two GPUs (nvidia-smi lists $n)"; finish; exit 1
fi
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d '.')
ARCH=sm_$cap
# The one compile cache of every step (the disk cache tuning runs and the runtime share); outside
# $Q, which finish archives into $OUT (the cache is too large to come back).
export AUTOTUNE_CACHE_DIR=${CACHE:-$Q-cache}
# SKIP: steps measured by an earlier call (on another machine), left out of this one.
for s in ${SKIP:-}; do touch "$Q/done/$s"; done

# 1. Warm the compile cache: every candidate of both suites for this arch, no GPU time. The
#    timed steps then compile nothing, so one GPU and two are compared on measuring alone.
step warm 240 "$AT" --suite configs/suites/mixed-24.toml --dry-run --arch "$ARCH"
step warm-gemm 120 "$AT" --suite configs/suites/gemm.toml --dry-run --arch "$ARCH"

# 2. The gemm suite, 6 s per shape: one GPU, then both (the same --time per shape).
step gemm-1 90 "$AT" --suite configs/suites/gemm.toml --time 6s --device 0 --db "$Q/db/gemm-1.toml"
step gemm-2 60 "$AT" --suite configs/suites/gemm.toml --time 6s --devices 0,1 --db "$Q/db/gemm-2.toml"

# 3. The mixed 24-shape suite, 4 s per shape (the largest, 6144^3, needs about 3 s for its first
#    candidate): one GPU, then two, then four where the machine has them.
step mixed-1 160 "$AT" --suite configs/suites/mixed-24.toml --time 4s --device 0 --db "$Q/db/mixed-1.toml"
step mixed-2 90 "$AT" --suite configs/suites/mixed-24.toml --time 4s --devices 0,1 --db "$Q/db/mixed-2.toml"
if [ "$n" -ge 4 ]; then
  step mixed-4 50 "$AT" --suite configs/suites/mixed-24.toml --time 4s --devices 0,1,2,3 --db "$Q/db/mixed-4.toml"
fi

# 4. One large shape, exhaustive over its first 400 candidates: one GPU, then its candidates
#    split between the two (each part takes every other candidate, so both runs measure the
#    same 400); the winners of both are printed below the table.
step exhaustive-1 70 "$AT" --shape 4096x4096x4096 --strategy exhaustive --budget 400 --device 0 --db "$Q/db/exh-1.toml"
step exhaustive-2 45 "$AT" --shape 4096x4096x4096 --strategy exhaustive --budget 400 --devices 0,1 --db "$Q/db/exh-2.toml"

# 5. cover on a grid of 48 points (12 pool searches of 8): one GPU, then two.
cat >"$Q/grid.toml" <<'GRID'
op = "gemm"
m = [256, 1024, 2048, 4096]
n = [256, 1024, 2048, 4096]
k = [256, 1024, 4096]
max_macs = 68719476736
pool_every = 4
GRID
step cover-1 90 "$AT" cover --op gemm --grid "$Q/grid.toml" --pool-budget 8 --portfolio 8 --device 0 --db "$Q/db/cover-1.toml"
step cover-2 40 "$AT" cover --op gemm --grid "$Q/grid.toml" --pool-budget 8 --portfolio 8 --devices 0,1 --db "$Q/db/cover-2.toml"

# 6. The cluster recipe on two local "nodes" (one GPU each, shards, then merge).
step two-nodes 70 env AUTOTUNE="$AT" AUTOTUNE_ARGS="--time 6s" bash scripts/two-nodes.sh configs/suites/gemm.toml "$Q/db/two-nodes.toml"

# The table: wall time of each step (from the summary), speedup, busy time of two-GPU steps.
secs() { sed -n "s/^== $1: rc 0, \([0-9]*\) s$/\1/p" "$Q/summary.txt" | tail -n1; }
{
  echo
  echo "SUMMARY multi-gpu ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1), $n GPUs)"
  printf 'SUMMARY %-12s %8s %8s %8s\n' run "1 GPU s" "2 GPU s" speedup
  for r in gemm mixed exhaustive cover; do
    a=$(secs "$r-1"); b=$(secs "$r-2")
    if [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt 0 ]; then
      printf 'SUMMARY %-12s %8s %8s %7sx\n' "$r" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
    else
      printf 'SUMMARY %-12s %8s %8s %8s\n' "$r" "${a:-?}" "${b:-?}" "n/a"
    fi
  done
  echo "SUMMARY two-nodes: $(secs two-nodes) s"
  a=$(secs mixed-1); b=$(secs mixed-4)
  [ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt 0 ] &&
    printf 'SUMMARY %-12s %8s %8s %7sx (four GPUs)\n' mixed-4 "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
  for r in gemm mixed exhaustive cover mixed-4; do
    log=$Q/logs/$r-2.log
    [ "$r" = mixed-4 ] && log=$Q/logs/mixed-4.log
    [ -f "$log" ] || continue
    grep -E 'unit\(s\), busy' "$log" | sed "s/^/SUMMARY busy $r: /"
    grep -E '^compile: NVRTC' "$log" | sed "s/^/SUMMARY $r: /"
  done
  for f in exh-1 exh-2; do
    [ -f "$Q/db/$f.toml" ] &&
      echo "SUMMARY winner $f: $(grep -E '^(kernel|median_ms|vs_cublas) =' "$Q/db/$f.toml" | tr '\n' ' ')"
  done
} | tee -a "$Q/summary.txt"
finish
