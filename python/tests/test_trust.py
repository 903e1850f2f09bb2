"""Which operands the extension asks the driver about, without a GPU: the ``trusted=`` mask
each launch passes (bit 0: the runtime's A, bit 1: B or x, bit 2: out), as the runtime
stand-in records it. Only PyTorch's own tensors (``torch.Tensor``, ``torch.nn.Parameter``, here
conftest's stand-ins) are trusted; every ``__cuda_array_interface__`` or DLPack array, and any
subclass of a tensor, is left to the driver's check, on the first call and on the plan cache's
repeats alike."""

import numpy as np
import pytest

import autotune
from autotune import _arrays, _native
from conftest import FakeCuda as F
from conftest import FakeDLPack, Recorder

ALL = 0b111


def launches(tuned, recorder, call, times=2):
    """The masks of ``times`` repeats of ``call`` (the first planned, the rest cached)."""
    for _ in range(times):
        call(tuned)
    assert len(recorder.trusted) == times, recorder.calls
    return recorder.trusted


def test_cai_arrays_are_checked_by_the_driver(tuned, recorder):
    a, b, c = F((64, 32)), F((32, 48)), F((64, 48))
    x, y = F((32,)), F((64,))
    assert launches(tuned, recorder, lambda t: t.gemm(a, b, out=c)) == [0, 0]
    recorder.trusted.clear()
    assert launches(tuned, recorder, lambda t: t.gemv(a, x, out=y)) == [0, 0]
    assert len(tuned._plans) == 2  # the second call of each was made from the cache


def test_dlpack_arrays_are_checked_by_the_driver(tuned, recorder):
    a = FakeDLPack(np.zeros((8, 8), np.float32))
    b, c = F((8, 8)), F((8, 8))
    assert launches(tuned, recorder, lambda t: t.gemm(a, b, out=c)) == [0, 0]


def test_torch_tensors_are_trusted(fake_torch, tuned, recorder):
    t = fake_torch
    a, w, c = t.tensor(64, 32), t.tensor(48, 32), t.tensor(64, 48)
    x, y = t.tensor(32), t.tensor(64)
    assert launches(tuned, recorder, lambda tu: tu.gemm(a, w.t(), out=c)) == [ALL, ALL]
    recorder.trusted.clear()
    assert launches(tuned, recorder, lambda tu: tu.gemv(a, x, out=y)) == [ALL, ALL]
    recorder.trusted.clear()
    # out=None: the output torch allocates is trusted too.
    assert launches(tuned, recorder, lambda tu: tu.gemm(a, w.t())) == [ALL, ALL]
    assert len(tuned._plans) == 3


def test_parameters_are_trusted_subclasses_are_not(fake_torch, tuned, recorder):
    class Mine(fake_torch.Tensor):
        """A user's subclass: it could override data_ptr(), so the driver checks it."""

    w = fake_torch.nn.Parameter(fake_torch, (16, 32))
    mine = Mine(fake_torch, (16, 32))
    x, out = fake_torch.tensor(8, 32), fake_torch.tensor(8, 16)
    assert launches(tuned, recorder,
                    lambda t: t.gemm(x, w, out=out, trans_b=True)) == [ALL, ALL]
    recorder.trusted.clear()
    assert launches(tuned, recorder,
                    lambda t: t.gemm(x, mine, out=out, trans_b=True)) == [0b101, 0b101]
    # The same shapes and strides: the subclass is another key, never the tensor's plan.
    assert len(tuned._plans) == 2


def test_mixed_operands_trust_only_the_tensors(fake_torch, tuned, recorder):
    t = fake_torch
    a, b, c = t.tensor(64, 32), F((32, 48)), t.tensor(64, 48)
    assert launches(tuned, recorder, lambda tu: tu.gemm(a, b, out=c)) == [0b101, 0b101]
    recorder.trusted.clear()
    # A transposed out swaps the operands (the runtime's A is b): the mask follows them.
    ct = t.tensor(48, 64).t()
    assert launches(tuned, recorder, lambda tu: tu.gemm(a, b, out=ct)) == [0b110, 0b110]
    for call in recorder.calls[-2:]:
        assert call[1][1] == b.ptr and call[1][3] == a.data_ptr()
    recorder.trusted.clear()
    # gemv: a CAI x between tensors.
    x, y = F((32,)), t.tensor(64)
    assert launches(tuned, recorder, lambda tu: tu.gemv(a, x, out=y)) == [0b101, 0b101]
    recorder.trusted.clear()
    # out=None with a CAI a (no library to allocate with): allocated like b, a tensor.
    fa, b8 = F((64, 32)), t.tensor(32, 8)
    assert launches(tuned, recorder, lambda tu: tu.gemm(fa, b8)) == [0b110, 0b110]


def test_a_warm_cache_gives_each_call_its_own_mask(fake_torch):
    """A Tuned that has seen many layouts gives each call the mask a fresh one gives it."""
    t = fake_torch
    ta, tb, tc = t.tensor(64, 32), t.tensor(32, 48), t.tensor(64, 48)
    fa, fb, fc = F((64, 32)), F((32, 48)), F((64, 48))
    calls = [
        lambda tu: tu.gemm(ta, tb, out=tc),
        lambda tu: tu.gemm(fa, tb, out=tc),
        lambda tu: tu.gemm(ta, fb, out=tc),
        lambda tu: tu.gemm(ta, tb, out=fc),
        lambda tu: tu.gemm(fa, fb, out=fc),
        lambda tu: tu.gemm(ta, tb),
        lambda tu: tu.gemm(ta, tb, out=tc),
        lambda tu: tu.gemm(fa, tb, out=tc),
    ]
    warm_rec = Recorder()
    warm = autotune.Tuned._with_runtime(warm_rec)
    for i, call in enumerate(calls * 2):
        fresh_rec = Recorder()
        call(autotune.Tuned._with_runtime(fresh_rec))
        call(warm)
        assert warm_rec.trusted[-1] == fresh_rec.trusted[0], i
    assert warm_rec.trusted[:len(calls)] == [ALL, 0b110, 0b101, 0b011, 0, ALL, ALL, 0b110]


def test_only_the_torch_reader_sets_trusted(fake_torch):
    assert _arrays.view(F((4, 4)), "a").trusted is False
    assert _arrays.View(1 << 32, (4, 4), (4, 1), 0, None, "torch").trusted is False
    assert _arrays.view(fake_torch.tensor(4, 4), "a").trusted is True
    assert _arrays.view(fake_torch.tensor(4, 4).t(), "a").trusted is True


def test_the_extension_trusts_nothing_unless_told():
    """The extension's gemm and gemv take the mask by keyword only, 0 (the driver checks every
    operand) when it is not named: a positional argument cannot set it by accident."""
    for method in (_native.Runtime.gemm, _native.Runtime.gemv):
        sig = method.__text_signature__
        assert sig.endswith(", stream, *, trusted=0)"), sig


@pytest.mark.parametrize("op", ["gemm", "gemv"])
def test_tuned_names_the_mask(fake_torch, op):
    """Tuned passes the mask by keyword, as the extension's signature requires."""

    class Strict(Recorder):
        def gemm(self, desc, a, a_len, b, b_len, c, c_len, stream, *, trusted):
            self.trusted.append(trusted)

        gemv = gemm

    rec = Strict()
    tuned = autotune.Tuned._with_runtime(rec)
    a = fake_torch.tensor(8, 8)
    getattr(tuned, op)(a, fake_torch.tensor(8, 8) if op == "gemm" else fake_torch.tensor(8))
    assert rec.trusted == [ALL]
