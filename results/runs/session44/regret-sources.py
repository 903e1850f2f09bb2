#!/usr/bin/env python3
"""Where the gemm kernel regret of the H200's random evaluations comes from, no GPU: for each
recorded problem (results/untuned/evaluate-gemm-3*-h200.json), whether the best kernel the
--tune-budget search found there is in the portfolio of the coverage grid of the problem's form
(layout and beta) in results/tuning.toml, and the regret of the no-guard choice (its time over
that best) on either side.

  python3 results/runs/session44/regret-sources.py
"""
import collections
import glob
import json
import math
import tomllib

db = tomllib.load(open("results/tuning.toml", "rb"))
port = collections.defaultdict(set)
for c in db["coverage"]:
    if c["gpu"] != "NVIDIA H200" or c["op"] != "gemm":
        continue
    f = c.get("form", {})
    key = (f.get("layout", "nn"), bool(f.get("beta")))
    for cf in c["configs"]:
        port[key].add(cf["family"] + " " + " ".join(f"{k}={v}" for k, v in sorted(cf["params"].items())))
every = set().union(*port.values())
inside, outside, n_any = [], [], 0
for path in sorted(glob.glob("results/untuned/evaluate-gemm-3*-h200.json")):
    for s in json.load(open(path))["shapes"]:
        chosen = [c for c in s["chosen"] if c["policy"] == "no guard"][0]
        if not s.get("best") or not s.get("best_ms") or not chosen.get("kernel_ms"):
            continue
        form = s["shape"]["form"]
        fam, *kv = s["best"].split()
        label = fam + " " + " ".join(sorted(kv))
        regret = chosen["kernel_ms"] / s["best_ms"]
        (inside if label in port.get((form["layout"], form["beta"]), set()) else outside).append(regret)
        n_any += label in every


def gm(x):
    return math.exp(sum(map(math.log, x)) / len(x)) if x else float("nan")


n = len(inside) + len(outside)
print(f"{n} problems with a timed choice and a best kernel")
print(f"best kernel in the form's portfolio: {len(inside)}, in any H200 gemm portfolio: {n_any}")
print(f"kernel regret: all {gm(inside + outside):.3f}, best in the portfolio {gm(inside):.3f}, "
      f"best outside it {gm(outside):.3f}")
