"""Reading CUDA arrays without copying them: where their float32 elements are, their shape and
strides (in elements), their GPU and the stream their data belongs to.

Three ways in, tried in this order:

1. a PyTorch tensor, read through its own accessors (``data_ptr``, ``stride``), the fastest;
   the stream is PyTorch's current stream on the tensor's GPU, the one ``torch.mm`` would use;
2. ``__cuda_array_interface__`` (versions 2 and 3: CuPy, Numba, JAX, PyTorch), whose v3
   ``stream`` is the stream the data belongs to;
3. DLPack (``__dlpack__`` / ``__dlpack_device__``), asked to make its data ready on the stream
   the call launches on.

Nothing here touches a GPU: a fake ``__cuda_array_interface__`` is read like a real one. The
driver checks the pointers later, in the extension, before anything is launched: all but
those of :attr:`View.trusted` views, which only the PyTorch reader makes.

:func:`view` reads an array in full and says what is wrong with it; :func:`quick` is the call
path's first try, for the arrays a plan cache can key (torch tensors, CAI arrays): a few
attribute reads, no objects made, and ``None`` for whatever :func:`view` must look at.
"""

import ctypes
import sys

__all__ = ["View", "view", "quick", "resolve", "stream_handle", "TORCH_STREAM"]

# DLPack device types (dlpack.h).
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host (pinned)", 4: "OpenCL", 7: "Vulkan",
             8: "Metal", 10: "ROCm", 13: "CUDA managed", 14: "oneAPI"}


class View:
    """One operand as the call sees it.

    ``ptr``: the address of element ``[0, ..., 0]``; ``shape`` and ``strides`` (elements, as
    tuples); ``device``: the CUDA ordinal, or ``None`` where the protocol does not say (the
    driver checks it); ``stream``: the stream handle the data belongs to, or ``None`` when the
    array says nothing; ``lib``: ``"torch"``, ``"cupy"``, ``"jax"`` or ``None``, for allocating
    an output like it; ``readonly``: whether the producer forbids writes; ``obj``: the array;
    ``keep``: what must stay alive for the call (a DLPack capsule).

    ``trusted``: whether the extension may launch on ``ptr`` without asking the driver about
    it (the ``trusted=`` mask of ``Runtime.gemm``). False unless the PyTorch reader set it:
    no constructor argument sets it, so a view made anywhere else is checked by the driver.
    """

    __slots__ = ("ptr", "shape", "strides", "device", "stream", "lib", "readonly", "obj", "keep",
                 "trusted")

    def __init__(self, ptr, shape, strides, device=None, stream=None, lib=None, readonly=False,
                 obj=None, keep=None):
        self.ptr = ptr
        self.shape = shape
        self.strides = strides
        self.device = device
        self.stream = stream
        self.lib = lib
        self.readonly = readonly
        self.obj = obj
        self.keep = keep
        self.trusted = False

    def extent(self):
        """Elements from the first to one past the last one the array can reach (0 if empty)."""
        e = 1
        for d, s in zip(self.shape, self.strides):
            if d == 0:
                return 0
            e += (d - 1) * s
        return e

    def __repr__(self):
        return "View(ptr=%#x, shape=%r, strides=%r, device=%r, stream=%r, lib=%r)" % (
            self.ptr, self.shape, self.strides, self.device, self.stream, self.lib)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

_torch_state = {"module": None}

# What :func:`quick` makes of an array's type: ``(torch.float32, torch.strided)`` for torch
# tensors (subclasses included), ``()`` for the rest (read through the CAI, if any).
_KIND = {}

#: The stream :func:`quick` gives a torch tensor: PyTorch's current stream on its GPU, which
#: the caller asks for once per call (``_torch_state["raw_stream"](device)``), never cached.
TORCH_STREAM = object()


def _torch():
    """PyTorch when the program has imported it (never imported here)."""
    t = _torch_state["module"]
    if t is None:
        t = sys.modules.get("torch")
        if t is not None and hasattr(t, "Tensor"):
            _torch_state["module"] = t
            _torch_state["float32"] = t.float32
            _torch_state["strided"] = t.strided
            # The tensor types whose views the extension trusts (_from_torch): PyTorch's own,
            # never a subclass, which could override data_ptr(), shape or stride().
            nn = getattr(t, "nn", None)
            _torch_state["trusted"] = frozenset(
                c for c in (t.Tensor, getattr(nn, "Parameter", None)) if isinstance(c, type))
            raw = getattr(t._C, "_cuda_getCurrentRawStream", None)
            _torch_state["raw_stream"] = raw if raw is not None else (
                lambda d: t.cuda.current_stream(d).cuda_stream)
    return t


def _lib_of(obj):
    mod = type(obj).__module__ or ""
    root = mod.split(".", 1)[0]
    if root in ("torch", "cupy"):
        return root
    if root in ("jax", "jaxlib"):
        return "jax"
    return None


def _contiguous(shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def _not_gpu(obj, name, where):
    return TypeError(
        "%s is a %s array (%s): autotune computes on the GPU and never copies; move it there "
        "first (torch: %s.cuda(); NumPy: torch.from_numpy(%s).cuda() or cupy.asarray(%s))"
        % (name, where, type(obj).__name__, name, name, name))


def _check_float32(name, what):
    return TypeError(
        "%s has dtype %s; autotune computes float32 (SGEMM/SGEMV): convert it first "
        "(torch: %s.float(); cupy/numpy: %s.astype('float32'))" % (name, what, name, name))


def _from_torch(t, obj, name):
    st = _torch_state
    if obj.dtype is not st["float32"]:
        raise _check_float32(name, obj.dtype)
    if not obj.is_cuda:
        raise _not_gpu(obj, name, "CPU (%s)" % (obj.device,))
    if obj.layout is not st["strided"]:
        raise TypeError("%s is a %s tensor; autotune takes dense (strided) tensors: pass "
                        "%s.to_dense()" % (name, obj.layout, name))
    device = obj.get_device()
    v = View(obj.data_ptr(), tuple(obj.shape), tuple(obj.stride()), device,
             st["raw_stream"](device), "torch", False, obj)
    # Trusted (the extension skips the driver's pointer check): a CUDA float32 strided tensor
    # of PyTorch's own type, whose storage is device memory of GPU ``device`` that PyTorch
    # bounds this view by, as torch.mm on it relies on. The caller (Tuned) refuses a device
    # other than its own before launching, so the GPU is the runtime's too.
    v.trusted = type(obj) in st["trusted"]
    return v


def _from_cai(cai, obj, name):
    if not isinstance(cai, dict):
        raise TypeError("%s.__cuda_array_interface__ is a %s, not a dict" % (name, type(cai).__name__))
    try:
        shape = tuple(map(int, cai["shape"]))
        typestr = cai["typestr"]
        ptr, readonly = cai["data"]
    except (KeyError, TypeError, ValueError) as e:
        raise TypeError("%s.__cuda_array_interface__ lacks or garbles %s: it needs 'shape', "
                        "'typestr' and 'data' (ptr, readonly)" % (name, e))
    version = cai.get("version", 0)
    if version < 2:
        raise TypeError("%s.__cuda_array_interface__ is version %r; autotune reads versions 2 "
                        "and 3" % (name, version))
    if typestr not in ("<f4", "=f4") and not (typestr == "|f4"):
        raise _check_float32(name, repr(typestr))
    if cai.get("mask") is not None:
        raise TypeError("%s is a masked array; autotune takes unmasked arrays" % name)
    strides = cai.get("strides")
    if strides is None:
        strides = _contiguous(shape)
    else:
        strides = tuple(map(int, strides))
        if len(strides) != len(shape):
            raise ValueError("%s: __cuda_array_interface__ has %d strides for %d dimensions"
                             % (name, len(strides), len(shape)))
        if any(s % 4 for s in strides):
            raise ValueError("%s: strides %r (bytes) are not whole float32 elements" % (name, strides))
        strides = tuple(s // 4 for s in strides)
    stream = cai.get("stream") if version >= 3 else None
    if stream is not None:
        stream = int(stream)
        if stream == 0:
            raise ValueError("%s: __cuda_array_interface__ has stream 0, which the protocol "
                             "forbids (1: legacy default stream, 2: per-thread default)" % name)
    if ptr is None:
        ptr = 0
    return View(int(ptr), shape, strides, None, stream, _lib_of(obj), bool(readonly), obj)


class _Pending:
    """A DLPack array read once the call's stream is known (its producer syncs to it)."""

    __slots__ = ("obj", "name", "device")

    def __init__(self, obj, name, device):
        self.obj = obj
        self.name = name
        self.device = device

    stream = None


def _from_dlpack(p, stream):
    obj, name = p.obj, p.name
    # The consumer's stream: 1 is the legacy default stream (0 is not allowed for CUDA).
    try:
        capsule = obj.__dlpack__(stream=stream if stream else 1)
    except TypeError:
        capsule = obj.__dlpack__()
    addr = _capsule_pointer(capsule, b"dltensor")
    t = _DLTensor.from_address(addr)
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    if (code, bits, lanes) != (2, 32, 1):
        kinds = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
        raise _check_float32(name, "%s%d" % (kinds.get(code, "code%d" % code), bits))
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(ndim))
    else:
        strides = _contiguous(shape)
    ptr = (t.data or 0) + t.byte_offset
    return View(ptr, shape, strides, p.device, stream, _lib_of(obj), False, obj, capsule)


def _classify(tp):
    t = _torch_state["module"] or _torch()
    kind = ()
    if t is not None and issubclass(tp, t.Tensor):
        kind = (_torch_state["float32"], _torch_state["strided"])
    if len(_KIND) < 256:
        _KIND[tp] = kind
    return kind


def quick(obj):
    """``(sig, ptr, device, stream)`` of a CUDA float32 torch tensor or of an array with a
    well-formed ``__cuda_array_interface__``, in as few Python calls as each allows; ``None``
    for anything else or anything unusual (a CPU tensor, another dtype, a description
    :func:`view` might refuse), which :func:`view` then reads in full, raising what is wrong.

    ``sig`` is hashable (unless the CAI holds lists) and holds everything of the array that
    :func:`view` reads but its address, GPU and stream: the type (so the library), the shape
    and strides, and for the CAI its typestr, version, mask and readonly flag. Arrays of equal
    ``sig`` make equal views up to those three, so a plan made for one is the plan of the
    other. ``device``: the CUDA ordinal, ``None`` where the CAI does not say; ``stream``: the
    CAI v3 stream (an int, never 0), ``None`` where there is none, or :data:`TORCH_STREAM`.
    """
    tp = type(obj)
    kind = _KIND.get(tp)
    if kind is None:
        kind = _classify(tp)
    try:
        if kind:
            f32, strided = kind
            if obj.dtype is not f32 or not obj.is_cuda or obj.layout is not strided:
                return None
            sig = (tp, obj.shape, obj.stride())
            return sig, obj.data_ptr(), obj.get_device(), TORCH_STREAM
        cai = obj.__cuda_array_interface__
        if type(cai) is not dict:
            return None
        ptr, readonly = cai["data"]
        version = cai["version"]
        sig = (tp, cai["typestr"], cai["shape"], cai.get("strides"), version, cai.get("mask"),
               readonly)
        stream = cai.get("stream") if version >= 3 else None
    except Exception:
        # Whatever it is (a tensor without storage, a CAI property that raises), view() reads
        # it again, in its own order, and raises what it raises.
        return None
    if type(ptr) is not int or (stream is not None and (type(stream) is not int or not stream)):
        return None
    return sig, ptr, None, stream


def view(obj, name):
    """``obj`` read as a :class:`View`, or a pending DLPack read (see :func:`resolve`).

    Raises TypeError for what is no CUDA float32 array (CPU arrays included), ValueError for
    descriptions that contradict themselves.
    """
    t = _torch_state["module"] or _torch()
    if t is not None and isinstance(obj, t.Tensor):
        return _from_torch(t, obj, name)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _from_cai(cai, obj, name)
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is not None and hasattr(obj, "__dlpack__"):
        kind, device = dev()
        if kind not in (_DL_CUDA, _DL_CUDA_MANAGED):
            raise _not_gpu(obj, name, _DL_NAMES.get(kind, "device type %d" % kind))
        return _Pending(obj, name, int(device))
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        raise _not_gpu(obj, name, "CPU")
    raise TypeError(
        "%s is a %s, not a CUDA array: autotune takes arrays that offer "
        "__cuda_array_interface__ or DLPack on the GPU (torch.Tensor on cuda, cupy.ndarray, "
        "jax.Array)" % (name, type(obj).__name__))


def resolve(v, stream):
    """A pending DLPack read made on ``stream``; a :class:`View` as it is."""
    if isinstance(v, _Pending):
        return _from_dlpack(v, stream)
    return v


def stream_handle(stream):
    """A stream argument as a ``CUstream`` handle: an int, a ``torch.cuda.Stream``
    (``cuda_stream``), a ``cupy.cuda.Stream`` (``ptr``), or an object with ``__cuda_stream__``.
    """
    if isinstance(stream, bool):
        raise TypeError("stream must be a CUDA stream or its handle, not a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError("stream handle %d is negative" % stream)
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        got = proto() if callable(proto) else proto
        return int(got[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    raise TypeError("stream: a %s is not a CUDA stream: pass an int handle, a torch.cuda.Stream "
                    "or a cupy.cuda.Stream" % type(stream).__name__)
