"""A product's whole loop in Python, on PyTorch: call autotune where the model multiplies,
record the shapes it calls, tune them on this GPU, ship the database, reload it.

    pip install ./python            # or the wheel of scripts/python-wheel.sh (it has the CLI)
    python examples/python/product_loop.py [--tune-budget 40] [--workdir DIR]

Steps (each prints its numbers):

1. a small MLP (GPT-2 small's widths: 768 -> 3072 -> 768) whose linear layers compute
   ``x @ w.t()`` through ``autotune.Tuned`` -- no copy of ``w``: the transposed view is a layout
   flag -- checked against ``torch.nn.functional.linear`` with TF32 off, and timed beside it;
2. the same model with ``record_to=DIR``: every problem called is written to ``DIR/gemm.toml``,
   a suite the command line tunes;
3. ``python -m autotune --suite DIR/gemm.toml --db DIR/tuned.toml`` tunes those problems on
   this GPU (``--budget`` candidates each);
4. ``autotune.Tuned(db=DIR/tuned.toml)``, what the product ships and loads at start: the
   layers now run the kernels tuned for them (``explain`` says so), checked and timed again.

Without a GPU it stops at the start with the message ``autotune.Error`` carries.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch

import autotune


def linear(tuned, x, w):
    """``x @ w.t()``, as ``nn.Linear`` stores ``w`` (out_features x in_features)."""
    return tuned.gemm(x, w.t())


def mlp(tuned, x, w_up, w_down):
    return linear(tuned, torch.relu(linear(tuned, x, w_up)), w_down)


def reference(x, w_up, w_down):
    f = torch.nn.functional.linear
    return f(torch.relu(f(x, w_up)), w_down)


def timed_ms(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps * 1e3


def check(label, tuned, batches, weights):
    worst = 0.0
    for x in batches:
        got, want = mlp(tuned, x, *weights), reference(x, *weights)
        worst = max(worst, ((got - want).abs().max() / want.abs().max()).item())
    t_ours = sum(timed_ms(lambda x=x: mlp(tuned, x, *weights)) for x in batches)
    t_torch = sum(timed_ms(lambda x=x: reference(x, *weights)) for x in batches)
    print("%-28s max error vs torch %.2e; %.3f ms per pass over the batches (torch %.3f ms)"
          % (label, worst, t_ours, t_torch))
    return worst


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tune-budget", type=int, default=40, help="candidates per problem")
    p.add_argument("--workdir", default=None, help="where the recording and database go")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    workdir = args.workdir or tempfile.mkdtemp(prefix="autotune-loop-")
    record = os.path.join(workdir, "recorded")
    db = os.path.join(workdir, "tuned.toml")

    try:
        shipped = autotune.Tuned(quiet=True)
    except autotune.Error as e:
        sys.exit("no GPU to run on: %s" % e)
    print("GPU:", shipped.device_name, shipped.arch)

    d, hidden = 768, 3072
    gen = torch.Generator(device="cuda").manual_seed(0)
    weights = (torch.randn(hidden, d, device="cuda", generator=gen) / d ** 0.5,
               torch.randn(d, hidden, device="cuda", generator=gen) / hidden ** 0.5)
    # Decoding (a few tokens) and a prefill (a prompt), as a serving loop calls them.
    batches = [torch.randn(t, d, device="cuda", generator=gen) for t in (1, 8, 16, 512)]

    # 1. The shipped database.
    check("shipped database:", shipped, batches, weights)
    print("   ", shipped.explain("gemm", batches[1], weights[0].t()).splitlines()[0])

    # 2. Record the problems the model calls.
    recorder = autotune.Tuned(record_to=record, quiet=True)
    for x in batches:
        mlp(recorder, x, *weights)
    torch.cuda.synchronize()
    suite = os.path.join(record, "gemm.toml")
    print("recorded:", open(suite).read().count(":nt"), "layer calls in", suite)

    # 3. Tune them on this GPU with the command line.
    t0 = time.time()
    cmd = [sys.executable, "-m", "autotune", "--suite", suite, "--db", db,
           "--budget", str(args.tune_budget)]
    print("tuning:", " ".join(cmd[1:]))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    print("tuned in %.0f s into %s" % (time.time() - t0, db))

    # 4. What the product ships and loads at its next start.
    tuned = autotune.Tuned(db=db, quiet=True)
    worst = check("tuned database:", tuned, batches, weights)
    print("   ", tuned.explain("gemm", batches[1], weights[0].t()).splitlines()[0])
    assert worst < 1e-4, worst


if __name__ == "__main__":
    main()
