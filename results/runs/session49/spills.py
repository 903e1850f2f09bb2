#!/usr/bin/env python3
"""Session 49: per problem of call 2's exhaustive tunes, the fastest config and the fastest one
without local memory (spills), from the journals as the GPU compiled them (NVRTC 13.0):

    python3 results/runs/session49/spills.py     # from the repository root; Markdown to stdout

x cuBLAS is the baseline's median over the candidate's, both from the journal."""
import io
import json
import os
import tarfile

here = os.path.dirname(os.path.abspath(__file__))
KEYS = ("BM", "BN", "BK", "WN", "CHAIN", "EARLY", "GROUP_M", "SPLIT_K", "TRUNC", "FASTLOAD")


def short(p):
    return " ".join(f"{k}={p[k]}" for k in KEYS if k in p)


rows = []
with tarfile.open(os.path.join(here, "logs.txz")) as tar:
    for m in sorted(tar.getmembers(), key=lambda m: m.name):
        if "/journals/" not in m.name or not m.name.endswith(".jsonl"):
            continue
        base, best, cool = None, None, None
        for line in io.TextIOWrapper(tar.extractfile(m)):
            d = json.loads(line)
            if d.get("kind") == "baseline":
                base = d["stats"]["median_ms"]
            ok = d.get("outcome", {}).get("Ok") if d.get("kind") == "candidate" else None
            if not ok:
                continue
            c = (ok["stats"]["median_ms"], ok.get("registers"), ok.get("local_bytes"), d["params"])
            best = c if best is None or c[0] < best[0] else best
            if ok.get("local_bytes") == 0:
                cool = c if cool is None or c[0] < cool[0] else cool
        problem = m.name.split("-gemm-")[1][: -len(".jsonl")].replace("_", ":")
        rows.append((problem, base, best, cool))

print("| problem | fastest x cuBLAS | its registers | its local bytes | fastest without local memory x cuBLAS | its registers | its config | cost |")
print("|---|---:|---:|---:|---:|---:|---|---:|")
for problem, base, best, cool in rows:
    if best is None:
        print(f"| {problem} | no config passed | | | | | | |")
        continue
    c = f"{base / cool[0]:.3f} | {cool[1]} | {short(cool[3])} | {cool[0] / best[0]:.3f}" if cool else "none | | |"
    print(f"| {problem} | {base / best[0]:.3f} | {best[1]} | {best[2]} | {c} |")
