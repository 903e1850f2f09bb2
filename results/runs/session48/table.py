#!/usr/bin/env python3
"""Session 48's H200 problems, x cuBLAS SGEMM in the same process: the database before this
session (git show a6db021:results/tuning.toml), c1's best TRUNC 1 / TRUNC 2 configs (its
journals in logs.txz, fastest of each), and the database now, with the registers and local
memory (spills) its kernel compiled to where the journals timed it.

    python3 results/runs/session48/table.py"""
import io
import json
import re
import subprocess
import tarfile
import tomllib

R = "results/runs/session48"
GPU = "NVIDIA H200"


def entries(text):
    return {e["shape"]: e for e in tomllib.loads(text)["entry"] if e["gpu"] == GPU and e["op"] == "gemm"}


before = entries(subprocess.run(["git", "show", "a6db021:results/tuning.toml"], capture_output=True,
                                text=True, check=True).stdout)
now = entries(open("results/tuning.toml").read())
best = {}
res = {}
with tarfile.open(f"{R}/logs.txz") as t:
    for m in t.getmembers():
        if "/journals/" not in m.name or not m.name.endswith(".jsonl"):
            continue
        base = None
        for line in io.TextIOWrapper(t.extractfile(m)):
            r = json.loads(line)
            if r.get("kind") == "header" or "journal" in r:
                shape = r["shape"]
                label = f'{shape["m"]}x{shape["n"]}x{shape["k"]}'
                if shape["form"]["layout"] != "nn":
                    label += ":" + shape["form"]["layout"]
            elif r.get("kind") == "baseline":
                base = r["stats"]["median_ms"]
            elif r.get("kind") == "candidate" and "Ok" in r["outcome"]:
                tr = r["params"].get("TRUNC")
                ms = r["outcome"]["Ok"]["stats"]["median_ms"]
                key = (label, tr)
                best[key] = max(best.get(key, 0), base / ms)
                ok = r["outcome"]["Ok"]
                res[r["kernel"]] = f'{ok.get("registers")} / {ok.get("local_bytes")} B'

shapes = sorted({s for s, _ in best}, key=lambda s: (":" in s, [int(x) for x in s.split(":")[0].split("x")]))
print("| problem | before | TRUNC 1 | TRUNC 2 | now | now's family | registers / local |")
print("|---|---:|---:|---:|---:|---|---:|")
for s in shapes:
    b = before.get(s)
    n = now.get(s)
    f = lambda x: f"{x:.3f}" if x else "-"
    print(f"| {s} | {f(b and b['vs_cublas'])} | {f(best.get((s, 1)))} | {f(best.get((s, 2)))} | "
          f"{f(n and n['vs_cublas'])} | {n['family'] + (' TRUNC ' + str(n['params']['TRUNC']) if 'TRUNC' in n['params'] else '') if n else 'cuBLAS'} | {res.get(n['kernel'], '-') if n else '-'} |")
