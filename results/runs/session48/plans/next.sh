#!/usr/bin/env bash
# Session 48's plan for the next device time (not run: none was left), one H200:
#   bash results/runs/session48/plans/next.sh 540
# Binaries: autotune and the GPU tests built from this tree (scripts/build-gpu.sh), xz-compressed
# into .gpu48/ (the ones session 48's calls ran predate FASTLOAD: rebuild them). More than one
# call's work: the queue goes on where the last call stopped while the machine stays warm.
# 1. Issue 28: the layer suite untuned through results/tuning.toml (the NT widening of call 4
#    included; call 3 measured it before).
# 2. Issue 28: FASTLOAD (reads without checks, added after the calls): the GPU tests of the four
#    truncating families, then those families tuned exhaustively again on call 1's problems
#    into databases of their own (merge them over results/tuning.toml where cargo is).
# 3. Issue 28: the TN, TT, alpha and beta gemm grids widened with three TRUNC 1 winners of the
#    truncating families each (cover --add-winners; about 80-140 s each on session 47's
#    figures for the same step).
# `cover --add-winners` adds only winners that may serve shapes nobody tuned (TRUNC 1, chains of
# one K tile), and the database's entries of the truncating families are mostly TRUNC 2: the
# cover steps run on a copy whose TRUNC 2 entries are replaced by ../t1.toml's (each problem's
# fastest TRUNC 1 config with chains of one, from call 1's journals), as calls 2 and 4 did. The
# copy comes back as $OUT/tuning.toml after each step; then, where cargo is:
#   autotune merge -o results/tuning.toml $OUT/tuning.toml results/runs/session48/nn-h200.toml \
#     results/runs/session48/nt-h200.toml results/runs/session48/big-h200.toml
# (the faster entry stays: the TRUNC 2 winners come back; drop nn-h200.toml's 64x4096x14336,
# 0.972x, first), then scripts/loo-table.sh and scripts/results-readme.sh.
set -uo pipefail
LIMIT=${1:-540}
Q=/tmp/s48next
source scripts/gpu-queue.sh
carried .gpu48 autotune gpu-tests || exit 1
DB=$Q/tuning.toml
if [ ! -f "$DB" ]; then
  python3 - results/tuning.toml "$Q/no-trunc2.toml" <<'P'
import re, sys
parts = re.split(r'(?m)^(?=\[\[)', open(sys.argv[1]).read())
drop = lambda p: p.startswith("[[entry]]") and re.search(r'(?m)^params = .*\bTRUNC = 2\b', p)
open(sys.argv[2], "w").write("".join(p for p in parts if not drop(p)))
P
  "$AT" merge -o "$DB" "$Q/no-trunc2.toml" results/runs/session48/t1.toml
fi
FAM="--family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_splitk_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc"
# The layer suite untuned drops the suite's entries, so the swap above does not touch it.
step layers-untuned 60 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h200.md --json $Q/evaluate-gemm-layers-untuned-h200.json"
cp "$Q"/evaluate-*.md "$Q"/evaluate-*.json "$OUT/" 2>/dev/null
TRUNC_FAMILIES=gemm_tf32x3_wgmma_trunc,gemm_tf32x3_wgmma_cols_trunc,gemm_tf32x3_wgmma_splitk_trunc,gemm_tf32x3_wgmma_cols_splitk_trunc
step tests 200 env AUTOTUNE_TF32X3_FAMILIES=$TRUNC_FAMILIES .gpu/gpu-tests --include-ignored tf32x3
R=results/runs/session48
step fast-nn 240 "$AT" tune --suite $R/trunc-nn-shapes.toml \
  --family gemm_tf32x3_wgmma_cols_trunc --family gemm_tf32x3_wgmma_cols_splitk_trunc \
  --strategy exhaustive --time 60s --db "$Q/fast-nn.toml" --summary "$Q/fast-nn.md" --journal-dir "$Q/journals"
step fast-nt 170 "$AT" tune --suite $R/trunc-nt-shapes.toml \
  --family gemm_tf32x3_wgmma_trunc --family gemm_tf32x3_wgmma_splitk_trunc \
  --strategy exhaustive --time 60s --db "$Q/fast-nt.toml" --summary "$Q/fast-nt.md" --journal-dir "$Q/journals"
cp "$Q"/fast-*.toml "$Q"/fast-*.md "$OUT/" 2>/dev/null
# name, estimate (s), the grid's form
for grid in "tn 120 --layout tn" "tt 140 --layout tt" "alpha 140 --alpha 2" "beta 140 --beta 1"; do
  set -- $grid
  step "cover-$1" "$2" "$AT" cover --op gemm "$3" "$4" --add-winners 3 $FAM --db "$DB"
  cp "$DB" "$OUT/tuning.toml"
done
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
