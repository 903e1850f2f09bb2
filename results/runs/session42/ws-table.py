#!/usr/bin/env python3
"""The table of results/tf32x3-ws-h200.md: gemm_tf32x3_wgmma_ws's candidates (session 42's
journals, ws-journals.tgz: call 1 the register path only, call 2 with the cp.async ring) beside
the H200 entry results/tuning.toml ships for each problem (x cuBLAS SGEMM, in the same process).

    python3 results/runs/session42/ws-table.py
"""
import json
import os
import tarfile
import tomllib

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
best = {}  # (problem, call) -> {ring: (x, params)}
with tarfile.open(os.path.join(here, "ws-journals.tgz")) as t:
    for m in t.getmembers():
        if not m.name.endswith(".jsonl"):
            continue
        call = m.name.split("/")[0]
        base, problem = None, None
        for line in t.extractfile(m):
            d = json.loads(line)
            if "journal" in d:
                s, f = d["shape"], d["shape"]["form"]
                problem = f"{s['m']}x{s['n']}x{s['k']}" + ("" if f["layout"] == "nn" else ":" + f["layout"])
            elif d.get("kind") == "baseline":
                base = d["stats"]["median_ms"]
            elif d.get("kind") == "candidate" and "Ok" in d["outcome"]:
                o, p = d["outcome"]["Ok"], d["params"]
                x = base / o["stats"]["median_ms"]
                ring = "ring" if p.get("RING", 0) else "registers"
                cur = best.setdefault((problem, call), {})
                if ring not in cur or x > cur[ring][0]:
                    cur[ring] = (x, p, o["registers"], o["local_bytes"])
db = tomllib.load(open(os.path.join(root, "results/tuning.toml"), "rb"))
shipped = {e["shape"]: e for e in db["entry"] if e["gpu"] == "NVIDIA H200" and e["op"] == "gemm"}


def cell(v):
    if not v:
        return "-"
    x, p, regs, local = v
    tile = f"BM {p['BM']} BN {p['BN']} BK {p['BK']} STAGES {p['STAGES']} CHAIN {p['CHAIN']}"
    return f"{x:.3f} ({tile}; {regs} regs, {local} B local)"


print("| problem | ws, registers (call 1) | ws, registers (call 2) | ws, cp.async ring (call 2) | shipped H200 entry |")
print("|---|---|---|---|---|")
for problem in sorted({k[0] for k in best}, key=lambda s: (":" in s, s)):
    c1, c2 = best.get((problem, "c1"), {}), best.get((problem, "c2"), {})
    e = shipped.get(problem)
    ent = f"{e['vs_cublas']:.3f} ({e['family']})" if e else "none"
    print(f"| {problem} | {cell(c1.get('registers'))} | {cell(c2.get('registers'))} | {cell(c2.get('ring'))} | {ent} |")
