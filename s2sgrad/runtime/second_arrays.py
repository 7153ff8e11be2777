"""Tangents of the array adjoint helpers that depend smoothly on a primal operand and that
``runtime/second.py`` leaves out: cumulative products, weighted averages, the trapezoid
rule, ``np.gradient``, Vandermonde matrices, polynomials, interpolation, NaN-aware
moments and correlation coefficients.  What forward mode over generated gradient code
calls, as ``rt.<name>``, from the JVP rules of ``rules/second_rules.py``.

As in ``second.py``, each ``<helper>_tangent`` gives the part of ``<helper>``'s tangent
that comes from its primal operands (the incoming adjoint's own tangent is the helper on
it, written in the rule), with the operands' tangents after the helper's own arguments:
the product rule on each helper's formula (``runtime/arrays.py``, ``runtime/surface.py``).
"""
import numpy as np

from .arrays import gradient_adjoint, shaped_like, trapezoid_adjoint
from .core import divide_or_zero, unbroadcast, unreduce
from .surface import as_observations, cov_adjoint
from .tangents import vander_slope, weights_along

__all__ = ["cumprod_adjoint_tangent", "average_adjoint_tangent", "trapezoid_adjoint_tangent",
           "gradient_adjoint_tangent", "gradient_spacing_adjoints_tangent",
           "vander_adjoint_tangent", "polyval_adjoint_tangent", "interp_adjoint_tangent",
           "nan_moments_adjoint_tangent", "corrcoef_adjoint_tangent"]


def _like(value, like):
    return np.broadcast_to(np.asarray(value, dtype=np.result_type(value, np.float64)),
                           np.shape(like))


def cumprod_adjoint_tangent(g, a, axis, a_dot):
    """The tangent of ``rt.cumprod_adjoint(g, a, axis)`` along ``a_dot`` (zeros in ``a``
    allowed): ``dx[k] = P[k] s[k]`` with ``P`` the exclusive running product and ``s[k] =
    g[k] + x[k+1] s[k+1]``, each differentiated along its recursion."""
    if axis is None:
        return shaped_like(cumprod_adjoint_tangent(np.ravel(g), np.ravel(a), 0,
                                                   np.ravel(_like(a_dot, a))), a)
    x = np.moveaxis(np.asarray(a, dtype=np.result_type(a, np.float64)), axis, 0)
    xd = np.moveaxis(_like(a_dot, a), axis, 0)
    gm = np.moveaxis(np.broadcast_to(g, np.shape(a)), axis, 0)
    n = x.shape[0]
    before, before_dot = np.ones(x.shape), np.zeros(x.shape)
    for k in range(1, n):
        before[k] = before[k - 1] * x[k - 1]
        before_dot[k] = before_dot[k - 1] * x[k - 1] + before[k - 1] * xd[k - 1]
    s, s_dot = np.zeros(x.shape), np.zeros(x.shape)
    if n:
        s[n - 1] = gm[n - 1]
    for k in range(n - 2, -1, -1):
        s[k] = gm[k] + x[k + 1] * s[k + 1]
        s_dot[k] = xd[k + 1] * s[k + 1] + x[k + 1] * s_dot[k + 1]
    return np.moveaxis(before_dot * s + before * s_dot, 0, axis)


def average_adjoint_tangent(g, ans, a, axis, weights, keepdims, wrt, ans_dot, a_dot, w_dot):
    """The tangent of ``rt.average_adjoint(g, ans, a, axis, weights, keepdims, wrt)`` along
    the tangents of ``ans``, ``a`` and ``weights``: ``spread w / W`` (``a``) and ``spread (a
    - ans) / W`` (the weights), ``W`` the weights' total; no weights: the mean's adjoint,
    constant."""
    a = np.asarray(a)
    if weights is None:
        return np.zeros(a.shape, dtype=np.result_type(a, np.float32))
    spread = unreduce(g, a, axis, keepdims)
    w, along = weights_along(a, weights, axis)
    wd, _ = weights_along(a, _like(w_dot, weights), axis)
    total = np.sum(np.broadcast_to(w, a.shape), axis=axis, keepdims=True)
    total_dot = np.sum(np.broadcast_to(wd, a.shape), axis=axis, keepdims=True)
    if wrt == 0:
        return spread * (wd / total - w * total_dot / total ** 2)
    centred = a - unreduce(ans, a, axis, keepdims)
    centred_dot = _like(a_dot, a) - unreduce(ans_dot, a, axis, keepdims)
    dw = spread * (centred_dot / total - centred * total_dot / total ** 2)
    if along:
        return np.sum(dw, axis=tuple(i for i in range(a.ndim) if i != axis % a.ndim))
    return unbroadcast(dw, weights)


def trapezoid_adjoint_tangent(g, y, x, dx, axis, wrt, y_dot, x_dot, dx_dot):
    """The tangent of ``rt.trapezoid_adjoint(g, y, x, dx, axis, wrt)`` along the tangents of
    ``y``, ``x`` and ``dx``: ``y``'s adjoint is linear in the widths (``diff(x)``, or
    ``dx``), the others' are linear in ``y``: each is the helper on those tangents."""
    if wrt == 0:
        return trapezoid_adjoint(g, y, None if x is None else _like(x_dot, x),
                                 0.0 if x is not None else dx_dot, axis, 0)
    return trapezoid_adjoint(g, _like(y_dot, y), x, dx, axis, wrt)


def _steps(spacing, count):
    return list(spacing) * count if len(spacing) == 1 else list(spacing) if spacing \
        else [1.0] * count


def _axes(ndim, axis):
    axes = list(range(ndim)) if axis is None else (
        [axis] if isinstance(axis, (int, np.integer)) else list(axis))
    return [a % ndim for a in axes]


def _no_coordinate_tangent(spacing, spacing_dot):
    if any(np.ndim(h) and np.any(hd) for h, hd in zip(spacing, spacing_dot)):
        raise NotImplementedError("second derivatives of np.gradient with respect to a "
                                  "coordinate array spacing")


def gradient_adjoint_tangent(g, f, spacing, axis, edge_order, spacing_dot):
    """The tangent of ``rt.gradient_adjoint(g, f, spacing, axis, edge_order)`` along the
    scalar spacings' tangents: each axis's part scales as 1/h, so ``-part h_dot / h``."""
    _no_coordinate_tangent(spacing, spacing_dot)
    axes = _axes(np.ndim(f), axis)
    parts = [g] if len(axes) == 1 else list(np.asarray(g))
    steps, steps_dot = _steps(spacing, len(axes)), _steps(spacing_dot, len(axes))
    out = np.zeros(np.shape(f), dtype=np.result_type(f, np.float32))
    for part, ax, h, hd in zip(parts, axes, steps, steps_dot):
        if np.ndim(h) == 0 and hd != 0:
            out = out - gradient_adjoint(part, f, (h,), ax, edge_order) * hd / h
    return out


def gradient_spacing_adjoints_tangent(g, ans, spacing, axis, ndim, g_dot, ans_dot,
                                      spacing_dot):
    """The tangent of ``rt.gradient_spacing_adjoints(g, ans, spacing, axis, ndim)`` (``-sum(g
    result) / h`` per axis) along the tangents of ``g``, of the result and of the spacings
    (the whole tangent: a list, as the adjoints)."""
    _no_coordinate_tangent(spacing, spacing_dot)
    count = ndim if axis is None else (1 if isinstance(axis, (int, np.integer)) else len(axis))

    def lanes(value):
        return [np.asarray(value)] if count == 1 else list(value)
    parts, results = lanes(g), lanes(ans)
    terms = [-np.sum(p * r) for p, r in zip(parts, results)]
    terms_dot = [-np.sum(p * rd) - np.sum(pd * r) for p, r, rd, pd in
                 zip(parts, results, lanes(ans_dot), lanes(np.broadcast_to(g_dot, np.shape(g))))]
    if len(spacing) == 1:
        h, hd = spacing[0], spacing_dot[0]
        return [sum(terms_dot) / h - sum(terms) * hd / h ** 2]
    return [td / h - t * hd / h ** 2
            for t, td, h, hd in zip(terms, terms_dot, spacing, spacing_dot)]


def vander_adjoint_tangent(g, x, N, increasing, x_dot):
    """The tangent of ``rt.vander_adjoint(g, x, N, increasing)`` (``sum_j g[:, j] p_j x **
    (p_j - 1)``) along ``x_dot``."""
    n = np.shape(x)[0] if N is None else N
    return np.sum(np.asarray(g) * vander_slope(x, n, increasing, 2), axis=1) * \
        _like(x_dot, x)


def polyval_adjoint_tangent(g, p, x, wrt, p_dot, x_dot):
    """The tangent of ``rt.polyval_adjoint(g, p, x, wrt)`` along the tangents of the
    coefficients ``p`` and of ``x``."""
    p = np.asarray(p)
    pd = _like(p_dot, p)
    if wrt == 1:
        slope_dot = np.polyval(np.polyder(pd), x) if p.size > 1 else 0.0
        curve = np.polyval(np.polyder(p, 2), x) if p.size > 2 else 0.0
        return unbroadcast(np.broadcast_to(g * (slope_dot + curve * _like(x_dot, x)),
                                           np.shape(g)), x)
    xs = np.ravel(np.broadcast_to(x, np.shape(g)))
    xs_dot = np.ravel(np.broadcast_to(_like(x_dot, x), np.shape(g)))
    return (vander_slope(xs, p.size, False, 1) * xs_dot[:, None]).T @ np.ravel(g)


def interp_adjoint_tangent(g, x, xp, fp, wrt, x_dot, xp_dot, fp_dot):
    """The tangent of ``rt.interp_adjoint(g, x, xp, fp, wrt)`` along the tangents of ``x``,
    ``xp`` and ``fp`` (the segment each ``x`` falls in does not move): the product rule on
    the segment's width ``h``, position ``t`` and slope ``s``."""
    xa, xp, fp = (np.asarray(v, dtype=float) for v in (x, xp, fp))
    xd = np.broadcast_to(_like(x_dot, x), xa.shape)
    xpd, fpd = _like(xp_dot, xp), _like(fp_dot, fp)
    n = xp.size
    idx = np.clip(np.searchsorted(xp, xa, side="right") - 1, 0, n - 2)
    h = xp[idx + 1] - xp[idx]
    h_dot = xpd[idx + 1] - xpd[idx]
    t = (xa - xp[idx]) / h
    t_dot = (xd - xpd[idx]) / h - t * h_dot / h
    slope = (fp[idx + 1] - fp[idx]) / h
    slope_dot = (fpd[idx + 1] - fpd[idx]) / h - slope * h_dot / h
    gi = np.where((xa >= xp[0]) & (xa <= xp[-1]), g, 0.0)
    if wrt == 0:
        return unbroadcast(gi * slope_dot, x)
    out = np.zeros(n)
    lower = gi * (slope_dot * (t - 1.0) + slope * t_dot) if wrt == 1 else -gi * t_dot
    upper = -gi * (slope_dot * t + slope * t_dot) if wrt == 1 else gi * t_dot
    np.add.at(out, idx, np.ravel(np.broadcast_to(lower, xa.shape)))
    np.add.at(out, idx + 1, np.ravel(np.broadcast_to(upper, xa.shape)))
    return out


def nan_moments_adjoint_tangent(g, ans, a, axis, ddof, keepdims, std, ans_dot, a_dot):
    """The tangent of ``rt.nan_moments_adjoint(g, ans, a, axis, ddof, keepdims, std)``
    along the tangents of ``ans`` and ``a`` (NaNs: no tangent)."""
    a = np.asarray(a)
    ok = ~np.isnan(a)
    count = np.sum(ok, axis=axis, keepdims=True)
    centred = np.where(ok, a - np.nanmean(a, axis=axis, keepdims=True), 0.0)
    ad = np.where(ok, _like(a_dot, a), 0.0)
    centred_dot = np.where(ok, ad - np.sum(ad, axis=axis, keepdims=True) / count, 0.0)
    scale = divide_or_zero(g, ans) / 2.0 if std else g
    out = unreduce(scale, a, axis, keepdims) * 2.0 / (count - ddof) * centred_dot
    if std:
        scale_dot = -divide_or_zero(g * ans_dot, ans * ans) / 2.0
        out = out + unreduce(scale_dot, a, axis, keepdims) * 2.0 / (count - ddof) * centred
    return out


def corrcoef_adjoint_tangent(g, ans, x, rowvar, ans_dot, x_dot):
    """The tangent of ``rt.corrcoef_adjoint(g, ans, x, rowvar)`` along the tangents of
    ``R`` (``ans``) and ``x``: the product rule on ``dC = G s s^T - diag(s^2 / 2 sum((G +
    G^T) R))`` (``s = 1 / sqrt(diag C)``) and on ``cov_adjoint(dC, x)``, bilinear."""
    xs = as_observations(x, rowvar)
    xs_dot = as_observations(_like(x_dot, x), rowvar)
    k = xs.shape[0]
    xc = xs - xs.mean(axis=1, keepdims=True)
    xc_dot = xs_dot - xs_dot.mean(axis=1, keepdims=True)
    f = xs.shape[1] - 1
    c = xc @ xc.T / f
    c_dot = (xc_dot @ xc.T + xc @ xc_dot.T) / f
    s = 1.0 / np.sqrt(np.diag(c))
    s_dot = -0.5 * s ** 3 * np.diag(c_dot)
    gm, r = np.reshape(g, (k, k)), np.reshape(ans, (k, k))
    r_dot = np.reshape(ans_dot, (k, k))
    dc = gm * np.outer(s, s)
    dc[np.diag_indices_from(dc)] -= 0.5 * s * s * np.sum((gm + gm.T) * r, axis=1)
    dc_dot = gm * (np.outer(s_dot, s) + np.outer(s, s_dot))
    dc_dot[np.diag_indices_from(dc_dot)] -= s * s_dot * np.sum((gm + gm.T) * r, axis=1) \
        + 0.5 * s * s * np.sum((gm + gm.T) * r_dot, axis=1)
    dx = cov_adjoint(dc_dot, xs, True, False, None) + cov_adjoint(dc, xs_dot, True, False, None)
    if not rowvar and np.ndim(x) == 2 and np.shape(x)[0] != 1:
        dx = dx.T
    return dx.reshape(np.shape(x))
