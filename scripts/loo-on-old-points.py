#!/usr/bin/env python3
"""Leave-one-out of two databases' coverage, scored on the grid points both hold (no GPU).

When a grid is extended with new shapes, its whole leave-one-out table is not comparable with the
one before: the point sets differ. This compares the two on the points of the old grid only, each
predicted from all the others of its own database (so after an extension, from old and new points):

    python3 scripts/loo-on-old-points.py --before OLD.toml --after NEW.toml --gpu h100 \
        --form "--layout tt" --form "--beta 1" ...

Prints per form: points, kernel regret (chosen / portfolio best) and x cuBLAS with the guard, before
and after, as geometric means, and how many points the guard leaves below 0.97x cuBLAS.
"""
import argparse
import json
import math
import subprocess


def loo(at, db, gpu, flags):
    out = subprocess.run(
        [at, "cover", "--loo", "--json", "--db", db, "--gpu", gpu] + flags.split(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = json.loads(out)
    key = lambda s: (s["m"], s["n"], s["k"], s["form"]["batch"])
    return {key(r["shape"]): r for r in rows}


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--form", action="append", default=[], help="cover's form flags, e.g. '--layout tt'")
    ap.add_argument("--autotune", default="target/release/autotune")
    a = ap.parse_args()
    print("| form | points (old / after) | regret before | regret after | guard before | guard after | below 0.97 before | after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for flags in a.form or [""]:
        b = loo(a.autotune, a.before, a.gpu, flags)
        n = loo(a.autotune, a.after, a.gpu, flags)
        common = sorted(set(b) & set(n))
        rb = [b[s]["regret"] for s in common]
        rn = [n[s]["regret"] for s in common]
        gb = [b[s]["guarded_vs_cublas"] for s in common]
        gn = [n[s]["guarded_vs_cublas"] for s in common]
        low = lambda g: sum(1 for x in g if x < 0.97)
        print(
            f"| {flags or 'plain'} | {len(common)} / {len(n)} | {geo(rb):.4f} | {geo(rn):.4f} | "
            f"{geo(gb):.4f} | {geo(gn):.4f} | {low(gb)} | {low(gn)} |"
        )


if __name__ == "__main__":
    main()
