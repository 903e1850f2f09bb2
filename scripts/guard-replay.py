#!/usr/bin/env python3
"""Replays recorded evaluations through the runtime's choice, no GPU.

Every problem of the recorded `autotune evaluate --json` files (default: the H100's gemm
evaluations in results/untuned, kept there xz-compressed) is put to `autotune best --json` with
the database, and the choice is scored with the times measured for that problem: cuBLAS's time
over the chosen config's (1 where the vendor guard calls cuBLAS), and the kernel regret (the
config's time over the best timed there, guard or not). A choice whose config was not timed
there is counted apart. With two binaries (`--before OLD --after NEW`), or two databases
(`--before-db OLD.toml`), it prints both and every problem whose choice changed: how a change of
the selection rule or of a grid would have done on problems it was not chosen on, before a GPU
checks it on fresh seeds.

  python3 scripts/guard-replay.py --after target/release/autotune
  python3 scripts/guard-replay.py --before /tmp/old-autotune --after target/release/autotune
  python3 scripts/guard-replay.py --after target/release/autotune --before-db /tmp/old.toml
  python3 scripts/guard-replay.py --after target/release/autotune \
      --files 'results/untuned/evaluate-gemv-3*-h100.json.xz'
"""

import argparse
import glob
import json
import lzma
import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def choices(binary, db, gpu, problems, jobs):
    def one(p):
        r = subprocess.run(
            [binary, "best", "--op", p["op"], "--gpu", gpu, "--shape", p["label"], "--json"]
            + ["--db", db],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            return {"error": r.stderr.strip()[-300:]}
        return json.loads(r.stdout)

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, problems))


def name_of(choice):
    if not choice.get("family"):
        return None
    params = " ".join(f"{k}={v}" for k, v in sorted(choice["params"].items()))
    return f"{choice['family']} {params}"


def timed_ms(problem, choice):
    """The time measured for the choice's config on that problem, or None where it was not
    timed there (or the choice failed)."""
    if "error" in choice:
        return None
    return dict((n, t) for n, t in problem["times"]).get(name_of(choice))


def score(problem, choice):
    """cuBLAS's time over the choice's, or None where the choice was not timed there."""
    if "error" in choice:
        return None
    if choice.get("vendor"):
        return 1.0
    ms = timed_ms(problem, choice)
    return problem["cublas_ms"] / ms if ms else None


def kernel_regret(problem, choice):
    """The chosen config's time over the best timed there (the guard aside), or None where the
    config was not timed there: what `evaluate` reports as the runtime's kernel regret."""
    ms = timed_ms(problem, choice)
    return ms / problem["best_ms"] if ms and problem.get("best_ms") else None


def summary(label, scores, regrets):
    got = [s for s in scores if s is not None]
    if not got:
        return f"{label}: nothing scored"
    geo = math.exp(sum(math.log(s) for s in got) / len(got))
    line = (
        f"{label}: x cuBLAS geomean {geo:.4f} over {len(got)} problems "
        f"({len(scores) - len(got)} choices untimed), below 1.0: {sum(s < 1 for s in got)}, "
        f"below 0.97: {sum(s < 0.97 for s in got)}, min {min(got):.3f}"
    )
    r = sorted(x for x in regrets if x is not None)
    if r:
        line += (
            f"; kernel regret geomean {math.exp(sum(map(math.log, r)) / len(r)):.4f}, "
            f"p90 {r[int(0.9 * (len(r) - 1))]:.3f} over {len(r)}"
        )
    return line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--after", required=True, help="the autotune binary to score")
    ap.add_argument("--before", help="a second binary to compare with")
    ap.add_argument("--db", default="results/tuning.toml")
    ap.add_argument("--before-db", help="a second database to compare with (the same binary)")
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--files", default="results/untuned/evaluate-gemm-3*-h100.json*")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    files = sorted(f for f in glob.glob(a.files) if "shipped" not in f)
    if not files:
        sys.exit(f"guard-replay: no evaluation matches {a.files}")
    problems = []
    for f in files:
        run = json.load(lzma.open(f) if f.endswith(".xz") else open(f))
        problems.extend(dict(p, op=run["op"]) for p in run["shapes"])
    oracle = [max(1.0, p["cublas_ms"] / p["best_ms"]) for p in problems if p.get("best_ms")]
    print(f"{len(problems)} problems from {len(files)} evaluations ({a.files}), db {a.db}, gpu {a.gpu}")
    print(
        "oracle (the best timed config or cuBLAS): x cuBLAS geomean "
        f"{math.exp(sum(map(math.log, oracle)) / len(oracle)):.4f}"
    )
    if a.before and a.before_db:
        sys.exit("guard-replay: compare two binaries or two databases, not both")
    runs = [("after", a.after, a.db)]
    if a.before or a.before_db:
        runs.insert(0, ("before", a.before or a.after, a.before_db or a.db))
    picked = {}
    for label, binary, db in runs:
        picked[label] = choices(binary, db, a.gpu, problems, a.jobs)
        errors = [c["error"] for c in picked[label] if "error" in c]
        if errors:
            print(f"{label}: {len(errors)} problems failed, e.g. {errors[0]}")
        pairs = list(zip(problems, picked[label]))
        print(
            summary(
                f"{label} ({binary}, {db})",
                [score(p, c) for p, c in pairs],
                [kernel_regret(p, c) for p, c in pairs],
            )
        )
    if len(runs) == 2:
        changed = [
            (p, b, c)
            for p, b, c in zip(problems, picked["before"], picked["after"])
            if (b.get("vendor"), name_of(b)) != (c.get("vendor"), name_of(c))
        ]
        print(f"{len(changed)} choices changed (x cuBLAS before -> after; '-' untimed):")
        fmt = lambda s: "-" if s is None else f"{s:.3f}"
        for p, b, c in changed:
            print(
                f"  {p['label']}: {fmt(score(p, b))} -> {fmt(score(p, c))} "
                f"({'cuBLAS' if c.get('vendor') else name_of(c)})"
            )


if __name__ == "__main__":
    main()
