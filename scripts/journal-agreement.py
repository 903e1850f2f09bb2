#!/usr/bin/env python3
"""Reproducibility of two tuning runs of the same shapes, from their run journals.

For every shape journaled in both directories: the first run's winner, its median re-timed in
the second run, the second run's winner, and the deviation
|second winner - first winner re-timed| / first winner re-timed (the runs agree within 2%
when it is at most 2%). Configs are matched by family and parameters.

    python3 scripts/journal-agreement.py FIRST_DIR SECOND_DIR
"""
import json
import os
import sys


def load(path):
    times = {}
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a torn last line
        if r.get("kind") != "candidate" or "Ok" not in r.get("outcome", {}):
            continue
        key = (r["family"], tuple(sorted(r["params"].items())))
        times[key] = r["outcome"]["Ok"]["stats"]["median_ms"]
    return times


def label(key):
    return key[0] + " " + " ".join(f"{k}={v}" for k, v in key[1])


def main(first_dir, second_dir):
    worst = 0.0
    rows = 0
    print("| shape | first winner | first ms | re-timed ms | second winner | second ms | deviation |")
    print("|---|---|---:|---:|---|---:|---:|")
    for name in sorted(os.listdir(first_dir)):
        other = os.path.join(second_dir, name)
        if not name.endswith(".jsonl") or not os.path.exists(other):
            continue
        a, b = load(os.path.join(first_dir, name)), load(other)
        wa = min(a, key=a.get)
        wb = min(b, key=b.get)
        if wa not in b:
            print(f"| {name} | {label(wa)} | {a[wa]:.4f} | not in the second run | | | |")
            continue
        dev = abs(b[wb] - b[wa]) / b[wa] * 100
        worst = max(worst, dev)
        rows += 1
        same = "same config" if wa == wb else label(wb)
        print(f"| {name} | {label(wa)} | {a[wa]:.4f} | {b[wa]:.4f} | {same} | {b[wb]:.4f} | {dev:.2f}% |")
    if rows == 0:
        sys.exit("no shape is journaled in both directories")
    print(f"\nworst deviation {worst:.2f}% over {rows} shape(s): "
          + ("within 2%" if worst <= 2.0 else "NOT within 2%"))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
