#!/usr/bin/env bash
# The Python package on the GPU machine (no cargo, no network; Python >= 3.8 with PyTorch, CuPy
# optional), building nothing: run scripts/build-gpu.sh first where cargo is (it puts the wheel,
# the Rust per-call benchmark and pytest's wheels in .gpu/), carry .gpu/ over, then
#   bash scripts/python-gpu.sh            # OUT=dir keeps the logs and tables (default: a temp dir)
# Installs the wheel with pip --no-deps --target /tmp/site (SITE), runs python/tests (the GPU
# tests: the public suites against torch.mm with TF32 off, layer calls, gemv, batches, streams,
# CuPy, the driver's pointer checks, the per-call cost against the Rust runtime's), and prints
# a table: max errors against torch.mm and float64, time against torch.mm (cuBLAS), per call
# Python against Rust; then python/tests/overhead_bench.py, the Python side of a call alone
# (launch mocked) on CUDA tensors. Exits 1 when a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
py=${PYTHON:-python3}
site=${SITE:-/tmp/site}
wheel=$(ls .gpu/autotune-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$wheel" ]; then
  echo "python-gpu.sh: no .gpu/autotune-*.whl; run scripts/build-gpu.sh where cargo is" >&2
  exit 2
fi
rm -rf "$site"
"$py" -m pip install --quiet --disable-pip-version-check --no-deps --no-index --target "$site" "$wheel"
# pytest from the carried wheels when this Python has none.
if ! "$py" -c 'import pytest' 2>/dev/null; then
  "$py" -m pip install --quiet --disable-pip-version-check --no-deps --no-index --target "$site" .gpu/pywheels/*.whl
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export AUTOTUNE_REPO=$root
export AUTOTUNE_PY_REPORT=$OUT/python-gpu.json
[ -x .gpu/call_overhead ] && export AUTOTUNE_RUST_OVERHEAD=$root/.gpu/call_overhead
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt" || true
"$py" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' | tee -a "$OUT/gpu.txt"
status=0
start=$SECONDS
(cd /tmp && "$py" -m pytest -q -rs -p no:cacheprovider "$root/python/tests") >"$OUT/pytest.log" 2>&1 || status=1
echo "pytest: $(tail -n1 "$OUT/pytest.log") ($((SECONDS - start)) s)"
grep -E "^(FAILED|ERROR|SKIPPED)" "$OUT/pytest.log" || true
if [ -f "$AUTOTUNE_PY_REPORT" ]; then
  "$py" - "$AUTOTUNE_PY_REPORT" >"$OUT/python-gpu.md" <<'PY'
import json, math, sys
rows = json.load(open(sys.argv[1]))
print("# autotune from Python against torch.mm (TF32 off)\n")
print("Errors: max |C - ref| / max |ref|; `vs torch.mm` compares with torch.mm's result, `vs fp64`")
print("with a float64 product (autotune / torch.mm). Times: CUDA events, median of 10; `x cuBLAS`")
print("is torch.mm's time over autotune's (above 1: faster).\n")
for suite in ("gemm.toml", "gemm-layers.toml", "gemv.toml"):
    rs = [r for r in rows if r.get("suite") == suite]
    if not rs:
        continue
    ratios = [r["ms_torch"] / r["ms"] for r in rs if r["ms"] > 0]
    gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float("nan")
    print("## %s: %d problems, max error vs torch.mm %.2e, geomean x cuBLAS %.3f\n"
          % (suite, len(rs), max(r["err_vs_mm"] for r in rs), gm))
    print("| problem | vs torch.mm | vs fp64 (autotune / torch.mm) | ms (autotune / torch.mm) | x cuBLAS | chosen |")
    print("|---|---|---|---|---|---|")
    for r in rs:
        print("| %s | %.2e | %.2e / %.2e | %.4f / %.4f | %.3f | %s |" % (
            r["shape"], r["err_vs_mm"], r["err"], r["err_torch"], r["ms"], r["ms_torch"],
            r["ms_torch"] / r["ms"] if r["ms"] else float("nan"), r["why"].replace("|", "/")[:90]))
    print()
overhead = [r for r in rows if r.get("kind") == "overhead"]
if overhead:
    print("## Per call, host time (median of 30 x 200 calls)\n")
    print("The Rust runtime (examples/call_overhead.rs) is timed on NN gemm only: gemm_ex, a Rust")
    print("product's call (the target: Python <= it + 3 us), and gemm_raw, what the extension calls")
    print("after its pointer checks.\n")
    print("| problem | autotune from Python | Rust gemm_ex | Python - Rust | Rust gemm_raw | torch.mm / torch.mv |")
    print("|---|---|---|---|---|---|")
    us = lambda v: "%.2f us" % v if v is not None else "-"
    for r in overhead:
        rust = r["rust_us"]
        print("| %s | %.2f us | %s | %s | %s | %.2f us |" % (
            r["shape"], r["python_us"], us(rust),
            "%+.2f us" % (r["python_us"] - rust) if rust is not None else "-",
            us(r.get("rust_raw_us")), r["torch_mm_us"]))
    same = [r for r in overhead if r.get("rust_same_us") is not None]
    if same:
        print("\nIn one process, runs of 200 calls taken in turns (median of 15 each): the Python")
        print("call, and Tuned::gemm_raw called from Rust inside the extension on the same plan and")
        print("tensors. Two processes on one machine differ by more than the difference sought.\n")
        print("| problem | autotune from Python | Rust gemm_raw | Python - Rust |")
        print("|---|---|---|---|")
        for r in same:
            print("| %s | %.2f us | %.2f us | %+.2f us |" % (
                r["shape"], r["python_same_us"], r["rust_same_us"],
                r["python_same_us"] - r["rust_same_us"]))
PY
  cat "$OUT/python-gpu.md"
fi
# The Python side alone (launch mocked) on real tensors: what of a call is Python's.
(cd /tmp && "$py" "$root/python/tests/overhead_bench.py") | tee "$OUT/overhead-bench.txt" || status=1
echo "python-gpu.sh: logs and tables in $OUT"
exit $status
