"""The Python side of a call's cost, without a GPU: ``Tuned.gemm`` / ``Tuned.gemv`` on arrays
that only describe themselves, with a runtime whose launch does nothing, so what is timed is
reading the arrays, planning (or the plan cache) and the checks, up to the extension's call.

    PYTHONPATH=python python python/tests/overhead_bench.py [--calls 2000] [--reps 15] [--json]
    python python/tests/overhead_bench.py --gpu [--rounds 5] [--rust .gpu/call_overhead]

Cases: gemm 64x64x64 NN, the layer call ``x @ w.t()`` (NT, 64x64x64), gemv 64x64; each with
``out=`` given, on PyTorch tensors and on ``__cuda_array_interface__`` arrays (conftest's
FakeCuda). The tensors are real CUDA tensors where PyTorch and a GPU are here, else conftest's
FakeTensor under a stand-in ``torch`` module (its accessors are Python methods, roughly as
cheap as PyTorch's). Prints the median microseconds per call of ``--reps`` runs of
``--calls`` calls (not pytest: nothing here is collected as a test).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import FakeCuda, fake_torch_module  # noqa: E402


class NullRuntime:
    """The extension's Runtime with launches that do nothing."""

    device = 0
    device_name = "no GPU (benchmark)"
    arch = "sm_90"

    def gemm(self, *args, trusted=0):
        pass

    def gemv(self, *args, trusted=0):
        pass

    def plan_gemm(self, *args):
        return 0

    plan_gemv = plan_gemm

    def clear_plans(self):
        pass

    def launch_plan(self, plan, a, b, c, stream, trusted):
        pass


def _torch():
    """Real PyTorch on a GPU, else the stand-in module (installed as ``torch``)."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch, "torch (CUDA tensors)"
    except ImportError:
        pass
    t = fake_torch_module()
    sys.modules["torch"] = t
    return t, "stand-in torch (conftest.FakeTensor)"


def cases(torch, real):
    """``(name, fn)`` for each timed call."""
    import autotune

    tuned = autotune.Tuned._with_runtime(NullRuntime())
    if real:
        def new(*shape):
            return torch.zeros(*shape, device="cuda")
    else:
        def new(*shape):
            return torch.tensor(*shape)
    a, b, c = new(64, 64), new(64, 64), new(64, 64)
    wt = new(64, 64).t()  # made once: w.t() costs the same beside torch.mm
    x, y = new(64), new(64)
    fa, fb, fc = FakeCuda((64, 64)), FakeCuda((64, 64)), FakeCuda((64, 64))
    fwt = FakeCuda((64, 64), strides=(1, 64))
    fx, fy = FakeCuda((64,)), FakeCuda((64,))
    return [
        ("gemm 64x64x64 NN, torch", lambda: tuned.gemm(a, b, out=c)),
        ("gemm x @ w.t() NT, torch", lambda: tuned.gemm(a, wt, out=c)),
        ("gemv 64x64, torch", lambda: tuned.gemv(a, x, out=y)),
        ("gemm 64x64x64 NN, CAI", lambda: tuned.gemm(fa, fb, out=fc)),
        ("gemm x @ w.t() NT, CAI", lambda: tuned.gemm(fa, fwt, out=fc)),
        ("gemv 64x64, CAI", lambda: tuned.gemv(fa, fx, out=fy)),
    ]


def per_call_us(fn, calls, reps, warmup=200, sync=None):
    """Median host microseconds per call of ``reps`` runs of ``calls`` back-to-back calls of
    ``fn``, after ``warmup`` calls; ``sync`` (e.g. ``torch.cuda.synchronize``) runs after the
    warm-up and after each run, never inside one, so a GPU's time stays out while its queue
    has room."""
    for _ in range(warmup):
        fn()
    if sync:
        sync()
    runs = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t0) / calls * 1e6)
        if sync:
            sync()
    return statistics.median(runs)


def gpu_main(args):
    """``--gpu``: one process, a real runtime on CUDA tensors, 64x64x64 NN with ``out=``:
    where a call's host time goes, each part timed in turns (``--rounds``) so that drift
    touches all alike. ``Tuned.gemm`` (the whole Python call); the extension's
    ``launch_plan`` on the cached plan (what the Python side ends in); its ``gemm`` with the
    descriptor (the call before plans); ``torch.mm``; and, with ``--rust EXE``
    (``examples/call_overhead``), the Rust runtime's ``gemm_ex`` and ``gemm_raw`` in a
    process of their own."""
    import subprocess

    import torch

    import autotune

    m = n = k = 64
    tuned = autotune.Tuned(quiet=True)
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    tuned.gemm(a, b, out=c)
    (plan, swapped, l0, l1, lc, _, _, trust), = tuned._plans.values()
    desc = autotune._gemm_plan(a, b, c, False, False, 1.0, 0.0, None, tuned.device)[0].desc
    rt, pa, pb, pc = tuned._rt, a.data_ptr(), b.data_ptr(), c.data_ptr()
    raw = torch._C._cuda_getCurrentRawStream
    timed = [
        ("Tuned.gemm (Python)", lambda: tuned.gemm(a, b, out=c)),
        ("extension torch_call", lambda: rt.torch_call("gemm", False, False, 1.0, 0.0, a, b, c)),
        ("extension launch_plan", lambda: rt.launch_plan(plan, pa, pb, pc, raw(0), trust)),
        ("launch_plan, GIL held",
         lambda: rt._launch_plan_holding_gil(plan, pa, pb, pc, raw(0), trust)),
        ("extension gemm (descriptor)",
         lambda: rt.gemm(desc, pa, l0, pb, l1, pc, lc, raw(0), trusted=trust)),
        ("torch.mm", lambda: torch.mm(a, b, out=c)),
    ]
    got = {name: [] for name, _ in timed}
    rust_here = "Rust gemm_raw, this process"
    got[rust_here] = []
    for _ in range(args.rounds):
        for name, fn in timed:
            got[name].append(per_call_us(fn, 200, 30, warmup=50, sync=torch.cuda.synchronize))
        got[rust_here].append(statistics.median(
            rt._time_rust_calls(plan, pa, pb, pc, raw(0), 200) for _ in range(30)))
    rows = [(name, statistics.median(v)) for name, v in got.items()]
    if args.rust:
        r = subprocess.run([args.rust, str(m), str(n), str(k), "200", "30"], capture_output=True,
                           text=True, check=True)
        rust = json.loads(r.stdout.strip().splitlines()[-1])
        rows += [("Rust gemm_ex", rust["us_per_call"]), ("Rust gemm_raw", rust["raw_us_per_call"])]
    print("Per call on the GPU, host time, 64x64x64 NN with out= (median of %d rounds of 30 x "
          "200 calls, %s; torch %s)" % (args.rounds, sys.version.split()[0], torch.__version__))
    print("  runs: %s" % tuned.explain("gemm", a, b, out=c).splitlines()[0][:160])
    for name, us in rows:
        print("  %-30s %7.2f us" % (name, us))
    d = dict(rows)
    print("  %-30s %+7.2f us" % ("Python - Rust, this process", d["Tuned.gemm (Python)"] - d[rust_here]))
    if "Rust gemm_ex" in d:
        print("  %-30s %+7.2f us" % ("Python - Rust gemm_ex", d["Tuned.gemm (Python)"] - d["Rust gemm_ex"]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--json", action="store_true", help="one JSON line instead of a table")
    p.add_argument("--gpu", action="store_true",
                   help="a real runtime on a GPU instead (see gpu_main)")
    p.add_argument("--rounds", type=int, default=5, help="with --gpu: turns of every part")
    p.add_argument("--rust", help="with --gpu: examples/call_overhead, timed after")
    args = p.parse_args()
    if args.gpu:
        gpu_main(args)
        return
    torch, what = _torch()
    real = what.startswith("torch ")
    rows = [(name, per_call_us(fn, args.calls, args.reps)) for name, fn in cases(torch, real)]
    if args.json:
        print(json.dumps({"tensors": what, "us_per_call": dict(rows)}))
        return
    print("Python per call, launch mocked (%s; median of %d x %d calls, %s)"
          % (what, args.reps, args.calls, sys.version.split()[0]))
    for name, us in rows:
        print("  %-28s %7.2f us" % (name, us))


if __name__ == "__main__":
    main()
