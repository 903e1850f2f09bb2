#!/usr/bin/env bash
# Everything GPU-side in one call, building nothing: GPU tests, then tuning runs against cuBLAS.
# Run scripts/build-gpu.sh first (where cargo is), carry .gpu/ to the GPU machine.
# Full logs and the database go to $OUT (default: a temp dir); a short table is printed last.
#   SHAPES="2048x2048x2048 4096x4096x4096" OP=gemm bash scripts/gpu.sh
#   SUITES="configs/suites/gemv.toml" SHAPES= bash scripts/gpu.sh     # whole suites
#   SKIP_TESTS=1 skips the GPU tests; GPU_TESTS_FILTER=name runs only the tests matching it.
#   DETERMINISTIC_SHAPES="128x128x8192" tunes those gemm shapes with --deterministic (unsaved).
#   DB_FROM=file starts from that database, not results/tuning.toml.
#   FAULTS=1 tunes the fault suite (tests/data/faults) through the CLI.
#   KILL_RESUME=1 kills a tune with -9 halfway and finishes it with --resume.
#   SASS=1 dumps the SASS and register use of the gemm winners of SASS_SHAPES (cuobjdump).
#   COLD_WARM=1 tunes COLD_SHAPE twice, with an empty then a warm compile cache (timed).
#   NCU=1 profiles the gemm winner of NCU_SHAPE and cuBLAS's SGEMM with Nsight Compute.
#   CROSS=1 runs every GPU's winner of CROSS_SUITE here (`autotune cross`) into
#   $OUT/portability.json (starting from results/portability.json) and portability.md.
#   COVER="gemm gemv" measures those ops' coverage grids (`autotune cover`) into the database;
#   COVER_EXTEND="configs/coverage/gemm-unaligned.toml" then adds those grids (of the same op).
#   EVAL_FIRST="suite.toml ..." evaluates those suites (`evaluate --shapes`) before any tuning
#   (EVAL_FIRST_ARGS), writing $OUT/evaluate-<suite>-untuned.md.
#   EVALUATE="gemm:50 gemv:30" runs `autotune evaluate` on that many seeded random shapes per op
#   (EVAL_SEEDS, default 2026; EVAL_ARGS), writing $OUT/evaluate-<op>-<seed>.md; ONLINE=N tries online tuning on N shapes.
#   The GPU tests' randomized sweep: AUTOTUNE_SWEEP=quick (default, ~100 problems) or full (1,000);
#   AUTOTUNE_PTX_ARCH=compute_75 runs every sweep through PTX for that arch (JIT by the driver).
#   VERIFY=1 runs `autotune verify` on the database (cubins, then PTX for VERIFY_PTX_ARCH, default
#   compute_75) and on doctored copies that must fail: a time halved, a checksum changed, an
#   off-by-one write injected into a --spaces copy of gemm_tiled; exit codes go to summary.txt.
#   SANITIZE=1 runs compute-sanitizer (SANITIZE_TOOLS, default memcheck racecheck synccheck) over
#   `autotune verify --edge-only --space-ends --in-process` (this GPU's winners and every space's
#   first and last config on the edge shapes; SANITIZE_VERIFY_ARGS adds options, e.g. --op gemm),
#   logging $OUT/sanitizer-<tool>.log and each tool's SUMMARY line; SANITIZE_PER_FAMILY=1 runs
#   one sanitizer process per family at once (verify --family), a summary line per family
#   (SANITIZE_FAMILIES="a b" only those).
#   NVRTC12=.nvrtc validates the sm_61 (GTX 1080 Ti) code path: NVRTC 12 from the xz-compressed
#   libraries in that directory (scripts/build-gpu.sh puts them there) compiles PTX for
#   compute_61, run by the randomized sweep (NVRTC12_SWEEP=quick|full) and verify.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
OP=${OP:-gemm}
SHAPES=${SHAPES-"2048x2048x2048 4096x4096x4096"}
SUITES=${SUITES:-}
DB="$OUT/tuning.toml"
# The database to start from (and update): DB_FROM, else results/tuning.toml.
if [ -n "${DB_FROM:-}" ] && [ ! -f "$DB_FROM" ]; then
  echo "gpu.sh: DB_FROM=$DB_FROM does not exist; give the path of a tuning database" >&2
  exit 2
fi
DB_FROM=${DB_FROM:-results/tuning.toml}
[ -f "$DB_FROM" ] && [ "$DB_FROM" != "$DB" ] && cp "$DB_FROM" "$DB"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
# The GPU tests start workers from the carried binary, not the path cargo built it at.
export AUTOTUNE_BIN="$PWD/.gpu/autotune"
status=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  start=$SECONDS
  .gpu/gpu-tests --include-ignored --test-threads=1 --nocapture ${GPU_TESTS_FILTER:-} >"$OUT/gpu-tests.log" 2>&1 || status=1
  echo "gpu tests: $(grep -E '^test result' "$OUT/gpu-tests.log" | tail -1) ($((SECONDS - start)) s)" | tee -a "$OUT/summary.txt"
  grep -E "validated|skipped|^sweep" "$OUT/gpu-tests.log" | tee -a "$OUT/summary.txt"
fi
# Suites evaluated before this run tunes anything (EVAL_FIRST="configs/suites/gemm-layers.toml"):
# what a product gets on those problems from the database as it ships, none of them tuned
# (EVAL_FIRST_ARGS adds options, e.g. --tune-budget 40 for the best a search finds there).
for suite in ${EVAL_FIRST:-}; do
  start=$SECONDS
  name="evaluate-$(basename "$suite" .toml)-untuned"
  .gpu/autotune evaluate --shapes "$suite" --db "$DB" --out "$OUT/$name.md" --json "$OUT/$name.json" \
    ${EVAL_FIRST_ARGS:-} >"$OUT/$name.log" 2>&1 || status=1
  { echo "== $name: $((SECONDS - start)) s"; grep -A14 "^summary" "$OUT/$name.log"; grep "^Error" "$OUT/$name.log"; } | tee -a "$OUT/summary.txt"
done
# Tuning first, so that verify, the sanitizer, coverage and evaluations see the database
# as it will ship.
for shape in $SHAPES; do
  start=$SECONDS
  .gpu/autotune --op "$OP" --shape "$shape" --db "$DB" --top 5 ${AUTOTUNE_ARGS:-} >"$OUT/tune-$OP-$shape.log" 2>&1 || status=1
  {
    echo "== $OP $shape: whole run $((SECONDS - start)) s"
    grep -E "^space |^ *#|^ *1 |^ *2 |^ *- |failed|wall time|Error" "$OUT/tune-$OP-$shape.log" | head -14
  } | tee -a "$OUT/summary.txt"
done
for shape in ${DETERMINISTIC_SHAPES:-}; do
  # The best deterministic kernel of the shape, beside the database's (any kind), unsaved.
  .gpu/autotune --op gemm --shape "$shape" --deterministic --no-save --top 3 ${AUTOTUNE_ARGS:-} >"$OUT/det-$shape.log" 2>&1 || status=1
  { echo "== gemm $shape, deterministic kernels only"; grep -E "^ *1 |Error" "$OUT/det-$shape.log"; } | tee -a "$OUT/summary.txt"
done
for suite in $SUITES; do
  name=$(basename "$suite" .toml)
  start=$SECONDS
  .gpu/autotune --suite "$suite" --db "$DB" --top 5 --summary "$OUT/suite-$name.md" ${AUTOTUNE_ARGS:-} >"$OUT/suite-$name.log" 2>&1 || status=1
  {
    echo "== suite $name: whole run $((SECONDS - start)) s"
    grep -E "^Error" "$OUT/suite-$name.log"
    cat "$OUT/suite-$name.md" 2>/dev/null
  } | tee -a "$OUT/summary.txt"
done
if [ "${VERIFY:-0}" = 1 ]; then
  # Trust what ships: the database must pass; doctored copies must not (exit 1 each).
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
  vdir="$OUT/../verify"; rm -rf "$vdir"; mkdir -p "$vdir"
  vrun() { # name, expected exit, args...
    local name=$1 want=$2; shift 2
    local start=$SECONDS
    .gpu/autotune verify "$@" >"$OUT/verify-$name.log" 2>&1
    local rc=$?
    local verdict=ok; [ "$want" = 0 ] && [ $rc != 0 ] && verdict=UNEXPECTED
    [ "$want" = 1 ] && [ $rc != 1 ] && verdict=UNEXPECTED
    [ $verdict = ok ] || status=1
    {
      echo "== verify $name: exit $rc (expected $want: $verdict, $((SECONDS - start)) s)"
      grep -E "^verify: [0-9]+ kernel|^Error|^#[0-9]+ " "$OUT/verify-$name.log" | head -12
    } | tee -a "$OUT/summary.txt"
  }
  vrun shipped 0 --db "$DB" ${VERIFY_ARGS:-}
  vrun shipped-json 0 --db "$DB" --quick --json ${VERIFY_ARGS:-}
  vrun ptx-${VERIFY_PTX_ARCH:-compute_75} 0 --db "$DB" --quick --ptx-arch "${VERIFY_PTX_ARCH:-compute_75}" ${VERIFY_ARGS:-}
  # The doctored copies change this GPU's first gemm entry; verify that entry only.
  doctor() { # what (halve|checksum), output
    python3 - "$DB" "$gpu" "$1" "$2" <<'PY'
import re, sys
src, gpu, what, out = sys.argv[1:]
text = open(src).read()
blocks = text.split("\n[[entry]]\n")
for i, b in enumerate(blocks[1:], 1):
    if f'gpu = "{gpu}"' in b and 'op = "gemm"' in b:
        if what == "halve":
            b = re.sub(r"^(median_ms|min_ms) = ([0-9.eE+-]+)$", lambda m: f"{m.group(1)} = {float(m.group(2)) / 2}", b, flags=re.M)
        else:
            b = re.sub(r'^checksum = "([0-9a-f]*)"$', lambda m: 'checksum = "' + ("0" * len(m.group(1)) if m.group(1) else "0") + '"', b, flags=re.M)
        blocks[i] = b
        print(re.search(r'^shape = "([^"]+)"', b, re.M).group(1))
        break
else:
    sys.exit(f"no gemm entry of {gpu} in {src}")
open(out, "w").write("\n[[entry]]\n".join(blocks))
PY
  }
  if shape=$(doctor halve "$vdir/halved.toml"); then
    vrun halved-time 1 --db "$vdir/halved.toml" --op gemm --shape "$shape" --quick
    grep -q "SLOWER" "$OUT/verify-halved-time.log" || { echo "   (no SLOWER verdict in the log)" | tee -a "$OUT/summary.txt"; status=1; }
  else
    echo "== verify halved-time: could not doctor the database" | tee -a "$OUT/summary.txt"; status=1
  fi
  if shape=$(doctor checksum "$vdir/stale.toml"); then
    vrun stale-checksum 1 --db "$vdir/stale.toml" --op gemm --shape "$shape" --quick
    grep -q "STALE" "$OUT/verify-stale-checksum.log" || { echo "   (no STALE verdict in the log)" | tee -a "$OUT/summary.txt"; status=1; }
  else
    echo "== verify stale-checksum: could not doctor the database" | tee -a "$OUT/summary.txt"; status=1
  fi
  # An off-by-one write (row <= M) in a --spaces copy of gemm_tiled: only the spaces' ends
  # are verified (no entry has shape 7x7x7), so validation alone must catch it.
  mkdir -p "$vdir/broken/configs" && cp -r templates "$vdir/broken/" && cp -r configs/spaces "$vdir/broken/configs/"
  sed -i 's/if (row < M \&\& col < N) {/if (row <= M \&\& col < N) {/' "$vdir/broken/templates/gemm_tiled.cu"
  if grep -q "row <= M" "$vdir/broken/templates/gemm_tiled.cu"; then
    vrun broken-kernel 1 --db "$DB" --spaces "$vdir/broken" --op gemm --shape 7x7x7 --space-ends --edge-only
    grep -q "gemm_tiled.*FAILED\|out of bounds" "$OUT/verify-broken-kernel.log" || { echo "   (gemm_tiled not reported FAILED)" | tee -a "$OUT/summary.txt"; status=1; }
  else
    echo "== verify broken-kernel: could not inject the off-by-one into gemm_tiled.cu" | tee -a "$OUT/summary.txt"; status=1
  fi
fi
if [ "${SANITIZE:-0}" = 1 ]; then
  # compute-sanitizer over every family's representative configs on the edge shapes, in this
  # process (no workers) so that the sanitizer sees every kernel.
  san=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
  if [ ! -x "$san" ]; then
    echo "== sanitizer: skipped: compute-sanitizer is not on PATH nor at ${CUDA_HOME:-/usr/local/cuda}/bin" | tee -a "$OUT/summary.txt"
  else
    # verify on the edge shapes under the sanitizer `tool` (extra verify options after it).
    sanitized() {
      local tool=$1; shift
      timeout "${SANITIZE_TIMEOUT:-1200}" "$san" --tool "$tool" --error-exitcode 99 --print-limit 50 \
        .gpu/autotune verify --db "$DB" --edge-only --space-ends --in-process "$@" ${SANITIZE_VERIFY_ARGS:-}
    }
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
      start=$SECONDS
      if [ "${SANITIZE_PER_FAMILY:-0}" = 1 ]; then
        # One sanitizer process per family, all at once: racecheck over every family in one
        # process ran past 100 s on an H200; the families are independent.
        pids=()
        for fam in ${SANITIZE_FAMILIES:-$(ls configs/spaces/*.toml | xargs -n1 basename | sed 's/\.toml$//')}; do
          sanitized "$tool" --family "$fam" >"$OUT/sanitizer-$tool-$fam.log" 2>&1 &
          pids+=($!)
        done
        rc=0
        for p in "${pids[@]}"; do wait "$p" || rc=$?; done
        [ $rc = 0 ] || status=1
        {
          echo "== sanitizer $tool, one process per family: last non-zero exit ${rc} ($((SECONDS - start)) s)"
          for f in "$OUT"/sanitizer-$tool-*.log; do
            fam=$(basename "$f" .log); fam=${fam#sanitizer-$tool-}
            echo "$fam: $(grep -hE "^verify: [0-9]+ kernel" "$f" | sed 's/ (max slowdown.*//') | $(grep -hE "(ERROR|RACECHECK) SUMMARY" "$f" | sed 's/^========= //' | tr '\n' ' ')$(grep -h "^Error" "$f")"
          done
        } | tee -a "$OUT/summary.txt"
        continue
      fi
      sanitized "$tool" >"$OUT/sanitizer-$tool.log" 2>&1
      rc=$?
      [ $rc = 0 ] || status=1
      {
        echo "== sanitizer $tool: exit $rc ($((SECONDS - start)) s)"
        grep -E "(ERROR|RACECHECK) SUMMARY|^verify: [0-9]+ kernel|^Error" "$OUT/sanitizer-$tool.log" | sed 's/^========= //'
      } | tee -a "$OUT/summary.txt"
    done
  fi
fi
if [ -n "${NVRTC12:-}" ]; then
  # The GTX 1080 Ti's code path (sm_61) on this GPU: NVRTC 12 (carried xz-compressed in the
  # NVRTC12 directory, e.g. by scripts/build-gpu.sh into .nvrtc/; this machine has CUDA 13
  # only) compiles PTX for compute_61 and the driver JIT-compiles it. The randomized sweep and
  # verify (this GPU's entries and every space's ends) validate it; timings are not judged.
  d="$OUT/../nvrtc12"; rm -rf "$d"; mkdir -p "$d"
  for f in "$NVRTC12"/*.xz; do
    python3 -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.open(sys.argv[1]).read())' "$f" "$d/$(basename "$f" .xz)" || status=1
  done
  start=$SECONDS
  AUTOTUNE_NVRTC="$d" AUTOTUNE_PTX_ARCH=compute_61 AUTOTUNE_SWEEP=${NVRTC12_SWEEP:-quick} \
    .gpu/gpu-tests --include-ignored --test-threads=1 --nocapture randomized_sweep_through_older_ptx >"$OUT/nvrtc12-sweep.log" 2>&1 || status=1
  {
    echo "== NVRTC 12, compute_61 PTX sweep: $(grep -E '^test result' "$OUT/nvrtc12-sweep.log" | tail -1) ($((SECONDS - start)) s)"
    grep -E "^sweep|NVRTC|panicked" "$OUT/nvrtc12-sweep.log" | head -8
  } | tee -a "$OUT/summary.txt"
  start=$SECONDS
  AUTOTUNE_NVRTC="$d" .gpu/autotune verify --db "$DB" --quick --ptx-arch compute_61 --space-ends >"$OUT/verify-ptx-compute_61.log" 2>&1
  rc=$?
  [ $rc = 0 ] || status=1
  {
    echo "== verify through NVRTC 12, compute_61 PTX: exit $rc ($((SECONDS - start)) s)"
    grep -E "^verify: [0-9]+ kernel|^Error" "$OUT/verify-ptx-compute_61.log"
  } | tee -a "$OUT/summary.txt"
fi
if [ "${SHIP:-0}" = 1 ]; then
  # The shipping example twice: the second start must compile nothing (disk cache).
  export AUTOTUNE_CACHE_DIR="$OUT/../autotune-cache"
  rm -rf "$AUTOTUNE_CACHE_DIR"
  for run in 1 2; do
    .gpu/ship >"$OUT/ship-$run.log" 2>&1 || status=1
    { echo "== ship, start $run"; cat "$OUT/ship-$run.log"; } | tee -a "$OUT/summary.txt"
  done
fi
if [ "${EXPORT_CHECK:-0}" = 1 ]; then
  # Headers for a C++ product: export, build with nvcc, run against a CPU reference.
  dir="$OUT/../export-check"; rm -rf "$dir"; mkdir -p "$dir"
  cp examples/cuda-header/main.cu "$dir/"
  gpu=${EXPORT_GPU:-"NVIDIA H200"}
  .gpu/autotune export --format cuda-header --gpu "$gpu" --op gemm --shape 2048x2048x2048 -o "$dir/gemm.cuh" &&
  .gpu/autotune export --format cuda-header --gpu "$gpu" --op gemv --shape 256x65536 -o "$dir/gemv.cuh" &&
  .gpu/autotune export --format cuda-header --gpu "$gpu" --op gemv --shape 4096x4096 -o "$dir/gemv2.cuh" &&
  (cd "$dir" && nvcc -std=c++17 -O2 -arch=sm_90 main.cu -o main && ./main) >"$OUT/export-check.log" 2>&1 || status=1
  { echo "== export check"; tail -4 "$OUT/export-check.log"; } | tee -a "$OUT/summary.txt"
fi
if [ "${FAULTS:-0}" = 1 ]; then
  # Broken kernels mixed with good ones: the run must finish, pick a good one, and say why
  # each broken one failed.
  .gpu/autotune --spaces tests/data/faults --family gemm_faults --shape 256x256x256 --no-save --quick >"$OUT/faults.log" 2>&1
  echo "== fault suite: exit $?" | tee -a "$OUT/summary.txt"
  grep -E "failed|^ *1 |killed|FAULT" "$OUT/faults.log" | tee -a "$OUT/summary.txt"
fi
if [ "${KILL_RESUME:-0}" = 1 ]; then
  # kill -9 in the middle of a tune, then --resume: finished candidates are not run again.
  jd="$OUT/../journal-kill"; rm -rf "$jd"
  kshape=${KILL_SHAPE:-2048x2048x2048}
  kargs="--shape $kshape --family gemm_tile2d --db $OUT/kill.toml --journal-dir $jd"
  .gpu/autotune $kargs >"$OUT/kill-run1.log" 2>&1 &
  pid=$!
  count() { cat "$jd"/*.jsonl 2>/dev/null | grep -c '"kind":"candidate"'; }
  for _ in $(seq 1500); do [ "$(count)" -ge "${KILL_AFTER:-200}" ] && break; sleep 0.1; done
  kill -9 $pid; wait $pid 2>/dev/null
  before=$(count)
  sleep 2
  .gpu/autotune $kargs --resume >"$OUT/kill-run2.log" 2>&1 || status=1
  {
    echo "== kill -9 / --resume on gemm $kshape: $before candidates journaled before the kill, $(count) after the resume"
    grep -E "resumed:|^ *1 |wall time" "$OUT/kill-run2.log"
    grep -o 'tried = [0-9]*' "$OUT/kill.toml"
  } | tee -a "$OUT/summary.txt"
fi
if [ "${COLD_WARM:-0}" = 1 ]; then
  # Issue 8: the default space of one shape, exhaustively, with an empty compile cache and
  # again with it warm; the second run re-times the first one's winner (reproducibility).
  cshape=${COLD_SHAPE:-2048x2048x2048}
  cache="$OUT/../cold-cache"; rm -rf "$cache" "$OUT/cold.toml"
  for run in cold warm; do
    start=$(date +%s.%N)
    AUTOTUNE_CACHE_DIR="$cache" .gpu/autotune --shape "$cshape" --strategy exhaustive --db "$OUT/cold.toml" \
      --journal-dir "$OUT/../cold-journal" --top 3 >"$OUT/$run-$cshape.log" 2>&1 || status=1
    {
      echo "== $run compile cache, gemm $cshape: $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s wall for the whole command"
      grep -E "^compile:|^space |^search:|wall time|reproducibility|^ *1 |^ *- " "$OUT/$run-$cshape.log"
    } | tee -a "$OUT/summary.txt"
  done
fi
for op in ${COVER:-}; do
  start=$SECONDS
  .gpu/autotune cover --op "$op" --db "$DB" ${COVER_ARGS:-} >"$OUT/cover-$op.log" 2>&1 || status=1
  {
    echo "== cover $op: $((SECONDS - start)) s"
    grep -E "^cover:|^portfolio|^leave-one-out|^  [a-z]|^Error" "$OUT/cover-$op.log"
  } | tee -a "$OUT/summary.txt"
  # Further grids of this op (COVER_EXTEND, e.g. configs/coverage/gemm-unaligned.toml) are
  # added with the portfolio just chosen.
  for grid in ${COVER_EXTEND:-}; do
    grep -q "^op = \"$op\"" "$grid" || continue
    start=$SECONDS
    .gpu/autotune cover --op "$op" --db "$DB" --extend --grid "$grid" ${COVER_ARGS:-} >"$OUT/cover-$op-$(basename "$grid" .toml).log" 2>&1 || status=1
    {
      echo "== cover $op --extend $grid: $((SECONDS - start)) s"
      grep -E "^cover:|^leave-one-out|^  [a-z]|^Error" "$OUT/cover-$op-$(basename "$grid" .toml).log"
    } | tee -a "$OUT/summary.txt"
  done
done
for spec in ${EVALUATE:-}; do
  op=${spec%%:*}; count=${spec##*:}
  for seed in ${EVAL_SEEDS:-${EVAL_SEED:-2026}}; do
    start=$SECONDS
    name="evaluate-$op-$seed"
    .gpu/autotune evaluate --op "$op" --random "$count" --seed "$seed" --db "$DB" \
      --out "$OUT/$name.md" --json "$OUT/$name.json" ${EVAL_ARGS:-} >"$OUT/$name.log" 2>&1 || status=1
    { echo "== evaluate $op, $count random shapes, seed $seed: $((SECONDS - start)) s"; grep -A14 "^summary" "$OUT/$name.log"; grep "^Error" "$OUT/$name.log"; } | tee -a "$OUT/summary.txt"
  done
done
if [ -n "${ONLINE:-}" ]; then
  # Online tuning of ONLINE unseen gemm shapes from an empty compile cache (a product's first
  # start), then a second process (it must tune nothing), then each online winner against a
  # full search of its shape (evaluate's regret with a budget above the space's size).
  odb="$OUT/online.toml"; rec="$OUT/../recorded"; rm -rf "$odb" "$rec"
  export AUTOTUNE_CACHE_DIR="$OUT/../online-cache"; rm -rf "$AUTOTUNE_CACHE_DIR"
  AUTOTUNE_RECORD="$rec" .gpu/online "$DB" "$odb" "$ONLINE" "${ONLINE_SEED:-77}" >"$OUT/online-1.log" 2>&1 || status=1
  .gpu/online "$DB" "$odb" "$ONLINE" "${ONLINE_SEED:-77}" >"$OUT/online-2.log" 2>&1 || status=1
  cp "$rec/gemm.toml" "$OUT/online-shapes.toml" 2>/dev/null
  .gpu/autotune evaluate --shapes "$rec/gemm.toml" --db "$odb" --tune-budget 5000 --in-process \
    --out "$OUT/online-vs-full.md" --json "$OUT/online-vs-full.json" >"$OUT/online-eval.log" 2>&1 || status=1
  {
    echo "== online tuning, first process"; grep -E "^\||tuned|failed|Error" "$OUT/online-1.log"
    echo "== second process"; grep -E "^\||tuned|Error" "$OUT/online-2.log"
    echo "== online winners against a full search"; grep -A12 "^summary" "$OUT/online-eval.log"
  } | tee -a "$OUT/summary.txt"
fi
if [ "${SASS:-0}" = 1 ]; then
  # The winners' machine code: registers, spills, and how wide the loads and stores are.
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
  for shape in ${SASS_SHAPES:-2048x2048x2048 4096x4096x4096}; do
    f="$OUT/../winner-$shape.cubin"
    .gpu/autotune export --format cubin --gpu "$gpu" --op gemm --shape "$shape" --db "$DB" -o "$f" >"$OUT/sass-$shape.log" 2>&1 || status=1
    cuobjdump --dump-resource-usage "$f" >>"$OUT/sass-$shape.log" 2>&1
    cuobjdump --dump-sass "$f" >"$OUT/../sass-$shape.txt" 2>&1
    {
      echo "== SASS of the gemm $shape winner"
      grep -E "wrote|REG:" "$OUT/sass-$shape.log"
      # Opcode histogram (predicates dropped): FFMA share, load/store widths, spills (STL/LDL).
      grep -oE '/\*[0-9a-f]{4,}\*/ +(@!?U?P[0-9T] +)?[A-Z][A-Z0-9_.]*' "$OUT/../sass-$shape.txt" |
        awk '{print $NF}' | sort | uniq -c | sort -rn | head -24 | tr '\n' ' ' | fold -w 110
      echo
    } | tee -a "$OUT/summary.txt"
    cat "$OUT/../sass-$shape.txt" >>"$OUT/sass-$shape.log"
  done
fi
if [ "${NCU:-0}" = 1 ]; then
  # Where the winner's cycles go, next to cuBLAS's own SGEMM (through PyTorch, TF32 off).
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)
  shape=${NCU_SHAPE:-4096x4096x4096}
  IFS=x read -r m n k <<<"$shape"
  dir="$OUT/../ncu"; rm -rf "$dir"; mkdir -p "$dir"
  cp examples/cuda-header/profile.cu "$dir/"
  sections="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats"
  # sm_90a: the wgmma families need it, and its code runs every other family too.
  .gpu/autotune export --format cuda-header --gpu "$gpu" --op gemm --shape "$shape" --db "$DB" -o "$dir/gemm.cuh" >"$OUT/ncu-ours.log" 2>&1 &&
    (cd "$dir" && nvcc -std=c++17 -O2 -arch=sm_90a -DHELPER=autotune_gemm_$shape -DPROF_M=$m -DPROF_N=$n -DPROF_K=$k profile.cu -o profile) >>"$OUT/ncu-ours.log" 2>&1 &&
    ncu --clock-control none --launch-skip 1 --launch-count 1 $sections "$dir/profile" >>"$OUT/ncu-ours.log" 2>&1
  ncu --clock-control none -k regex:gemm --launch-skip 1 --launch-count 1 $sections python3 -c "
import torch
torch.backends.cuda.matmul.allow_tf32 = False
a = torch.zeros($m, $k, device='cuda'); b = torch.zeros($k, $n, device='cuda')
for _ in range(3): c = a @ b
torch.cuda.synchronize()" >"$OUT/ncu-cublas.log" 2>&1
  {
    echo "== ncu, gemm $shape: ours, then cuBLAS"
    for f in ncu-ours ncu-cublas; do
      grep -E "^  [a-zA-Z_]+.*\(|Registers Per Thread|Achieved Occupancy|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Compute \(SM\) Throughput|SM Frequency|Duration|Warp Cycles Per Issued|Local Memory" "$OUT/$f.log" | head -16
    done
  } | tee -a "$OUT/summary.txt"
fi
if [ "${CROSS:-0}" = 1 ]; then
  # Every GPU's recorded winner, run on this GPU next to its own (after the tuning above).
  csuite=${CROSS_SUITE:-configs/suites/gemm.toml}
  [ -f "$OUT/portability.json" ] || cp results/portability.json "$OUT/portability.json"
  .gpu/autotune cross --suite "$csuite" --db "$DB" --portability "$OUT/portability.json" \
    --out "$OUT/portability.md" >"$OUT/cross.log" 2>&1 || status=1
  { echo "== cross, $csuite"; grep -E '^\| [^|]+ \| [0-9.]+ % ' "$OUT/portability.md"; } | tee -a "$OUT/summary.txt"
fi
# At most 8 files come back from the GPU machine: keep the database and the summary as files,
# and pack every log into one archive and the other reports into another.
(cd "$OUT" && ls *.log >/dev/null 2>&1 && tar czf logs.tar.gz *.log && rm -f *.log)
(cd "$OUT" && extra=$(ls *.md *.json online*.toml 2>/dev/null | grep -v '^portability') &&
  [ -n "$extra" ] && tar czf reports.tar.gz $extra && rm -f $extra)
# Run journals (one file per shape) travel as one archive too.
(cd "$OUT" && [ -d journal ] && tar czf journals.tar.gz journal && rm -rf journal)
exit $status
