#!/usr/bin/env bash
# Builds, on a machine with cargo, the executables scripts/gpu.sh runs on the GPU machine
# (which has no cargo), and copies them into .gpu/ (ignored by git; carried to the GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bins --examples
mkdir -p .gpu
cp target/release/autotune .gpu/autotune
cp target/release/examples/ship .gpu/ship
cp target/release/examples/online .gpu/online
# libautotune as a product builds it (no command-line crates) and the C and C++ examples linked
# against it, found next to them ($ORIGIN): scripts/capi-gpu.sh runs them.
cargo build --release -p autotune-capi
cp target/release/libautotune.so .gpu/libautotune.so
cc -std=c99 -O2 -Wall -Werror -I capi/include examples/c/sgemm.c -L target/release -lautotune -ldl -lm \
  -Wl,-rpath,'$ORIGIN' -o .gpu/sgemm-c
c++ -std=c++17 -O2 -Wall -Werror -I capi/include examples/cpp/sgemm.cpp -L target/release -lautotune \
  -Wl,-rpath,'$ORIGIN' -o .gpu/sgemm-cpp
cp target/release/examples/call_overhead .gpu/call_overhead
# The Python wheel and pytest's wheels for scripts/python-gpu.sh (no network there).
cp "$(bash scripts/python-wheel.sh | tail -n1)" .gpu/
python3 -m pip download --quiet --disable-pip-version-check --only-binary :all: -d .gpu/pywheels pytest
tests=$(cargo test --release --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["kind"]==["test"]:
        print(m["target"]["name"], m["executable"])')
while read -r name exe; do
  [ "$name" = gpu ] && cp "$exe" .gpu/gpu-tests
done <<<"$tests"
ls -la .gpu
# NVRTC 12 for the sm_61 path on the GPU machine (gpu.sh NVRTC12=.nvrtc), xz-compressed to fit
# the carried tree: from the venv scripts/test.sh makes. Kept when already there.
lib=$(ls -d .venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib 2>/dev/null | head -n1 || true)
if [ -n "$lib" ] && [ ! -f .nvrtc/libnvrtc.so.12.xz ]; then
  mkdir -p .nvrtc
  for f in "$lib"/libnvrtc.so.12 "$lib"/libnvrtc-builtins.so.12.*; do
    case "$f" in *alt*) continue ;; esac
    xz -T2 -6 -c "$f" >".nvrtc/$(basename "$f").xz"
  done
fi
ls -la .nvrtc 2>/dev/null || true
