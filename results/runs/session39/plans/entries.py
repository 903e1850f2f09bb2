#!/usr/bin/env python3
"""Filters a tuning database's entries, keeping its text as written.

    entries.py DB OUT --drop-family F --below-revision R   # drop F's entries older than R
    entries.py DB OUT --min-vs-cublas 1.0                  # keep entries at least that fast

Used by this session's plans to merge a family's new winners: the old revision's entries go
(stale), and only new entries faster than cuBLAS are merged (`autotune merge` keeps the faster
entry of a shape)."""
import argparse
import re
import tomllib

p = argparse.ArgumentParser()
p.add_argument("db")
p.add_argument("out")
p.add_argument("--drop-family")
p.add_argument("--below-revision", type=int, default=0)
p.add_argument("--min-vs-cublas", type=float)
a = p.parse_args()
parts = re.split(r"(?m)^(?=\[\[)", open(a.db).read())
keep, dropped = [], 0
for part in parts:
    if part.startswith("[[entry]]"):
        e = tomllib.loads(part.replace("[[entry]]", "", 1))
        stale = a.drop_family and e.get("family") == a.drop_family and e.get("revision", 1) < a.below_revision
        slow = a.min_vs_cublas is not None and not e.get("vs_cublas", 0) >= a.min_vs_cublas
        if stale or slow:
            dropped += 1
            continue
    keep.append(part)
open(a.out, "w").write("".join(keep))
print(f"{a.db}: {dropped} entries dropped, {a.out} written")
