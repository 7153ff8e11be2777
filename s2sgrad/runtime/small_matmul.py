"""Products of small matrices with a batch of tangents, as loops compiled by Numba.

Batched forward mode (``rt.matmul_both``, ``rt.matmul_batch``: ``runtime/batched.py``)
carries a Jacobian's directions through chains of small matrix products: GradBench's
ht multiplies 3 x 3 rotations and 4 x 4 bone transforms, each with a (26, 3, 3) or
(26, 4, 4) stack of tangents, 88 such products per call.  numpy spends ~2 us of call
overhead on each stacked product (its loop over the stack, BLAS per matrix) and a
third pass to add the product rule's two terms; these loops make a whole tangent in
one call (measured, 26 directions, the loops alone: ``a_dot @ b + a @ b_dot`` 1.2
against 4.6 us at 3 x 3, 1.8 against 4.6 at 4 x 4; ``a @ b_dot`` 1.0 against 2.2 us;
with the checks of the call, 2.1 against 4.6 us; a stack times a matrix is one BLAS
product of the stack's rows, ``batched._stacked_product``, as fast as these loops).
Past sides of 4 numbers numpy's products catch up (6 x 6: even; 8 x 8: BLAS twice as
fast), so the loops take sides up to ``SMALL_SIDE`` and at most ``SMALL_WORK``
multiplications.

The loops compile as ``rt.Fused``'s do (``runtime/fused.py``: ``numba.njit(cache=True)``,
in the thread that compiles kernels, started by the first call that would take them,
which runs numpy meanwhile; never under ``S2SGRAD_BACKEND=python``).  Each number is
the sum of its products in order, ``a_dot @ b`` and ``a @ b_dot`` summed apart and then
added, as numpy adds the two; BLAS may sum in another order, so the two ways agree to
the last bits, not bit for bit (a Jacobian's columns, not a value, are made here).
"""
import numpy as np

from .fused import Fused, allowed

__all__ = ["matmul_both_small", "matmul_batch_small", "SMALL_SIDE", "SMALL_WORK"]

#: the longest side of a matrix the compiled loops take (measured above)
SMALL_SIDE = 4
#: the most multiplications (directions x rows x columns x inner) of one product: 100
#: directions of 4 x 4 products are 1.6x faster compiled, the pass over the stack
#: is BLAS's past it
SMALL_WORK = 8192
_FLOAT64 = np.dtype(np.float64)


def _both_loops(out, a_dot, b, a, b_dot):
    """``out[d] = a_dot[d] @ b + a @ b_dot[d]`` (the product rule of ``a @ b``)."""
    for d in range(out.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                left = 0.0
                for k in range(b.shape[0]):
                    left += a_dot[d, i, k] * b[k, j]
                right = 0.0
                for k in range(b.shape[0]):
                    right += a[i, k] * b_dot[d, k, j]
                out[d, i, j] = left + right


def _batch_loops(out, a, b_dot):
    """``out[d] = a @ b_dot[d]``."""
    for d in range(out.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                total = 0.0
                for k in range(a.shape[1]):
                    total += a[i, k] * b_dot[d, k, j]
                out[d, i, j] = total


_BOTH = Fused(_both_loops, None, 1, ranks=(3, 3, 2, 2, 3))
_BATCH = Fused(_batch_loops, None, 1, ranks=(3, 2, 3))



def _loops(kernel):
    """The compiled loops of ``kernel``, or None while they compile or where kernels may
    not run (``fused.allowed``: read until they are compiled; once they are, Numba runs
    in this process and reading the environment would cost each small product a third
    of its time)."""
    loops = kernel.compiled
    if loops is None and allowed():
        loops = kernel.ready()
    return loops


def matmul_both_small(a_dot, b, a, b_dot):
    """``a_dot @ b + a @ b_dot`` of a stack ``a_dot`` (w, m, k), a matrix ``b`` (k, n), a
    matrix ``a`` (m, k) and a stack ``b_dot`` (w, k, n), made by the compiled loops: exact
    float64 C-ordered arrays of sides up to ``SMALL_SIDE`` and ``SMALL_WORK``
    multiplications in all.  None where they do not take the operands or are not
    compiled yet (the caller's numpy runs).  (Called per product rule, ~90 times a call
    of ht's Jacobian: the checks are written inline, for speed.)"""
    if type(a_dot) is not np.ndarray or type(b) is not np.ndarray or \
            type(a) is not np.ndarray or type(b_dot) is not np.ndarray or \
            a_dot.ndim != 3 or b.ndim != 2:
        return None
    w, m, k = shape = a_dot.shape
    n = b.shape[1]
    if m > SMALL_SIDE or k > SMALL_SIDE or n > SMALL_SIDE or w * m * k * n > SMALL_WORK or \
            b_dot.shape != (w, k, n) or a.shape != (m, k) or b.shape[0] != k or \
            a_dot.dtype is not _FLOAT64 or b.dtype is not _FLOAT64 or \
            a.dtype is not _FLOAT64 or b_dot.dtype is not _FLOAT64 or \
            not (a_dot.flags.c_contiguous and b.flags.c_contiguous and
                 a.flags.c_contiguous and b_dot.flags.c_contiguous):
        return None
    loops = _BOTH.compiled or _loops(_BOTH)
    if loops is None:
        return None
    out = np.empty(shape if n == k else (w, m, n))
    loops(out, a_dot, b, a, b_dot)
    return out


def matmul_batch_small(a, b_dot):
    """``a @ b_dot`` of a matrix ``a`` (m, k) and a stack ``b_dot`` (w, k, n) by the
    compiled loops; None as ``matmul_both_small``."""
    if type(a) is not np.ndarray or type(b_dot) is not np.ndarray or a.ndim != 2 or \
            b_dot.ndim != 3:
        return None
    w, k, n = b_dot.shape
    m = a.shape[0]
    if m > SMALL_SIDE or k > SMALL_SIDE or n > SMALL_SIDE or w * m * k * n > SMALL_WORK or \
            a.shape[1] != k or a.dtype is not _FLOAT64 or b_dot.dtype is not _FLOAT64 or \
            not (a.flags.c_contiguous and b_dot.flags.c_contiguous):
        return None
    loops = _BATCH.compiled or _loops(_BATCH)
    if loops is None:
        return None
    out = np.empty((w, m, n))
    loops(out, a, b_dot)
    return out
