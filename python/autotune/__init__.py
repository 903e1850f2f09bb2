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
from math import copysign as _copysign

from . import _arrays, _cudalibs, _plan
from ._native import Error, check_gemm as _check_gemm, check_gemv as _check_gemv
from ._native import device_count as _device_count
from ._arrays import TORCH_STREAM as _TORCH_STREAM, quick as _quick

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


def _allocate(lib, like, shape):
    """A new float32 array of ``shape`` from ``like``'s library (``lib``), on its GPU; the
    TypeError, naming operand a, where ``lib`` is neither torch nor cupy."""
    if lib == "torch":
        import torch

        return torch.empty(shape, dtype=torch.float32, device=like.device)
    if lib == "cupy":
        import cupy

        with like.device:
            return cupy.empty(shape, dtype=cupy.float32)
    raise TypeError(
        "out=None allocates the result with the input's library (torch.empty or cupy.empty); "
        "a is a %s, which is neither (JAX arrays are immutable): pass out= (a torch or cupy "
        "array)" % type(like).__name__)


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


def _trust(v0, v1, vc):
    """The extension's ``trusted=`` mask of views in the runtime's order (A, B or x, out):
    bit ``i`` where view ``i`` is :attr:`~autotune._arrays.View.trusted` (a PyTorch tensor;
    the driver checks the others)."""
    return v0.trusted | v1.trusted << 1 | vc.trusted << 2


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


# The plan cache (Tuned._cached): a call's key is its op, its flags and scalars, and each
# operand's sig (_arrays.quick); the entry, (plan, swapped, len0, len1, out_len, out_shape,
# like, trusted), is what the full path (_gemm_plan, _gemv_plan) made of the first call with
# that key: the runtime's plan (the descriptor, checked against the extents once and kept by
# the runtime: plan_gemm / plan_gemv, launched with launch_plan), whether the runtime's A is
# b, the extents in the runtime's operand order, which operand out=None allocates like (0: a,
# 1: b or x), and the runtime's trusted= mask (_trust). The checks left to each call are those
# of addresses, devices and streams.
#
# The mask is kept, not read again: a view is trusted for its exact type alone (a torch
# tensor's, which a sig holds first) once quick() has read it as a CUDA float32 strided tensor,
# as it does on every hit, and out=None allocates with the same library each time; so every
# call of one key gets the mask its first call got, and an array that is no PyTorch tensor
# (another type, another sig, another key) never gets a trusted bit.

# Flags and scalars of these types key the cache (a tensor as alpha would, by identity alone).
_KEYABLE = frozenset((bool, int, float))
# No out: nothing to read.
_NO_OUT = (None, 0, None, None)
# Plans a Tuned keeps (one per layout called: a model has tens); all are dropped past it.
_PLANS_MAX = 512


class _Miss:
    """What :meth:`Tuned._cached` returns for a call that takes the full path: ``key``, under
    which its plan is kept once made (``None``: not kept)."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key


_UNCACHED = _Miss(None)


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
        self._plans = {}
        self._fast = None

    @classmethod
    def _with_runtime(cls, runtime):
        """A Tuned over another runtime object (tests use one that records its calls)."""
        self = cls.__new__(cls)
        self._rt = runtime
        self._device = runtime.device
        self._plans = {}
        self._fast = None
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
        fast = self._fast
        if fast is not None and out is not None and stream is None and fast(
                "gemm", trans_a, trans_b, alpha, beta, a, b, out):
            return out
        got = self._cached("gemm", trans_a, trans_b, alpha, beta, a, b, out, stream)
        if got.__class__ is not _Miss:
            return got
        plan, ov, handle = _gemm_plan(a, b, out, trans_a, trans_b, alpha, beta, stream,
                                      self._device)
        a_len, b_len = plan.a.extent(), plan.b.extent()
        like = None
        if ov is None:
            c_len = _packed_len(plan.out_shape)
            # Checked before allocating: a wrong call allocates nothing either.
            _check_gemm(plan.desc, a_len, b_len, c_len)
            like = 0 if plan.a.lib else 1  # out=None: the runtime's A is a
            out, ov = self._allocate(like, plan.a, plan.b, plan.out_shape)
        else:
            c_len = ov.extent()
        trust = _trust(plan.a, plan.b, ov)
        self._remember(got.key, self._rt.plan_gemm, plan.desc,
                       (plan.swapped, a_len, b_len, c_len, plan.out_shape, like, trust))
        self._rt.gemm(plan.desc, plan.a.ptr, a_len, plan.b.ptr, b_len, ov.ptr, c_len, handle,
                      trusted=trust)
        return out

    def gemv(self, a, x, out=None, trans=False, alpha=1.0, beta=0.0, stream=None):
        """``out = alpha op(a) x + beta out``, returns ``out``.

        ``a`` is ``m x k`` (``op(a) = a.T`` with ``trans``), ``x`` a vector; a 3-D ``a`` or a
        2-D ``x`` (``batch x length``) make a strided batch. ``out=None`` allocates as
        :meth:`gemm` does.
        """
        fast = self._fast
        if fast is not None and out is not None and stream is None and fast(
                "gemv", trans, False, alpha, beta, a, x, out):
            return out
        got = self._cached("gemv", trans, False, alpha, beta, a, x, out, stream)
        if got.__class__ is not _Miss:
            return got
        plan, av, xv, ov, handle = _gemv_plan(a, x, out, trans, alpha, beta, stream,
                                              self._device)
        a_len, x_len = av.extent(), xv.extent()
        like = None
        if ov is None:
            y_len = _packed_len(plan.out_shape)
            _check_gemv(plan.desc, a_len, x_len, y_len)
            like = 0 if av.lib else 1
            out, ov = self._allocate(like, av, xv, plan.out_shape)
        else:
            y_len = ov.extent()
        trust = _trust(av, xv, ov)
        self._remember(got.key, self._rt.plan_gemv, plan.desc,
                       (False, a_len, x_len, y_len, plan.out_shape, like, trust))
        self._rt.gemv(plan.desc, av.ptr, a_len, xv.ptr, x_len, ov.ptr, y_len, handle,
                      trusted=trust)
        return out

    @staticmethod
    def _allocate(like, a, b, shape):
        """``out=None``'s array, like operand ``like`` (0: ``a``, 1: ``b``; views), and its
        view."""
        v = b if like else a
        arr = _allocate(v.lib, (v if v.lib else a).obj, shape)
        return arr, _arrays.view(arr, "out")

    def _remember(self, key, plan_with, desc, entry):
        """Keeps the call of ``desc`` under ``key`` (unless None): the runtime checks and
        keeps the descriptor (``plan_with``: its ``plan_gemm`` or ``plan_gemv``), the cache
        the plan's index with ``entry``."""
        if key is not None:
            plans = self._plans
            if len(plans) >= _PLANS_MAX:
                plans.clear()
                self._rt.clear_plans()
            plans[key] = (plan_with(desc, *entry[1:4]),) + entry

    def _torch_fast(self):
        """The tensor fast path: the extension's ``torch_call``, handed what it reads with
        (``use_torch``: PyTorch's objects and this cache), or :meth:`_torch_call` on a runtime
        without one (tests' stand-ins)."""
        st = _arrays._torch_state
        # One GPU in this process: every CUDA tensor is on it, so no call asks a tensor's.
        count = getattr(getattr(st["module"], "cuda", None), "device_count", None)
        self._one_gpu = self._device == 0 and count is not None and count() == 1
        use = getattr(self._rt, "use_torch", None)
        if use is None:
            return self._torch_call
        use(st["float32"], st["strided"], list(st["trusted"]), st["raw_stream"], self._plans,
            self._one_gpu)
        return self._rt.torch_call

    def _torch_call(self, op, ta, tb, alpha, beta, a, b, out):
        """The extension's ``torch_call`` in Python (its doc says what it checks): launches
        and returns True, or returns False for the general path."""
        st = _arrays._torch_state
        ts = st["trusted"]
        if not (type(out) in ts and type(a) in ts and type(b) in ts and type(ta) is bool
                and type(tb) is bool and type(alpha) is float and type(beta) is float
                and (alpha or _copysign(1.0, alpha) > 0) and (beta or _copysign(1.0, beta) > 0)):
            return False
        f32, strided, dev = st["float32"], st["strided"], self._device
        try:
            if not (a.dtype is f32 and b.dtype is f32 and out.dtype is f32 and a.is_cuda
                    and b.is_cuda and out.is_cuda and a.layout is strided
                    and b.layout is strided and out.layout is strided):
                return False
            hit = self._plans.get((op, ta, tb, alpha, beta, (type(a), a.shape, a.stride()),
                                   (type(b), b.shape, b.stride()),
                                   (type(out), out.shape, out.stride())))
            if hit is None or not self._one_gpu and (
                    a.get_device() != dev or b.get_device() != dev or out.get_device() != dev):
                return False
            pa, pb, pc = a.data_ptr(), b.data_ptr(), out.data_ptr()
        except Exception:  # read again by the general path, which says what is wrong
            return False
        plan, swapped, l0, l1, lc, _, _, trust = hit
        p0, p1 = (pb, pa) if swapped else (pa, pb)
        end = pc + 4 * lc
        if (p0 & 15 or p1 & 15 or pc & 15 or (p0 < end and pc < p0 + 4 * l0)
                or (p1 < end and pc < p1 + 4 * l1)):
            return False
        self._rt.launch_plan(plan, p0, p1, pc, st["raw_stream"](dev), trust)
        return True

    def _cached(self, op, ta, tb, alpha, beta, a, b, out, stream):
        """The call ``op`` (``"gemm"``, ``"gemv"``: ``b`` is x, ``tb`` False) made from its
        cached plan: ``out`` (allocated when None) once launched, or a :class:`_Miss` for the
        full path, which plans and checks everything. A call is made here only when each
        operand reads quickly (``_arrays.quick``) and a plan is kept for its key, that is the
        full path took the same op, flags, scalars and operands (up to addresses, GPUs and
        streams) without raising; then what could differ is checked again: the GPU of each
        operand, their streams, the alignment of each address and out's overlap with the
        inputs. Any of these failing goes the full path too, which raises with its message."""
        # PyTorch's own tensors, out given, the current stream (what a model's layers call):
        # the same key, checks and launch as below, in the extension (torch_call) or, on a
        # stand-in runtime, in _torch_call. A miss or a failed check goes on below, which
        # decides afresh.
        # (gemm and gemv try it first once it is set; this sets it on the first chance.)
        if (self._fast is None and stream is None and out is not None
                and _arrays._torch_state.get("trusted") is not None):
            self._fast = self._torch_fast()
            if self._fast(op, ta, tb, alpha, beta, a, b, out):
                return out
        ra, rb = _quick(a), _quick(b)
        rc = _NO_OUT if out is None else _quick(out)
        if (ra is None or rb is None or rc is None
                or type(ta) not in _KEYABLE or type(tb) not in _KEYABLE
                or type(alpha) not in _KEYABLE or type(beta) not in _KEYABLE
                # -0.0 keys as 0.0, but the descriptor carries its sign.
                or (not alpha and _copysign(1.0, alpha) < 0)
                or (not beta and _copysign(1.0, beta) < 0)):
            return _UNCACHED
        key = (op, ta, tb, alpha, beta, ra[0], rb[0], rc[0])
        try:
            entry = self._plans.get(key)
        except TypeError:  # a CAI with a list in it
            return _UNCACHED
        if entry is None:
            return _Miss(key)
        dev = self._device
        if ((ra[2] is not None and ra[2] != dev) or (rb[2] is not None and rb[2] != dev)
                or (rc[2] is not None and rc[2] != dev)):
            return _UNCACHED
        if stream is None and ra[3] is _TORCH_STREAM and rb[3] is _TORCH_STREAM and (
                rc[3] is _TORCH_STREAM or out is None):
            # Tensors: PyTorch's current stream on their GPU, asked each call.
            handle = _arrays._torch_state["raw_stream"](dev)
        elif stream is None:
            # The stream the arrays agree on (a torch tensor's: the current one, asked now).
            handle = torch_stream = None
            for r in (ra, rb, rc):
                s = r[3]
                if s is None:
                    continue
                if s is _TORCH_STREAM:
                    if torch_stream is None:
                        torch_stream = _arrays._torch_state["raw_stream"](dev)
                    s = torch_stream
                if handle is None:
                    handle = s
                elif s != handle:
                    return _UNCACHED
            if handle is None:
                handle = 0
        else:
            try:
                handle = _arrays.stream_handle(stream)
            except (TypeError, ValueError):
                return _UNCACHED
        plan, swapped, l0, l1, lc, out_shape, like, trust = entry
        p0, p1 = (rb[1], ra[1]) if swapped else (ra[1], rb[1])
        if p0 & 15 or p1 & 15:
            return _UNCACHED
        if out is None:
            out = _allocate(_arrays._lib_of(b if like else a), b if like else a, out_shape)
            r = _quick(out)
            pc = r[1] if r is not None else _arrays.view(out, "out").ptr
        else:
            pc = rc[1]
            end = pc + 4 * lc
            if pc & 15 or (p0 < end and pc < p0 + 4 * l0) or (p1 < end and pc < p1 + 4 * l1):
                return _UNCACHED
        self._rt.launch_plan(plan, p0, p1, pc, handle, trust)
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
