"""``a @ b`` of a stack of vectors against matrices broadcast along its batch axes, as one
BLAS product per matrix with the vectors as its rows.

numpy's matmul of ``Ls (25, 10, 10) @ xc (1000, 25, 10, 1)`` makes 25,000 10 x 10 by 10 x 1
products one after the other (1.0 ms); per factor ``k`` the 1,000 points are the rows of
one product, ``xc[:, k, :, 0] @ Ls[k].T``, which BLAS reads and writes in place, strided
(the points' rows and the output's are unit-stride): 25 products and no copy.  Folding
the points into a copied operand instead made three fresh arrays per call, whose page
faults cost more than numpy's loop in a tight loop of calls.

``matmul(a, b)`` (``matmul_into(out, a, b)``) is ``np.matmul`` with that plan where one
operand is a stack of vectors (``b``'s last axis of size 1, or ``a``'s second to last),
full along every batch axis, and the other (of floats, both at least 2-D) a stack of
matrices broadcast along some of those axes (size 1 or missing there), with many
products (``MANY_PRODUCTS``) each small (``SMALL_PRODUCT``); anything else is numpy's
call.  The numbers agree to rounding (BLAS adds in its own order).

Used by ``rt.Kept``'s ``matmul`` (a product in the generated forward sweep) and by the
adjoints of a product (``matmul_left`` / ``matmul_right``), whose products have the same
broadcast.
"""
import math

import numpy as np

#: the multiply-adds of one product of the stack up to which the plan pays (a 10 x 10
#: by 10 x 1 stack: 1.0 against 0.2 ms; at 64 x 64 numpy's own loop of BLAS calls is as
#: good)
SMALL_PRODUCT = 4096
#: the fewest products a stack must have for the plan (below, numpy's loop is cheap)
MANY_PRODUCTS = 64


def matmul(a, b):
    """``a @ b`` (module doc; an operand that is not an array keeps its own ``@``)."""
    return matmul_into(None, a, b)


def matmul_into(out, a, b):
    """``matmul(a, b)`` written into ``out`` (a C-ordered array of the result's shape:
    ``rt.Kept``), or a new array when ``out`` is None."""
    plan = _plan(a, b)
    if plan is None:
        return a @ b if out is None else np.matmul(a, b, out=out)
    full, kept, folded, vectors_right = plan
    if out is None or not out.flags.c_contiguous:
        out = np.empty(full + (a.shape[-2], b.shape[-1]), np.result_type(a, b))
    batch = len(full)
    order = kept + folded
    if vectors_right:       # out[.., :, 0] = Ls @ x[.., :, 0]: rows x @ Ls.T
        rows, matrices, written = b[..., 0], np.swapaxes(a, -1, -2), out[..., 0]
    else:                   # out[.., 0, :] = x[.., 0, :] @ W: rows x @ W
        rows, matrices, written = a[..., 0, :], b, out[..., 0, :]
    stack = tuple(full[i] for i in kept)
    rows = rows.transpose(order + [batch]).reshape(stack + (-1, rows.shape[-1]))
    matrices = matrices.reshape(_padded(matrices.shape[:-2], batch) + matrices.shape[-2:])
    matrices = matrices.transpose(order + [batch, batch + 1]).reshape(
        stack + matrices.shape[-2:])
    target = written.transpose(order + [batch])
    try:                    # (a view where the folded axes merge: written in place)
        target = target.view()
        target.shape = stack + (-1, written.shape[-1])
    except AttributeError:
        target[...] = (rows @ matrices).reshape(target.shape)
        return out
    np.matmul(rows, matrices, out=target)
    return out


def _plan(a, b):
    """(the batch shape, its axes kept, its axes folded into rows, whether the vectors
    are ``b``) for ``a @ b``, or None for numpy's call."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim < 2 or \
            b.ndim < 2 or a.ndim == b.ndim == 2 or a.dtype.kind not in "fc" or \
            b.dtype.kind not in "fc" or a.shape[-1] != b.shape[-2]:
        return None         # (matrices, the common case, first: the generated code's hot path)
    try:
        full = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    if not full or m * k * n > SMALL_PRODUCT or math.prod(full) < MANY_PRODUCTS:
        return None
    pa, pb = _padded(a.shape[:-2], len(full)), _padded(b.shape[:-2], len(full))
    if pb == full and pa != full and n == 1:
        matrices, vectors_right = pa, True
    elif pa == full and pb != full and m == 1:
        matrices, vectors_right = pb, False
    else:
        return None
    if any(size != 1 and size != whole for size, whole in zip(matrices, full)):
        return None
    folded = [i for i, (size, whole) in enumerate(zip(matrices, full)) if size != whole]
    kept = [i for i in range(len(full)) if i not in folded]
    return full, kept, folded, vectors_right


def _padded(shape, length):
    return (1,) * (length - len(shape)) + tuple(shape)
