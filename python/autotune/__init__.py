"""autotune: tuned CUDA SGEMM and SGEMV on PyTorch, CuPy and JAX arrays.

The kernels come from autotune's tuning database (the one this package ships, built in, or
yours); where the database has no evidence that a tuned kernel beats cuBLAS, cuBLAS computes
the call (the vendor guard). ::

    import torch, autotune

    tuned = autotune.Tuned()                      # GPU 0, the shipped database
    x = torch.randn(8, 4096, device="cuda")
    w = torch.randn(11008, 4096, device="cuda")
    y = tuned.gemm(x, w.t())                      # x @ w.t(): no copy, layout flags instead
    print(tuned.explain("gemm", x, w.t()))        # which kernel, which rule, why

Arrays are read in place (``__cuda_array_interface__``, DLPack, or a tensor's own accessors)
and must be float32 on the GPU; matrices row-major with a leading dimension, or the transpose
of one. The call runs on the array's stream (PyTorch's current stream; the CAI v3 ``stream``;
for DLPack the stream the call passes), or on ``stream=``.

Errors: ``TypeError`` (not a CUDA float32 array: CPU arrays, other dtypes) and ``ValueError``
(shapes, strides, batch sizes, overlapping output) are raised before anything touches the
GPU; :class:`Error` (a ``RuntimeError``) is a failure of CUDA, the driver, NVRTC or a launch,
no GPU included.
"""

import os

from . import _arrays, _cudalibs, _plan
from ._native import Error, check_gemm as _check_gemm, check_gemv as _check_gemv
from ._native import device_count as _device_count

__all__ = ["Tuned", "Error", "device_count", "check_gemm", "check_gemv", "SHIPPED_DB"]
__version__ = "0.1.0"

#: Where the shipped database comes from (it is built into the extension).
SHIPPED_DB = "results/tuning.toml (built in)"


def device_count():
    """How many CUDA GPUs the driver reports; 0 without a driver (never raises for that)."""
    return _device_count()


def _views(named, stream, device=None):
    """Views of the given ``(name, array)`` pairs (``out=None`` stays ``None``) and the
    stream to launch on: ``stream`` when given, else the one the arrays agree on. Arrays that
    say their GPU must be on ``device`` (when given)."""
    views = [(n, None if o is None and n == "out" else _arrays.view(o, n)) for n, o in named]
    if stream is not None:
        handle = _arrays.stream_handle(stream)
    else:
        seen = [(n, v.stream) for n, v in views if v is not None and v.stream is not None]
        handle = seen[0][1] if seen else 0
        for n, s in seen[1:]:
            if s != handle:
                raise ValueError(
                    "the arrays belong to different streams (%s: %#x, %s: %#x): pass stream= "
                    "to say which one the call runs on" % (seen[0][0], handle, n, s))
    out = []
    for n, v in views:
        if v is not None:
            v = _arrays.resolve(v, handle)
        out.append(v)
    devices = {v.device for v in out if v is not None and v.device is not None}
    if len(devices) > 1:
        raise ValueError("the arrays are on different GPUs (%s): move them to one"
                         % ", ".join(str(d) for d in sorted(devices)))
    if device is not None and devices and devices != {device}:
        raise ValueError("the arrays are on GPU %d, this autotune.Tuned on GPU %d: use "
                         "autotune.Tuned(device=%d) for them" % (min(devices), device, min(devices)))
    return out, handle


def _allocate(like, shape, name_of_like="a"):
    """A new float32 array of ``shape`` from ``like``'s library, on its GPU, and its view."""
    if like.lib == "torch":
        import torch

        arr = torch.empty(shape, dtype=torch.float32, device=like.obj.device)
    elif like.lib == "cupy":
        import cupy

        with like.obj.device:
            arr = cupy.empty(shape, dtype=cupy.float32)
    else:
        raise TypeError(
            "out=None allocates the result with the input's library (torch.empty or cupy.empty); "
            "%s is a %s, which is neither (JAX arrays are immutable): pass out= (a torch or cupy "
            "array)" % (name_of_like, type(like.obj).__name__))
    return arr, _arrays.view(arr, "out")


def _gemm_plan(a, b, out, trans_a, trans_b, alpha, beta, stream, device=None):
    (av, bv, ov), handle = _views([("a", a), ("b", b), ("out", out)], stream, device)
    plan = _plan.plan_gemm(av, bv, ov, trans_a, trans_b, alpha, beta)
    return plan, ov, handle


def _gemv_plan(a, x, out, trans, alpha, beta, stream, device=None):
    (av, xv, ov), handle = _views([("a", a), ("x", x), ("out", out)], stream, device)
    plan = _plan.plan_gemv(av, xv, ov, trans, alpha, beta)
    return plan, av, xv, ov, handle


def _gemm_lens(plan, out_len):
    return plan.a.extent(), plan.b.extent(), out_len


def _packed_len(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def check_gemm(a, b, out=None, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, stream=None):
    """Checks a :meth:`Tuned.gemm` call without a GPU and without launching anything: returns
    the problem's label (``MxNxK`` and its form, as the database keys it) or raises what the
    call would raise for its arguments."""
    plan, ov, _ = _gemm_plan(a, b, out, trans_a, trans_b, alpha, beta, stream)
    c_len = ov.extent() if ov is not None else _packed_len(plan.out_shape)
    return _check_gemm(plan.desc, *_gemm_lens(plan, c_len))


def check_gemv(a, x, out=None, trans=False, alpha=1.0, beta=0.0, stream=None):
    """Checks a :meth:`Tuned.gemv` call without a GPU, like :func:`check_gemm`."""
    plan, av, xv, ov, _ = _gemv_plan(a, x, out, trans, alpha, beta, stream)
    y_len = ov.extent() if ov is not None else _packed_len(plan.out_shape)
    return _check_gemv(plan.desc, av.extent(), xv.extent(), y_len)


class _Dims:
    """A shape given as a tuple of ints to :meth:`Tuned.explain`: a packed array of it."""

    def __init__(self, shape):
        self.__cuda_array_interface__ = {
            "version": 3, "shape": tuple(shape), "typestr": "<f4", "data": (0, False),
            "strides": None, "stream": None}


def _dims(x):
    if isinstance(x, tuple) and all(isinstance(d, int) for d in x):
        return _Dims(x)
    return x


class Tuned:
    """The tuning database bound to one GPU.

    ``db``: a tuning database file (``None``: the one this package ships, built in);
    ``device``: the CUDA ordinal; ``vendor_guard``: compute with cuBLAS wherever the database
    has no evidence that a tuned kernel is faster (on by default); ``math``: ``"any"``, or
    ``"simt"`` for FMA-exact FP32 (no tensor-core 3xTF32 kernels); ``record_to``: a directory
    where every problem called is recorded as suites for ``autotune --suite`` (or set
    ``AUTOTUNE_RECORD``); ``online``: a database file where shapes nobody tuned are tuned on
    their first call and kept; ``quiet``: no fallback messages on stderr.

    Raises :class:`Error` without a driver or GPU, saying what to do; ValueError for a
    database that cannot be read (FileNotFoundError for a missing one), before any GPU is
    touched.
    """

    def __init__(self, db=None, device=0, vendor_guard=True, math="any", record_to=None,
                 online=None, quiet=False):
        if db is not None:
            db = os.fspath(db)
            if not os.path.isfile(db):
                raise FileNotFoundError("tuning database %r: no such file (db=None uses the "
                                        "shipped one)" % db)
        if isinstance(device, bool) or not isinstance(device, int) or device < 0:
            raise TypeError("device must be a CUDA ordinal (an int >= 0); got %r" % (device,))
        if math not in ("any", "simt"):
            raise ValueError("math must be 'any' or 'simt'; got %r" % (math,))
        _cudalibs.configure()
        from ._native import Runtime

        self._rt = Runtime(db, device, bool(vendor_guard), math == "simt",
                           None if record_to is None else os.fspath(record_to),
                           None if online is None else os.fspath(online), bool(quiet))
        self._device = device

    @classmethod
    def _with_runtime(cls, runtime):
        """A Tuned over another runtime object (tests use one that records its calls)."""
        self = cls.__new__(cls)
        self._rt = runtime
        self._device = runtime.device
        return self

    @property
    def device(self):
        """The CUDA ordinal of this runtime's GPU."""
        return self._rt.device

    @property
    def device_name(self):
        """The GPU's name, as the database keys it."""
        return self._rt.device_name

    @property
    def arch(self):
        """The GPU's compute capability (``sm_90``)."""
        return self._rt.arch

    def __repr__(self):
        return "autotune.Tuned(device=%d: %s, %s)" % (self.device, self.device_name, self.arch)

    def gemm(self, a, b, out=None, trans_a=False, trans_b=False, alpha=1.0, beta=0.0,
             stream=None):
        """``out = alpha op(a) op(b) + beta out``, returns ``out``.

        ``a`` is ``m x k`` (``k x m`` with ``trans_a``), ``b`` is ``k x n`` (``n x k`` with
        ``trans_b``); a transposed view (``w.t()``) is read as stored, through the layout
        flags. 3-D arrays (``batch x ...``) make a strided batch; a 2-D operand is shared by
        every product of the batch. ``out=None`` allocates the result with the input's library
        (``torch.empty`` / ``cupy.empty`` on ``a``'s GPU; JAX inputs need ``out=``); an ``out``
        given may be a transposed view too. Launched on the arrays' stream, or ``stream``.
        """
        plan, ov, handle = _gemm_plan(a, b, out, trans_a, trans_b, alpha, beta, stream,
                                      self._device)
        a_len, b_len = plan.a.extent(), plan.b.extent()
        if ov is None:
            c_len = _packed_len(plan.out_shape)
            # Checked before allocating: a wrong call allocates nothing either.
            _check_gemm(plan.desc, a_len, b_len, c_len)
            out, ov = _allocate(plan.a if plan.a.lib else plan.b, plan.out_shape)
        else:
            c_len = ov.extent()
        self._rt.gemm(plan.desc, plan.a.ptr, a_len, plan.b.ptr, b_len, ov.ptr, c_len, handle)
        return out

    def gemv(self, a, x, out=None, trans=False, alpha=1.0, beta=0.0, stream=None):
        """``out = alpha op(a) x + beta out``, returns ``out``.

        ``a`` is ``m x k`` (``op(a) = a.T`` with ``trans``), ``x`` a vector; a 3-D ``a`` or a
        2-D ``x`` (``batch x length``) make a strided batch. ``out=None`` allocates as
        :meth:`gemm` does.
        """
        plan, av, xv, ov, handle = _gemv_plan(a, x, out, trans, alpha, beta, stream,
                                              self._device)
        if ov is None:
            y_len = _packed_len(plan.out_shape)
            _check_gemv(plan.desc, av.extent(), xv.extent(), y_len)
            out, ov = _allocate(av if av.lib else xv, plan.out_shape)
        else:
            y_len = ov.extent()
        self._rt.gemv(plan.desc, av.ptr, av.extent(), xv.ptr, xv.extent(), ov.ptr, y_len,
                      handle)
        return out

    def explain(self, op, a, b, out=None, trans_a=False, trans_b=False, trans=False,
                alpha=1.0, beta=0.0):
        """What :meth:`gemm` (``op="gemm"``) or :meth:`gemv` (``op="gemv"``, ``b`` is x)
        would run for these arguments, and why: the rule, the config, the vendor guard's
        evidence. Arrays, or shapes as tuples of ints (packed arrays of that shape), e.g.
        ``tuned.explain("gemm", (8, 4096), (11008, 4096), trans_b=True)`` for a layer call."""
        a, b = _dims(a), _dims(b)
        out = None if out is None else _dims(out)
        if op == "gemm":
            if trans:
                raise ValueError("trans is gemv's; gemm takes trans_a and trans_b")
            plan = _gemm_plan(a, b, out, trans_a, trans_b, alpha, beta, None)[0]
            return self._rt.explain_gemm(plan.desc)
        if op == "gemv":
            if trans_a or trans_b:
                raise ValueError("trans_a and trans_b are gemm's; gemv takes trans")
            plan = _gemv_plan(a, b, out, trans, alpha, beta, None)[0]
            return self._rt.explain_gemv(plan.desc)
        raise ValueError("op must be 'gemm' or 'gemv'; got %r" % (op,))
