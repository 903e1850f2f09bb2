#!/usr/bin/env python3
"""The errors of tf32x3 entries beside cuBLAS SGEMM's on the same inputs, as a Markdown table.

    python3 scripts/tf32x3-errors.py DB.toml [DB.toml ...] > table.md

Each entry whose family's math is tf32x3 (a `math = "tf32x3"` entry, or a family named
gemm_tf32x3*) and that records cuBLAS's errors (tuned by a build that measures them): its max and
mean relative error against the float64 reference (autotune's validation: |C - C64| over the
magnitude bound of each dot product) and cuBLAS SGEMM's on the same inputs.
"""
import sys
import tomllib

rows = []
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        db = tomllib.load(f)
    for e in db.get("entry", []):
        tf32x3 = e.get("math") == "tf32x3" or e["family"].startswith("gemm_tf32x3")
        if not tf32x3 or "cublas_max_rel_error" not in e:
            continue
        layout = e.get("form", {}).get("layout", "nn")
        label = e["shape"] if layout == "nn" else f"{e['shape'].split(':')[0]}:{layout}"
        ok = e["k"] < 256 or e["max_rel_error"] <= e["cublas_max_rel_error"]
        rows.append(
            f"| {label} | {e['family']} | {e['k']} | {e['vs_cublas']:.3f} "
            f"| {e['max_rel_error']:.2e} | {e['cublas_max_rel_error']:.2e} "
            f"| {e.get('mean_rel_error', float('nan')):.2e} | {e.get('cublas_mean_rel_error', float('nan')):.2e} "
            f"| {'yes' if ok else 'no'} | {path} |"
        )
print("| problem | family | K | x cuBLAS | max error | cuBLAS max | mean error | cuBLAS mean | max <= SGEMM's (K >= 256) | from |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|---|")
print("\n".join(rows))
