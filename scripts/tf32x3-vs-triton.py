#!/usr/bin/env python3
"""autotune's database beside Triton's tf32x3 on the same problems, as a Markdown table.

    python3 scripts/tf32x3-vs-triton.py TRITON.md [--db results/tuning.toml] [--gpu H100]

TRITON.md is the table scripts/triton-tf32x3.py writes (Triton's x cuBLAS and both errors,
measured in its own process against cuBLAS SGEMM through PyTorch); each problem's entry of the
database (for the GPU whose name holds --gpu) gives autotune's x cuBLAS, measured in the tuning
process against cuBLAS SGEMM. Both ratios are to cuBLAS SGEMM timed beside each: the
comparison is of ratios, on the same GPU model. Problems without an entry are listed so."""
import argparse
import re
import tomllib

p = argparse.ArgumentParser()
p.add_argument("triton")
p.add_argument("--db", default="results/tuning.toml")
p.add_argument("--gpu", default="H100")
a = p.parse_args()
entries = {}
for e in tomllib.load(open(a.db, "rb")).get("entry", []):
    if e["op"] == "gemm" and a.gpu.lower() in e["gpu"].lower():
        entries[e["shape"]] = e
print("| problem | autotune's entry | x cuBLAS | Triton tf32x3 x cuBLAS | autotune / Triton "
      "| max error: autotune | cuBLAS (autotune's run) | Triton |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
ahead = total = 0
for line in open(a.triton):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != 7 or not re.fullmatch(r"\d+x\d+x\d+(:nt)?", cells[0]):
        continue
    shape, triton_x, triton_err = cells[0], float(cells[3]), cells[6]
    e = entries.get(shape)
    if e is None:
        print(f"| {shape} | no entry | | {triton_x:.3f} | | | | {triton_err} |")
        continue
    ours = e["vs_cublas"]
    total += 1
    ahead += ours > triton_x
    print(f"| {shape} | {e['family']} | {ours:.3f} | {triton_x:.3f} | {ours / triton_x:.3f} "
          f"| {e['max_rel_error']:.2e} | {e.get('cublas_max_rel_error', float('nan')):.2e} | {triton_err} |")
print()
print(f"autotune ahead of Triton on {ahead} of {total} problems.")
