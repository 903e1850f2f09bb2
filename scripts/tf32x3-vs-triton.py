#!/usr/bin/env python3
"""autotune's database beside Triton's tf32x3 on the same problems, as a Markdown table.

    python3 scripts/tf32x3-vs-triton.py TRITON.md [--db results/tuning.toml] [--gpu H100]

TRITON.md is the table scripts/triton-tf32x3.py writes (Triton's x cuBLAS and both errors,
measured in its own process against cuBLAS SGEMM through PyTorch); each problem's entry of the
database (for the GPU whose name holds --gpu) gives autotune's x cuBLAS, measured in the tuning
process against cuBLAS SGEMM. Both ratios are to cuBLAS SGEMM timed beside each: the
comparison is of ratios, on the same GPU model. Problems without an entry are listed so, or
with --untuned REPORT.md (an `autotune evaluate` report of the same GPU that holds them) with
what the runtime gives them untuned: its choice and x cuBLAS from the report (cuBLAS itself,
1.000, where the guard calls it), no error figures."""
import argparse
import re
import tomllib

p = argparse.ArgumentParser()
p.add_argument("triton")
p.add_argument("--db", default="results/tuning.toml")
p.add_argument("--gpu", default="H100")
p.add_argument("--untuned", help="an evaluate report (Markdown) for problems without an entry")
a = p.parse_args()
untuned = {}
if a.untuned:
    head = None
    for line in open(a.untuned):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if c[0] == "shape" and "x cuBLAS" in c:
            head = c
        elif head and len(c) == len(head) and re.fullmatch(r"\d+x\d+x\d+(:nt)?", c[0]):
            choice = c[head.index("runtime's choice")]
            # "cuBLAS (guard; else F)" or "rule: F PARAMS": the family alone.
            if choice.startswith("cuBLAS"):
                family = "cuBLAS (guard)"
            else:
                family = choice.split(": ", 1)[-1].split()[0]
            untuned[c[0]] = (family, float(c[head.index("x cuBLAS")]))
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
    if e is None and shape in untuned:
        family, ours = untuned[shape]
        total += 1
        ahead += ours > triton_x
        print(f"| {shape} | untuned: {family} | {ours:.3f} | {triton_x:.3f} | {ours / triton_x:.3f} "
              f"| | | {triton_err} |")
        continue
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
