"""Forward-mode tangents of the rule table's array primitives whose tangent is neither the
call itself nor a product rule (ranges, order statistics, statistics, polynomials), as
``rt.<name>``, called from the JVP rules of ``rules/jvp_arrays.py``.

Each ``<primitive>_tangent`` takes the operands' tangents first, then what the primitive
was called with (and its result where the formula reads it), and gives the result's
tangent in the result's shape.  Plain numpy; ``tests/test_jvp_rules.py`` checks each
against central differences of the primitive.
"""
import numpy as np

from .arrays import quantile_adjoint
from .core import unreduce
from .forward import cumprod_tangent
from .surface import as_observations, nan_quantile_adjoint

__all__ = ["arange_tangent", "average_weights_tangent", "order_tangent", "quantile_tangent", "quantile_q_tangent",
           "quantile_q_adjoint", "quantile_q_adjoint_tangent",
           "quantile_adjoint_q_tangent",
           "cumulative_prod_tangent", "trim_zeros_tangent", "vander_tangent",
           "gradient_tangent", "cov_tangent", "corrcoef_tangent"]


def arange_tangent(ans, bounds, bounds_dot):
    """The tangent of ``np.arange(*bounds)``: element ``i`` is ``start + i * step`` (the
    length is piecewise constant), so ``start_dot + i * step_dot``; one bound (the stop):
    zeros."""
    out = np.zeros(np.shape(ans), dtype=np.result_type(ans, np.float32))
    if len(bounds) == 1:
        return out
    out = out + bounds_dot[0]
    if len(bounds) == 3:
        out = out + np.arange(out.size) * bounds_dot[2]
    return out


def weights_along(a, weights, axis):
    """``(w, along)``: ``weights`` as numpy's average reads them (1-D weights with an int
    axis lie along it: ``along`` True, ``w`` shaped to broadcast there)."""
    a, w = np.asarray(a), np.asarray(weights)
    if w.ndim == 1 and a.ndim > 1 and axis is not None:
        shape = [1] * a.ndim
        shape[axis % a.ndim] = w.size
        return w.reshape(shape), True
    return w, False


def average_weights_tangent(w_dot, ans, a, axis, weights, keepdims):
    """The part of ``np.average(a, axis, weights, keepdims=)``'s tangent that comes from
    the weights' tangent ``w_dot``: ``sum((a - ans) w_dot) / sum(w)`` over ``axis``."""
    a = np.asarray(a)
    w = np.broadcast_to(weights_along(a, weights, axis)[0], a.shape)
    w_dot = np.broadcast_to(weights_along(a, w_dot, axis)[0], a.shape)
    centred = a - unreduce(ans, a, axis, keepdims)
    return np.sum(centred * w_dot, axis=axis, keepdims=keepdims) / \
        np.sum(w, axis=axis, keepdims=keepdims)


def order_tangent(t, a, ans, axis):
    """The tangent of a result that reorders ``a``'s values along ``axis`` (``np.sort``,
    ``np.partition``; None: of the flattened array): ``t`` taken in the same order (the
    ``k``-th smallest value of ``ans`` is the ``k``-th smallest of ``a``)."""
    a, t = np.asarray(a), np.broadcast_to(np.asarray(t), np.shape(a))
    if axis is None:
        return order_tangent(np.ravel(t), np.ravel(a), np.ravel(ans), 0)
    where = np.argsort(a, axis=axis, kind="stable")
    rank = np.argsort(np.argsort(ans, axis=axis, kind="stable"), axis=axis, kind="stable")
    return np.take_along_axis(t, np.take_along_axis(where, rank, axis=axis), axis=axis)


def quantile_tangent(t, a, q, axis, method, keepdims, nan):
    """The tangent of ``np.quantile(a, q, axis, method="linear", keepdims=)`` along ``t``
    (``nan``: of ``np.nanquantile``, NaNs left out): for each ``q``, each element's weight
    in the result (the adjoint of ones) times ``t``, summed over ``axis``; a result of
    ``q``'s shape first, as numpy's."""
    adjoint = nan_quantile_adjoint if nan else quantile_adjoint
    a = np.asarray(a)
    t = np.where(np.isnan(a), 0.0, t) if nan else np.broadcast_to(t, a.shape)
    ones = np.ones(np.shape(np.sum(a, axis=axis, keepdims=keepdims)))
    parts = [np.sum(adjoint(ones, a, qk, axis, method, keepdims) * t, axis=axis,
                    keepdims=keepdims) for qk in np.ravel(q)]
    return np.reshape(np.stack(parts), np.shape(q) + np.shape(ones))


def quantile_slope(a, q, axis, keepdims, nan, along=None):
    """The derivative of ``np.quantile(a, q, axis, method="linear", keepdims=)`` (``nan``:
    ``np.nanquantile``) with respect to ``q``, of the result's shape: ``q`` sits at
    position ``q (n - 1)`` of each sorted lane of ``n`` values (non-NaN ones), so the
    slope is ``(n - 1)`` times the gap between the two order statistics around it (at an
    order statistic itself, the gap to the next one: the derivative from the right).
    ``along``: the gap of ``along``'s values at those places instead (in ``a``'s sort
    order: the slope's tangent along ``along``, as the slope is linear in ``a``)."""
    a = np.asarray(a, dtype=np.result_type(a, np.float64))
    values = a if along is None else np.broadcast_to(along, a.shape)
    if axis is None:
        a, values, axis = a.reshape(-1), np.reshape(values, -1), 0
    order = np.argsort(np.moveaxis(a, axis, -1), axis=-1, kind="stable")   # NaNs last
    lanes = np.take_along_axis(np.moveaxis(values, axis, -1), order, axis=-1)
    n = np.sum(~np.isnan(np.moveaxis(a, axis, -1)), axis=-1) if nan else \
        np.full(lanes.shape[:-1], lanes.shape[-1])
    parts = []
    for qk in np.ravel(q):
        lo = np.clip(np.floor(qk * (n - 1)).astype(int), 0, np.maximum(n - 2, 0))
        hi = np.minimum(lo + 1, n - 1)
        gap = np.take_along_axis(lanes, hi[..., None], -1) - \
            np.take_along_axis(lanes, lo[..., None], -1)
        slope = (n - 1)[..., None] * gap
        if keepdims:
            slope = np.moveaxis(slope, -1, axis)
        else:
            slope = slope[..., 0]
        parts.append(slope)
    return np.reshape(np.stack(parts), np.shape(q) + np.shape(parts[0]))


def quantile_q_tangent(q_dot, a, q, axis, keepdims, nan):
    """The part of ``np.quantile(a, q, ...)``'s tangent that comes from ``q``'s tangent
    ``q_dot``: ``q_dot`` times ``quantile_slope``, each ``q`` over its own results."""
    slope = quantile_slope(a, q, axis, keepdims, nan)
    q_dot = np.broadcast_to(q_dot, np.shape(q))
    return np.reshape(q_dot, np.shape(q) + (1,) * (slope.ndim - np.ndim(q))) * slope


def quantile_q_adjoint(g, a, q, axis, keepdims, nan):
    """The adjoint of ``q`` in ``np.quantile(a, q, ...)`` (``nan``: ``np.nanquantile``):
    ``g`` times ``quantile_slope``, summed over each ``q``'s results."""
    slope = quantile_slope(a, q, axis, keepdims, nan)
    spread = np.broadcast_to(g, slope.shape) * slope
    out = np.sum(np.reshape(spread, np.shape(q) + (-1,)), axis=-1)
    return out if np.ndim(q) else float(out)


def quantile_q_adjoint_tangent(g, a, q, axis, keepdims, nan, a_dot):
    """The tangent of ``rt.quantile_q_adjoint(g, a, q, axis, keepdims, nan)`` along
    ``a_dot`` (the slope is linear in the sorted values; piecewise constant in ``q``)."""
    slope = quantile_slope(a, q, axis, keepdims, nan, along=a_dot)
    spread = np.broadcast_to(g, slope.shape) * slope
    out = np.sum(np.reshape(spread, np.shape(q) + (-1,)), axis=-1)
    return out if np.ndim(q) else float(out)


def quantile_adjoint_q_tangent(g, a, q, axis, keepdims, nan, q_dot):
    """The tangent of ``rt.quantile_adjoint(g, a, q, axis, "linear", keepdims)`` (``nan``:
    of ``rt.nan_quantile_adjoint``) along ``q``'s tangent: on each lane of ``c`` values
    (non-NaN ones), ``q`` sits at ``p = q (c - 1)`` between the order statistics ``lo``
    and ``lo + 1``, whose weights ``lo + 1 - p`` and ``p - lo`` move by ``-(c - 1) q_dot``
    and ``(c - 1) q_dot``; put back where those values are in ``a``."""
    if np.ndim(q):
        parts = np.reshape(g, (np.size(q),) + np.shape(g)[np.ndim(q):])
        q_dots = np.ravel(np.broadcast_to(q_dot, np.shape(q)))
        return sum(quantile_adjoint_q_tangent(gk, a, qk, axis, keepdims, nan, qd)
                   for gk, qk, qd in zip(parts, np.ravel(q), q_dots))
    arr = np.asarray(a, dtype=np.result_type(a, np.float64))
    flat = axis is None
    lanes = arr.reshape(-1) if flat else np.moveaxis(arr, axis, -1)
    gl = np.reshape(g, lanes.shape[:-1]) if flat or not keepdims else \
        np.moveaxis(np.asarray(g), axis, -1)[..., 0]
    c = np.sum(~np.isnan(lanes), axis=-1) if nan else np.full(lanes.shape[:-1], lanes.shape[-1])
    lo = np.clip(np.floor(float(q) * (c - 1)).astype(int), 0, np.maximum(c - 2, 0))
    rate = np.where(c > 1, (c - 1) * gl * q_dot, 0.0)
    in_order = np.zeros(lanes.shape)
    np.put_along_axis(in_order, lo[..., None], -rate[..., None], axis=-1)
    np.put_along_axis(in_order, np.minimum(lo + 1, np.maximum(c - 1, 0))[..., None],
                      rate[..., None], axis=-1)
    out = np.zeros(lanes.shape)
    np.put_along_axis(out, np.argsort(lanes, axis=-1, kind="stable"), in_order, axis=-1)
    return out.reshape(arr.shape) if flat else np.moveaxis(out, -1, axis)


def cumulative_prod_tangent(t, x, axis, include_initial):
    """The tangent of ``np.cumulative_prod(x, axis=, include_initial=)``: the running
    product's (``rt.cumprod_tangent``), after a zero (the initial 1) when asked."""
    out = cumprod_tangent(t, x, axis)
    if not include_initial:
        return out
    ax = 0 if axis is None else axis
    shape = list(np.shape(out))
    shape[ax] = 1
    return np.concatenate([np.zeros(shape, dtype=out.dtype), out], axis=ax)


def trim_zeros_tangent(t, filt, trim):
    """The tangent of ``np.trim_zeros(filt, trim)`` (1-D): ``t`` on the kept part (where
    the zeros end is piecewise constant)."""
    filt = np.asarray(filt)
    nonzero = np.flatnonzero(filt)
    if not nonzero.size:
        return np.zeros(0, dtype=np.result_type(t, np.float32))
    start = nonzero[0] if "f" in trim.lower() else 0
    stop = nonzero[-1] + 1 if "b" in trim.lower() else filt.size
    return np.broadcast_to(t, filt.shape)[start:stop].copy()


def vander_slope(x, n, increasing, order):
    """The ``order``-th derivative (1 or 2) of ``np.vander(x, n, increasing)``'s columns."""
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    factor = powers * (powers - 1) if order == 2 else powers
    return np.where(powers >= order,
                    factor * np.asarray(x)[:, None] ** np.maximum(powers - order, 0), 0.0)


def vander_tangent(t, x, N, increasing):
    """The tangent of ``np.vander(x, N, increasing)``: column ``j`` is ``x ** p_j``, so
    ``p_j x ** (p_j - 1) t``."""
    n = np.shape(x)[0] if N is None else N
    return vander_slope(x, n, increasing, 1) * np.asarray(t)[:, None]


def gradient_tangent(f_dot, spacing_dot, ans, spacing, axis, edge_order, ndim):
    """The tangent of ``np.gradient(f, *spacing, axis=axis, edge_order=)`` along the
    tangents of ``f`` (the same call on ``f_dot``: linear) and of the scalar spacings (each
    axis's result scales as 1/h: ``-result h_dot / h``); a tuple of arrays for several
    axes, as numpy's.  A coordinate array spacing that carries a tangent has no rule:
    NotImplementedError."""
    out = np.gradient(f_dot, *spacing, axis=axis, edge_order=edge_order)
    count = ndim if axis is None else (1 if isinstance(axis, (int, np.integer)) else len(axis))
    if not any(np.any(h) for h in spacing_dot):
        return out
    if any(np.ndim(h) for h in spacing):
        raise NotImplementedError("the derivative of np.gradient with respect to a "
                                  "coordinate array spacing")
    parts = [out] if count == 1 else list(out)
    results = [np.asarray(ans)] if count == 1 else list(ans)
    steps = list(spacing) * count if len(spacing) == 1 else list(spacing)
    steps_dot = list(spacing_dot) * count if len(spacing) == 1 else list(spacing_dot)
    parts = [p - r * hd / h for p, r, h, hd in zip(parts, results, steps, steps_dot)]
    return parts[0] if count == 1 else tuple(parts)


def _cov_parts(t, m, rowvar, bias, ddof):
    """``(xc, tc, f)``: the centred observations of ``m`` and of its tangent, and the
    divisor of ``np.cov``."""
    x = as_observations(m, rowvar)
    tx = as_observations(np.broadcast_to(t, np.shape(m)), rowvar)
    f = x.shape[1] - (ddof if ddof is not None else (0 if bias else 1))
    return x - x.mean(axis=1, keepdims=True), tx - tx.mean(axis=1, keepdims=True), f


def cov_tangent(t, ans, m, rowvar, bias, ddof):
    """The tangent of ``C = np.cov(m, rowvar=, bias=, ddof=)`` along ``t``: with centred
    ``xc`` and ``tc``, ``(tc xc^T + xc tc^T) / f``."""
    xc, tc, f = _cov_parts(t, m, rowvar, bias, ddof)
    c_dot = tc @ xc.T
    return np.reshape((c_dot + c_dot.T) / f, np.shape(ans))


def corrcoef_tangent(t, ans, x, rowvar):
    """The tangent of ``R = np.corrcoef(x, rowvar=)``: ``R_ij = C_ij s_i s_j`` with ``s =
    1 / sqrt(diag C)``, so ``dR = dC s s^T - R (d_i + d_j) / 2`` with ``d = s^2 diag(dC)``."""
    xc, tc, f = _cov_parts(t, x, rowvar, False, None)
    c = xc @ xc.T / f
    c_dot = tc @ xc.T
    c_dot = (c_dot + c_dot.T) / f
    s = 1.0 / np.sqrt(np.diag(c))
    r = np.reshape(ans, c.shape)
    d = s * s * np.diag(c_dot)
    return np.reshape(c_dot * np.outer(s, s) - 0.5 * r * (d[:, None] + d[None, :]),
                      np.shape(ans))
