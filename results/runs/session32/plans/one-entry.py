#!/usr/bin/env python3
"""Writes the database DB with only its entry of SHAPE (exact label, e.g. 4096x4096x4096 or
1024x14336x4096:nt): a database for ncu to profile one kernel through `autotune verify`.

    python3 one-entry.py DB SHAPE OUT
"""
import sys

db, shape, out = sys.argv[1:4]
text = open(db).read()
head, *entries = text.split("\n[[entry]]\n")
keep = [e for e in entries if f'shape = "{shape}"' in e.split("\n[[", 1)[0]]
if not keep:
    sys.exit(f"no entry of {shape} in {db}")
open(out, "w").write(head + "\n[[entry]]\n" + keep[0].split("\n[[entry]]", 1)[0] + "\n")
