#!/usr/bin/env python3
"""Issue 28's targets from the files: the geometric mean x cuBLAS, tuned (results/tuning.toml)
and untuned (the layer suite's evaluate report of the GPU), over the problems of a suite with
every dimension >= 1024, and the NT ones with M <= 16.

    python3 results/runs/session39/targets.py [h100|h200]"""
import math
import re
import tomllib

import sys

TAG = sys.argv[1] if len(sys.argv) > 1 else "h100"
GPU = {"h100": "NVIDIA H100 80GB HBM3", "h200": "NVIDIA H200"}[TAG]
db = {e["shape"]: e for e in tomllib.load(open("results/tuning.toml", "rb"))["entry"]
      if e["gpu"] == GPU and e["op"] == "gemm"}


def shapes(suite):
    return re.findall(r'"(\d+x\d+x\d+(?::nt)?)"', open(suite).read())


def big(s):
    return all(int(d) >= 1024 for d in s.split(":")[0].split("x"))


def geo(xs):
    # A failed choice (0x) counts 0.001, as evaluate's own geomeans count it.
    return math.exp(sum(math.log(max(x, 0.001)) for x in xs) / len(xs)) if xs else float("nan")


for suite in ["configs/suites/gemm-layers.toml", "configs/suites/gemm.toml"]:
    sel = [s for s in shapes(suite) if big(s)]
    xs = [db[s]["vs_cublas"] if s in db else 1.0 for s in sel]
    print(f"{suite}, tuned, every dimension >= 1024 ({len(sel)} problems; no entry counts 1.0, "
          f"cuBLAS): geomean {geo(xs):.3f}, worst {min(xs):.3f}")
got = {}
head = None
for line in open(f"results/untuned/evaluate-gemm-layers-untuned-{TAG}.md"):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if c[0] == "shape" and "x cuBLAS" in c:
        head = c
    elif head and len(c) == len(head) and re.fullmatch(r"\d+x\d+x\d+(:nt)?", c[0]):
        got[c[0]] = float(c[head.index("x cuBLAS")])
sel = [s for s in shapes("configs/suites/gemm-layers.toml") if big(s)]
xs = [got[s] for s in sel if s in got]
print(f"configs/suites/gemm-layers.toml, untuned (results/untuned/evaluate-gemm-layers-untuned-{TAG}.md), "
      f"every dimension >= 1024 ({len(xs)} of {len(sel)} problems): geomean {geo(xs):.3f}, worst {min(xs):.3f}")
small = [s for s in shapes("configs/suites/gemm-layers.toml") if s.endswith(":nt") and int(s.split("x")[0]) <= 16]
xs = [got[s] for s in small if s in got]
print(f"configs/suites/gemm-layers.toml, untuned, NT with M <= 16 ({len(xs)} problems): geomean {geo(xs):.3f}, worst {min(xs):.3f}")
xs = [db[s]["vs_cublas"] if s in db else 1.0 for s in small]
print(f"configs/suites/gemm-layers.toml, tuned, NT with M <= 16 ({len(xs)} problems; no entry counts 1.0): geomean {geo(xs):.3f}, worst {min(xs):.3f}")
