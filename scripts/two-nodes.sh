#!/usr/bin/env bash
# The cluster recipe of docs/multi-gpu.md (Slurm: one shard per job-array task, then
# `autotune merge`) run end to end on ONE machine with two GPUs, as two "nodes": two processes,
# one GPU each (CUDA_VISIBLE_DEVICES=0 and =1), sharing nothing but the merge. Each tunes its
# shard, `--shard i/2`, into its own database (DB with .shard-i-of-2 before the extension), as a
# Slurm task would from SLURM_ARRAY_TASK_ID; then the shards (and DB, if it exists) are merged
# into DB.
#
#   bash scripts/two-nodes.sh SUITE [DB]
#   AUTOTUNE_ARGS="--time 3s" bash scripts/two-nodes.sh configs/suites/gemm.toml /tmp/two.toml
#
# AUTOTUNE: the binary (default: .gpu/autotune where scripts/build-gpu.sh put it, else
# `autotune` on PATH). AUTOTUNE_ARGS: extra options for both nodes. Each node's log is
# DB.node-i.log. Exits non-zero if a node or the merge failed.
set -euo pipefail
cd "$(dirname "$0")/.."
suite=${1:?usage: bash scripts/two-nodes.sh SUITE [DB]}
db=${2:-results/tuning.toml}
if [ -n "${AUTOTUNE:-}" ]; then
  at=$AUTOTUNE
elif [ -x .gpu/autotune ]; then
  at=$PWD/.gpu/autotune
else
  at=autotune
fi
# Worker processes start this binary.
export AUTOTUNE_BIN=${AUTOTUNE_BIN:-$at}
base=${db%.toml}
read -r -a extra <<<"${AUTOTUNE_ARGS:-}"
start=$SECONDS
pids=()
for i in 0 1; do
  # A node sees one GPU (as device 0) and knows only its shard.
  CUDA_VISIBLE_DEVICES=$i "$at" --suite "$suite" --shard "$i/2" --db "$db" "${extra[@]}" \
    >"$base.node-$i.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in 0 1; do
  if wait "${pids[$i]}"; then
    echo "node $i: done in $((SECONDS - start)) s ($base.node-$i.log)"
  else
    echo "node $i: FAILED (see $base.node-$i.log):"
    tail -n 5 "$base.node-$i.log"
    failed=1
  fi
done
[ "$failed" = 0 ] || exit 1
inputs=("$base.shard-0-of-2.toml" "$base.shard-1-of-2.toml")
[ -f "$db" ] && inputs+=("$db")
"$at" merge "${inputs[@]}" -o "$db"
echo "two nodes: tuned and merged into $db in $((SECONDS - start)) s"
