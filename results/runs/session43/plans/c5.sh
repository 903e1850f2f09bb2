#!/usr/bin/env bash
# Session 43, fifth call, the same warm machine as call 4 (two H200s), on the device time left
# (sent as this one command line): the alpha and beta gemm grids widened as call 4 widened the
# plain one, in call 4's database.
Q=/tmp/s43c4; DB=$Q/tuning.toml
for fl in "--alpha 2" "--beta 1"; do
  # shellcheck disable=SC2086
  timeout 100 .gpu/autotune cover --op gemm $fl --add-winners 2 \
    --family gemm_tf32x3_wgmma_promote --family gemm_tf32x3_wgmma_pipe --devices all --db $DB 2>&1 |
    grep -E "^cover|leave-one-out|x cuBLAS|rror"
  echo "rc $?"
done
cp $DB "$OUT/tuning.toml"
