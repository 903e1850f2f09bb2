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
