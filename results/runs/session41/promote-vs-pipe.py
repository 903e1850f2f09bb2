#!/usr/bin/env python3
"""gemm_tf32x3_wgmma_promote beside gemm_tf32x3_wgmma_pipe, tuned together (one process per
shape, the same inputs), from the run journals: per problem and family, the fastest candidate
that passed, its time over cuBLAS SGEMM's, its largest relative error over cuBLAS's, and the
errors of every candidate of the family that passed (largest and median, over cuBLAS's); and
per CHAIN, the same over all problems.

    python3 results/runs/session41/promote-vs-pipe.py JOURNAL.jsonl ... > table.md"""
import json
import statistics
import sys
from collections import defaultdict

FAMS = ["gemm_tf32x3_wgmma_pipe", "gemm_tf32x3_wgmma_promote"]
rows, by_chain = [], defaultdict(list)
for path in sys.argv[1:]:
    lines = [json.loads(l) for l in open(path)]
    head = lines[0]
    s = head["shape"]
    label = f'{s["m"]}x{s["n"]}x{s["k"]}' + ("" if s["form"]["layout"] == "nn" else ":" + s["form"]["layout"])
    base = next(l for l in lines if l.get("kind") == "baseline")
    cu_ms, cu_err = base["stats"]["median_ms"], base["error"]
    cand = defaultdict(list)
    failed = defaultdict(int)
    for l in lines:
        if l.get("kind") != "candidate" or l["family"] not in FAMS:
            continue
        ok = l["outcome"].get("Ok")
        if ok is None:
            failed[l["family"]] += 1
            continue
        cand[l["family"]].append((ok["stats"]["median_ms"], ok["max_rel_error"], l["params"]))
        by_chain[(l["family"], l["params"]["CHAIN"])].append(ok["max_rel_error"] / cu_err)
    for f in FAMS:
        if not cand[f]:
            rows.append((label, f, "-", "-", "-", "-", "-", failed[f]))
            continue
        ms, err, p = min(cand[f], key=lambda c: c[0])
        ratios = [c[1] / cu_err for c in cand[f]]
        rows.append((label, f, f"{cu_ms / ms:.3f}", f"CHAIN={p['CHAIN']} BM={p['BM']} BN={p['BN']} WN={p['WN']}",
                     f"{err / cu_err:.2f}", f"{max(ratios):.2f}", f"{statistics.median(ratios):.2f}", failed[f]))
print(f"cuBLAS SGEMM's largest relative error is the unit of the error columns.\n")
print("| problem | family | fastest x cuBLAS | its config | its error | largest error of the family | median error | refused |")
print("|---|---|---:|---|---:|---:|---:|---:|")
for r in rows:
    print("| " + " | ".join(str(x) for x in r) + " |")
print("\n| family | CHAIN | candidates | largest error | median error |\n|---|---:|---:|---:|---:|")
for (f, c), v in sorted(by_chain.items()):
    print(f"| {f} | {c} | {len(v)} | {max(v):.2f} | {statistics.median(v):.2f} |")

# The same tile in both families (128 x 128, WN 128, BK 32: the large problems' winners), by
# chain: the largest error over cuBLAS's among its candidates, and the best time over cuBLAS's.
print("\nThe 128 x 128 tile (WN 128, BK 32) alone: error over cuBLAS's (largest of the candidates), "
      "and the fastest x cuBLAS, n candidates.\n")
KEYS = [("pipe", 4), ("pipe", 2), ("promote", 1), ("promote", 2)]
print("| problem | cuBLAS error | " + " | ".join(f"{f} CHAIN={c}" for f, c in KEYS) + " |")
print("|---|---:|" + "---:|" * len(KEYS))
for path in sys.argv[1:]:
    lines = [json.loads(l) for l in open(path)]
    s = lines[0]["shape"]
    label = f'{s["m"]}x{s["n"]}x{s["k"]}' + ("" if s["form"]["layout"] == "nn" else ":" + s["form"]["layout"])
    base = next(l for l in lines if l.get("kind") == "baseline")
    ce, cm = base["error"], base["stats"]["median_ms"]
    g = defaultdict(list)
    for l in lines:
        ok = l.get("outcome", {}).get("Ok") if l.get("kind") == "candidate" else None
        p = l.get("params", {})
        if ok and (p["BM"], p["BN"], p["WN"], p["BK"]) == (128, 128, 128, 32):
            g[(l["family"].rsplit("_", 1)[1], p["CHAIN"])].append((ok["max_rel_error"] / ce, cm / ok["stats"]["median_ms"]))
    cells = [f"{max(v)[0]:.2f} ({max(x[1] for x in v):.3f}, n={len(v)})" if (v := g.get(k)) else "-" for k in KEYS]
    print(f"| {label} | {ce:.2e} | " + " | ".join(cells) + " |")
