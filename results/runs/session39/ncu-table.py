#!/usr/bin/env python3
"""Nsight Compute's numbers for session 39's profiles (results/runs/session39/ncu/*.txt,
written by plans/ncu.sh), one row per profile: the kernel, its duration, the tensor pipe's
utilization, issue slots busy, cycles with no eligible warp, and its three largest stall
reasons (warps stalled per issued instruction).

    python3 results/runs/session39/ncu-table.py"""
import glob
import os
import re

here = os.path.dirname(os.path.abspath(__file__))
print("| profile | kernel | duration | tensor pipe active | issue slots busy | no eligible | largest stalls (per issue) |")
print("|---|---|---:|---:|---:|---:|---|")
for f in sorted(glob.glob(os.path.join(here, "ncu", "*.txt"))):
    t = open(f).read()

    def num(pattern):
        m = re.search(pattern, t, re.M)
        return m.group(1) if m else "?"

    kernel = num(r"^\s+(\S+?)(?:_BK\d\S*)? \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)")
    dur = re.search(r"^\s+Duration\s+(\S+)\s+([\d.]+)", t, re.M)
    stalls = sorted(
        ((float(v), k) for k, v in re.findall(
            r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio\s+inst\s+([\d.]+)", t)
         if k != "selected"), reverse=True)[:3]
    tensor = num(r"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active\s+%\s+([\d.]+)")
    busy = num(r"Issue Slots Busy\s+%\s+([\d.]+)")
    idle = num(r"No Eligible\s+%\s+([\d.]+)")
    duration = f"{dur.group(2)} {dur.group(1)}" if dur else "?"
    top = ", ".join(f"{k} {v:.2f}" for v, k in stalls)
    name = os.path.basename(f)[:-4]
    print(f"| {name} | {kernel} | {duration} | {tensor}% | {busy}% | {idle}% | {top} |")
