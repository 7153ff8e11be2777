"""numpy's ``+ - * /`` of two float64 arrays over a broadcast, as one compiled loop
(``rt.Kept``'s fast case for its large results: ``runtime/buffers.py`` asks ``binary``
first).

numpy runs a broadcast as one inner loop per row of the axes its iterator cannot merge,
each with its own overhead: GradBench's gmm centres its points for every component,
``x[:, None, :] - mu[None, :, :]`` (1,000 x 25 x 10), in rows of 10 numbers: 0.37 ms,
where the loop here takes 0.16; kmeans' ``(10,000, 1) + (1, 100)`` 0.78 against 0.19 ms;
gmm's ``(25, 10) * (1,000, 25, 10)`` 0.12 against 0.07 (measured on a loaded 2-core
machine, one process, best of 200).  ``binary(fn, a, b, out)`` gives ``fn(a, b)``
(``np.add``, ``np.subtract``, ``np.multiply``, ``np.true_divide``) written into ``out``
(or a new array) by one loop over the broadcast merged into three axes
(``fused.merged``), when

- both operands are exact float64 ``np.ndarray``s of different shapes (an axis an
  operand repeats, stride 0, counts as length 1: ``fused.collapsed``), the result has at
  least ``FUSE_NUMBERS / BROADCAST_SHARE`` numbers, its merged rows are shorter than ``LONG_ROW``
  (numpy's long rows cost it nothing more: ``(4, 250, 250) * (250, 250)`` is a row of
  62,500), ``out`` is None or a C-ordered float64 array of the result's shape, neither
  operand is a matrix laid out by columns only (``columns.laid_by_columns``: numpy's
  inner loops run down its columns, and this loop's C-ordered result would mix the
  layouts of what follows), and Numba is allowed (``fused.allowed``);
- the loop is compiled: ``rt.Fused``'s compile thread, started by the first call that
  could take it, which gets None (the caller runs numpy), as every call does until the
  compile is done, so no result depends on it;

None otherwise.  Each number goes through the one IEEE operation numpy's does: the same
bits (numpy's divide-by-zero warnings are not raised; the infinities and NaNs are the
same).
"""
import numpy as np

from . import fused
from .columns import laid_by_columns

__all__ = ["binary"]

#: the least result size taken is ``fused.FUSE_NUMBERS / BROADCAST_SHARE`` numbers
#: (65,536 by default, 512 KiB of float64, where numpy's rows cost 0.05-0.3 ms more): the
#: one loop serves every broadcast of every program, so its compile pays sooner than a
#: chain's; ``$S2SGRAD_FUSED_MIN`` moves both (the test suite: no compile)
BROADCAST_SHARE = 8
#: a merged last axis at least this long is a row numpy runs at full speed
LONG_ROW = 4096
_CODES = {np.add: 0, np.subtract: 1, np.multiply: 2, np.true_divide: 3}
_FLOAT64 = np.dtype(np.float64)


def _loops(code, out, a, b):
    # out[i, j, m] = a <code: + - * /> b at (i, j, m); an operand of length 1 along an axis
    #    is read at 0 there (along the last axis: a loop of its own, which LLVM vectorises)
    a0, a1, a2 = a.shape[0] > 1, a.shape[1] > 1, a.shape[2] > 1
    b0, b1, b2 = b.shape[0] > 1, b.shape[1] > 1, b.shape[2] > 1
    for i in range(out.shape[0]):
        a_i, b_i, out_i = a[i * a0], b[i * b0], out[i]
        for j in range(out.shape[1]):
            a_ij, b_ij, out_ij = a_i[j * a1], b_i[j * b1], out_i[j]
            if a2 and b2:
                for m in range(out.shape[2]):
                    x, y = a_ij[m], b_ij[m]
                    if code == 0:
                        out_ij[m] = x + y
                    elif code == 1:
                        out_ij[m] = x - y
                    elif code == 2:
                        out_ij[m] = x * y
                    else:
                        out_ij[m] = x / y
            elif a2:
                y = b_ij[0]
                for m in range(out.shape[2]):
                    x = a_ij[m]
                    if code == 0:
                        out_ij[m] = x + y
                    elif code == 1:
                        out_ij[m] = x - y
                    elif code == 2:
                        out_ij[m] = x * y
                    else:
                        out_ij[m] = x / y
            else:
                x = a_ij[0]
                for m in range(out.shape[2]):
                    y = b_ij[m]
                    if code == 0:
                        out_ij[m] = x + y
                    elif code == 1:
                        out_ij[m] = x - y
                    elif code == 2:
                        out_ij[m] = x * y
                    else:
                        out_ij[m] = x / y


_KERNEL = fused.Fused(_loops, None, 2, ranks=(0, 3, 3, 3))


def binary(fn, a, b, out):
    """``fn(a, b)`` into ``out`` (or a new array), or None: see the module doc."""
    code = _CODES.get(fn)
    if code is None or type(a) is not np.ndarray or type(b) is not np.ndarray or \
            a.dtype != _FLOAT64 or b.dtype != _FLOAT64 or \
            a.shape == b.shape and 0 not in a.strides and 0 not in b.strides:
        return None                       # (the common case first: no broadcast)
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return None                       # numpy raises its own error
    if laid_by_columns(a) or laid_by_columns(b):
        return None                       # numpy's inner loops run down its columns
    a, b = fused.collapsed(a), fused.collapsed(b)      # a repeated axis is a broadcast
    if a.shape == b.shape:
        return None
    size = 1
    for n in shape:
        size *= n
    if size * BROADCAST_SHARE < fused.FUSE_NUMBERS or not fused.allowed():
        return None
    grid, dims = fused.merged(shape, (a, b), 3)
    if grid is None or grid[2] >= LONG_ROW or grid[1] == 1:
        return None
    compiled = _KERNEL.ready()
    out = None if compiled is None else fused.float64_out(out, shape)
    if out is None:
        return None
    compiled(code, out.reshape(grid), fused.c_operand(a, dims[0]), fused.c_operand(b, dims[1]))
    return out
