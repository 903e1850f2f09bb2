"""On a GPU, with PyTorch: autotune's results against ``torch.mm`` (TF32 off) and a float64
reference on the public suites (configs/suites/gemm.toml, gemm-layers.toml with its NN and NT
layer calls ``x @ w.t()``, gemv.toml), batches, streams, CuPy arrays, the driver's pointer
checks, and the per-call cost against the Rust runtime's. Skipped, with the reason, where
there is no GPU or no PyTorch.

``AUTOTUNE_PY_REPORT=file.json`` keeps every measurement (scripts/python-gpu.sh makes its table
from it); ``AUTOTUNE_RUST_OVERHEAD=exe`` is the Rust per-call benchmark
(examples/call_overhead.rs, .gpu/call_overhead) the overhead test runs beside Python's.
"""

import json
import math
import os
import re
import statistics
import subprocess
import zlib
from pathlib import Path

import pytest

import autotune
from overhead_bench import per_call_us

try:
    import torch
except ImportError:  # the CI machine
    torch = None


def _why_skip():
    if torch is None:
        return "needs PyTorch (not installed here)"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU (torch.cuda.is_available() is False)"
    if autotune.device_count() == 0:
        return "needs a CUDA GPU (the driver reports none)"
    return None


pytestmark = pytest.mark.skipif(_why_skip() is not None, reason=_why_skip() or "")

ROOT = Path(os.environ.get("AUTOTUNE_REPO", Path(__file__).resolve().parents[2]))
REPORT = []


def _suite(name):
    text = (ROOT / "configs" / "suites" / name).read_text()
    body = text[text.index("shapes"):]
    return re.findall(r'"(\d+x\d+(?:x\d+)?(?::[a-z0-9]+)*)"', body)


def _parse(label):
    dims, *tags = label.split(":")
    return [int(d) for d in dims.split("x")], set(tags)


@pytest.fixture(scope="module")
def tuned():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return autotune.Tuned(quiet=True)


@pytest.fixture(scope="session", autouse=True)
def _report():
    yield
    path = os.environ.get("AUTOTUNE_PY_REPORT")
    if path and REPORT:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(REPORT, indent=1))


def _time_ms(fn, reps=10):
    """Median of ``reps`` CUDA-event timings of ``fn`` (after one warm-up)."""
    fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _rel(x, ref):
    scale = ref.abs().max().item() or 1.0
    return (x.double() - ref).abs().max().item() / scale


def _tolerance(k):
    # FP32 accumulation: the error grows with the reduction length.
    return 2e-6 * math.sqrt(k) + 1e-6


def _gemm_case(tuned, suite, label):
    (m, n, k), tags = _parse(label)
    g = torch.Generator(device="cuda").manual_seed(zlib.crc32(label.encode()))
    # Operands as the layout stores them; a and b are the views the call takes.
    a_st = torch.randn((k, m) if "tn" in tags or "tt" in tags else (m, k), device="cuda", generator=g)
    b_st = torch.randn((n, k) if "nt" in tags or "tt" in tags else (k, n), device="cuda", generator=g)
    a = a_st.t() if ("tn" in tags or "tt" in tags) else a_st
    b = b_st.t() if ("nt" in tags or "tt" in tags) else b_st
    assert a.shape == (m, k) and b.shape == (k, n)
    out = tuned.gemm(a, b)
    ref_mm = torch.mm(a, b)
    ref64 = torch.mm(a.double(), b.double())
    torch.cuda.synchronize()
    err = _rel(out, ref64)
    err_torch = _rel(ref_mm, ref64)
    vs_mm = _rel(out, ref_mm.double())
    c = torch.empty_like(ref_mm)
    t_ours = _time_ms(lambda: tuned.gemm(a, b, out=c))
    t_mm = _time_ms(lambda: torch.mm(a, b, out=c))
    why = tuned.explain("gemm", a, b).splitlines()[0]
    REPORT.append(dict(kind="gemm", suite=suite, shape=label, err_vs_mm=vs_mm, err=err,
                       err_torch=err_torch, ms=t_ours, ms_torch=t_mm, why=why))
    assert err <= _tolerance(k), (label, err, err_torch, why)


@pytest.mark.parametrize("label", _suite("gemm.toml") if torch else [])
def test_gemm_suite_matches_torch_mm(tuned, label):
    _gemm_case(tuned, "gemm.toml", label)


@pytest.mark.parametrize("label", _suite("gemm-layers.toml") if torch else [])
def test_layer_calls_match_torch_mm(tuned, label):
    # `:nt` is x @ w.t() with w stored as nn.Linear stores it: a view, never a copy.
    _gemm_case(tuned, "gemm-layers.toml", label)


@pytest.mark.parametrize("label", _suite("gemv.toml") if torch else [])
def test_gemv_suite_matches_torch_mv(tuned, label):
    (m, k), _ = _parse(label)
    a = torch.randn(m, k, device="cuda")
    x = torch.randn(k, device="cuda")
    y = tuned.gemv(a, x)
    ref = torch.mv(a, x)
    ref64 = torch.mv(a.double(), x.double())
    torch.cuda.synchronize()
    err, err_torch, vs_mm = _rel(y, ref64), _rel(ref, ref64), _rel(y, ref.double())
    t_ours = _time_ms(lambda: tuned.gemv(a, x, out=y))
    t_mv = _time_ms(lambda: torch.mv(a, x, out=ref))
    why = tuned.explain("gemv", a, x).splitlines()[0]
    REPORT.append(dict(kind="gemv", suite="gemv.toml", shape=label, err_vs_mm=vs_mm, err=err,
                       err_torch=err_torch, ms=t_ours, ms_torch=t_mv, why=why))
    assert err <= _tolerance(k), (label, err, err_torch, why)


def test_forms_batches_and_views(tuned):
    a = torch.randn(4, 96, 64, device="cuda")
    b = torch.randn(4, 64, 80, device="cuda")
    assert _rel(tuned.gemm(a, b), torch.bmm(a, b).double()) < 1e-5
    # (batch, tokens, d_in) @ w.t(): one product of batch * tokens rows.
    x = torch.randn(2, 8, 256, device="cuda")
    w = torch.randn(384, 256, device="cuda")
    assert _rel(tuned.gemm(x, w.t()), (x @ w.t()).double()) < 1e-5
    # alpha, beta, a transposed out, a padded slice.
    a2, b2 = torch.randn(64, 48, device="cuda"), torch.randn(48, 40, device="cuda")
    c = torch.randn(64, 40, device="cuda")
    want = 0.5 * (a2 @ b2) + 2 * c
    tuned.gemm(a2, b2, out=c, alpha=0.5, beta=2.0)
    assert _rel(c, want.double()) < 1e-5
    ct = torch.empty(40, 64, device="cuda").t()
    tuned.gemm(a2, b2, out=ct)
    assert _rel(ct, (a2 @ b2).double()) < 1e-5
    big = torch.randn(64, 52, device="cuda")
    assert _rel(tuned.gemm(big[:, :48], b2), (big[:, :48] @ b2).double()) < 1e-5
    # gemv: transposed, batched, beta.
    m = torch.randn(300, 200, device="cuda")
    v = torch.randn(300, device="cuda")
    assert _rel(tuned.gemv(m, v, trans=True), (m.t() @ v).double()) < 1e-5
    assert _rel(tuned.gemv(m.t(), v), (m.t() @ v).double()) < 1e-5
    ab, xb = torch.randn(3, 50, 70, device="cuda"), torch.randn(3, 70, device="cuda")
    assert _rel(tuned.gemv(ab, xb), torch.bmm(ab, xb[:, :, None])[:, :, 0].double()) < 1e-5


def test_runs_on_the_current_stream(tuned):
    a = torch.ones(512, 512, device="cuda")
    b = torch.ones(512, 512, device="cuda")
    s = torch.cuda.Stream()
    tuned.gemm(a, b)  # the layout's plan cached on the default stream: the stream is not
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)  # tens of ms on this stream first
        a.fill_(2.0)
        out = tuned.gemm(a, b)  # must see a = 2: it runs after the fill, on s
    s.synchronize()
    assert out.min().item() == out.max().item() == 2.0 * 512


def test_cupy_arrays(tuned):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    a = cupy.random.standard_normal((128, 96), dtype=cupy.float32)
    b = cupy.random.standard_normal((80, 96), dtype=cupy.float32).T  # a transposed view
    out = tuned.gemm(a, b)
    assert isinstance(out, cupy.ndarray)
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    assert float(abs(out - ref).max() / abs(ref).max()) < 1e-5


def test_the_driver_refuses_bad_pointers(tuned):
    class Fake:
        def __init__(self, ptr, shape):
            self.__cuda_array_interface__ = {"version": 3, "shape": shape, "typestr": "<f4",
                                             "data": (ptr, False), "strides": None,
                                             "stream": None}

    host = torch.zeros(64, 64, pin_memory=False)
    x = torch.zeros(64, 64, device="cuda")
    with pytest.raises(ValueError, match="not CUDA device memory"):
        tuned.gemm(Fake(host.data_ptr(), (64, 64)), x, out=torch.empty_like(x))
    # Beside tensors (trusted: not asked about), each other operand is still checked, in any
    # position, and twice (the second call is made from the plan cache).
    for _ in range(2):
        with pytest.raises(ValueError, match="^b: .* not CUDA device memory"):
            tuned.gemm(x, Fake(host.data_ptr(), (64, 64)), out=torch.empty_like(x))
        with pytest.raises(ValueError, match="^out: .* not CUDA device memory"):
            tuned.gemm(x, x, out=Fake(host.data_ptr(), (64, 64)))
        with pytest.raises(ValueError, match="^x: .* not CUDA device memory"):
            tuned.gemv(x, Fake(host.data_ptr(), (64,)), out=torch.empty(64, device="cuda"))
    # The other operands first: allocated after `small`, they could lie inside the range the
    # fake claims, and the overlap check (which comes first) would answer instead.
    b = torch.zeros(4096, 8, device="cuda")
    out = torch.empty(4096, 8, device="cuda")
    small = torch.zeros(16, device="cuda")
    with pytest.raises(ValueError, match="past its allocation"):
        # 4096 x 4096 floats claimed at a 16-float allocation's address (PyTorch's caching
        # allocator rounds allocations up, so claim far more than any rounding).
        tuned.gemm(Fake(small.data_ptr(), (4096, 4096)), b, out=out)
    # The context survived: a right call still works.
    assert _rel(tuned.gemm(x + 1, x + 1), torch.full((64, 64), 64.0, device="cuda").double()) == 0


def test_explain_names_a_rule(tuned):
    text = tuned.explain("gemm", (4096, 4096), (4096, 4096))
    assert "4096x4096x4096" in text
    assert tuned.device_name and tuned.arch.startswith("sm_")


def _host_us_per_call(fn, calls=200, reps=30):
    """Median host time per call of ``calls`` back-to-back calls (synchronised between runs,
    never inside, so the GPU's time stays out while the queue has room)."""
    return per_call_us(fn, calls, reps, warmup=50, sync=torch.cuda.synchronize)


def test_per_call_overhead_against_rust(tuned):
    m = n = k = 64
    a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
    c = torch.empty(m, n, device="cuda")
    py_us = _host_us_per_call(lambda: tuned.gemm(a, b, out=c))
    mm_us = _host_us_per_call(lambda: torch.mm(a, b, out=c))
    # The Rust call in this process, on the plan the Python call launches (the machine's
    # state the same for both): runs of 200 Tuned::gemm_raw calls in the extension, turn
    # about with runs of the Python call.
    fresh = autotune.Tuned(quiet=True)
    fresh.gemm(a, b, out=c)
    (plan, *_), = fresh._plans.values()
    raw = torch._C._cuda_getCurrentRawStream
    args = (plan, a.data_ptr(), b.data_ptr(), c.data_ptr(), raw(0), 200)
    py_runs, rust_runs = [], []
    for _ in range(15):
        py_runs.append(per_call_us(lambda: fresh.gemm(a, b, out=c), 200, 1, warmup=20,
                                   sync=torch.cuda.synchronize))
        rust_runs.append(fresh._rt._time_rust_calls(*args))
    py_same, rust_same = statistics.median(py_runs), statistics.median(rust_runs)
    # The layer call x @ w.t() (NT) and gemv, Python only (the Rust benchmark is NN gemm).
    wt = torch.randn(n, k, device="cuda").t()
    x, y = torch.randn(k, device="cuda"), torch.empty(m, device="cuda")
    nt_us = _host_us_per_call(lambda: tuned.gemm(a, wt, out=c))
    nt_mm_us = _host_us_per_call(lambda: torch.mm(a, wt, out=c))
    gemv_us = _host_us_per_call(lambda: tuned.gemv(a, x, out=y))
    mv_us = _host_us_per_call(lambda: torch.mv(a, x, out=y))
    rust_us = rust_raw_us = None
    exe = os.environ.get("AUTOTUNE_RUST_OVERHEAD")
    if exe:
        r = subprocess.run([exe, str(m), str(n), str(k), "200", "30"], capture_output=True,
                           text=True, check=True)
        got = json.loads(r.stdout.strip().splitlines()[-1])
        # gemm_ex (a Rust product's call), and gemm_raw (the extension's, less its checks).
        rust_us, rust_raw_us = got["us_per_call"], got.get("raw_us_per_call")
    REPORT.append(dict(kind="overhead", shape="%dx%dx%d" % (m, n, k), python_us=py_us,
                       rust_us=rust_us, rust_raw_us=rust_raw_us, torch_mm_us=mm_us,
                       python_same_us=py_same, rust_same_us=rust_same))
    REPORT.append(dict(kind="overhead", shape="%dx%dx%d:nt" % (m, n, k), python_us=nt_us,
                       rust_us=None, torch_mm_us=nt_mm_us))
    REPORT.append(dict(kind="overhead", shape="gemv %dx%d" % (m, k), python_us=gemv_us,
                       rust_us=None, torch_mm_us=mv_us))
    print("per call: python %.2f us, rust %s us (gemm_raw %s us), torch.mm %.2f us; NT %.2f us "
          "(torch.mm %.2f), gemv %.2f us (torch.mv %.2f)"
          % (py_us, rust_us, rust_raw_us, mm_us, nt_us, nt_mm_us, gemv_us, mv_us))
    # A sanity bound, not the target (<= 3 us over Rust): the table reports that.
    assert py_us < 100


def test_the_tensor_fast_path_launches_only_what_the_full_path_would(tuned):
    """The extension's ``torch_call`` (a cached call on PyTorch tensors, out given): a call of
    a planned layout launches and matches torch.mm; another stride, a scalar's type, -0.0, a
    misaligned view, an out overlapping an input or a CPU tensor is left to the full path
    (False), which computes or raises as on a first call; a key cleared with the plans
    launches nothing."""
    t = autotune.Tuned(quiet=True)
    a, b = torch.randn(64, 48, device="cuda"), torch.randn(48, 32, device="cuda")
    c = torch.empty(64, 32, device="cuda")
    t.gemm(a, b, out=c)  # plans the layout, and hands PyTorch over to the extension
    assert t._fast == t._rt.torch_call
    a2, b2, c2 = torch.randn_like(a), torch.randn_like(b), torch.full_like(c, float("nan"))
    assert t._rt.torch_call("gemm", False, False, 1.0, 0.0, a2, b2, c2) is True
    torch.testing.assert_close(c2, torch.mm(a2, b2), rtol=1e-5, atol=1e-5)
    bt = torch.randn(32, 48, device="cuda").t()  # B stored transposed: another key
    big = torch.randn(64 * 48 + 4, device="cuda")
    for args in [
        ("gemm", False, False, 1.0, 0.0, a2, bt, c2),
        ("gemm", False, False, 1, 0.0, a2, b2, c2),  # an int alpha keys elsewhere
        ("gemm", False, False, 1.0, -0.0, a2, b2, c2),
        ("gemm", False, False, 1.0, 0.0, big[1:1 + 64 * 48].view(64, 48), b2, c2),
        ("gemm", False, False, 1.0, 0.0, a2, b2, a2.view(-1)[:64 * 32].view(64, 32)),
        ("gemm", False, False, 1.0, 0.0, a2.cpu(), b2, c2),
    ]:
        assert t._rt.torch_call(*args) is False, args[3:5]
    with pytest.raises(ValueError, match="overlaps"):
        t.gemm(a2, b2, out=a2.view(-1)[:64 * 32].view(64, 32))
    with pytest.raises(ValueError, match="multiple of 16"):
        t.gemm(big[1:1 + 64 * 48].view(64, 48), b2, out=c2)
    # The same layout again through Tuned.gemm: the fast path, right.
    for _ in range(3):
        a3, b3 = torch.randn_like(a), torch.randn_like(b)
        out = t.gemm(a3, b3, out=c2)
        assert out is c2
        torch.testing.assert_close(c2, torch.mm(a3, b3), rtol=1e-5, atol=1e-5)
    # gemv's key too.
    x, y = torch.randn(48, device="cuda"), torch.empty(64, device="cuda")
    t.gemv(a2, x, out=y)
    assert t._rt.torch_call("gemv", False, False, 1.0, 0.0, a, x, y) is True
    torch.testing.assert_close(y, torch.mv(a, x), rtol=1e-5, atol=1e-5)
    # Keys learned from the plan cache go with it: no call launches a plan cleared.
    t._plans.clear()
    t._rt.clear_plans()
    assert t._rt.torch_call("gemm", False, False, 1.0, 0.0, a2, b2, c2) is False
