"""The plan cache (``Tuned._cached``), without a GPU: a call that repeats a layout skips the
planning but no check whose outcome could differ. A second call with another shape, stride,
dtype, out, flag, scalar, device or stream is planned and checked afresh, and raises what a
first call would; a sequence of calls on one Tuned (cache warm) gives exactly what each call
gives on a fresh one."""

import numpy as np
import pytest

import autotune
from autotune import _plan
from conftest import FakeCuda as F
from conftest import FakeDLPack, Recorder


def fresh():
    rec = Recorder()
    return autotune.Tuned._with_runtime(rec), rec


def outcome(fn):
    """What a call did: the launch it recorded (with its trusted= mask), or the exception's
    type and message."""
    tuned, rec = fresh()
    try:
        fn(tuned)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return ("raised", type(e), str(e))
    return ("launched", rec.calls, rec.trusted)


def test_a_repeated_call_is_not_planned_again(tuned, recorder, monkeypatch):
    a, b, c = F((64, 32)), F((32, 48)), F((64, 48))
    tuned.gemm(a, b, out=c)
    first = recorder.calls[-1]

    def no_planning(*args):
        raise AssertionError("planned again")

    monkeypatch.setattr(_plan, "plan_gemm", no_planning)
    a2, b2, c2 = F((64, 32)), F((32, 48)), F((64, 48))  # other arrays, the same layout
    assert tuned.gemm(a2, b2, out=c2) is c2
    desc, _, a_len, _, b_len, _, c_len, stream = recorder.calls[-1][1]
    assert desc == first[1][0] and (a_len, b_len, c_len, stream) == (2048, 1536, 3072, 0)
    assert recorder.calls[-1][1][1::2][:3] == (a2.ptr, b2.ptr, c2.ptr)
    assert len(tuned._plans) == 1


def test_another_stride_is_planned_and_checked(tuned, recorder):
    b, c = F((32, 48)), F((64, 48))
    tuned.gemm(F((64, 32)), b, out=c)
    tuned.gemm(F((64, 32), strides=(40, 1)), b, out=c)
    assert recorder.calls[-1][1][0][5] == (40, 48, 48)  # lda 40
    with pytest.raises(ValueError, match="neither a row-major"):
        tuned.gemm(F((64, 32), strides=(64, 2)), b, out=c)
    assert len(recorder.calls) == 2


def test_another_shape_dtype_or_out_is_checked(tuned, recorder):
    a, b, c = F((64, 32)), F((32, 48)), F((64, 48))
    tuned.gemm(a, b, out=c)
    with pytest.raises(ValueError, match="cannot be multiplied"):
        tuned.gemm(a, F((31, 48)), out=c)
    with pytest.raises(TypeError, match="float32"):
        tuned.gemm(F((64, 32), typestr="<f8"), b, out=c)
    with pytest.raises(ValueError, match="out has shape"):
        tuned.gemm(a, b, out=F((64, 47)))
    with pytest.raises(ValueError, match="read-only"):
        tuned.gemm(a, b, out=F((64, 48), readonly=True))
    with pytest.raises(TypeError, match="pass out="):
        tuned.gemm(a, b)  # no library to allocate with
    with pytest.raises(ValueError, match="beta = 1 reads out"):
        tuned.gemm(a, b, beta=1.0)
    # The same layout again still launches.
    tuned.gemm(a, b, out=c)
    assert len(recorder.calls) == 2


def test_addresses_are_checked_on_every_call(tuned, recorder):
    a, b, c = F((8, 8)), F((8, 8)), F((8, 8))
    tuned.gemm(a, b, out=c)
    with pytest.raises(ValueError, match="overlaps a"):
        tuned.gemm(a, b, out=F((8, 8), ptr=a.ptr + 64))
    with pytest.raises(ValueError, match="overlaps b"):
        tuned.gemm(a, b, out=F((8, 8), ptr=b.ptr - 64))
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        tuned.gemm(F((8, 8), ptr=(1 << 40) + 4), b, out=c)
    with pytest.raises(ValueError, match="out starts at"):
        tuned.gemm(a, b, out=F((8, 8), ptr=(1 << 40) + 8))
    x = F((8,))
    tuned.gemv(a, x, out=F((8,)))
    with pytest.raises(ValueError, match="overlaps x"):
        tuned.gemv(a, x, out=F((8,), ptr=x.ptr + 16))
    assert len(recorder.calls) == 2


def test_transposed_out_swaps_on_a_hit_too(tuned, recorder):
    a, b = F((64, 32)), F((32, 48))
    for _ in range(2):
        out = F((64, 48), strides=(1, 64))
        tuned.gemm(a, b, out=out)
        _, p0, _, p1, _, pc, _, _ = recorder.calls[-1][1]
        assert (p0, p1, pc) == (b.ptr, a.ptr, out.ptr)
    assert recorder.calls[0][1][0] == recorder.calls[1][1][0]


def test_flags_and_scalars_key_the_plan(tuned, recorder):
    a, b, c = F((32, 32)), F((32, 32)), F((32, 32))
    tuned.gemm(a, b, out=c)
    tuned.gemm(a, b, out=c, trans_a=True)
    tuned.gemm(a, b, out=c, alpha=2, beta=0.5)
    tuned.gemm(a, b, out=c, beta=-0.0)
    descs = [call[1][0] for call in recorder.calls]
    assert [d[0] for d in descs] == [False, True, False, False]
    assert [(d[6], d[7]) for d in descs[:3]] == [(1.0, 0.0), (1.0, 0.0), (2.0, 0.5)]
    assert str(descs[3][7]) == "-0.0"  # the sign reaches the runtime
    with pytest.raises(TypeError, match="real number"):
        tuned.gemm(a, b, out=c, alpha="two")


def test_streams_are_read_on_every_call(tuned, recorder):
    a, b, c = F((8, 8), stream=5), F((8, 8), stream=5), F((8, 8))
    tuned.gemm(a, b, out=c)
    tuned.gemm(F((8, 8), stream=9), F((8, 8), stream=9), out=c)
    tuned.gemm(a, b, out=c, stream=7)
    assert [call[1][-1] for call in recorder.calls] == [5, 9, 7]
    with pytest.raises(ValueError, match="different streams"):
        tuned.gemm(a, F((8, 8), stream=6), out=c)
    with pytest.raises(ValueError, match="stream 0"):
        tuned.gemm(a, F((8, 8), stream=0), out=c)
    with pytest.raises(TypeError, match="not a CUDA stream"):
        tuned.gemm(a, b, out=c, stream="fast")
    assert len(recorder.calls) == 3


def test_gemv_second_calls(tuned, recorder):
    a, x, y = F((64, 32)), F((32,)), F((64,))
    tuned.gemv(a, x, out=y)
    tuned.gemv(a, x, out=y)
    with pytest.raises(ValueError, match="needs x of length 32"):
        tuned.gemv(a, F((31,)), out=y)
    with pytest.raises(ValueError, match="contiguous vectors"):
        tuned.gemv(a, F((32,), strides=(2,)), out=y)
    tuned.gemv(a, F((64,)), out=F((32,)), trans=True)
    assert [call[1][0][0] for call in recorder.calls] == [False, False, True]
    assert recorder.calls[0] == recorder.calls[1]


def _calls():
    """Calls of one layout with what could go wrong on a repeat, interleaved with right ones
    (each array made once, so that both runs see the same addresses)."""
    a, b, c = F((64, 32)), F((32, 48)), F((64, 48))
    x, y = F((32,)), F((64,))
    on_a, on_x = F((64, 48), ptr=a.ptr), F((64,), ptr=x.ptr)
    odd = F((64, 32), ptr=(1 << 41) + 8)
    b4, c4, c5 = F((32, 48), stream=4), F((64, 48), stream=4), F((64, 48), stream=5)
    padded, gapped = F((32, 48), strides=(96, 1)), F((32, 48), strides=(96, 2))
    other_gpu = FakeDLPack(np.zeros((32, 48), np.float32), device=1)
    x_v2 = F((32,), version=2, stream=8)
    return [
        lambda t: t.gemm(a, b, out=c),
        lambda t: t.gemm(a, b, out=c, stream=3),
        lambda t: t.gemm(a, b, out=on_a),
        lambda t: t.gemm(a, b, out=c),
        lambda t: t.gemm(odd, b, out=c),
        lambda t: t.gemm(a, b, out=on_a, stream="x"),
        lambda t: t.gemm(a, b4, out=c5),
        lambda t: t.gemm(a, b4, out=c4),
        lambda t: t.gemm(a, padded, out=c),
        lambda t: t.gemm(a, gapped, out=c),
        lambda t: t.gemm(a, b, out=c, alpha=float("nan")),
        lambda t: t.gemm(a, b, out=c, alpha=np.float32(2)),
        lambda t: t.gemm(a, b, out=c, trans_b=1),
        lambda t: t.gemm(a, other_gpu, out=c),
        lambda t: t.gemv(a, x, out=y),
        lambda t: t.gemv(a, x, out=on_x),
        lambda t: t.gemv(a, x_v2, out=y),
        lambda t: t.gemv(a, x, out=y),
    ]


def test_a_warm_cache_changes_no_outcome(monkeypatch):
    planned = []
    for name in ("plan_gemm", "plan_gemv"):
        real = getattr(_plan, name)
        monkeypatch.setattr(_plan, name, lambda *a, real=real: planned.append(1) or real(*a))
    warm, rec = fresh()
    calls = _calls()
    warm_planned = 0
    for i, call in enumerate(calls):
        rec.calls.clear()
        rec.trusted.clear()
        before = len(planned)
        try:
            call(warm)
            got = ("launched", list(rec.calls), list(rec.trusted))
        except Exception as e:  # noqa: BLE001
            got = ("raised", type(e), str(e))
        warm_planned += len(planned) - before
        assert repr(got) == repr(outcome(call)), i  # repr: NaN is not equal to itself
    # The warm Tuned planned the 8 calls it had no plan for (new layouts, flags or scalars; a
    # NaN alpha equals no key, a NumPy scalar keys nothing) and the 3 repeats that failed an
    # address check; 4 repeats were made from the cache, 3 raised before any planning.
    assert warm_planned == 11, warm_planned


# ---------------------------------------------------------------- torch tensors (stand-in)


def test_torch_tensors_take_the_fast_path(fake_torch, tuned, recorder, monkeypatch):
    a, b, c = fake_torch.tensor(64, 32), fake_torch.tensor(48, 32), fake_torch.tensor(64, 48)
    fake_torch.streams[0] = 0xAB
    tuned.gemm(a, b.t(), out=c)
    monkeypatch.setattr(_plan, "plan_gemm", lambda *args: 1 / 0)
    fake_torch.streams[0] = 0xCD  # the current stream changed between calls
    tuned.gemm(a, b.t(), out=c)
    first, second = recorder.calls
    assert first[1][0] == second[1][0] and first[1][0][:2] == (False, True)
    assert (first[1][-1], second[1][-1]) == (0xAB, 0xCD)
    assert second[1][1] == a.data_ptr() and second[1][3] == b.data_ptr()


def test_torch_errors_on_a_second_call(fake_torch, tuned, recorder):
    t = fake_torch
    a, b, c = t.tensor(8, 8), t.tensor(8, 8), t.tensor(8, 8)
    tuned.gemm(a, b, out=c)
    with pytest.raises(TypeError, match=r"CPU.*\.cuda\(\)"):
        tuned.gemm(t.tensor(8, 8, device=None), b, out=c)
    with pytest.raises(TypeError, match="float32"):
        tuned.gemm(a, t.tensor(8, 8, dtype=t.float64), out=c)
    with pytest.raises(TypeError, match="dense"):
        tuned.gemm(a, t.tensor(8, 8, layout=t.sparse_coo), out=c)
    with pytest.raises(ValueError, match=r"on GPU 1, this autotune.Tuned on GPU 0"):
        tuned.gemm(t.tensor(8, 8, device=1), t.tensor(8, 8, device=1), out=t.tensor(8, 8, device=1))
    with pytest.raises(ValueError, match="different GPUs"):
        tuned.gemm(a, t.tensor(8, 8, device=1), out=c)
    with pytest.raises(ValueError, match="overlaps b"):
        tuned.gemm(a, b, out=t.tensor(8, 8, ptr=b.data_ptr()))
    with pytest.raises(ValueError, match="neither a row-major"):
        tuned.gemm(a, t.tensor(8, 8, strides=(8, 2)), out=c)
    assert len(recorder.calls) == 1


def test_torch_out_none_allocates_on_a_hit_too(fake_torch, tuned, recorder):
    t = fake_torch
    x, w = t.tensor(8, 32), t.tensor(16, 32)
    outs = [tuned.gemm(x, w.t()) for _ in range(2)]
    for out, call in zip(outs, recorder.calls):
        assert type(out) is t.Tensor and out.shape == (8, 16) and out.get_device() == 0
        assert call[1][5] == out.data_ptr()
    assert outs[0].data_ptr() != outs[1].data_ptr()
    y = [tuned.gemv(w, t.tensor(32)) for _ in range(2)]
    assert y[1].shape == (16,) and recorder.calls[-1][1][5] == y[1].data_ptr()
    assert len(tuned._plans) == 2


def test_torch_subclasses_read_as_tensors(fake_torch, tuned, recorder):
    class Parameter(fake_torch.Tensor):
        pass

    w = Parameter(fake_torch, (16, 32))
    for _ in range(2):
        tuned.gemm(fake_torch.tensor(8, 32), w, out=fake_torch.tensor(8, 16), trans_b=True)
    assert recorder.calls[0][1][0] == recorder.calls[1][1][0]
    assert recorder.calls[1][1][3] == w.data_ptr()


def test_past_the_cap_both_caches_are_cleared_and_calls_stay_right(tuned, recorder, monkeypatch):
    """The runtime's plans are dropped with the cache's: a plan index never outlives its
    entry, and a call planned again launches what a fresh Tuned would."""
    import autotune as at

    monkeypatch.setattr(at, "_PLANS_MAX", 3)
    for k in (8, 12, 16, 20):
        tuned.gemm(F((4, k)), F((k, 4)), out=F((4, 4)))
    assert len(tuned._plans) == 1 and len(recorder.plans) == 1
    again = (F((4, 20)), F((20, 4)), F((4, 4)))
    tuned.gemm(*again[:2], out=again[2])
    assert recorder.calls[-1] == outcome(lambda t: t.gemm(*again[:2], out=again[2]))[1][0]


@pytest.mark.parametrize("gpus", [1, 2])
def test_one_gpu_in_the_process_asks_no_tensor_its_gpu(fake_torch, gpus, monkeypatch):
    """The tensor fast path asks each tensor's GPU only where the process sees several: with
    one, every CUDA tensor is on it. With two, a tensor on the other GPU is left to the full
    path, which refuses it."""
    import types

    t = fake_torch
    t.cuda = types.SimpleNamespace(device_count=lambda: gpus)
    tuned, rec = fresh()
    a, b, c = t.tensor(8, 8), t.tensor(8, 8), t.tensor(8, 8)
    tuned.gemm(a, b, out=c)  # planned; the next call sets the fast path up
    asked = []
    monkeypatch.setattr(type(a), "get_device", lambda self: asked.append(1) or self._device)
    for _ in range(3):
        assert tuned.gemm(t.tensor(8, 8), t.tensor(8, 8), out=c) is c
    assert tuned._fast == tuned._torch_call and tuned._one_gpu == (gpus == 1)
    assert len(rec.calls) == 4
    assert bool(asked) == (gpus == 2)
    if gpus == 2:
        with pytest.raises(ValueError, match="different GPUs"):
            tuned.gemm(t.tensor(8, 8, device=1), b, out=c)
        assert len(rec.calls) == 4
