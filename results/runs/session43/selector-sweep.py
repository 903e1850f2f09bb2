#!/usr/bin/env python3
"""Leave-one-out on every coverage grid of results/tuning.toml under other interpolation
constants of src/product/select.rs, without a GPU. Build a scratch copy with
selector-sweep.patch applied (it reads the constants from the environment; not for landing):

    git worktree add /tmp/sweep HEAD && cd /tmp/sweep && git apply \\
        results/runs/session43/selector-sweep.patch && cargo build --release
    SWEEP_BIN=/tmp/sweep/target/release/autotune python3 results/runs/session43/selector-sweep.py \\
        base SW_N=6 SW_NP=6,SW_PP=1.5 ...

SW_N: neighbours of the prediction and the guard (NEIGHBOURS); SW_EPS: EPS; SW_P: the power of
1 / (d^2 + EPS); SW_NP, SW_PP: neighbours and extra power of the configs' prediction alone (the
guard keeps SW_N and SW_P). Prints, per op, the point-weighted geomeans over all grids of the
regret (chosen / portfolio best) and of x cuBLAS with the guard, and the points the guard let
through below 0.97x."""
import math
import os
import re
import subprocess
import sys


def run(env, tag):
    out = f"/tmp/loo-{tag}.md"
    e = dict(os.environ, AUTOTUNE=os.environ["SWEEP_BIN"], OUT=out, **env)
    subprocess.run(["bash", "scripts/loo-table.sh"], env=e, check=True, capture_output=True)
    res = {"gemm": [0, 0.0, 0.0, 0], "gemv": [0, 0.0, 0.0, 0]}
    for block in open(out).read().split("```"):
        m = re.search(r"leave-one-out on (\d+) grid points of (.+?) (gemm|gemv)", block)
        if not m:
            continue
        n, op = int(m.group(1)), m.group(3)
        reg = float(re.search(r"regret \(chosen / portfolio best\): geomean ([\d.]+)", block).group(1))
        gd = float(re.search(r"vendor guard: geomean ([\d.]+)", block).group(1))
        bad = sum(1 for v in re.findall(r"^    \S+: ([\d.]+) \(predicted", block, re.M)
                  if float(v) < 0.97)
        r = res[op]
        r[0] += n
        r[1] += n * math.log(reg)
        r[2] += n * math.log(gd)
        r[3] += bad
    return {op: (r[0], math.exp(r[1] / r[0]), math.exp(r[2] / r[0]), r[3]) for op, r in res.items()}


for spec in sys.argv[1:]:
    env = dict(kv.split("=") for kv in spec.split(",")) if spec != "base" else {}
    r = run(env, spec.replace(",", "_").replace("=", ""))
    print(f"{spec:28s} " + "  ".join(
        f"{op}: regret {v[1]:.4f} guard {v[2]:.4f} below0.97 {v[3]}" for op, v in r.items()),
        flush=True)
