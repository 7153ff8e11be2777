"""Numba implementations of the ``s2sgrad.runtime`` helpers generated code calls.

Each ``@overload`` gives Numba a nopython version of one helper, chosen by
the argument types at compile time; the contract is the helper's docstring
in ``s2sgrad/runtime.py``.  A helper with no overload here makes Numba fail
to type the generated function, which then runs as Python and says why.
"""
import numpy as np
from numba import types
from numba.extending import overload

from .. import runtime as rt


def _is_scalar(t):
    return isinstance(t, (types.Number, types.Boolean))


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
    if isinstance(axis, types.Integer) and isinstance(g, types.Array):
        def spread(g, like, axis, keepdims):
            nd = like.ndim
            ax = axis % nd
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
                    if d != ax:
                        offset += i * stride
                        stride *= ls[d]
                flat_out[k] = flat_g[offset]
            return out
        return spread
    if isinstance(axis, types.Integer) and _is_scalar(g):
        def fill1(g, like, axis, keepdims):
            out = np.empty(like.shape, dtype=like.dtype)
            out[...] = g
            return out
        return fill1


@overload(rt.reduction_count)
def _reduction_count(like, axis):
    if isinstance(axis, (types.NoneType, types.Omitted)) or axis is None:
        return lambda like, axis: like.size
    if isinstance(axis, types.Integer):
        return lambda like, axis: like.shape[axis % like.ndim]


@overload(rt.extremum_mask)
def _extremum_mask(x, ans, axis, keepdims):
    if isinstance(x, types.Array) and (isinstance(axis, (types.NoneType, types.Omitted))
                                       or axis is None):
        def impl(x, ans, axis, keepdims):
            hit = (x == ans).astype(np.float64)
            return hit / hit.sum()
        return impl


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


@overload(rt.add_at)
def _add_at(target, index, g):
    if isinstance(index, types.Integer):
        def add_int(target, index, g):
            target[index] += g
            return target
        return add_int
    if isinstance(index, types.Array) and isinstance(index.dtype, types.Integer) \
            and index.ndim == 1:
        def add_array(target, index, g):
            for k in range(index.shape[0]):
                target[index[k]] += g[k]
            return target
        return add_array


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
            raise NotImplementedError("gradient of np.linalg.norm with this ord")
        return vector


@overload(rt.copy_value)
def _copy_value(value):
    if isinstance(value, types.Array):
        return lambda value: value.copy()
    return lambda value: value
