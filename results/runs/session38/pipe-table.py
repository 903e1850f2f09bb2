"""Writes results/tf32x3-pipe-h100.md from the session 38 tune logs (results/runs/session38/pipe):
gemm_tf32x3_wgmma_pipe beside gemm_tf32x3_wgmma (the same template without the pipeline), each
family tuned alone with the same budget, each against cuBLAS timed in the same process.
Run from the repository root: python3 results/runs/session38/pipe-table.py"""
import glob
import re

DIR = "results/runs/session38/pipe"
rows = {}
for path in sorted(glob.glob(f"{DIR}/gemm_tf32x3_wgmma*-*.log")):
    fam, shape = re.match(r".*/(gemm_tf32x3_wgmma(?:_pipe)?)-(.*)\.log", path).groups()
    text = open(path).read()
    best = re.search(r"(?m)^1  (\S+) +(.+?) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)$", text)
    cublas = re.search(r"(?m)^-  cuBLAS .*?([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)$", text)
    tol = re.search(r"tolerance ([0-9.e-]+)", text).group(1)
    rows.setdefault(shape, {})[fam] = (best.group(2).strip(), float(best.group(3)), float(cublas.group(1)), float(best.group(7)), tol)
out = [
    "# gemm_tf32x3_wgmma_pipe on an H100 (session 38)",
    "",
    "NVIDIA H100 80GB HBM3, cuBLAS 13.1. Each family tuned alone (`autotune tune --family F "
    "--strategy model-guided --budget 40 --time 45s`), every candidate validated first; x cuBLAS "
    "is cuBLAS's median over the family's best median, both timed in that process. "
    "`nn` shapes are plain, `nt` the layer call. Written by `python3 "
    "results/runs/session38/pipe-table.py` from the logs in results/runs/session38/pipe.",
    "",
    "| shape | gemm_tf32x3_wgmma | ms | x cuBLAS | gemm_tf32x3_wgmma_pipe | ms | x cuBLAS | pipe / wgmma |",
    "|---|---|---:|---:|---|---:|---:|---:|",
]
for shape, fams in rows.items():
    a, b = fams["gemm_tf32x3_wgmma"], fams["gemm_tf32x3_wgmma_pipe"]
    xa, xb = a[2] / a[1], b[2] / b[1]
    out.append(f"| {shape} | {a[0]} | {a[1]:.4f} | {xa:.3f} | {b[0]} | {b[1]:.4f} | {xb:.3f} | {a[1] / b[1]:.3f} |")
open("results/tf32x3-pipe-h100.md", "w").write("\n".join(out) + "\n")
print("\n".join(out))
