#!/usr/bin/env python3
"""Session 49: the H200 entries this session's merge changed, x cuBLAS before (the database at
commit d13f62c) and now (results/tuning.toml), with the new entry's config:

    python3 results/runs/session49/table.py     # from the repository root; Markdown to stdout

Another session's merge: `table.py COMMIT GPU` (the database before it, and the GPU's name).
Session 50: `table.py d4ecb1e "NVIDIA H100 80GB HBM3"`."""
import subprocess
import sys
import tomllib

commit, gpu = (sys.argv[1:3] if len(sys.argv) > 2 else ("d13f62c", "NVIDIA H200"))

before = tomllib.loads(subprocess.run(["git", "show", f"{commit}:results/tuning.toml"],
                                      capture_output=True, text=True, check=True).stdout)
now = tomllib.load(open("results/tuning.toml", "rb"))
key = lambda e: (e["gpu"], e["op"], e["shape"])
old = {key(e): e for e in before["entry"]}
print("| problem | before | now | family | config |")
print("|---|---:|---:|---|---|")
for e in sorted(now["entry"], key=lambda e: (":" in e["shape"], e["m"] * e["n"] * e["k"])):
    o = old.get(key(e))
    if e["gpu"] != gpu or (o and o["median_ms"] == e["median_ms"]):
        continue
    p = " ".join(f"{k}={v}" for k, v in e["params"].items()
                 if k in ("BM", "BN", "BK", "CHAIN", "EARLY", "GROUP_M", "SPLIT_K", "TRUNC", "FASTLOAD"))
    b = f"{o['vs_cublas']:.3f}" if o else "none"
    print(f"| {e['shape']} | {b} | {e['vs_cublas']:.3f} | {e['family']} | {p} |")
