"""Forward-mode (JVP) rules of the numpy array functions whose tangent is neither the call
on the tangents nor a product rule: ranges, weighted averages, order statistics,
cumulative products, polynomials' Vandermonde matrices, ``np.gradient``'s spacings,
covariances.  The templates call the helpers of ``runtime/tangents.py``.
"""
import numpy as np

from .. import runtime as rt
from .jvp_registry import jvp_rule, t


@jvp_rule(np.arange)
def _(ans, *bounds, dtype=None):
    t[ans] = rt.arange_tangent(ans, bounds, t[bounds])


@jvp_rule(np.average)
def _(ans, a, axis=None, weights=None, *, keepdims=False):
    t[ans] = np.average(t[a], axis, weights, keepdims=keepdims)
    t[ans] += rt.average_weights_tangent(t[weights], ans, a, axis, weights, keepdims)


@jvp_rule(np.partition)
def _(ans, a, kth, axis=-1):
    t[ans] = rt.order_tangent(t[a], a, ans, axis)


@jvp_rule(np.quantile)
def _(ans, a, q, axis=None, *, method="linear", keepdims=False):
    t[ans] = rt.quantile_tangent(t[a], a, q, axis, method, keepdims, False)
    t[ans] += rt.quantile_q_tangent(t[q], a, q, axis, keepdims, False)


@jvp_rule(np.percentile)
def _(ans, a, q, axis=None, *, method="linear", keepdims=False):
    t[ans] = rt.quantile_tangent(t[a], a, q / 100.0, axis, method, keepdims, False)
    t[ans] += rt.quantile_q_tangent(t[q] / 100.0, a, q / 100.0, axis, keepdims, False)


@jvp_rule(np.nanquantile)
def _(ans, a, q, axis=None, *, method="linear", keepdims=False):
    t[ans] = rt.quantile_tangent(t[a], a, q, axis, method, keepdims, True)
    t[ans] += rt.quantile_q_tangent(t[q], a, q, axis, keepdims, True)


@jvp_rule(np.nanpercentile)
def _(ans, a, q, axis=None, *, method="linear", keepdims=False):
    t[ans] = rt.quantile_tangent(t[a], a, q / 100.0, axis, method, keepdims, True)
    t[ans] += rt.quantile_q_tangent(t[q] / 100.0, a, q / 100.0, axis, keepdims, True)


@jvp_rule(np.cumulative_prod)
def _(ans, x, *, axis=None, include_initial=False):
    t[ans] = rt.cumulative_prod_tangent(t[x], x, axis, include_initial)


@jvp_rule(np.nancumprod)
def _(ans, a, axis=None):
    t[ans] = rt.cumprod_tangent(np.where(np.isnan(a), 0.0, t[a]), np.where(np.isnan(a), 1.0, a),
                                axis)


@jvp_rule(np.logspace)
def _(ans, start, stop, num=50, endpoint=True, base=10.0, *, dtype=None, axis=0):
    t[ans] = ans * np.log(base) * np.linspace(t[start], t[stop], num, endpoint, axis=axis)
    t[ans] += t[base] * ans * np.log(ans) / (np.log(base) * base)


@jvp_rule(np.geomspace)
def _(ans, start, stop, num=50, endpoint=True, *, dtype=None, axis=0):
    t[ans] = ans * np.linspace(t[start] / start, t[stop] / stop, num, endpoint, axis=axis)


@jvp_rule(np.trim_zeros)
def _(ans, filt, trim="fb"):
    t[ans] = rt.trim_zeros_tangent(t[filt], filt, trim)


@jvp_rule(np.vander)
def _(ans, x, N=None, increasing=False):
    t[ans] = rt.vander_tangent(t[x], x, N, increasing)


@jvp_rule(np.gradient)
def _(ans, f, *varargs, axis=None, edge_order=1):
    # one term: the result is a tuple of arrays for several axes (`+` would join tuples)
    t[ans] = rt.gradient_tangent(t[f], t[varargs], ans, varargs, axis, edge_order, np.ndim(f))


@jvp_rule(np.cov)
def _(ans, m, *, rowvar=True, bias=False, ddof=None):
    t[ans] = rt.cov_tangent(t[m], ans, m, rowvar, bias, ddof)


@jvp_rule(np.corrcoef)
def _(ans, x, *, rowvar=True):
    t[ans] = rt.corrcoef_tangent(t[x], ans, x, rowvar)
