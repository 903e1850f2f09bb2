#!/usr/bin/env bash
# Session 46, call 2 (one H200): where the Python call's time went. c1.sh measured the call
# at +1.16 us over the Rust call reading tensors' attributes and +1.15 us with the C++ reader,
# against session 44's +4.01 us (another H200). Here, on one machine, back to back: session
# 45's extension (f722b7d: the Python dict looked up with a tuple key on every call, its own
# overhead_bench.py) and this session's, twice each, and what one attribute read costs in
# Python (session 44's torch-attr-cost.py). Then issue 26's batched TT and NT grids (the
# H200's TT / NT portfolio configs that compute batches), checkpointed as in c1.sh.
#   bash results/runs/session46/plans/c2.sh 570
set -uo pipefail
LIMIT=${1:-570}
for f in .gpu46/*.xz; do [ -f "${f%.xz}" ] || xz -d -k -f "$f"; done
mkdir -p .gpu
cp -f .gpu46/autotune .gpu46/call_overhead .gpu/ && chmod +x .gpu/autotune .gpu/call_overhead
Q=/tmp/s46h200c2
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^  (Tuned|extension|torch_call|launch|Rust|Python|C\+\+|the C\+\+|runs)|^  t\.|^  type|^  raw|^  key"
DB=$Q/tuning.toml
[ -f "$DB" ] || cp results/tuning.toml "$DB"
install() { # wheel site
  rm -rf "$2" && python3 -m pip install -q --no-deps --no-index --target "$2" "$1"
}
install .gpu46/old/autotune-*.whl /tmp/site-old
install .gpu46/autotune-*.whl /tmp/site
for round in 1 2; do
  step "overhead-old-$round" 40 bash -c "cd /tmp && PYTHONPATH=/tmp/site-old python3 \
    $PWD/.gpu46/old/overhead_bench.py --gpu --rust $PWD/.gpu/call_overhead"
  step "overhead-new-$round" 40 bash -c "cd /tmp && PYTHONPATH=/tmp/site python3 \
    $PWD/python/tests/overhead_bench.py --gpu --rust $PWD/.gpu/call_overhead"
done
step attr-cost 30 python3 results/runs/session44/torch-attr-cost.py
[ -f "$Q/logs/batched-tt.log" ] && touch "$Q/done/batched-tt"
step batched-tt 60 "$AT" cover --op gemm --layout tt --batch 16 --portfolio-from h200 \
  --devices all --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
[ -f "$Q/logs/batched-nt.log" ] && touch "$Q/done/batched-nt"
step batched-nt 60 "$AT" cover --op gemm --layout nt --batch 16 --portfolio-from h200 \
  --devices all --db "$DB"
cp "$DB" "$OUT/tuning.toml" 2>/dev/null
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
