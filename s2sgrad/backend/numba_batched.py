"""Numba implementations of batched forward mode's helpers (``s2sgrad/runtime/batched.py``)
and of the operations its code writes that Numba lacks: ``@`` of a stack of matrices (a
batch of tangents, the directions first) with a matrix or vector, and ``np.stack`` of a
list along an inner axis.  The contract is each helper's docstring there; ``@`` and
``np.stack`` give numpy's results.  Batched Jacobian code with loops compiles with these
(``api/forward.py``); a form with no version here makes Numba fail to type the code,
which then runs as numpy and says why.
"""
import operator

import numpy as np
from numba import literal_unroll, types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from .. import runtime as rt
from ..runtime import batched


def _is_scalar(t):
    return isinstance(t, (types.Number, types.Boolean))


def _float_dtype(t):
    """The dtype of a tangent of a value of Numba type ``t`` (its own where it is a float
    array, else float64), as numpy's helpers give it."""
    if isinstance(t, types.Array) and isinstance(t.dtype, types.Float):
        return as_dtype(t.dtype)
    return np.float64


@overload(rt.sweep_width)
def _sweep_width(total, *inputs):
    limit = batched.BATCH_NUMBERS      # read when compiling

    def impl(total, *inputs):
        largest = 1
        for x in literal_unroll(inputs):
            largest = max(largest, np.asarray(x).size)
        return max(1, min(total, limit // largest))
    return impl


@overload(rt.basis_batch)
def _basis_batch(x, start, width):
    dtype = _float_dtype(x)
    if isinstance(x, types.Array):
        def array(x, start, width):
            size = x.size
            out = np.zeros((width, size), dtype)
            for k in range(max(0, -start), min(width, size - start)):
                out[k, k + start] = 1.0
            return out.reshape((width,) + x.shape)
        return array
    if _is_scalar(x):
        def number(x, start, width):
            out = np.zeros(width, dtype)
            if 0 <= -start < width:
                out[-start] = 1.0
            return out
        return number
    return None


@overload(rt.zeros_batch)
def _zeros_batch(value, width):
    dtype = _float_dtype(value)
    if isinstance(value, types.Array):
        return lambda value, width: np.zeros((width,) + value.shape, dtype)
    if _is_scalar(value):
        return lambda value, width: np.zeros(width, dtype)
    return None


@overload(rt.broadcast_batch)
def _broadcast_batch(t, like):
    if not isinstance(t, types.Array):
        return None
    if _is_scalar(like):
        return lambda t, like: t
    if not isinstance(like, types.Array) or t.ndim != like.ndim + 1:
        return None
    dtype = _float_dtype(t)

    def impl(t, like):
        shape = (t.shape[0],) + like.shape
        if t.shape == shape:
            return np.ascontiguousarray(t)
        return t + np.zeros(shape, dtype)
    return impl


@overload(operator.matmul)
def _matmul_stack(a, b):
    """``a @ b`` where one side is a stack of matrices (3-D), as numpy stacks it (Numba's
    ``@`` takes ranks 1 and 2 only): a stack times a matrix or vector, and a matrix
    times a stack, as one BLAS product of the stack laid side by side (the directions of
    a batched tangent are many small products); two stacks one product per matrix."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)) or \
            3 not in (a.ndim, b.ndim) or max(a.ndim, b.ndim) > 3 or \
            not isinstance(a.dtype, types.Float) or a.dtype != b.dtype:
        return None
    if a.ndim == 3 and b.ndim == 3:
        def both(a, b):
            out = np.zeros((a.shape[0], a.shape[1], b.shape[2]), a.dtype)
            for d in range(a.shape[0]):
                for i in range(a.shape[1]):
                    for k in range(a.shape[2]):
                        for j in range(b.shape[2]):
                            out[d, i, j] += a[d, i, k] * b[d, k, j]
            return out
        return both
    if a.ndim == 3:               # (w, m, k) @ (k, n) or (k,): the rows of every matrix
        def left(a, b):
            rows = np.ascontiguousarray(a).reshape((a.shape[0] * a.shape[1], a.shape[2]))
            return (rows @ np.ascontiguousarray(b)).reshape((a.shape[0], a.shape[1]) +
                                                            b.shape[1:])
        return left
    if a.ndim == 1:               # (k,) @ (w, k, n): a row of each matrix
        def vector(a, b):
            out = np.zeros((b.shape[0], b.shape[2]), a.dtype)
            for d in range(b.shape[0]):
                for k in range(b.shape[1]):
                    for j in range(b.shape[2]):
                        out[d, j] += a[k] * b[d, k, j]
            return out
        return vector
    return _matrix_times_stack


def _matrix_times_stack(a, b):
    """(m, k) @ (w, k, n): the matrices side by side, one BLAS product."""
    w, k, n = b.shape
    side = np.empty((k, w * n), a.dtype)
    for d in range(w):
        for i in range(k):
            for j in range(n):
                side[i, d * n + j] = b[d, i, j]
    product = np.ascontiguousarray(a) @ side
    out = np.empty((w, product.shape[0], n), a.dtype)
    for d in range(w):
        for i in range(product.shape[0]):
            for j in range(n):
                out[d, i, j] = product[i, d * n + j]
    return out


@overload(batched.matmul_batch)
def _matmul_batch(a, b):
    """``rt.matmul_batch``: a matrix times a stack, one BLAS product (a C-ordered result)."""
    if isinstance(a, types.Array) and isinstance(b, types.Array) and a.ndim == 2 and \
            b.ndim == 3 and isinstance(a.dtype, types.Float) and a.dtype == b.dtype:
        return _matrix_times_stack
    return None


@overload(batched.batch_matmul)
def _batch_matmul(a, b):
    """``rt.batch_matmul``: a stack times a matrix, the ``@`` above (a C-ordered result)."""
    if isinstance(a, types.Array) and isinstance(b, types.Array) and a.ndim == 3 and \
            b.ndim == 2:
        return lambda a, b: a @ b
    return None


@overload(batched.matmul_both)
def _matmul_both(a_dot, b, a, b_dot):
    """``rt.matmul_both``: ``a_dot @ b + a @ b_dot`` of two matrices and their stacks."""
    if all(isinstance(x, types.Array) for x in (a_dot, b, a, b_dot)) and a_dot.ndim == 3 \
            and b.ndim == 2 and a.ndim == 2 and b_dot.ndim == 3 and \
            isinstance(a.dtype, types.Float) and a.dtype == b_dot.dtype:
        return lambda a_dot, b, a, b_dot: a_dot @ b + batched.matmul_batch(a, b_dot)
    return None


@overload(np.stack, prefer_literal=True)
def _stack_inner(arrays, axis=0):
    """``np.stack`` of a list of matrices along axis 1 (``numba_lists`` stacks a list
    along the first axis or the last): the rows of a batch of tangents, the directions
    first, stacked after them."""
    if not isinstance(arrays, types.List) or not isinstance(arrays.dtype, types.Array) \
            or arrays.dtype.ndim != 2 or not isinstance(axis, types.IntegerLiteral) \
            or axis.literal_value != 1:
        return None
    dtype = as_dtype(arrays.dtype.dtype)

    def impl(arrays, axis=0):
        if len(arrays) == 0:
            raise ValueError("need at least one array to stack")
        rows, cols = arrays[0].shape
        out = np.empty((rows, len(arrays), cols), dtype)
        for k in range(len(arrays)):
            item = arrays[k]
            if item.shape != (rows, cols):
                raise ValueError("all input arrays must have the same shape")
            for i in range(rows):
                for j in range(cols):
                    out[i, k, j] = item[i, j]
        return out
    return impl
