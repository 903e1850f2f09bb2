"""Fixtures shared by the tests: arrays that describe themselves like CUDA arrays without any
GPU behind them, and a runtime stand-in that records what would have been launched."""

import sys
import types

import numpy as np
import pytest


class FakeCuda:
    """An object with a ``__cuda_array_interface__`` (v3 unless said) and no GPU memory.

    ``shape`` and ``strides`` (elements; ``None``: C-contiguous) describe float32 data at
    ``ptr`` (default: an address of its own); ``itemsize``/``typestr`` let a test lie about
    the dtype.
    """

    _next = 1 << 32

    @staticmethod
    def new_ptr():
        """An address of its own: each fake 1 GiB of address space, 256-byte aligned, so
        fakes never overlap."""
        ptr = FakeCuda._next
        FakeCuda._next += 1 << 30
        return ptr

    def __init__(self, shape, strides=None, ptr=None, typestr="<f4", stream=None,
                 version=3, readonly=False, itemsize=4):
        if ptr is None:
            ptr = FakeCuda.new_ptr()
        cai = {
            "version": version,
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (ptr, readonly),
            "strides": None if strides is None else tuple(s * itemsize for s in strides),
        }
        if version >= 3:
            cai["stream"] = stream
        self.__cuda_array_interface__ = cai
        self.ptr = ptr


class FakeDLPack:
    """A NumPy array that claims to live on CUDA device ``device`` through DLPack: its
    capsule (NumPy's own) is real, so the reader's ctypes parsing is exercised."""

    def __init__(self, arr, device=0):
        self.arr = arr
        self.device = device
        self.streams = []

    def __dlpack_device__(self):
        return (2, self.device)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.arr.__dlpack__()


class FakeTensor:
    """Stands in for a ``torch.Tensor`` on a GPU (no memory behind it): what autotune reads of
    a tensor (``dtype``, ``is_cuda``, ``layout``, ``get_device()``, ``data_ptr()``, ``shape``,
    ``stride()``) and ``t()``. ``strides`` in elements (``None``: C-contiguous); ``device``:
    the CUDA ordinal, or ``None`` for a CPU tensor."""

    def __init__(self, torch, shape, strides=None, ptr=None, dtype=None, device=0,
                 layout=None):
        if strides is None:
            strides, step = [], 1
            for d in reversed(shape):
                strides.insert(0, step)
                step *= max(d, 1)
        self._torch = torch
        self.shape = tuple(shape)
        self._strides = tuple(strides)
        self._ptr = FakeCuda.new_ptr() if ptr is None else ptr
        self.dtype = torch.float32 if dtype is None else dtype
        self.layout = torch.strided if layout is None else layout
        self._device = device
        self.is_cuda = device is not None
        self.device = "cuda:%d" % device if device is not None else "cpu"

    def data_ptr(self):
        return self._ptr

    def stride(self):
        return self._strides

    def get_device(self):
        return -1 if self._device is None else self._device

    def t(self):
        return FakeTensor(self._torch, self.shape[::-1], self._strides[::-1], self._ptr,
                          self.dtype, self._device, self.layout)


class FakeParameter(FakeTensor):
    """Stands in for ``torch.nn.Parameter``: PyTorch's own subclass of its tensor."""


# Read as PyTorch's: autotune tells libraries apart by the type's module.
FakeTensor.__module__ = "torch"
FakeParameter.__module__ = "torch.nn.parameter"


def fake_torch_module():
    """A module that passes for ``torch`` as far as autotune looks: ``Tensor`` (FakeTensor),
    ``nn.Parameter`` (FakeParameter), dtypes and layouts, ``empty``, and the current stream of
    each device (``_C._cuda_getCurrentRawStream``; ``streams[device]`` sets it, 0 by
    default)."""
    t = types.ModuleType("torch")
    t.float32, t.float64 = types.SimpleNamespace(name="torch.float32"), "torch.float64"
    t.strided, t.sparse_coo = "torch.strided", "torch.sparse_coo"
    t.Tensor = FakeTensor
    t.nn = types.SimpleNamespace(Parameter=FakeParameter)
    t.streams = {}
    t._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: t.streams.get(d, 0))
    t.tensor = lambda *shape, **kw: FakeTensor(t, shape, **kw)

    def empty(shape, dtype=None, device=None):
        assert dtype is t.float32
        return FakeTensor(t, shape, device=int(str(device).split(":")[1]))

    t.empty = empty
    return t


def install_fake_torch(monkeypatch):
    """Makes :func:`fake_torch_module` the ``torch`` autotune sees, for one test."""
    from autotune import _arrays

    t = fake_torch_module()
    monkeypatch.setitem(sys.modules, "torch", t)
    monkeypatch.setattr(_arrays, "_torch_state", {"module": None})
    monkeypatch.setattr(_arrays, "_KIND", {})
    return t


class Recorder:
    """Stands in for the extension's Runtime: records each launch instead of making it, its
    positional arguments in ``calls`` and its ``trusted=`` mask (the operands the extension
    would not ask the driver about; 0 when not passed, as the extension defaults) in
    ``trusted``."""

    device = 0
    device_name = "Fake GPU"
    arch = "sm_90"

    def __init__(self):
        self.calls = []
        self.trusted = []
        self.plans = []

    def plan_gemm(self, desc, *lens):
        self.plans.append(("gemm", desc, lens))
        return len(self.plans) - 1

    def plan_gemv(self, desc, *lens):
        self.plans.append(("gemv", desc, lens))
        return len(self.plans) - 1

    def clear_plans(self):
        self.plans.clear()

    def launch_plan(self, plan, a, b, c, stream, trusted):
        """Records the planned call as the launch it stands for (the descriptor and extents
        its plan holds), as ``gemm`` / ``gemv`` would record it."""
        op, desc, (la, lb, lc) = self.plans[plan]
        self.calls.append((op, (desc, a, la, b, lb, c, lc, stream)))
        self.trusted.append(trusted)

    def gemm(self, *args, trusted=0):
        self.calls.append(("gemm", args))
        self.trusted.append(trusted)

    def gemv(self, *args, trusted=0):
        self.calls.append(("gemv", args))
        self.trusted.append(trusted)

    def explain_gemm(self, desc):
        self.calls.append(("explain_gemm", desc))
        return "explained"

    def explain_gemv(self, desc):
        self.calls.append(("explain_gemv", desc))
        return "explained"


@pytest.fixture
def recorder():
    return Recorder()


@pytest.fixture
def tuned(recorder):
    import autotune

    return autotune.Tuned._with_runtime(recorder)


@pytest.fixture
def fake():
    return FakeCuda


@pytest.fixture
def fake_torch(monkeypatch):
    return install_fake_torch(monkeypatch)


@pytest.fixture
def np32():
    return lambda *shape: np.zeros(shape, dtype=np.float32)
