#!/usr/bin/env python3
"""What the tensor-core (3xTF32) entries of a database compile to: per entry, the kernel
exported as a cubin exactly as tuning compiled it (`autotune export --format cubin`, NVRTC),
its registers, stack and local-memory loads and stores, and its tensor-core instructions
(HGMMA: wgmma; HMMA: mma.sync), from cuobjdump.

    python3 scripts/tf32x3-sass.py [--db results/tuning.toml] [--gpu h100] [--out table.md]

Needs NVRTC (as `autotune export` finds it) and cuobjdump: the CUDA toolkit's, or the copy in
Triton's wheel (pip install triton; found by itself)."""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib


def cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import triton  # noqa: F401  (only its bundled binaries are used)

        cands = glob.glob(os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump"))
        if cands:
            return cands[0]
    except ImportError:
        pass
    sys.exit("tf32x3-sass.py: no cuobjdump: install the CUDA toolkit or `pip install triton`")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--db", default="results/tuning.toml")
    p.add_argument("--gpu", default="h100", help="part of the GPU's name, case-insensitive")
    p.add_argument("--autotune", default="target/release/autotune")
    p.add_argument("--out")
    a = p.parse_args()
    tool = cuobjdump()
    db = tomllib.load(open(a.db, "rb"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for e in db.get("entry", []):
            if e.get("math") != "tf32x3" or a.gpu.lower() not in e["gpu"].lower():
                continue
            layout = e.get("form", {}).get("layout", "nn")
            label = e["shape"]
            cubin = os.path.join(tmp, "k.cubin")
            r = subprocess.run([a.autotune, "export", "--format", "cubin", "--db", a.db, "--gpu", e["gpu"],
                                "--shape", label, "-o", cubin], capture_output=True, text=True)
            if r.returncode != 0 or e["kernel"] not in r.stdout + r.stderr:
                rows.append((label, e["family"], "-", "-", "-", "-", "export did not give this entry's kernel"))
                continue
            res = subprocess.run([tool, "-res-usage", cubin], capture_output=True, text=True).stdout
            m = re.search(r"REG:(\d+) STACK:(\d+)", res)
            sass = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True).stdout
            local = len(re.findall(r"\b(LDL|STL)\b", sass))
            tc = sorted(set(re.findall(r"\b(H[G]?MMA\.[0-9A-Za-z.]+)", sass)))
            rows.append((label, e["family"], m.group(1) if m else "?", m.group(2) if m else "?", str(local),
                         " ".join(tc) or "none", ""))
    head = "| problem | family | registers | stack bytes | LDL/STL | tensor-core instructions | note |\n|---|---|---:|---:|---:|---|---|\n"
    text = head + "".join("| " + " | ".join(r) + " |\n" for r in rows)
    if a.out:
        open(a.out, "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
