"""Fixtures shared by the tests: arrays that describe themselves like CUDA arrays without any
GPU behind them, and a runtime stand-in that records what would have been launched."""

import numpy as np
import pytest


class FakeCuda:
    """An object with a ``__cuda_array_interface__`` (v3 unless said) and no GPU memory.

    ``shape`` and ``strides`` (elements; ``None``: C-contiguous) describe float32 data at
    ``ptr`` (default: an address of its own); ``itemsize``/``typestr`` let a test lie about
    the dtype.
    """

    _next = 1 << 32

    def __init__(self, shape, strides=None, ptr=None, typestr="<f4", stream=None,
                 version=3, readonly=False, itemsize=4):
        if ptr is None:
            # Each fake its own 1 GiB of address space, 256-byte aligned: never overlapping.
            ptr = FakeCuda._next
            FakeCuda._next += 1 << 30
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


class Recorder:
    """Stands in for the extension's Runtime: records each launch instead of making it."""

    device = 0
    device_name = "Fake GPU"
    arch = "sm_90"

    def __init__(self):
        self.calls = []

    def gemm(self, *args):
        self.calls.append(("gemm", args))

    def gemv(self, *args):
        self.calls.append(("gemv", args))

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
def np32():
    return lambda *shape: np.zeros(shape, dtype=np.float32)
