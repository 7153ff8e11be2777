"""The helpers generated forward-mode (JVP) code calls, as ``rt.<name>``.

Plain numpy here; ``s2sgrad.backend.numba_forward`` gives each a Numba
implementation of the same contract.  ``s2sgrad.runtime`` re-exports them.
"""
import numpy as np

__all__ = ["broadcast_like", "basis_tangent", "tangent_size", "cumprod_tangent"]


def broadcast_like(t, like):
    """The tangent ``t`` of an operand that a primitive broadcast, in the shape of the
    result ``like``: ``t`` itself when the shapes agree, else ``t`` broadcast (a new
    array).  A scalar ``like`` gives ``t`` as it is."""
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        return t
    if np.shape(t) == np.shape(like):
        return t
    return t + np.zeros(np.shape(like), dtype=np.result_type(t, like, np.float32))


def tangent_size(x):
    """How many directions the input ``x`` spans: its size (1 for a number)."""
    return int(np.size(x))


def basis_tangent(x, j):
    """The ``j``-th basis direction of the input ``x``: zeros of ``x``'s shape (in its
    floating dtype; a number for a number) with a 1 at flat position ``j``; all zeros
    when ``j`` is outside ``0 <= j < x.size`` (another input's direction)."""
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        return 1.0 if j == 0 else 0.0
    out = np.zeros(np.shape(x), dtype=np.result_type(x, np.float32))
    if 0 <= j < out.size:
        out.reshape(-1)[j] = 1.0
    return out



def cumprod_tangent(t, a, axis):
    """The tangent of ``np.cumprod(a, axis)`` along ``t`` (zeros in ``a`` allowed): the
    running product's derivative, ``q[k] = q[k-1] * a[k] + p[k-1] * t[k]``."""
    a = np.asarray(a)
    t = np.broadcast_to(np.asarray(t), a.shape)
    if axis is None:
        a, t, axis = a.ravel(), t.ravel(), 0
    a, t = np.moveaxis(a, axis, 0), np.moveaxis(t, axis, 0)
    out = np.empty(a.shape, dtype=np.result_type(a, t, np.float32))
    product = np.ones(a.shape[1:], dtype=out.dtype)
    tangent = np.zeros(a.shape[1:], dtype=out.dtype)
    for k in range(a.shape[0]):
        tangent = tangent * a[k] + product * t[k]
        product = product * a[k]
        out[k] = tangent
    return np.moveaxis(out, 0, axis)
