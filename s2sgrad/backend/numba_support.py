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
