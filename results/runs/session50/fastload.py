#!/usr/bin/env python3
"""Session 50 (one H100): per problem of the exhaustive tunes over FASTLOAD 1 and 2, the fastest
config of each FASTLOAD with its registers and local memory (as the GPU's NVRTC 13.0 compiled
it), from the journals in logs.txz:

    python3 results/runs/session50/fastload.py     # from the repository root; Markdown to stdout

x cuBLAS is the baseline's median over the candidate's, both from the journal (a resumed
journal's last baseline)."""
import io
import json
import os
import tarfile

here = os.path.dirname(os.path.abspath(__file__))
rows = []
with tarfile.open(os.path.join(here, "logs.txz")) as tar:
    for m in sorted(tar.getmembers(), key=lambda m: m.name):
        if "/journals/" not in m.name or not m.name.endswith(".jsonl"):
            continue
        base, best = None, {}
        for line in io.TextIOWrapper(tar.extractfile(m)):
            d = json.loads(line)
            if d.get("kind") == "baseline":
                base = d["stats"]["median_ms"]
            ok = d.get("outcome", {}).get("Ok") if d.get("kind") == "candidate" else None
            if not ok:
                continue
            fl = d["params"].get("FASTLOAD")
            c = (ok["stats"]["median_ms"], ok.get("registers"), ok.get("local_bytes"))
            if fl not in best or c[0] < best[fl][0]:
                best[fl] = c
        problem = m.name.split("-gemm-")[1][: -len(".jsonl")].replace("_", ":")
        rows.append((problem, base, best))


def cell(base, c):
    return f"{base / c[0]:.3f} | {c[1]} | {c[2]}" if c else "none | |"


print("| problem | FASTLOAD 1 x cuBLAS | registers | local bytes | FASTLOAD 2 x cuBLAS | registers | local bytes | 2 over 1 |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
ratios = []
for problem, base, best in rows:
    one, two = best.get(1), best.get(2)
    r = f"{one[0] / two[0]:.3f}" if one and two else "-"
    if one and two:
        ratios.append(one[0] / two[0])
    print(f"| {problem} | {cell(base, one)} | {cell(base, two)} | {r} |")
if ratios:
    g = 1.0
    for x in ratios:
        g *= x
    print(f"\nFASTLOAD 2's speed over FASTLOAD 1's (each problem's fastest of each): geomean "
          f"{g ** (1 / len(ratios)):.3f} over {len(ratios)} problems, "
          f"{sum(x > 1 for x in ratios)} faster with FASTLOAD 2")
