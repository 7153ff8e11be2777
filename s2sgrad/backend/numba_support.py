"""Numba implementations of the ``s2sgrad.runtime`` helpers generated code calls.

Each ``@overload`` gives Numba a nopython version of one helper, chosen by
the argument types at compile time; the contract is the helper's docstring
in ``s2sgrad/runtime/__init__.py``.  A helper with no overload here makes Numba fail
to type the generated function, which then runs as Python and says why.
The helpers of a loop's adjoint allocate a vector as ``np.zeros((n,), dtype)``, the
spelling Numba's own ``@`` and ``np.concatenate`` use: ``np.zeros(n, dtype=...)`` is one
more signature of ``np.zeros`` and ``np.empty`` for Numba to compile in every process.
"""
import numpy as np
from numba import literal_unroll, types
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from .. import runtime as rt


def _is_scalar(t):
    return isinstance(t, (types.Number, types.Boolean))


@overload(rt.compiled)
def _compiled():
    """True in compiled code (``rt.compiled``: a fused loop runs its loop)."""
    return lambda: True


@overload(rt.one_length)
def _one_length(shapes, least):
    """``rt.one_length`` of a tuple of 1-D shapes."""
    def impl(shapes, least):
        n = shapes[0][0]
        same = n >= least
        for shape in shapes:
            same = same and shape[0] == n
        return same
    return impl


@overload(rt.cut_shape)
def _cut_shape(shape, low, high):
    """``rt.cut_shape`` of integer bounds (``high`` None: to the end)."""
    if not isinstance(low, types.Integer) or \
            not isinstance(high, (types.Integer, types.NoneType, types.Omitted)):
        return None
    if isinstance(high, types.Integer):
        def impl(shape, low, high):
            if 0 <= low <= high <= shape[0]:
                return (high - low,)
            return (-1,)
        return impl

    def to_end(shape, low, high):
        if 0 <= low <= shape[0]:
            return (shape[0] - low,)
        return (-1,)
    return to_end


@overload(rt.row_shape)
def _row_shape(shape, k):
    """``rt.row_shape`` of an integer index into a 2-D shape."""
    if not isinstance(k, types.Integer) or len(shape) != 2:
        return None

    def impl(shape, k):
        if -shape[0] <= k < shape[0]:
            return (shape[1],)
        return (-1,)
    return impl


@overload(rt.ones_like)
def _ones_like(value):
    if isinstance(value, types.Array):
        return lambda value: np.ones_like(value)
    if isinstance(value, types.Float):
        return lambda value: value * 0 + 1
    if _is_scalar(value):
        return lambda value: 1.0


@overload(rt.zeros_like)
def _zeros_like(value):
    if isinstance(value, types.Array):
        return lambda value: np.zeros_like(value)
    if isinstance(value, types.Float):
        return lambda value: value * 0
    if _is_scalar(value):
        return lambda value: 0.0


@overload(rt.unbroadcast)
def _unbroadcast(g, like):
    if _is_scalar(like):
        if isinstance(g, types.Array):
            return lambda g, like: np.sum(g)
        return lambda g, like: g
    if not isinstance(like, types.Array):
        return None
    if _is_scalar(g):
        def fill(g, like):
            out = np.empty(like.shape, dtype=like.dtype)
            out[...] = g
            return out
        return fill
    same_ndim = g.ndim == like.ndim
    if same_ndim and g.ndim == 1:
        # a vector onto a vector: itself, or summed onto one element (``like`` of length
        # 1).  Spelt apart from the general case so that the loops of most gradients do
        # not compile ``_sum_to_shape`` (about a second of Numba's time).
        def vector(g, like):
            if like.shape[0] != 1 or g.shape[0] == 1:
                return np.ascontiguousarray(g)
            out = np.zeros((1,), g.dtype)
            for k in range(g.shape[0]):
                out[0] += g[k]
            return out
        return vector

    def reduce(g, like):
        if same_ndim and g.shape == like.shape:
            return np.ascontiguousarray(g)
        return _sum_to_shape(np.ascontiguousarray(g), like.shape)
    return reduce


def _sum_to_shape(g, shape):  # pragma: no cover - compiled by Numba
    raise NotImplementedError


@overload(_sum_to_shape)
def _sum_to_shape_impl(g, shape):
    def impl(g, shape):
        out = np.zeros(shape, dtype=g.dtype)
        flat_out = out.reshape(out.size)
        flat_g = g.reshape(g.size)
        gs = g.shape
        lead = g.ndim - len(shape)
        for k in range(g.size):
            rem = k
            offset = 0
            stride = 1
            for ax in range(g.ndim - 1, -1, -1):
                i = rem % gs[ax]
                rem //= gs[ax]
                la = ax - lead
                if la >= 0:
                    n = shape[la]
                    if n != 1:
                        offset += i * stride
                    stride *= n
            flat_out[offset] += flat_g[k]
        return out
    return impl


@overload(rt.unreduce)
def _unreduce(g, like, axis, keepdims):
    if not isinstance(like, types.Array):
        return None
    if isinstance(axis, (types.NoneType, types.Omitted)) or axis is None:
        if _is_scalar(g):
            def fill(g, like, axis, keepdims):
                out = np.empty(like.shape, dtype=like.dtype)
                out[...] = g
                return out
            return fill
        if isinstance(g, types.Array):
            def fill_array(g, like, axis, keepdims):
                out = np.empty(like.shape, dtype=like.dtype)
                out[...] = g.reshape(g.size)[0] if g.size == 1 else 0
                return out
            return fill_array
    if _axis_count(axis, like.ndim) is not None and isinstance(g, types.Array):
        # an int or tuple axis, keepdims or not: g's elements lie in the order of
        # like's kept axes either way
        nd = like.ndim

        def spread(g, like, axis, keepdims):
            flags = _axis_flags(axis, nd)
            out = np.empty(like.shape, dtype=like.dtype)
            flat_out = out.reshape(out.size)
            gc = np.ascontiguousarray(g)
            flat_g = gc.reshape(gc.size)
            ls = like.shape
            for k in range(out.size):
                rem = k
                offset = 0
                stride = 1
                for d in range(nd - 1, -1, -1):
                    i = rem % ls[d]
                    rem //= ls[d]
                    if not flags[d]:
                        offset += i * stride
                        stride *= ls[d]
                flat_out[k] = flat_g[offset]
            return out
        return spread
    if _axis_count(axis, like.ndim) is not None and _is_scalar(g):
        def fill1(g, like, axis, keepdims):
            out = np.empty(like.shape, dtype=like.dtype)
            out[...] = g
            return out
        return fill1


register_jitable(rt.section_length)     # its own body, numpy's errors and all


@overload(rt.reduction_count)
def _reduction_count(like, axis):
    if isinstance(axis, (types.NoneType, types.Omitted)) or axis is None:
        return lambda like, axis: like.size
    if isinstance(axis, types.Integer):
        return lambda like, axis: like.shape[axis % like.ndim]
    if isinstance(like, types.Array) and _axis_count(axis, like.ndim) is not None:
        nd = like.ndim

        def count(like, axis):
            flags = _axis_flags(axis, nd)
            n = 1
            for d in range(nd):
                if flags[d]:
                    n *= like.shape[d]
            return n
        return count


@overload(rt.extremum_mask)
def _extremum_mask(x, ans, axis, keepdims):
    if not isinstance(x, types.Array) or _axis_count(axis, x.ndim) is None:
        return None
    fdt = _float_dtype(x.dtype)
    if _is_none(axis):
        def impl(x, ans, axis, keepdims):
            hit = (x == ans).astype(fdt)
            return hit / hit.sum()
        return impl

    def along(x, ans, axis, keepdims):
        hit = (x == rt.unreduce(ans, x, axis, keepdims)).astype(fdt)
        return hit / rt.sum(hit, axis, True)
    return along


@overload(rt.extremum_adjoint)
def _extremum_adjoint(g, x, ans, axis, keepdims):
    if not isinstance(x, types.Array) or _axis_count(axis, x.ndim) is None:
        return None
    return lambda g, x, ans, axis, keepdims: (rt.unreduce(g, x, axis, keepdims)
                                              * rt.extremum_mask(x, ans, axis, keepdims))


@overload(rt.matmul_adjoints)
def _matmul_adjoints(g, a, b):
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
        return None
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, a, b: (g @ np.ascontiguousarray(b.T), np.ascontiguousarray(a.T) @ g)
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, a, b: (np.ascontiguousarray(b) @ g, np.outer(a, g))
    if a.ndim == 2 and b.ndim == 1:
        return lambda g, a, b: (np.outer(g, b), np.ascontiguousarray(a.T) @ g)
    if a.ndim == 1 and b.ndim == 1:
        return lambda g, a, b: (g * b, g * a)


def _transposed(x):
    """``x.T`` as Numba's BLAS calls take it: a C or Fortran array's transpose is a view
    BLAS reads with a flag; any other layout is copied once."""
    if x.layout in "CF":
        return lambda x: x.T
    return lambda x: np.ascontiguousarray(x.T)


@overload(rt.matmul_left)
def _matmul_left(g, a, b):
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
        return None
    transposed = register_jitable(_transposed(b))
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, a, b: np.ascontiguousarray(g) @ transposed(b)
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, a, b: np.ascontiguousarray(b) @ g
    if a.ndim == 2 and b.ndim == 1:
        return lambda g, a, b: np.outer(g, b)
    if a.ndim == 1 and b.ndim == 1:
        return lambda g, a, b: g * b


def _transposed_times(a, g):  # pragma: no cover - compiled by Numba
    """``a.T @ g`` for a matrix ``a`` and a vector ``g`` of its dtype, row by row of
    ``a``: Numba's ``@`` of a transposed matrix is a second BLAS product to compile (a
    Fortran-layout gemv beside the forward's ``W @ x``, about 0.6 s of a cold compile)."""
    if a.shape[0] != g.shape[0]:
        raise ValueError("matmul: the adjoint's length is not the matrix's row count")
    out = np.zeros((a.shape[1],), a.dtype)
    for i in range(a.shape[0]):
        gi = g[i]
        for j in range(a.shape[1]):
            out[j] += a[i, j] * gi
    return out


_transposed_times_jit = register_jitable(_transposed_times)


@overload(rt.matmul_right)
def _matmul_right(g, a, b):
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
        return None
    transposed = register_jitable(_transposed(a))
    if a.ndim == 2 and b.ndim == 2:
        return lambda g, a, b: transposed(a) @ np.ascontiguousarray(g)
    if a.ndim == 1 and b.ndim == 2:
        return lambda g, a, b: np.outer(a, g)
    if a.ndim == 2 and b.ndim == 1 and isinstance(g, types.Array) and g.ndim == 1 \
            and g.dtype == a.dtype and isinstance(a.dtype, types.Float):
        return lambda g, a, b: _transposed_times_jit(a, g)
    if a.ndim == 2 and b.ndim == 1:
        return lambda g, a, b: transposed(a) @ np.ascontiguousarray(g)
    if a.ndim == 1 and b.ndim == 1:
        return lambda g, a, b: g * a


@overload(rt.dot_left)
def _dot_left(g, a, b):
    if isinstance(a, types.Array) and isinstance(b, types.Array) and a.ndim <= 2 and b.ndim <= 2:
        return lambda g, a, b: rt.matmul_left(g, a, b)
    if _is_scalar(a) and _is_scalar(b):
        return lambda g, a, b: g * b


@overload(rt.dot_right)
def _dot_right(g, a, b):
    if isinstance(a, types.Array) and isinstance(b, types.Array) and a.ndim <= 2 and b.ndim <= 2:
        return lambda g, a, b: rt.matmul_right(g, a, b)
    if _is_scalar(a) and _is_scalar(b):
        return lambda g, a, b: g * a


@overload(rt.dot_adjoints)
def _dot_adjoints(g, a, b):
    if isinstance(a, types.Array) and isinstance(b, types.Array) and a.ndim <= 2 and b.ndim <= 2:
        return lambda g, a, b: rt.matmul_adjoints(g, a, b)
    if _is_scalar(a) and _is_scalar(b):
        return lambda g, a, b: (g * b, g * a)


@overload(rt.reshape_like)
def _reshape_like(g, like):
    if isinstance(like, types.Array):
        return lambda g, like: np.ascontiguousarray(g).reshape(like.shape)
    if _is_scalar(like):
        if isinstance(g, types.Array):
            return lambda g, like: np.sum(g)
        return lambda g, like: g


@overload(rt.cast_like)
def _cast_like(g, like):
    if isinstance(like, types.Array):
        return lambda g, like: np.asarray(g).astype(like.dtype)
    return lambda g, like: g


def _is_none(t):
    return t is None or isinstance(t, (types.NoneType, types.Omitted))


@overload(rt.unreduce)
def _unreduce_scalar(g, like, axis, keepdims):
    if _is_scalar(like):
        return lambda g, like, axis, keepdims: g


def _tuple_from_array(n):
    """A compiled helper: the first ``n`` items of an int array as a UniTuple (n known at
    compile time, as numba needs for np.transpose's axes)."""
    src = "def impl(arr):\n    return (" + "".join(f"arr[{i}], " for i in range(n)) + ")\n"
    scope = {}
    exec(src, scope)  # noqa: S102 - a fixed template, no user input
    from numba import njit
    return njit(scope["impl"])


@overload(rt.transpose_adjoint)
def _transpose_adjoint(g, axes):
    if not isinstance(g, types.Array):
        return None
    if _is_none(axes):
        return lambda g, axes: np.ascontiguousarray(g.T)
    if isinstance(axes, types.UniTuple) and isinstance(axes.dtype, types.Integer) \
            and axes.count == g.ndim:
        as_tuple = _tuple_from_array(g.ndim)
        nd = g.ndim

        def impl(g, axes):
            inv = np.empty(nd, dtype=np.int64)
            for i in range(nd):
                inv[axes[i] % nd] = i
            return np.ascontiguousarray(np.transpose(g, as_tuple(inv)))
        return impl


@overload(rt.reverse_cumsum)
def _reverse_cumsum(g, axis):
    if not isinstance(g, types.Array):
        return None
    if _is_none(axis):
        return lambda g, axis: np.cumsum(np.ascontiguousarray(g).ravel()[::-1])[::-1].copy()
    if isinstance(axis, types.Integer):
        def along(g, axis):
            gc = np.ascontiguousarray(g)
            ax = axis % gc.ndim
            n = gc.shape[ax]
            inner = 1
            for k in range(ax + 1, gc.ndim):
                inner *= gc.shape[k]
            outer = gc.size // max(n * inner, 1)
            src = gc.reshape((outer, n, inner))
            out = np.empty_like(src)
            for o in range(outer):
                for i in range(inner):
                    acc = src[o, 0, i] * 0
                    for k in range(n - 1, -1, -1):
                        acc += src[o, k, i]
                        out[o, k, i] = acc
            return out.reshape(gc.shape)
        return along


@overload(rt.det_adjoint)
def _det_adjoint(g, ans, a):
    if isinstance(a, types.Array) and a.ndim == 2:
        return lambda g, ans, a: (g * ans) * np.ascontiguousarray(np.linalg.inv(a).T)


@overload(rt.solve_adjoint)
def _solve_adjoint(a, g, b):
    if isinstance(a, types.Array) and a.ndim == 2:
        return lambda a, g, b: np.linalg.solve(np.ascontiguousarray(a.T),
                                               np.ascontiguousarray(g))


@overload(rt.solve_a_adjoint)
def _solve_a_adjoint(gb, x, b):
    if isinstance(b, types.Array) and b.ndim == 1:
        return lambda gb, x, b: -np.outer(gb, x)
    if isinstance(b, types.Array) and b.ndim == 2:
        return lambda gb, x, b: -(np.ascontiguousarray(gb) @ np.ascontiguousarray(x.T))


@overload(rt.norm_adjoint)
def _norm_adjoint(g, ans, x, ord, axis, keepdims):
    if not (isinstance(x, types.Array) and _is_none(axis) and _is_scalar(g)):
        return None
    if _is_none(ord):      # the 2-norm of a vector, the Frobenius norm of a matrix
        return lambda g, ans, x, ord, axis, keepdims: (g / ans) * x
    if x.ndim == 1 and isinstance(ord, (types.Integer, types.Float)):
        def vector(g, ans, x, ord, axis, keepdims):
            if ord == 1:
                return g * np.sign(x)
            if ord == np.inf:
                hit = (np.abs(x) == ans) * 1.0
                return (g / hit.sum()) * hit * np.sign(x)
            if ord == 2:
                return (g / ans) * x
            if ord == -np.inf:
                low = (np.abs(x) == ans) * 1.0
                return (g / low.sum()) * low * np.sign(x)
            if ord == 0:
                raise NotImplementedError("np.linalg.norm with ord=0 counts nonzeros: no gradient")
            return g * np.sign(x) * (np.abs(x) / ans) ** (ord - 1)
        return vector


@overload(rt.copy_value)
def _copy_value(value):
    if isinstance(value, types.Array):
        return lambda value: value.copy()
    return lambda value: value


# ---------------------------------------------------------------- axes
#
# An ``axis`` argument reaches an overload as None, an int (literal or not) or a
# tuple of ints; ``_axis_count`` says at typing time how many axes it names (the
# rank of the result depends on it), ``_axis_flags`` marks them at run time.


def _axis_count(axis, ndim):
    """How many of ``ndim`` axes the Numba type ``axis`` names, or None when it is
    no axis type."""
    if _is_none(axis):
        return ndim
    if isinstance(axis, types.Integer):
        return 1
    if isinstance(axis, types.BaseTuple) and all(isinstance(t, types.Integer)
                                                 for t in axis.types):
        return len(axis.types)
    return None


def _literal_bool(t):
    """The value of a bool argument Numba knows while typing (a literal), else None."""
    if isinstance(t, types.BooleanLiteral):
        return t.literal_value
    if isinstance(t, types.Omitted):
        return bool(t.value)
    if isinstance(t, types.IntegerLiteral):
        return bool(t.literal_value)
    return None


def _float_dtype(dtype):
    """The numpy scalar type a mean (or a mask) of Numba dtype ``dtype`` is computed in:
    floats keep theirs, everything else gives float64."""
    return np.result_type(as_dtype(dtype), np.float32).type


def _axis_flags(axis, ndim):  # pragma: no cover - compiled by Numba
    """Compiled only: a bool array of length ``ndim``, True on the axes ``axis`` names."""
    raise NotImplementedError


@register_jitable
def _mark_axis(flags, a, ndim):
    if a < -ndim or a >= ndim:
        raise ValueError("axis is out of bounds for the array's dimension")
    flags[a % ndim] = True


@overload(_axis_flags)
def _axis_flags_impl(axis, ndim):
    if _is_none(axis):
        return lambda axis, ndim: np.ones(ndim, dtype=np.bool_)
    if isinstance(axis, types.Integer):
        def one(axis, ndim):
            flags = np.zeros(ndim, dtype=np.bool_)
            _mark_axis(flags, axis, ndim)
            return flags
        return one
    if isinstance(axis, types.BaseTuple) and all(isinstance(t, types.Integer)
                                                 for t in axis.types):
        def several(axis, ndim):
            flags = np.zeros(ndim, dtype=np.bool_)
            for a in literal_unroll(axis):
                _mark_axis(flags, a, ndim)
            return flags
        return several


@register_jitable
def _outer_n_inner(shape, ax):
    """``shape`` as (product before ``ax``, length of ``ax``, product after ``ax``)."""
    outer = 1
    inner = 1
    for d in range(ax):
        outer *= shape[d]
    for d in range(ax + 1, len(shape)):
        inner *= shape[d]
    return outer, shape[ax], inner


@register_jitable
def _kept_shape(shape, flags, count):
    """The lengths of the axes not flagged, as an int array (``count`` of them)."""
    out = np.empty(count, dtype=np.int64)
    j = 0
    for d in range(len(shape)):
        if not flags[d]:
            out[j] = shape[d]
            j += 1
    return out


# ---------------------------------------------------------------- reductions

_SUM, _PROD, _MAX, _MIN = 0, 1, 2, 3


# Each kernel reduces the middle axis of a C-contiguous (outer, n, inner) array to
# (outer, inner), walking memory in order.

@register_jitable
def _sum_middle(src):
    outer, n, inner = src.shape
    out = np.zeros((outer, inner), dtype=src.dtype)
    for o in range(outer):
        for k in range(n):
            for i in range(inner):
                out[o, i] += src[o, k, i]
    return out


@register_jitable
def _prod_middle(src):
    outer, n, inner = src.shape
    out = np.ones((outer, inner), dtype=src.dtype)
    for o in range(outer):
        for k in range(n):
            for i in range(inner):
                out[o, i] *= src[o, k, i]
    return out


@register_jitable
def _max_middle(src):
    outer, n, inner = src.shape
    if n == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    out = src[:, 0, :].copy()
    for o in range(outer):
        for k in range(1, n):
            for i in range(inner):
                v = src[o, k, i]
                if v > out[o, i] or v != v:     # NaN wins, as in numpy (a NaN best stays)
                    out[o, i] = v
    return out


@register_jitable
def _min_middle(src):
    outer, n, inner = src.shape
    if n == 0:
        raise ValueError("zero-size array to reduction operation minimum which has no identity")
    out = src[:, 0, :].copy()
    for o in range(outer):
        for k in range(1, n):
            for i in range(inner):
                v = src[o, k, i]
                if v < out[o, i] or v != v:
                    out[o, i] = v
    return out


def _make_reduce_keep(middle):
    @register_jitable
    def reduce_keep(x, flags):
        """Reduce the C-contiguous ``x`` over the flagged axes, keeping them (length 1)."""
        cur = x
        for d in range(x.ndim):
            if flags[d]:
                outer, n, inner = _outer_n_inner(cur.shape, d)
                out = middle(cur.reshape((outer, n, inner)))
                cur = out.reshape(tuple_setitem(cur.shape, d, 1))
        return cur
    return reduce_keep


_REDUCE_KEEP = {_SUM: _make_reduce_keep(_sum_middle), _PROD: _make_reduce_keep(_prod_middle),
                _MAX: _make_reduce_keep(_max_middle), _MIN: _make_reduce_keep(_min_middle)}
_sum_keep = _REDUCE_KEEP[_SUM]


_FINISHERS = {}


def _finisher(ndim, count, keepdims):
    """A compiled ``finish(reduced, flags)``: the keepdims result as numpy gives it for
    ``keepdims``: itself, the kept axes only, or a scalar when no axis is kept."""
    key = (ndim, count, keepdims)
    if key not in _FINISHERS:
        kept = ndim - count
        if keepdims:
            def finish(reduced, flags):
                return reduced
        elif kept == 0:
            def finish(reduced, flags):
                return reduced.reshape(reduced.size)[0]
        else:
            def finish(reduced, flags):
                return reduced.reshape(to_fixed_tuple(_kept_shape(reduced.shape, flags, kept),
                                                      kept))
        _FINISHERS[key] = register_jitable(finish)
    return _FINISHERS[key]


def _reduction_setup(x, axis, keepdims):
    """(finish, ndim) for a reduction overload, or None when the types do not fit:
    ``x`` an array of rank >= 1, ``axis`` an axis type, ``keepdims`` a literal bool."""
    if not isinstance(x, types.Array) or x.ndim == 0:
        return None
    count = _axis_count(axis, x.ndim)
    keep = _literal_bool(keepdims)
    if count is None or keep is None:
        return None
    return _finisher(x.ndim, count, keep), x.ndim


def _sum_dtype(dtype):
    """numpy's dtype for a sum or product: floats and 64-bit ints keep theirs, smaller
    ints and bools become int64 (uint64 for unsigned ints)."""
    if isinstance(dtype, (types.Float, types.Complex)):
        return dtype
    if isinstance(dtype, types.Integer) and not dtype.signed:
        return types.uint64
    return types.int64


def _reduction_overload(helper, kind):
    @overload(helper, prefer_literal=True)
    def _reduce(x, axis, keepdims):
        setup = _reduction_setup(x, axis, keepdims)
        if setup is None:
            return None
        finish, nd = setup
        odt = _sum_dtype(x.dtype) if kind in (_SUM, _PROD) else x.dtype
        same = odt == x.dtype
        odt = as_dtype(odt).type
        reduce_keep = _REDUCE_KEEP[kind]
        if same:
            def impl(x, axis, keepdims):
                flags = _axis_flags(axis, nd)
                return finish(reduce_keep(np.ascontiguousarray(x), flags), flags)
        else:
            def impl(x, axis, keepdims):
                flags = _axis_flags(axis, nd)
                return finish(reduce_keep(np.ascontiguousarray(x).astype(odt), flags), flags)
        return impl
    return _reduce


_reduction_overload(rt.sum, _SUM)
_reduction_overload(rt.prod, _PROD)
_reduction_overload(rt.amax, _MAX)
_reduction_overload(rt.amin, _MIN)


@register_jitable
def _count(shape, flags):
    n = 1
    for d in range(len(shape)):
        if flags[d]:
            n *= shape[d]
    return n


@overload(rt.mean, prefer_literal=True)
def _mean(x, axis, keepdims):
    setup = _reduction_setup(x, axis, keepdims)
    if setup is None:
        return None
    finish, nd = setup
    fdt = _float_dtype(x.dtype)

    def impl(x, axis, keepdims):
        flags = _axis_flags(axis, nd)
        total = _sum_keep(np.ascontiguousarray(x).astype(fdt), flags)
        return finish(total / fdt(_count(x.shape, flags)), flags)
    return impl


def _variance_overload(helper, root):
    @overload(helper, prefer_literal=True)
    def _variance(x, axis, keepdims, ddof=0):
        setup = _reduction_setup(x, axis, keepdims)
        if setup is None or not isinstance(ddof, (int, float, types.Integer, types.Float,
                                                  types.Omitted)):   # int: left out
            return None
        finish, nd = setup
        fdt = _float_dtype(x.dtype)

        def impl(x, axis, keepdims, ddof=0):
            # numpy's order: the mean (kept axes), the squared deviations, their sum
            flags = _axis_flags(axis, nd)
            xf = np.ascontiguousarray(x).astype(fdt)
            n = _count(x.shape, flags)
            centre = _sum_keep(xf, flags) / fdt(n)
            dev = xf - centre
            spread = _sum_keep(dev * dev, flags) / fdt(max(n - ddof, 0))
            return finish(np.sqrt(spread) if root else spread, flags)
        return impl
    return _variance


_variance_overload(rt.var, False)
_variance_overload(rt.std, True)


# ---------------------------------------------------------------- shapes


@overload(rt.squeeze, prefer_literal=True)
def _squeeze(x, axis):
    if not isinstance(x, types.Array) or _is_none(axis):
        return None     # without an axis, the result's rank depends on the shape
    count = _axis_count(axis, x.ndim)
    if count is None:
        return None
    nd, kept = x.ndim, x.ndim - count

    def impl(x, axis):
        flags = _axis_flags(axis, nd)
        for d in range(nd):
            if flags[d] and x.shape[d] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size "
                                 "not equal to one")
        return np.ascontiguousarray(x).reshape(
            to_fixed_tuple(_kept_shape(x.shape, flags, kept), kept))
    return impl


@overload(rt.expand_dims, prefer_literal=True)
def _expand_dims(x, axis):
    if not isinstance(x, types.Array):
        return None
    count = _axis_count(axis, 0)
    if count is None or _is_none(axis):
        return None
    out_nd = x.ndim + count

    def impl(x, axis):
        flags = _axis_flags(axis, out_nd)
        shape = np.ones(out_nd, dtype=np.int64)
        j = 0
        for d in range(out_nd):
            if not flags[d]:
                shape[d] = x.shape[j]
                j += 1
        return np.ascontiguousarray(x).reshape(to_fixed_tuple(shape, out_nd))
    return impl


@overload(rt.atleast_1d)
def _atleast_1d(x):
    if isinstance(x, types.Array):
        if x.ndim >= 1:
            return lambda x: x
        return lambda x: x.reshape(1)
    if _is_scalar(x):
        return lambda x: np.full(1, x)


@overload(rt.unstack)
def _unstack(g, count, axis):
    if not isinstance(g, types.Array) or not (_is_none(axis) or isinstance(axis, types.Integer)):
        return None
    nd = g.ndim
    if nd == 1:     # stacked scalars: the pieces are scalars
        return lambda g, count, axis: [g[i] for i in range(count)]
    kept = nd - 1

    def impl(g, count, axis):
        ax = 0 if axis is None else axis % nd
        gc = np.ascontiguousarray(g)
        outer, n, inner = _outer_n_inner(gc.shape, ax)
        src = gc.reshape((outer, n, inner))
        flags = np.zeros(nd, dtype=np.bool_)
        flags[ax] = True
        shape = to_fixed_tuple(_kept_shape(gc.shape, flags, kept), kept)
        return [np.ascontiguousarray(src[:, i, :]).reshape(shape) for i in range(count)]
    return impl


def _part_sizes(parts, ax):  # pragma: no cover - compiled by Numba
    """Compiled only: the lengths of each array of the tuple ``parts`` along ``ax``."""
    raise NotImplementedError


@overload(_part_sizes)
def _part_sizes_impl(parts, ax):
    if isinstance(parts, types.BaseTuple) and all(isinstance(t, types.Array)
                                                  for t in parts.types):
        n = len(parts.types)

        def impl(parts, ax):
            sizes = np.empty(n, dtype=np.int64)
            i = 0
            for p in literal_unroll(parts):
                sizes[i] = p.shape[ax]
                i += 1
            return sizes
        return impl


@overload(rt.split_like)
def _split_like(g, parts, axis):
    if not isinstance(g, types.Array) or not isinstance(axis, types.Integer) or \
            not isinstance(parts, (types.BaseTuple, types.List)):
        return None
    nd = g.ndim
    if nd == 1 and g.layout == "C" and isinstance(parts, types.UniTuple):
        return _split_vector(parts.count)

    # Copied by loops, element by element: a slice assignment from an array would make
    # Numba compile its shape-mismatch message (str, repr and concatenation of strings:
    # seconds of compile time) into every gradient that concatenates.
    def impl(g, parts, axis):
        ax = axis % nd
        sizes = _part_sizes(parts, ax)
        gc = np.ascontiguousarray(g)
        outer, n, inner = _outer_n_inner(gc.shape, ax)
        src = gc.reshape((outer, n, inner))
        pieces = []
        start = 0
        rest = n
        for k in range(len(sizes) - 1):      # the last piece: the rest (rt.split_like)
            rest -= sizes[k]
        sizes[-1] = rest
        for k in range(len(sizes)):
            piece = np.empty((outer, sizes[k], inner), dtype=gc.dtype)
            for o in range(outer):
                for j in range(sizes[k]):
                    for i in range(inner):
                        piece[o, j, i] = src[o, start + j, i]
            start += sizes[k]
            pieces.append(piece.reshape(tuple_setitem(gc.shape, ax, sizes[k])))
        return pieces
    return impl


def _split_vector(count):
    """split_like of a contiguous vector among ``count`` parts of one type: views, as
    numpy's split gives (the pieces of the general case are copies; a small body to
    compile: an RK4 step's adjoint splits four times)."""
    def impl(g, parts, axis):
        pieces = []
        start = 0
        for k in range(count - 1):
            stop = start + parts[k].shape[0]
            pieces.append(g[start:stop])
            start = stop
        pieces.append(g[start:])
        return pieces
    return impl


@overload(_part_sizes)
def _part_sizes_list(parts, ax):
    if isinstance(parts, types.List) and isinstance(parts.dtype, types.Array):
        def impl(parts, ax):
            sizes = np.empty(len(parts), dtype=np.int64)
            for i in range(len(parts)):
                sizes[i] = parts[i].shape[ax]
            return sizes
        return impl


@overload(rt.sort_adjoint)
def _sort_adjoint(g, a, axis=-1):
    if isinstance(a, types.Array) and a.ndim == 1:
        def impl(g, a, axis=-1):
            order = np.argsort(a, kind="mergesort")
            out = np.zeros(a.shape[0], dtype=g.dtype)
            for k in range(order.shape[0]):
                out[order[k]] = g[k]
            return out
        return impl


@overload(rt.spread_sum)
def _spread_sum(g, items):
    if isinstance(items, types.Array):
        def spread(g, items):
            out = np.empty(items.shape, dtype=items.dtype)
            out[...] = g
            return out
        return spread
    if isinstance(items, types.List):
        return lambda g, items: [g for _ in items]


@overload(rt.written_adjoint)
def _written_adjoint(dx, index):
    if isinstance(index, types.Array) and isinstance(index.dtype, types.Integer) \
            and index.ndim == 1 and isinstance(dx, types.Array) and dx.ndim == 1:
        def impl(dx, index):
            n = dx.shape[0]
            out = np.zeros(index.shape[0], dtype=dx.dtype)
            seen = np.zeros(n, dtype=np.bool_)
            for k in range(index.shape[0] - 1, -1, -1):
                position = index[k] % n
                if not seen[position]:
                    out[k] = dx[position]
                    seen[position] = True
            return out
        return impl
    if isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean):
        return lambda dx, index: dx[index].copy()


@overload(rt.writable)
def _writable(g, like):
    if isinstance(like, types.Array):
        if _is_scalar(g):
            def fill(g, like):
                out = np.empty(like.shape, dtype=like.dtype)
                out[...] = g
                return out
            return fill
        return lambda g, like: g.copy()


@overload(rt.divide_or_zero)
def _divide_or_zero(g, d):
    if _is_scalar(d):
        return lambda g, d: g / d if d != 0 else g * 0.0
    if isinstance(d, types.Array) and isinstance(g, types.Array):
        dtype = np.result_type(as_dtype(g.dtype), as_dtype(d.dtype))

        def impl(g, d):
            out = np.zeros(g.shape, dtype=dtype)
            flat_out = out.reshape(out.size)
            flat_g = np.ascontiguousarray(g).reshape(g.size)
            flat_d = np.ascontiguousarray(d).reshape(d.size)
            for k in range(flat_out.size):
                if flat_d[k] != 0:
                    flat_out[k] = flat_g[k] / flat_d[k]
            return out
        return impl


@overload(rt.linspace_adjoints)
def _linspace_adjoints(g, start, stop, num, endpoint, axis):
    if not (_is_scalar(start) and _is_scalar(stop) and isinstance(g, types.Array)
            and g.ndim == 1):
        return None

    def impl(g, start, stop, num, endpoint, axis):
        div = num - 1 if endpoint else num
        d_start = 0.0
        d_stop = 0.0
        for i in range(num):
            t = i / div if div > 0 else 0.0
            d_start += g[i] * (1.0 - t)
            d_stop += g[i] * t
        return d_start, d_stop
    return impl


@overload(rt.arange_adjoints)
def _arange_adjoints(g, bounds):
    if not isinstance(g, types.Array) or not isinstance(bounds, types.BaseTuple):
        return None
    n = len(bounds)

    def impl(g, bounds):
        if n == 1:
            return [0.0]
        flat = np.ascontiguousarray(g).reshape(g.size)
        adjoints = [np.sum(flat), 0.0]
        if n == 3:
            step = 0.0
            for i in range(flat.size):
                step += i * flat[i]
            adjoints.append(step)
        return adjoints
    return impl


@overload(rt.reserve)
def _reserve(tape, top, count):
    def reserve(tape, top, count):
        need = top + count if count > 0 else top
        if need <= tape.shape[0]:
            return tape
        double = 2 * tape.shape[0]
        grown = np.empty((need if need > double else double,), tape.dtype)
        for j in range(top):
            grown[j] = tape[j]
        return grown
    return reserve


@overload(rt.add_into)
def _add_into(view, value):
    if isinstance(view, types.Array):
        def impl(view, value):
            view += value
        return impl


@overload(rt.push)
def _push(tape, top, value):
    def push(tape, top, value):
        tape[top] = value
        return top + 1
    return push


@overload(rt.trip_count)
def _trip_count(start, stop, step=1):
    def trip_count(start, stop, step=1):
        if step > 0:
            return max(0, (stop - start + step - 1) // step)
        return max(0, (start - stop - step - 1) // -step)
    return trip_count


@overload(rt.stacked_rows)
def _stacked_rows(rows):
    if not (isinstance(rows, types.UniTuple) and isinstance(rows.dtype, types.Array) and
            rows.dtype.ndim == 1):
        return None
    m, dtype = len(rows), as_dtype(rows.dtype.dtype)

    def stacked_rows(rows):
        n = rows[0].shape[0]
        out = np.empty((m, n), dtype)
        for k in range(m):
            row = rows[k]
            if row.shape[0] != n:       # the call runs again as Python (rt.stacked_rows)
                raise rt.RowsOfSeveralLengths("s2sgrad: a fused loop's rows of several "
                                              "lengths")
            out[k] = row
        return out
    return stacked_rows
