"""``a @ b`` of a stack against an operand broadcast along its batch axes, as BLAS products
of the broadcast axes folded into the matrices.

numpy's matmul of ``Ls (25, 10, 10) @ xc (1000, 25, 10, 1)`` makes 25,000 10 x 10 by 10 x 1
products one after the other (1.15 ms); the 1,000 points are columns of one product per
factor, ``Ls[k] @ (10, 1000)``: 25 BLAS products (0.3 ms, then copied into the output's
order).  ``matmul(a, b)`` (``matmul_into(out, a, b)``) is ``np.matmul`` with that plan where
one operand (of floats, both at least 2-D) is broadcast along batch axes the other has
in full (its size 1 or missing there), the other broadcast along none, and each product
small (``SMALL_PRODUCT`` multiply-adds): the broadcast axes join the full operand's
columns (``a`` broadcast) or rows (``b`` broadcast).  Anything else is numpy's call.
The numbers agree to rounding (BLAS adds in its own order).

Used by ``rt.Kept``'s ``matmul`` (a product in the generated forward sweep) and by the
adjoints of a product (``matmul_left`` / ``matmul_right``), whose products have the same
broadcast.
"""
import math

import numpy as np

#: the multiply-adds of one product of the stack up to which folding pays (a 10 x 10 by
#: 10 x 1 stack: 1.15 against 0.3 ms; at 64 x 64 by 64 x 64 numpy's own loop of BLAS
#: calls is as good)
SMALL_PRODUCT = 4096
#: the fewest products a stack must have for the plan (below, numpy's loop is cheap)
MANY_PRODUCTS = 64


def matmul(a, b):
    """``a @ b`` (module doc; an operand that is not an array keeps its own ``@``)."""
    return matmul_into(None, a, b)


def matmul_into(out, a, b):
    """``matmul(a, b)`` written into ``out`` (an array of the result's shape: ``rt.Kept``),
    or a new array when ``out`` is None."""
    plan = _plan(a, b)
    if plan is None:
        return a @ b if out is None else np.matmul(a, b, out=out)
    result = plan(a, b)
    if out is None:
        return result
    out[...] = result
    return out


def _plan(a, b):
    """The folding function for ``a @ b``, or None for numpy's call."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim < 2 or \
            b.ndim < 2 or a.dtype.kind not in "fc" or b.dtype.kind not in "fc" or \
            a.shape[-1] != b.shape[-2]:
        return None
    try:
        full = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    if not full or m * k * n > SMALL_PRODUCT or math.prod(full) < MANY_PRODUCTS:
        return None
    pa, pb = _padded(a.shape[:-2], len(full)), _padded(b.shape[:-2], len(full))
    if pb == full and pa != full:
        broadcast, other = pa, "columns"
    elif pa == full and pb != full:
        broadcast, other = pb, "rows"
    else:
        return None
    if any(size != 1 and size != whole for size, whole in zip(broadcast, full)):
        return None
    folded = [i for i, (size, whole) in enumerate(zip(broadcast, full)) if size != whole]
    kept = [i for i in range(len(full)) if i not in folded]
    return _into_columns(full, kept, folded) if other == "columns" else \
        _into_rows(full, kept, folded)


def _padded(shape, length):
    return (1,) * (length - len(shape)) + tuple(shape)


def _into_columns(full, kept, folded):
    """``a`` broadcast along ``folded``: those axes of ``b`` join its columns."""
    batch = len(full)
    sizes = tuple(full[i] for i in kept)
    count = math.prod(full[i] for i in folded)

    def product(a, b):
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        a = a.reshape(_padded(a.shape[:-2], batch) + (m, k))
        a = a.reshape(sizes + (m, k)) if not kept else \
            a.transpose(kept + folded + [batch, batch + 1]).reshape(sizes + (m, k))
        bt = b.transpose(kept + [batch] + folded + [batch + 1]).reshape(
            sizes + (k, count * n))
        p = (a @ bt).reshape(sizes + (m,) + tuple(full[i] for i in folded) + (n,))
        # p's axes: kept.., m, folded.., n -> the output's: full.., m, n
        order = [0] * (batch + 2)
        for place, axis in enumerate(kept):
            order[axis] = place
        for place, axis in enumerate(folded):
            order[axis] = len(kept) + 1 + place
        order[batch], order[batch + 1] = len(kept), batch + 1
        return np.ascontiguousarray(p.transpose(order))
    return product


def _into_rows(full, kept, folded):
    """``b`` broadcast along ``folded``: those axes of ``a`` join its rows."""
    batch = len(full)
    sizes = tuple(full[i] for i in kept)
    count = math.prod(full[i] for i in folded)

    def product(a, b):
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        b = b.reshape(_padded(b.shape[:-2], batch) + (k, n))
        b = b.transpose(kept + folded + [batch, batch + 1]).reshape(sizes + (k, n))
        at = a.transpose(kept + folded + [batch, batch + 1]).reshape(sizes + (count * m, k))
        p = (at @ b).reshape(sizes + tuple(full[i] for i in folded) + (m, n))
        # p's axes: kept.., folded.., m, n -> the output's: full.., m, n
        order = [0] * (batch + 2)
        for place, axis in enumerate(kept + folded):
            order[axis] = place
        order[batch], order[batch + 1] = batch, batch + 1
        return np.ascontiguousarray(p.transpose(order))
    return product
