"""Numba implementations of the forward-mode helpers (``s2sgrad/runtime/forward.py``):
the contract is each helper's docstring there."""
import numpy as np
from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from .. import runtime as rt


def _is_scalar(t):
    return isinstance(t, (types.Number, types.Boolean))


@overload(rt.broadcast_like)
def _broadcast_like(t, like):
    if _is_scalar(like):
        return lambda t, like: t
    if not isinstance(like, types.Array):
        return None
    if isinstance(t, types.Array) and t.ndim == like.ndim:
        def same_rank(t, like):
            if t.shape == like.shape:
                return t
            return t + np.zeros(like.shape)
        return same_rank
    if isinstance(t, types.Array) or _is_scalar(t):
        return lambda t, like: t + np.zeros(like.shape)
    return None


@overload(rt.tangent_size)
def _tangent_size(x):
    if isinstance(x, types.Array):
        return lambda x: x.size
    if _is_scalar(x):
        return lambda x: 1
    return None


@overload(rt.basis_tangent)
def _basis_tangent(x, j):
    if isinstance(x, types.Array):
        def array(x, j):
            out = np.zeros(x.shape)
            if 0 <= j < out.size:
                out.reshape(-1)[j] = 1.0
            return out
        return array
    if _is_scalar(x):
        return lambda x, j: 1.0 if j == 0 else 0.0
    return None


@overload(rt.cumprod_tangent)
def _cumprod_tangent(t, a, axis):
    """Forward mode's ``np.cumprod(a)`` (flattened) along the tangent ``t`` of ``a``."""
    if not (isinstance(t, types.Array) and isinstance(a, types.Array) and t.ndim == a.ndim
            and isinstance(axis, (types.NoneType, types.Omitted))):
        return None

    dtype = np.result_type(as_dtype(t.dtype), as_dtype(a.dtype), np.float32)

    def impl(t, a, axis):
        x = np.ascontiguousarray(a).ravel()
        tf = np.ascontiguousarray(t).ravel()
        out = np.empty(x.size, dtype=dtype)
        product, tangent = 1.0, 0.0
        for k in range(x.size):
            tangent = tangent * x[k] + product * tf[k]
            product = product * x[k]
            out[k] = tangent
        return out
    return impl
