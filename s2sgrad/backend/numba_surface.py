"""Numba implementations of more adjoint helpers whose forward call Numba compiles:
``np.broadcast_arrays``, ``np.delete`` / ``np.insert`` (flat, ``axis=None``),
``np.corrcoef``, ``np.linalg.cond`` (2-norm), ``np.nanvar`` / ``np.nanstd`` and
``np.nanmedian`` / ``np.nanquantile`` (whole array), ``np.trapezoid`` (1-D) and
``x.item()``, ``np.tile`` (1-D, 2-D); ``np.ndim``, which Numba lacks and rule templates
call; and ``rt.frexp`` / ``rt.modf`` / ``rt.tile``, the forward sweep's spelling of
``np.frexp`` / ``np.modf`` / ``np.tile``.

The contract is each helper's docstring in ``s2sgrad/runtime*.py``.  An overload
returns None for a form it does not cover (an ``axis``, more dimensions): the
generated function then runs as Python and its fallback reason names the helper.
``wrt`` arrives as a literal (the rules pass 0, 1 or 2).
"""
import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from .. import runtime as rt
from .numba_lists import tuple_impl
from .numba_rules import spread_quantile


def _is_none(t):
    return t is None or isinstance(t, (types.NoneType, types.Omitted))


def _scalar(t):
    return isinstance(t, (types.Number, types.Boolean))


def _literal(wrt):
    return wrt.literal_value if isinstance(wrt, types.IntegerLiteral) else None


@overload(np.ndim)
def _ndim(x):
    """``np.ndim`` (rule templates call it; Numba has only ``x.ndim``): a constant."""
    if isinstance(x, types.Array):
        rank = x.ndim
        return lambda x: rank
    if _scalar(x):
        return lambda x: 0


@overload(rt.broadcast_arrays_adjoints)
def _broadcast_arrays_adjoints(g, args):
    """Each item's adjoint summed back to its argument's shape, as a tuple."""
    if isinstance(args, types.BaseTuple) and isinstance(g, (types.List, types.BaseTuple)) \
            and (isinstance(g, types.List) or len(g) == len(args)):
        return tuple_impl("g, args", lambda k: f"rt.unbroadcast(g[{k}], args[{k}])",
                           len(args))


@register_jitable
def _gather_flat(g, positions, size):
    """An array of ``size`` zeros with ``g``'s k-th element added at ``positions[k]``
    (skipping negative positions)."""
    out = np.zeros(size)
    flat = np.ascontiguousarray(g).ravel()
    for k in range(positions.size):
        if positions[k] >= 0:
            out[positions[k]] += flat[k]
    return out


@overload(rt.delete_adjoint)
def _delete_adjoint(g, arr, obj, axis):
    if not (isinstance(g, types.Array) and isinstance(arr, types.Array) and _is_none(axis)):
        return None

    def impl(g, arr, obj, axis):
        kept = np.delete(np.arange(arr.size), obj)
        return _gather_flat(g, kept, arr.size).reshape(arr.shape)
    return impl


@overload(rt.insert_adjoint)
def _insert_adjoint(g, arr, obj, values, axis, wrt):
    which = _literal(wrt)
    if which is None or not (isinstance(g, types.Array) and isinstance(arr, types.Array)
                             and arr.ndim == 1 and _is_none(axis)
                             and (_scalar(values) or isinstance(values, types.Array))):
        return None
    if which == 0:
        def of_arr(g, arr, obj, values, axis, wrt):
            markers = np.insert(np.arange(arr.size), obj, -1 + 0 * np.arange(np.size(values)))
            return _gather_flat(g, markers, arr.size)
        return of_arr
    if _scalar(values):
        def of_number(g, arr, obj, values, axis, wrt):
            markers = np.insert(-1 + 0 * np.arange(arr.size), obj, 0)
            return _gather_flat(g, markers, 1)[0]
        return of_number

    def of_values(g, arr, obj, values, axis, wrt):
        markers = np.insert(-1 + 0 * np.arange(arr.size), obj, np.arange(values.size))
        return _gather_flat(g, markers, values.size).reshape(values.shape)
    return of_values


@register_jitable
def _cov_adjoint_rows(dc, xs):
    """``cov_adjoint`` for (variables, observations) rows, ``ddof`` 1."""
    xc = xs.copy()
    for i in range(xs.shape[0]):
        xc[i] -= np.mean(xs[i])
    return np.ascontiguousarray(dc + dc.T) @ xc / (xs.shape[1] - 1)


@overload(rt.corrcoef_adjoint)
def _corrcoef_adjoint(g, ans, x, rowvar):
    if not (isinstance(g, types.Array) and g.ndim == 2 and isinstance(x, types.Array)
            and x.ndim == 2 and isinstance(ans, types.Array)):
        return None

    def impl(g, ans, x, rowvar):
        flip = not rowvar and x.shape[0] != 1
        xs = np.ascontiguousarray(x.T) if flip else np.ascontiguousarray(x)
        c = np.cov(xs)
        s = 1.0 / np.sqrt(np.diag(c))
        gm = np.ascontiguousarray(g)
        dc = gm * np.outer(s, s)
        both = (gm + gm.T) * ans
        for k in range(dc.shape[0]):
            dc[k, k] -= 0.5 * s[k] * s[k] * np.sum(both[k])
        dx = _cov_adjoint_rows(dc, xs)
        return np.ascontiguousarray(dx.T) if flip else dx
    return impl


@overload(rt.cond_adjoint)
def _cond_adjoint(g, ans, x, p):
    """The 2-norm condition number (``p`` None) of one matrix."""
    if not (_scalar(g) and isinstance(x, types.Array) and x.ndim == 2 and _is_none(p)):
        return None

    def impl(g, ans, x, p):
        u, s, vh = np.linalg.svd(np.ascontiguousarray(x))
        hi, lo = s[0], s[s.size - 1]
        top = np.outer(u[:, 0], vh[0])
        bottom = np.outer(u[:, s.size - 1], vh[s.size - 1])
        return g * (top / lo - hi / lo ** 2 * bottom)
    return impl


@overload(rt.nan_moments_adjoint)
def _nan_moments_adjoint(g, ans, a, axis, ddof, keepdims, std):
    """``np.nanvar`` / ``np.nanstd`` of the whole array."""
    if not (_scalar(g) and isinstance(a, types.Array) and _is_none(axis)):
        return None

    def impl(g, ans, a, axis, ddof, keepdims, std):
        ok = ~np.isnan(a)
        centred = np.where(ok, a - np.nanmean(a), 0.0)
        scale = g
        if std:
            scale = g / ans / 2.0 if ans != 0 else 0.0
        return scale * 2.0 / (np.sum(ok) - ddof) * centred
    return impl


@overload(rt.nan_quantile_adjoint)
def _nan_quantile_adjoint(g, a, q, axis, method, keepdims):
    """``np.nanmedian`` / ``np.nanquantile`` / ``np.nanpercentile`` of the whole array, one
    ``q``, ``method='linear'``."""
    if not (_scalar(g) and isinstance(a, types.Array) and _scalar(q) and _is_none(axis)
            and isinstance(method, (types.UnicodeType, types.StringLiteral))):
        return None

    def impl(g, a, q, axis, method, keepdims):
        if method != "linear":
            raise NotImplementedError("gradient of np.nanquantile / nanpercentile: s2sgrad "
                                      "has method='linear' with one q")
        flat = np.ascontiguousarray(a).ravel()
        out = np.zeros(flat.size)
        valid = np.flatnonzero(~np.isnan(flat))
        if valid.size > 0:
            spread_quantile(out, valid[np.argsort(flat[valid], kind="mergesort")], q, g)
        return out.reshape(a.shape)
    return impl


@overload(rt.trapezoid_adjoint)
def _trapezoid_adjoint(g, y, x, dx, axis, wrt):
    """``np.trapezoid`` of a 1-D ``y`` (over 1-D ``x``, or spacing ``dx``)."""
    which = _literal(wrt)
    if which is None or not (_scalar(g) and isinstance(y, types.Array) and y.ndim == 1
                             and (_is_none(x) or isinstance(x, types.Array) and x.ndim == 1)):
        return None
    if which == 0:
        if _is_none(x):
            def of_y_spaced(g, y, x, dx, axis, wrt):
                out = np.full(y.shape, g * dx)
                out[0] = out[y.size - 1] = g * dx / 2.0
                return out
            return of_y_spaced

        def of_y(g, y, x, dx, axis, wrt):
            out = np.zeros(y.shape)
            for i in range(y.size - 1):
                half = g * (x[i + 1] - x[i]) / 2.0
                out[i] += half
                out[i + 1] += half
            return out
        return of_y
    if which == 2:
        if not _is_none(x):
            return lambda g, y, x, dx, axis, wrt: 0.0
        return lambda g, y, x, dx, axis, wrt: g * (np.sum(y) - (y[0] + y[y.size - 1]) / 2.0)
    if _is_none(x):
        return None

    def of_x(g, y, x, dx, axis, wrt):
        out = np.zeros(x.shape)
        for i in range(y.size - 1):
            mean = g * (y[i] + y[i + 1]) / 2.0
            out[i + 1] += mean
            out[i] -= mean
        return out
    return of_x


@overload(rt.item_adjoint)
def _item_adjoint(g, like, index):
    """``x.item()`` (Numba's ``item`` takes no index)."""
    if not (_scalar(g) and isinstance(like, types.Array) and isinstance(index, types.BaseTuple)
            and len(index) == 0):
        return None

    def impl(g, like, index):
        out = np.zeros(like.size)
        out[0] = g
        return out.reshape(like.shape)
    return impl


@overload(np.clip)
def _clip_numbers(x, lo, hi):
    """``np.clip`` of numbers (Numba's own takes arrays only), as numpy computes it:
    ``min(max(x, lo), hi)``; arrays are left to Numba's."""
    if all(isinstance(t, (types.Float, types.Integer)) for t in (x, lo, hi)):
        def number(x, lo, hi):
            return min(max(x, lo), hi)
        return number
    return None


@overload(rt.frexp)
def _frexp(x):
    """``np.frexp`` by ``math.frexp``: a float64 mantissa and an int32 exponent."""
    if isinstance(x, types.Float):
        def number(x):
            m, e = math.frexp(x)
            return m, np.int32(e)
        return number
    if isinstance(x, types.Array) and isinstance(x.dtype, types.Float):
        def array(x):
            flat = np.ascontiguousarray(x).ravel()
            mantissa = np.empty(flat.size, dtype=flat.dtype)
            exponent = np.empty(flat.size, dtype=np.int32)
            for k in range(flat.size):
                mantissa[k], e = math.frexp(flat[k])
                exponent[k] = e
            return mantissa.reshape(x.shape), exponent.reshape(x.shape)
        return array


@overload(rt.modf)
def _modf(x):
    """``np.modf``: ``(x - trunc(x), trunc(x))``, the fraction carrying ``x``'s sign (a
    signed 0 for whole numbers and infinities, as numpy)."""
    if isinstance(x, types.Float):
        def number(x):
            whole = np.trunc(x)
            return math.copysign(0.0 if math.isinf(x) else x - whole, x), whole
        return number
    if isinstance(x, types.Array) and isinstance(x.dtype, types.Float):
        def array(x):
            whole = np.trunc(x)
            return np.copysign(np.where(np.isinf(x), 0.0, x - whole), x), whole
        return array


def _tile_plan(a, reps):
    """How ``np.tile(a, reps)`` tiles a 1-D or 2-D ``a`` (``reps`` an int or a tuple of one
    or two ints) as a 2-D tiling: compiled functions giving ``a`` as rows, the number of
    row and column tiles from ``reps``, and the result from the 2-D tiling (a 1-D ``a``
    with one rep stays 1-D); None for another form."""
    if not (isinstance(a, types.Array) and a.ndim in (1, 2)):
        return None
    if isinstance(reps, types.Integer):
        rows, cols, flat = (lambda r: 1), (lambda r: r), a.ndim == 1
    elif isinstance(reps, types.UniTuple) and isinstance(reps.dtype, types.Integer) and \
            len(reps) in (1, 2):
        rows, cols, flat = ((lambda r: 1), (lambda r: r[0]), a.ndim == 1) if len(reps) == 1 \
            else ((lambda r: r[0]), (lambda r: r[1]), False)
    else:
        return None
    as_rows = (lambda a: np.ascontiguousarray(a).reshape(1, a.shape[0])) if a.ndim == 1 \
        else (lambda a: np.ascontiguousarray(a))
    result = (lambda out: out.reshape(-1)) if flat else (lambda out: out)
    return tuple(register_jitable(f) for f in (as_rows, rows, cols, result))


@overload(rt.tile)
def _tile(a, reps):
    plan = _tile_plan(a, reps)
    if plan is None:
        return None
    as_rows, rows_of, cols_of, result = plan

    def impl(a, reps):
        block = as_rows(a)
        m, n = block.shape
        r0, r1 = rows_of(reps), cols_of(reps)
        out = np.empty((r0 * m, r1 * n), dtype=block.dtype)
        for i in range(r0):
            for j in range(r1):
                out[i * m:(i + 1) * m, j * n:(j + 1) * n] = block
        return result(out)
    return impl


@overload(rt.tile_adjoint)
def _tile_adjoint(g, a, reps):
    plan = _tile_plan(a, reps)
    if plan is None or not isinstance(g, types.Array):
        return None
    as_rows, rows_of, cols_of, _ = plan

    def impl(g, a, reps):
        m, n = as_rows(a).shape
        r0, r1 = rows_of(reps), cols_of(reps)
        g2 = np.ascontiguousarray(g).reshape(r0 * m, r1 * n)
        acc = np.zeros((m, n), dtype=g2.dtype)
        for i in range(r0):
            for j in range(r1):
                acc += g2[i * m:(i + 1) * m, j * n:(j + 1) * n]
        return acc.reshape(a.shape)
    return impl
