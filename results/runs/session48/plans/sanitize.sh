#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck, synccheck) over the given families on the edge shapes
# of every form (`verify --edge-only --space-ends --in-process --family F` on a copy of
# results/tuning.toml without its entries: each space's first and last config), one process per
# tool and family, all at once on this GPU; logs to DIR/<family>-<tool>.log, a line per log to
# stdout.
#   bash results/runs/session48/plans/sanitize.sh DIR TIMEOUT FAMILY...
set -uo pipefail
dir=$1 limit=$2
shift 2
mkdir -p "$dir"
db=$dir/no-entries.toml
python3 - results/tuning.toml "$db" <<'P'
import re, sys
parts = re.split(r'(?m)^(?=\[\[)', open(sys.argv[1]).read())
open(sys.argv[2], "w").write("".join(p for p in parts if not p.startswith(("[[entry]]", "[[coverage]]"))))
P
san=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
for fam in "$@"; do
  for tool in memcheck racecheck synccheck; do
    timeout "$limit" "$san" --tool "$tool" --error-exitcode 99 --print-limit 50 \
      .gpu/autotune verify --db "$db" --edge-only --space-ends --in-process \
      --family "$fam" >"$dir/$fam-$tool.log" 2>&1 &
  done
done
wait
rc=0
for f in "$dir"/*.log; do
  s=$(grep -hE "(ERROR|RACECHECK) SUMMARY" "$f" | sed 's/^========= //' | tr '\n' ' ')
  v=$(grep -hE "^verify: [0-9]+ kernel" "$f" | sed 's/ (max slowdown.*//')
  echo "$(basename "$f" .log): $v | ${s:-no summary (timed out?)}"
  echo "$s" | grep -q " 0 errors\| 0 hazards" || rc=1
done
exit $rc
