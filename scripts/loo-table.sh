#!/usr/bin/env bash
# Regenerates results/untuned/leave-one-out.md from the shipped database, no GPU:
# `autotune cover --loo` on every coverage record (GPU, op, form) it holds.
set -euo pipefail
cd "$(dirname "$0")/.."
AT=${AUTOTUNE:-target/release/autotune}
DB=${DB:-results/tuning.toml}
OUT=${OUT:-results/untuned/leave-one-out.md}
records=$(python3 - "$DB" <<'P'
import sys, tomllib
d = tomllib.load(open(sys.argv[1], "rb"))
for c in d.get("coverage", []):
    f = c.get("form", {})
    flags = []
    if f.get("layout", "nn") not in ("nn",):
        flags += ["--layout", f["layout"]]
    if f.get("beta"):
        flags += ["--beta", "1"]
    if f.get("scaled"):
        flags += ["--alpha", "2"]
    if f.get("padded"):
        flags += ["--padded"]
    if f.get("batch", 1) != 1:
        flags += ["--batch", str(f["batch"])]
    print(c["gpu"] + "\t" + c["op"] + "\t" + " ".join(flags))
P
)
{
  echo "# Leave-one-out on the coverage grids"
  echo
  echo "\`autotune cover --loo --op OP --gpu GPU\` (with the form's flags) on \`$DB\` (no GPU; \`scripts/loo-table.sh\` writes this file): each grid point predicted from the others (its nearest neighbours are then twice as far as a shape between grid points has them), scored by what was measured there. Regret is against the best of the portfolio at that point. One block per coverage record: GPU, op and form."
  while IFS=$'\t' read -r gpu op flags; do
    echo
    echo '```'
    # shellcheck disable=SC2086
    "$AT" cover --loo --db "$DB" --gpu "$gpu" --op "$op" $flags
    echo '```'
  done <<<"$records"
} >"$OUT"
echo "wrote $OUT"
