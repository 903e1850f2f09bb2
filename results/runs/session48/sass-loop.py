#!/usr/bin/env python3
"""Instructions per warp in the K loop of a wgmma kernel's SASS (the innermost backward branch
around its HGMMA), by opcode.

    autotune export --format cubin --db DB --gpu "NVIDIA H200" --shape S -o k.cubin
    nvdisasm -c k.cubin > k.sass      # nvdisasm: PyPI wheel nvidia-cuda-nvdisasm
    python3 results/runs/session48/sass-loop.py k.sass"""
import collections
import re
import sys

lines = open(sys.argv[1]).read().split("\n")
labels = {}
for i, line in enumerate(lines):
    m = re.match(r"^\.(L_x_\d+):", line.strip())
    if m:
        labels[m.group(1)] = i
ins = [(i, line) for i, line in enumerate(lines) if re.search(r"/\*[0-9a-f]{4,}\*/", line)]
hgmma = [i for i, line in ins if "HGMMA" in line]
if not hgmma:
    sys.exit(f"{sys.argv[1]}: no HGMMA")
first, last = hgmma[0], hgmma[-1]
loop = None
for i, line in ins:
    m = re.search(r"BRA\S*\s+(?:`\()?\.?(L_x_\d+)", line)
    if m and m.group(1) in labels and labels[m.group(1)] <= first and i >= last:
        span = (labels[m.group(1)], i)
        if loop is None or span[1] - span[0] < loop[1] - loop[0]:
            loop = span
if loop is None:
    sys.exit(f"{sys.argv[1]}: no loop around the HGMMA")
body = [line for i, line in ins if loop[0] <= i <= loop[1]]
ops = collections.Counter()
for line in body:
    m = re.search(r"\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
    if m:
        ops[m.group(2).split(".")[0]] += 1
print(f"{sys.argv[1]}: {len(body)} instructions in the K loop")
for op, n in ops.most_common(12):
    print(f"  {op:10s}{n}")
