"""Numba implementations of the forward-mode helpers (``s2sgrad/runtime_forward.py``):
the contract is each helper's docstring there."""
import numpy as np
from numba import types
from numba.extending import overload

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
