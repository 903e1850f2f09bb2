#!/usr/bin/env bash
# Session 43, fourth call, two H200s (nvidia-h200-x2), on the device time left:
#   bash results/runs/session43/plans/c4.sh 400
# The H200's plain gemm coverage (measured before the pipe and promote families existed) has no
# tensor-core config in its portfolio, so plain calls nobody tuned never get one: add the two
# fastest current winners of those families (cover --add-winners, timed on every grid point
# beside cuBLAS), then the layer suite untuned through the widened database.
set -uo pipefail
LIMIT=${1:-400}
Q=/tmp/s43c4
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^cover: widening"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
step add-plain 250 "$AT" cover --op gemm --add-winners 2 --family gemm_tf32x3_wgmma_promote \
  --family gemm_tf32x3_wgmma_pipe --devices all --db "$DB"
cp "$DB" "$OUT/tuning.toml"
step layers-untuned 80 bash -c "$(declare -f without_suite); without_suite $DB configs/suites/gemm-layers.toml $Q/db-nolayers.toml && $AT evaluate --shapes configs/suites/gemm-layers.toml --devices all --db $Q/db-nolayers.toml --out $Q/evaluate-gemm-layers-untuned-h200.md --json $Q/evaluate-gemm-layers-untuned-h200.json"
cp "$Q"/evaluate-* "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
