"""From operands (shapes and strides, :mod:`autotune._arrays`) to the runtime's descriptors,
as ``cublasSgemmStridedBatched`` / ``cublasSgemvStridedBatched`` take them in the row-major
convention of ``autotune::product::desc``. Pure: no GPU.

A 2-D operand is either row-major with a leading dimension (its last stride is 1; the leading
dimension is the row stride), or the transpose of such a matrix (``w.t()``: its first stride is
1), which maps to the runtime's layout flags; a 3-D operand adds a batch stride. Anything else
(a column slice of a transposed view, a broadcast row, negative strides) is refused with
ValueError: autotune never copies.
"""

__all__ = ["GemmPlan", "GemvPlan", "plan_gemm", "plan_gemv"]

_HOW_TO_COPY = ("pass a contiguous copy yourself (torch: %s.contiguous(); cupy: "
                "cupy.ascontiguousarray(%s)): autotune never copies")


def _matrix(name, shape, strides):
    """``(stored_transposed, ld)`` of a matrix of logical ``shape`` (rows, cols)."""
    r, c = shape
    s0, s1 = strides
    # Row-major: the elements of a row are adjacent, rows are ld apart (ld >= cols).
    if (c == 1 or s1 == 1) and (r == 1 or s0 >= c):
        return False, (s0 if r > 1 else c)
    # The transpose of a row-major (cols x rows) matrix: columns adjacent, ld >= rows.
    if (r == 1 or s0 == 1) and (c == 1 or s1 >= r):
        return True, (s1 if c > 1 else r)
    raise ValueError(
        "%s: shape %r with strides %r (elements) is neither a row-major matrix with a leading "
        "dimension (last stride 1, row stride >= %d) nor the transpose of one (first stride 1, "
        "column stride >= %d); %s" % (name, shape, strides, c, r, _HOW_TO_COPY % (name, name)))


def _batch_stride(name, v):
    """The batch count and stride of a 3-D operand; ``(None, 0)`` for a 2-D one."""
    if len(v.shape) == 2:
        return None, 0
    b, s = v.shape[0], v.strides[0]
    if b == 1:
        return 1, 0
    if s < 0:
        raise ValueError("%s: batch stride %d is negative; %s" % (name, s, _HOW_TO_COPY % (name, name)))
    return b, s


def _batch(names_counts):
    """The call's batch count from each operand's (None: not batched); 1 broadcasts."""
    counts = [c for _, c in names_counts if c is not None]
    if not counts:
        return 1, False
    batch = max(counts)
    for name, c in names_counts:
        if c is not None and c not in (1, batch):
            raise ValueError("batch sizes differ: %s" % ", ".join(
                "%s has %d" % (n, c) for n, c in names_counts if c is not None))
    return batch, True


def _nonempty(name, v):
    if 0 in v.shape:
        raise ValueError("%s has shape %r: every dimension must be at least 1" % (name, v.shape))


def _check_ndim(name, v, allowed, what):
    if len(v.shape) not in allowed:
        raise ValueError("%s must be %s; got shape %r" % (name, what, v.shape))


def _check_out(out, shape, name="out"):
    if out.readonly:
        raise ValueError("%s is read-only (its __cuda_array_interface__ says so): pass a writable "
                         "array" % name)
    if tuple(out.shape) != tuple(shape):
        raise ValueError("%s has shape %r; this call writes %r" % (name, tuple(out.shape), tuple(shape)))


def _overlap(out, others):
    """ValueError when ``out``'s memory overlaps an input's: the kernel would read what it
    writes."""
    lo, hi = out.ptr, out.ptr + 4 * out.extent()
    for name, v in others:
        vlo, vhi = v.ptr, v.ptr + 4 * v.extent()
        if vlo < hi and lo < vhi:
            raise ValueError("out overlaps %s in memory: the kernel would read what it writes; "
                             "pass a separate out" % name)


def _aligned(views):
    for name, v in views:
        if v.ptr % 16:
            raise ValueError(
                "%s starts at %#x, not a multiple of 16 bytes (a view that starts mid-row?); the "
                "kernels read 16-byte vectors: %s" % (name, v.ptr, _HOW_TO_COPY % (name, name)))


def _scalar(name, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError("%s must be a real number; got %r" % (name, value))


class GemmPlan:
    """A checked GEMM: ``desc`` is the descriptor the extension's ``gemm`` and ``check_gemm``
    take (trans_a, trans_b, m, n, k, (lda, ldb, ldc), alpha, beta, batch, (stride_a,
    stride_b, stride_c)); ``a`` and ``b`` the views read as the runtime's A and
    B, ``swapped`` when ``out`` is a transposed view (the runtime's A is then ``b``);
    ``out_shape`` the shape of the result."""

    __slots__ = ("desc", "a", "b", "swapped", "out_shape")

    def __init__(self, desc, a, b, out_shape, swapped=False):
        self.desc = desc
        self.a = a
        self.b = b
        self.swapped = swapped
        self.out_shape = out_shape


class GemvPlan:
    """A checked GEMV: ``desc`` (trans, m, k, lda, alpha, beta, batch, stride_a, stride_x,
    stride_y), and the shape of the result."""

    __slots__ = ("desc", "out_shape")

    def __init__(self, desc, out_shape):
        self.desc = desc
        self.out_shape = out_shape


def plan_gemm(a, b, out, trans_a, trans_b, alpha, beta):
    """The descriptor of ``out = alpha op(a) op(b) + beta out`` for views ``a``, ``b`` and
    ``out`` (``None``: to be allocated, packed). Raises ValueError or TypeError."""
    alpha, beta = _scalar("alpha", alpha), _scalar("beta", beta)
    _check_ndim("a", a, (2, 3), "2-D (m x k) or 3-D (batch x m x k)")
    _check_ndim("b", b, (2, 3), "2-D (k x n) or 3-D (batch x k x n)")
    _nonempty("a", a)
    _nonempty("b", b)
    ra, ca = a.shape[-2:]
    rb, cb = b.shape[-2:]
    m, k = (ca, ra) if trans_a else (ra, ca)
    k2, n = (cb, rb) if trans_b else (rb, cb)
    if k != k2:
        raise ValueError("a %s and b %s cannot be multiplied: op(a) is %d x %d, op(b) is %d x %d"
                         % (tuple(a.shape), tuple(b.shape), m, k, k2, n))
    ba, sa = _batch_stride("a", a)
    bb, sb = _batch_stride("b", b)
    batch, batched = _batch([("a", ba), ("b", bb)])
    out_shape = (batch, m, n) if batched else (m, n)
    if out is None:
        if beta != 0.0:
            raise ValueError("beta = %g reads out's old values: pass out=" % beta)
        ldc, sc, out_t = n, (m * n if batch > 1 else 0), False
    else:
        _check_out(out, out_shape)
        _, sc = _batch_stride("out", out) if batched else (None, 0)
        out_t, ldc = _matrix("out", (m, n), out.strides[-2:])
        _overlap(out, [("a", a), ("b", b)])
        _aligned([("out", out)])
    _aligned([("a", a), ("b", b)])
    sta, lda = _matrix("a", a.shape[-2:], a.strides[-2:])
    stb, ldb = _matrix("b", b.shape[-2:], b.strides[-2:])
    ta, tb = sta != bool(trans_a), stb != bool(trans_b)
    if out_t:
        # out is stored transposed (n x m): out^T = op(b)^T op(a)^T, with the operands swapped.
        desc = (not tb, not ta, n, m, k, (ldb, lda, ldc), alpha, beta, batch, (sb, sa, sc))
        return GemmPlan(desc, b, a, out_shape, swapped=True)
    if batch > 1 and bb is None and not ta and sa == m * lda and (out is None or sc == m * ldc):
        # A batch of A's against one B, rows after rows: one product of batch * m rows.
        desc = (False, tb, batch * m, n, k, (lda, ldb, ldc), alpha, beta, 1, (0, 0, 0))
        return GemmPlan(desc, a, b, out_shape)
    desc = (ta, tb, m, n, k, (lda, ldb, ldc), alpha, beta, batch, (sa, sb, sc))
    return GemmPlan(desc, a, b, out_shape)


def _vector(name, v, batched_ok):
    _check_ndim(name, v, (1, 2) if batched_ok else (1,),
                "1-D, or 2-D (batch x length)" if batched_ok else "1-D")
    _nonempty(name, v)
    if v.shape[-1] > 1 and v.strides[-1] != 1:
        raise ValueError("%s: its elements are %d apart; autotune takes contiguous vectors "
                         "(unit increment); %s" % (name, v.strides[-1], _HOW_TO_COPY % (name, name)))
    if len(v.shape) == 2:
        b, s = v.shape[0], v.strides[0]
        if b == 1:
            return 1, 0
        if s < 0:
            raise ValueError("%s: batch stride %d is negative" % (name, s))
        return b, s
    return None, 0


def plan_gemv(a, x, out, trans, alpha, beta):
    """The descriptor of ``out = alpha op(a) x + beta out``. Raises ValueError or TypeError."""
    alpha, beta = _scalar("alpha", alpha), _scalar("beta", beta)
    _check_ndim("a", a, (2, 3), "2-D (m x k) or 3-D (batch x m x k)")
    _nonempty("a", a)
    r, c = a.shape[-2:]
    len_x, len_y = (r, c) if trans else (c, r)
    bx, sx = _vector("x", x, True)
    if x.shape[-1] != len_x:
        raise ValueError("a %s%s needs x of length %d; x has shape %r"
                         % (tuple(a.shape), " transposed" if trans else "", len_x, tuple(x.shape)))
    ba, sa = _batch_stride("a", a)
    batch, batched = _batch([("a", ba), ("x", bx)])
    out_shape = (batch, len_y) if batched else (len_y,)
    if out is None:
        if beta != 0.0:
            raise ValueError("beta = %g reads out's old values: pass out=" % beta)
        sy = len_y if batch > 1 else 0
    else:
        _check_out(out, out_shape)
        _, sy = _vector("out", out, batched)
        _overlap(out, [("a", a), ("x", x)])
        _aligned([("out", out)])
    _aligned([("a", a), ("x", x)])
    stored_t, lda = _matrix("a", (r, c), a.strides[-2:])
    if stored_t:
        # a is the transpose of a row-major (c x r) matrix: op(a) flips.
        desc = (not trans, c, r, lda, alpha, beta, batch, sa, sx, sy)
    else:
        desc = (bool(trans), r, c, lda, alpha, beta, batch, sa, sx, sy)
    return GemvPlan(desc, out_shape)
