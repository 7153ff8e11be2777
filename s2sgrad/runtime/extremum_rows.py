"""The adjoint of a max or min over the rows of a large float64 matrix in one compiled
pass (``rt.extremum_adjoint``'s fast case; ``runtime/core.py`` asks ``rows`` first).

``rows(g, x, ans, axis, keepdims, out)`` gives ``extremum_adjoint(g, x, ans, 1, False)``
written into ``out`` (or a new array) when ``x`` is a C-ordered float64 matrix of
``FUSE_NUMBERS / SAVED`` numbers or more reduced over its last axis (and Numba is
allowed: ``fused.allowed``), ``g`` and ``ans`` float64 vectors of its rows and ``out``
None or a C-ordered float64 array of ``x``'s shape; or ``extremum_adjoint(g, x, ans,
None, keepdims)`` of a C-ordered float64 array of any shape (one row: lse's max) with
``g`` and ``ans`` float64 numbers; and
the loop is compiled (``rt.Fused``'s compile thread: the first call that could take it
starts the compile, and returns None, as every call does until it is done); None
otherwise (the caller runs numpy's passes).

numpy's form is a comparison, a count of the hits, a division where any row has ties
and a product: four passes and a boolean temporary (kmeans' 10,000 x 100 distances:
2.4 ms).  The loop reads each row twice while it is in cache and writes it once, with
the same numbers: ``(1.0 if x == ans else 0.0) * g_i``, ``g_i`` divided by the row's
count where it is not 1 (numpy divides every row when any has ties; ``g / 1.0`` is
``g``), so a NaN or an infinity gives what numpy's product gives.
"""
import numpy as np

from . import fused

__all__ = ["rows"]


def _rows(out, g, x, ans):
    for i in range(x.shape[0]):
        a = ans[i]
        row = x[i]
        count = 0
        for j in range(x.shape[1]):
            if row[j] == a:
                count += 1
        gi = g[i] if count == 1 else g[i] / count
        out_i = out[i]
        for j in range(x.shape[1]):
            out_i[j] = (1.0 if row[j] == a else 0.0) * gi


_KERNEL = fused.Fused(_rows, None, 2, ranks=(2, 1, 2, 1))
_FLOAT64 = np.dtype(np.float64)
#: the passes the loop saves over numpy's form (module doc): it runs from
#: ``fused.FUSE_NUMBERS / SAVED`` numbers (lse's 320,000: 0.34 -> 0.1 ms)
SAVED = 3


def _number(v):
    """``v`` (a float64 number or 0-d array) as a vector of one, or None."""
    if type(v) is float or isinstance(v, np.float64) or \
            type(v) is np.ndarray and v.shape == () and v.dtype == _FLOAT64:
        return np.full(1, v, _FLOAT64)
    return None


def rows(g, x, ans, axis, keepdims, out):
    """The adjoint into ``out`` (or a new array), or None: see the module doc."""
    if type(x) is not np.ndarray or x.dtype != _FLOAT64 or not x.flags.c_contiguous or \
            x.size * SAVED < fused.FUSE_NUMBERS or not fused.allowed():
        return None
    if axis is None and x.ndim:       # the whole array: one row
        g, ans = _number(g), _number(ans)
        if g is None or ans is None or out is not None and (
                out.shape != x.shape or not out.flags.c_contiguous):
            return None
        done = rows(g, x.reshape(1, -1), ans, 1, False,
                    None if out is None else out.reshape(1, -1))
        return None if done is None else done.reshape(x.shape)
    if keepdims or axis not in (1, -1) or x.ndim != 2:
        return None
    n = x.shape[0]
    for v in (g, ans):
        if type(v) is not np.ndarray or v.shape != (n,) or v.dtype != _FLOAT64:
            return None
    compiled = _KERNEL.ready()
    out = None if compiled is None else fused.float64_out(out, x.shape)
    if out is None:
        return None
    compiled(out, fused.c_operand(g, (n,)), fused.c_operand(x, x.shape),
             fused.c_operand(ans, (n,)))
    return out
