"""Numba implementations of adjoint helpers of the numpy_more / linalg / numpy_surface
rules whose forward call Numba compiles (cumprod, kron, repeat, append, take, convolve,
correlate, cholesky, pinv, matrix_power, resize, trim_zeros, vander, interp, cov).

The contract is each helper's docstring in ``s2sgrad/runtime/*.py``.  An overload
returns None for a form it does not cover (an ``axis``, more dimensions): the generated
function then runs as Python and says why.  ``wrt`` arrives as a literal (the rules
pass 0, 1 or 2), so the overload picks the operand at compile time.
"""
import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from .. import runtime as rt
from .numba_linalg import lower_only


def _is_none(t):
    return t is None or isinstance(t, (types.NoneType, types.Omitted))


def _arrays(*ts):
    return all(isinstance(t, types.Array) for t in ts)


def _literal(wrt):
    """The value of a literal ``wrt`` argument, or None (ask Numba for the literal)."""
    if isinstance(wrt, types.IntegerLiteral):
        return wrt.literal_value
    return None


@overload(rt.cumprod_adjoint)
def _cumprod_adjoint(g, a, axis):
    if not (_arrays(g, a) and _is_none(axis)):
        return None

    def impl(g, a, axis):
        x = np.ascontiguousarray(a).ravel()
        gf = np.ascontiguousarray(g).ravel()
        n = x.size
        s = np.zeros(n, dtype=gf.dtype)
        acc = 0.0
        for k in range(n - 1, -1, -1):
            acc = gf[k] + (x[k + 1] * acc if k + 1 < n else 0.0)
            s[k] = acc
        before = 1.0
        for k in range(n):
            s[k] = before * s[k]
            before = before * x[k]
        return s.reshape(a.shape)
    return impl


@overload(rt.kron_adjoint)
def _kron_adjoint(g, a, b, wrt):
    which = _literal(wrt)
    if which is None or not _arrays(g, a, b) or a.ndim != b.ndim or a.ndim not in (1, 2):
        return None
    if a.ndim == 1:
        def vectors(g, a, b, wrt):
            p, r = a.shape[0], b.shape[0]
            out = np.zeros(p if which == 0 else r, dtype=g.dtype)
            for i in range(p):
                for k in range(r):
                    if which == 0:
                        out[i] += g[i * r + k] * b[k]
                    else:
                        out[k] += g[i * r + k] * a[i]
            return out
        return vectors

    def matrices(g, a, b, wrt):
        p, q = a.shape
        r, s = b.shape
        out = np.zeros((p, q) if which == 0 else (r, s), dtype=g.dtype)
        for i in range(p):
            for j in range(q):
                for k in range(r):
                    for m in range(s):
                        if which == 0:
                            out[i, j] += g[i * r + k, j * s + m] * b[k, m]
                        else:
                            out[k, m] += g[i * r + k, j * s + m] * a[i, j]
        return out
    return matrices


@overload(rt.repeat_adjoint)
def _repeat_adjoint(g, a, repeats, axis):
    if not (_arrays(g, a) and _is_none(axis)):
        return None
    if isinstance(repeats, types.Integer):
        def by_count(g, a, repeats, axis):
            gf = np.ascontiguousarray(g).ravel()
            out = np.zeros(a.size, dtype=gf.dtype)
            for i in range(a.size):
                for k in range(repeats):
                    out[i] += gf[i * repeats + k]
            return out.reshape(a.shape)
        return by_count
    if isinstance(repeats, types.Array) and isinstance(repeats.dtype, types.Integer):
        def by_counts(g, a, repeats, axis):
            gf = np.ascontiguousarray(g).ravel()
            out = np.zeros(a.size, dtype=gf.dtype)
            pos = 0
            for i in range(a.size):
                count = repeats[i] if repeats.size > 1 else repeats[0]
                for _ in range(count):
                    out[i] += gf[pos]
                    pos += 1
            return out.reshape(a.shape)
        return by_counts


@overload(rt.append_adjoint)
def _append_adjoint(g, arr, values, axis, wrt):
    which = _literal(wrt)
    if which is None or not _arrays(g, arr, values) or not _is_none(axis):
        return None
    if which == 0:
        return lambda g, arr, values, axis, wrt: \
            np.ascontiguousarray(g).ravel()[:arr.size].copy().reshape(arr.shape)
    return lambda g, arr, values, axis, wrt: \
        np.ascontiguousarray(g).ravel()[arr.size:].copy().reshape(values.shape)


@overload(rt.take_adjoint)
def _take_adjoint(g, a, indices, axis):
    if not (_arrays(g, a) and _is_none(axis)):
        return None
    if isinstance(indices, types.Array) and isinstance(indices.dtype, types.Integer):
        def many(g, a, indices, axis):
            out = np.zeros(a.size, dtype=g.dtype)
            idx = np.ascontiguousarray(indices).ravel()
            gf = np.ascontiguousarray(g).ravel()
            for k in range(idx.size):
                out[idx[k] % a.size] += gf[k]
            return out.reshape(a.shape)
        return many


@register_jitable
def _full_window(g, n, m, mode):
    size = g.size
    full = np.zeros(n + m - 1, dtype=g.dtype)
    start = 0
    if mode == "valid":
        start = min(n, m) - 1
    elif mode == "same":
        start = (n + m - 1 - size) // 2
    full[start:start + size] = g
    return full


@register_jitable
def _convolve_adjoint(g, a, v, mode, which):
    n, m = a.size, v.size
    full = _full_window(np.ascontiguousarray(g).ravel(), n, m, mode)
    if which == 0:
        out = np.zeros(n, dtype=full.dtype)
        for i in range(n):
            for j in range(m):
                out[i] += full[i + j] * v[j]
        return out
    out = np.zeros(m, dtype=full.dtype)
    for j in range(m):
        for i in range(n):
            out[j] += full[i + j] * a[i]
    return out


@overload(rt.convolve_adjoint)
def _convolve(g, a, v, mode, wrt):
    which = _literal(wrt)
    if which is None or not _arrays(a, v) or a.ndim != 1 or v.ndim != 1:
        return None
    return lambda g, a, v, mode, wrt: _convolve_adjoint(g, a, v, mode, which)


@overload(rt.correlate_adjoint)
def _correlate(g, a, v, mode, wrt):
    which = _literal(wrt)
    if which is None or not _arrays(a, v) or a.ndim != 1 or v.ndim != 1:
        return None
    if which == 0:
        return lambda g, a, v, mode, wrt: _convolve_adjoint(g, a, v[::-1].copy(), mode, 0)
    return lambda g, a, v, mode, wrt: \
        _convolve_adjoint(g, a, v[::-1].copy(), mode, 1)[::-1].copy()


@register_jitable
def _solve_lt(L, B):
    """X with ``L^T X = B`` for lower-triangular ``L`` (back substitution)."""
    n = L.shape[0]
    X = np.zeros(B.shape, dtype=B.dtype)
    for c in range(B.shape[1]):
        for i in range(n - 1, -1, -1):
            acc = B[i, c]
            for k in range(i + 1, n):
                acc -= L[k, i] * X[k, c]
            X[i, c] = acc / L[i, i]
    return X


@overload(rt.cholesky_adjoint)
def _cholesky_adjoint(g, L):
    if not (_arrays(g, L) and L.ndim == 2):
        return None

    def impl(g, L):
        n = L.shape[0]
        phi = np.tril(np.ascontiguousarray(L.T) @ np.ascontiguousarray(g))
        for i in range(n):
            phi[i, i] *= 0.5
        x = _solve_lt(L, phi)
        s = _solve_lt(L, np.ascontiguousarray(x.T)).T
        out = np.zeros((n, n), dtype=s.dtype)
        for i in range(n):
            out[i, i] = s[i, i]
            for j in range(i):
                out[i, j] = s[i, j] + s[j, i]
        return out
    return impl


@overload(rt.pinv_adjoint)
def _pinv_adjoint(g, ans, a):
    if not (_arrays(g, ans, a) and a.ndim == 2):
        return None

    def impl(g, ans, a):
        p = np.ascontiguousarray(ans)
        pt = np.ascontiguousarray(p.T)
        gt = np.ascontiguousarray(np.asarray(g).T)
        ac = np.ascontiguousarray(a)
        m, n = ac.shape
        return (-(pt @ np.ascontiguousarray(g)) @ pt
                + (np.eye(m) - ac @ p) @ gt @ p @ pt
                + pt @ p @ gt @ (np.eye(n) - p @ ac))
    return impl


@overload(rt.matrix_power_adjoint)
def _matrix_power_adjoint(g, a, n):
    if not (_arrays(g, a) and a.ndim == 2 and isinstance(n, types.Integer)):
        return None

    def impl(g, a, n):
        base = np.ascontiguousarray(a)
        gc = np.ascontiguousarray(g)
        if n < 0:
            base = np.linalg.inv(base)
        k = abs(n)
        bt = np.ascontiguousarray(base.T)
        powers = [np.eye(bt.shape[0])]
        for _ in range(k - 1):
            powers.append(powers[-1] @ bt)
        out = np.zeros(base.shape, dtype=gc.dtype)
        for i in range(k):
            out += powers[i] @ gc @ powers[k - 1 - i]
        if n < 0:
            return -bt @ out @ bt
        return out
    return impl


@overload(rt.resize_adjoint)
def _resize_adjoint(g, a):
    if not _arrays(g, a):
        return None

    def impl(g, a):
        gf = np.ascontiguousarray(g).ravel()
        out = np.zeros(a.size, dtype=gf.dtype)
        for k in range(gf.size):
            out[k % a.size] += gf[k]
        return out.reshape(a.shape)
    return impl


@overload(rt.trim_zeros_adjoint)
def _trim_zeros_adjoint(g, filt, trim):
    if not (_arrays(g, filt) and filt.ndim == 1):
        return None

    def impl(g, filt, trim):
        start = 0
        if "f" in trim or "F" in trim:
            while start < filt.size and filt[start] == 0:
                start += 1
        out = np.zeros(filt.size, dtype=g.dtype)
        out[start:start + g.size] = g
        return out
    return impl


@overload(rt.vander_adjoint)
def _vander_adjoint(g, x, N, increasing):
    if not (_arrays(g, x) and x.ndim == 1):
        return None

    def impl(g, x, N, increasing):
        cols = g.shape[1]
        out = np.zeros(x.size, dtype=g.dtype)
        for i in range(x.size):
            for j in range(cols):
                p = j if increasing else cols - 1 - j
                if p > 0:
                    out[i] += g[i, j] * p * x[i] ** (p - 1)
        return out
    return impl


@overload(rt.interp_adjoint)
def _interp_adjoint(g, x, xp, fp, wrt):
    which = _literal(wrt)
    if which is None or not _arrays(g, x, xp, fp) or x.ndim != 1:
        return None

    def impl(g, x, xp, fp, wrt):
        n = xp.size
        out = np.zeros(x.size if which == 0 else n, dtype=np.float64)
        for k in range(x.size):
            v = x[k]
            if v < xp[0] or v > xp[n - 1]:
                if which == 2:
                    out[0 if v < xp[0] else n - 1] += g[k]
                continue
            i = min(max(np.searchsorted(xp, v, side="right") - 1, 0), n - 2)
            h = xp[i + 1] - xp[i]
            t = (v - xp[i]) / h
            slope = (fp[i + 1] - fp[i]) / h
            if which == 0:
                out[k] = g[k] * slope
            elif which == 1:
                out[i] += g[k] * slope * (t - 1.0)
                out[i + 1] -= g[k] * slope * t
            else:
                out[i] += g[k] * (1.0 - t)
                out[i + 1] += g[k] * t
        return out
    return impl


@overload(rt.cov_adjoint)
def _cov_adjoint(g, m, rowvar, bias, ddof):
    if not (_arrays(g, m) and m.ndim == 2 and g.ndim == 2 and _is_none(ddof)):
        return None

    def impl(g, m, rowvar, bias, ddof):
        flip = not rowvar and m.shape[0] != 1
        x = np.ascontiguousarray(m.T) if flip else np.ascontiguousarray(m)
        f = x.shape[1] - (0 if bias else 1)
        xc = x.copy()
        for i in range(x.shape[0]):
            xc[i] -= np.mean(x[i])
        gs = np.ascontiguousarray(g + g.T)
        dx = gs @ xc / f
        return np.ascontiguousarray(dx.T) if flip else dx
    return impl


@overload(rt.stacked_adjoints)
def _stacked_adjoints(g, arrays, how):
    """Operands of one number of dimensions (a UniTuple): ``g`` split where they joined."""
    if not (isinstance(g, types.Array) and isinstance(arrays, types.UniTuple)
            and isinstance(arrays.dtype, types.Array)):
        return None
    if not isinstance(how, types.StringLiteral):
        return None
    kind, nd = how.literal_value, arrays.dtype.ndim
    if (kind == "vstack" and nd == 1) or (kind == "column_stack" and nd == 1):
        axis = 0 if kind == "vstack" else 1      # each operand is a row / a column of g
        return lambda g, arrays, how: rt.unstack(g, len(arrays), axis)
    axis = {"vstack": 0, "hstack": 0 if nd == 1 else 1, "column_stack": 1, "dstack": 2}[kind]
    if (kind == "column_stack" and nd != 2) or (kind == "dstack" and nd != 3):
        return None
    return lambda g, arrays, how: rt.split_like(g, arrays, axis)


@overload(rt.select_adjoints)
def _select_adjoints(g, condlist, choicelist):
    if not (isinstance(g, types.Array) and isinstance(condlist, types.UniTuple)
            and isinstance(choicelist, types.UniTuple)
            and isinstance(condlist.dtype, types.Array) and condlist.dtype.ndim == g.ndim
            and isinstance(choicelist.dtype, types.Array)):
        return None

    def impl(g, condlist, choicelist):
        taken = np.zeros(g.shape, dtype=np.bool_)
        zero = np.zeros_like(g)
        out = []
        for k in range(len(choicelist)):
            picked = np.logical_and(condlist[k], np.logical_not(taken))
            out.append(rt.unbroadcast(np.where(picked, g, zero), choicelist[k]))
            taken = np.logical_or(taken, condlist[k])
        return out
    return impl


@overload(rt.select_default_adjoint)
def _select_default_adjoint(g, condlist, default):
    if not (isinstance(g, types.Array) and isinstance(condlist, types.UniTuple)
            and isinstance(condlist.dtype, types.Array) and condlist.dtype.ndim == g.ndim):
        return None

    def impl(g, condlist, default):
        taken = np.zeros(g.shape, dtype=np.bool_)
        for k in range(len(condlist)):
            taken = np.logical_or(taken, condlist[k])
        return rt.unbroadcast(np.where(taken, np.zeros_like(g), g), default)
    return impl


@overload(rt.permutation_adjoint)
def _permutation_adjoint(g, a, ans, axis):
    """1-D ``a`` (``np.partition`` of a vector): each value's adjoint goes back to where
    the value was (stable order for ties)."""
    if not (_arrays(g, a, ans) and a.ndim == 1 and g.ndim == 1):
        return None

    def impl(g, a, ans, axis):
        to = np.argsort(a, kind="mergesort")
        source = np.argsort(ans, kind="mergesort")
        out = np.zeros(a.size, dtype=g.dtype)
        for k in range(a.size):
            out[to[k]] = g[source[k]]
        return out
    return impl


def _scalar(t):
    return isinstance(t, (types.Number, types.Boolean))


@overload(rt.nan_extremum_mask)
def _nan_extremum_mask(x, ans, axis, keepdims):
    """``np.nanmax`` / ``np.nanmin`` of the whole array."""
    if not (isinstance(x, types.Array) and _scalar(ans) and _is_none(axis)):
        return None

    def impl(x, ans, axis, keepdims):
        hit = (x == ans).astype(np.float64)
        return hit / np.sum(hit)
    return impl


@overload(rt.average_adjoint)
def _average_adjoint(g, ans, a, axis, weights, keepdims, wrt):
    """``np.average`` of the whole array, without weights or with weights of ``a``'s shape."""
    which = _literal(wrt)
    if which is None or not (_scalar(g) and isinstance(a, types.Array) and _is_none(axis)):
        return None
    if _is_none(weights):
        return lambda g, ans, a, axis, weights, keepdims, wrt: np.full(a.shape, g / a.size)
    if not (isinstance(weights, types.Array) and weights.ndim == a.ndim):
        return None
    if which == 0:
        return lambda g, ans, a, axis, weights, keepdims, wrt: g * weights / np.sum(weights)
    return lambda g, ans, a, axis, weights, keepdims, wrt: g * (a - ans) / np.sum(weights)


def _spread_quantile(out, order, q, g):
    """Add ``g`` to ``out`` at the order statistics that ``np.quantile(..., q)`` (method
    'linear') interpolates between; ``order``: the positions of the values taken, sorted
    by value."""
    pos = q * (order.size - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, order.size - 1)
    if hi == lo:
        out[order[lo]] += g
    else:
        out[order[lo]] += g * (hi - pos)
        out[order[hi]] += g * (pos - lo)


spread_quantile = register_jitable(_spread_quantile)


@overload(rt.quantile_adjoint)
def _quantile_adjoint(g, a, q, axis, method, keepdims):
    """``np.median`` / ``np.quantile`` / ``np.percentile`` of the whole array, one ``q``."""
    if not (_scalar(g) and isinstance(a, types.Array) and _scalar(q) and _is_none(axis)):
        return None

    def impl(g, a, q, axis, method, keepdims):
        flat = np.ascontiguousarray(a).ravel()
        out = np.zeros(flat.size, dtype=np.float64)
        spread_quantile(out, np.argsort(flat, kind="mergesort"), q, g)
        return out.reshape(a.shape)
    return impl


@overload(rt.take_along_axis_adjoint)
def _take_along_axis_adjoint(g, arr, indices, axis):
    """A vector ``arr`` read at the positions ``indices``."""
    if not (_arrays(g, arr, indices) and arr.ndim == 1 and indices.ndim == 1):
        return None

    def impl(g, arr, indices, axis):
        out = np.zeros(arr.size, dtype=g.dtype)
        for k in range(indices.size):
            out[indices[k] % arr.size] += g[k]
        return out
    return impl


@overload(rt.eigvalsh_adjoint)
def _eigvalsh_adjoint(g, a):
    if not (_arrays(g, a) and a.ndim == 2):
        return None

    def impl(g, a):
        _, v = np.linalg.eigh(np.ascontiguousarray(a))
        return lower_only(np.ascontiguousarray(v * g) @ np.ascontiguousarray(v.T))
    return impl


@overload(rt.split_adjoint)
def _split_adjoint(g, ary, axis):
    """``np.split`` / ``array_split`` / ``hsplit`` / ``vsplit`` / ``dsplit`` along any one
    axis: the pieces' adjoints (a list) written back one after another, through views with
    that axis first."""
    if not (isinstance(g, (types.List, types.UniTuple)) and isinstance(g.dtype, types.Array)
            and isinstance(ary, types.Array) and g.dtype.ndim == ary.ndim
            and isinstance(axis, types.Integer)):
        return None

    def impl(g, ary, axis):
        out = np.zeros(ary.shape, dtype=g[0].dtype)
        front = np.swapaxes(out, 0, axis)    # a view: writing it writes out
        start = 0
        for piece in g:
            part = np.swapaxes(piece, 0, axis)
            front[start:start + part.shape[0]] = part
            start += part.shape[0]
        return out
    return impl
