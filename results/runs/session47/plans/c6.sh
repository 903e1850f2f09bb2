#!/usr/bin/env bash
# Session 47, one H200, sixth plan, on the device time left:
#   bash results/runs/session47/plans/c6.sh 200
# Issue 29: c5 measured the shipped extension's cached PyTorch call at +3.37 us over the Rust
# call (session 46 measured +1.15 to +1.52 on its last measured build, 9f324b5, with the C++
# reader present). Which change lost it: overhead_bench.py --gpu on three wheels built
# without the command line (.gpu47/w*/), in turns, in one process each:
#   A  this tree's extension (HEAD);
#   B  HEAD with session 46's first key hasher (a byte at a time);
#   C  9f324b5's extension and its benchmark (attributes, and the C++ reader built here).
# Not run in session 47 (no device time left). The wheels, built where cargo is, with no
# command line inside (rm -rf python/autotune/_bin first; maturin as scripts/python-wheel.sh
# finds it):
#   A: (cd python && maturin build --release --out ../.gpu47/wA)
#   B: the same with python/src/torch.rs's KeyHasher::write hashing a byte at a time
#      (9f324b5's: `for b in bytes { self.write_u64(u64::from(*b)); }`), into .gpu47/wB
#   C: git worktree add /tmp/wtC 9f324b5, the same build there into .gpu47/wC, and
#      git show 9f324b5:python/tests/overhead_bench.py > .gpu47/overhead_bench_9f324b5.py
set -uo pipefail
LIMIT=${1:-200}
Q=/tmp/s47c6
source scripts/gpu-queue.sh
RESULT_LINES="$RESULT_LINES|^  (Tuned|extension|torch_call|launch|Rust|Python|C\+\+|the C\+\+|runs)"
for w in A B C; do
  rm -rf /tmp/site$w && python3 -m pip install -q --no-deps --no-index --target /tmp/site$w \
    .gpu47/w$w/autotune-*.whl
done
bench() { # wheel script
  (cd /tmp && PYTHONPATH=/tmp/site$1 python3 "$2" --gpu)
}
for round in 1 2; do
  step "C-$round" 40 bash -c "$(declare -f bench); bench C $PWD/.gpu47/overhead_bench_9f324b5.py"
  step "A-$round" 20 bash -c "$(declare -f bench); bench A $PWD/python/tests/overhead_bench.py"
  step "B-$round" 20 bash -c "$(declare -f bench); bench B $PWD/python/tests/overhead_bench.py"
done
cp "$Q/summary.txt" "$OUT/" 2>/dev/null
finish
