#!/usr/bin/env python3
"""The Nsight Compute figures of session 43's third call as a Markdown table, from its logs.

    python3 results/runs/session43/ncu-table.py results/runs/session43/ncu-c3.txz"""
import re
import sys
import tarfile

ROWS = [
    ("Duration", "duration"),
    ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "tensor pipe active, % of peak"),
    ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "FMA pipe active, %"),
    ("Issue Slots Busy", "issue slots busy, %"),
    ("No Eligible", "no eligible warp, % of cycles"),
    ("smsp__inst_executed.sum", "instructions executed"),
    ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "shared-store bank conflicts"),
    ("Local Memory Spilling Requests", "local-memory spill requests"),
]
LABELS = {"nn": "ours, NN", "nt": "ours, NT", "cublas-tf32-1": "cuBLAS TF32, NN"}
runs = []
with tarfile.open(sys.argv[1]) as tar:
    for m in sorted(tar.getmembers(), key=lambda m: m.name):
        if not re.search(r"ncu-(nn|nt|cublas-tf32-1)\.txt$", m.name):
            continue
        text = tar.extractfile(m).read().decode()
        kernel = re.search(r"^  (\S+) \(\d+, \d+, \d+\)x", text, re.M)
        vals = {}
        for key, _ in ROWS:
            hit = re.search(r"^\s+" + re.escape(key) + r"\s+(\S+)?\s+([\d,.]+)\s*$", text, re.M)
            if hit:
                unit = hit.group(1) if hit.group(1) and not hit.group(1)[0].isdigit() else ""
                vals[key] = hit.group(2) + (" " + unit if unit in ("ms", "us") else "")
        name = re.search(r"ncu-(.*)\.txt$", m.name).group(1)
        runs.append((LABELS[name], kernel.group(1) if kernel else "?", vals))
print("| figure | " + " | ".join(label for label, _, _ in runs) + " |")
print("|---|" + "---:|" * len(runs))
kernels = [(label, k) for label, k, _ in runs]
for key, label in ROWS:
    print(f"| {label} | " + " | ".join(v.get(key, "-") for _, _, v in runs) + " |")
print()
for label, k in kernels:
    print(f"- {label}: `{k}`")
