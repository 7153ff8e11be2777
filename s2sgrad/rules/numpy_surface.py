"""Rules for the rest of numpy's differentiable surface: conversions, insert/delete and
other copies, cumulative and NaN-aware reductions, polynomials, interpolation,
statistics, spaced ranges and the remaining ``np.linalg`` functions.

Their helpers are in ``s2sgrad/runtime/surface.py`` (read as ``rt.<name>``).  As in
``numpy_more.py``, a rule's parameters are the forms it covers: a call with another
argument does not bind and is refused with ``MissingRuleError`` where a gradient flows.
"""
import numpy as np
from scipy import special

from .registry import d, vjp
from .. import runtime as rt

# ---------------------------------------------------------------- conversions and views


@vjp(np.asanyarray, np.asfortranarray, np.asarray_chkfinite)
def _(ans, a, dtype=None):
    d[a] = d[ans]


@vjp(np.require)
def _(ans, a, dtype=None, requirements=None):
    d[a] = d[ans]


@vjp(np.real_if_close)
def _(ans, a, tol=100):
    d[a] = d[ans]


@vjp(np.matrix_transpose)
def _(ans, x):
    d[x] = np.swapaxes(d[ans], -1, -2)


@vjp(np.diagflat)
def _(ans, v, k=0):
    d[v] = rt.reshape_like(np.diagonal(d[ans], k), v)


@vjp(np.unwrap)
def _(ans, p, discont=None, axis=-1, *, period=2 * np.pi):
    d[p] = d[ans]


# ---------------------------------------------------------------- elementwise


@vjp(np.ldexp)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * np.exp2(x2), x1)


@vjp(np.heaviside)
def _(ans, x1, x2):
    d[x2] = rt.unbroadcast(d[ans] * (x1 == 0), x2)


@vjp(np.i0)
def _(ans, x):
    d[x] = d[ans] * special.i1(x)


@vjp(np.modf, tuple_result=True)
def _(ans, x):
    d[x] = d[ans][0]


@vjp(np.divmod, tuple_result=True)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans][1], x1)
    d[x2] = rt.unbroadcast(-d[ans][1] * ans[0], x2)


@vjp(np.frexp, tuple_result=True)
def _(ans, x):
    d[x] = d[ans][0] * np.exp2(-ans[1])


# ---------------------------------------------------------------- copies and rearrangements


@vjp(np.broadcast_arrays, tuple_result=True)
def _(ans, *args):
    d[args] = rt.broadcast_arrays_adjoints(d[ans], args)


@vjp(np.meshgrid, tuple_result=True)
def _(ans, *xi, indexing="xy"):
    d[xi] = rt.meshgrid_adjoints(d[ans], xi, indexing)


@vjp(np.hsplit, tuple_result=True)
def _(ans, ary, indices_or_sections):
    d[ary] = rt.split_adjoint(d[ans], ary, min(np.ndim(ary) - 1, 1))


@vjp(np.vsplit, tuple_result=True)
def _(ans, ary, indices_or_sections):
    d[ary] = rt.split_adjoint(d[ans], ary, 0)


@vjp(np.dsplit, tuple_result=True)
def _(ans, ary, indices_or_sections):
    d[ary] = rt.split_adjoint(d[ans], ary, 2)


@vjp(np.unstack, tuple_result=True)
def _(ans, x, *, axis=0):
    d[x] = np.stack(d[ans], axis)


@vjp(np.block)
def _(ans, arrays):
    d[arrays] = rt.block_adjoints(d[ans], arrays)


@vjp(np.insert)
def _(ans, arr, obj, values, axis=None):
    d[arr] = rt.insert_adjoint(d[ans], arr, obj, values, axis, 0)
    d[values] = rt.insert_adjoint(d[ans], arr, obj, values, axis, 1)


@vjp(np.delete)
def _(ans, arr, obj, axis=None):
    d[arr] = rt.delete_adjoint(d[ans], arr, obj, axis)


@vjp(np.compress)
def _(ans, condition, a, axis=None):
    d[a] = rt.compress_adjoint(d[ans], condition, a, axis)


@vjp(np.extract)
def _(ans, condition, arr):
    d[arr] = rt.compress_adjoint(d[ans], np.ravel(condition), np.ravel(arr), None) \
        .reshape(np.shape(arr))


@vjp(np.choose)
def _(ans, a, choices):
    d[choices] = rt.choose_adjoints(d[ans], a, choices)


@vjp(np.resize)
def _(ans, a, new_shape):
    d[a] = rt.resize_adjoint(d[ans], a)


@vjp(np.trim_zeros)
def _(ans, filt, trim="fb"):
    d[filt] = rt.trim_zeros_adjoint(d[ans], filt, trim)


@vjp(np.ediff1d)
def _(ans, ary):
    d[ary] = rt.reshape_like(rt.diff_adjoint(d[ans], 1, -1), ary)


@vjp(np.vander)
def _(ans, x, N=None, increasing=False):
    d[x] = rt.vander_adjoint(d[ans], x, N, increasing)


# ---------------------------------------------------------------- cumulative, NaN-aware


@vjp(np.cumulative_sum)
def _(ans, x, *, axis=None, include_initial=False):
    d[x] = rt.reshape_like(rt.reverse_cumsum(rt.drop_initial(d[ans], axis, include_initial),
                                             axis), x)


@vjp(np.cumulative_prod)
def _(ans, x, *, axis=None, include_initial=False):
    d[x] = rt.cumprod_adjoint(rt.drop_initial(d[ans], axis, include_initial), x, axis)


@vjp(np.nancumsum)
def _(ans, a, axis=None):
    d[a] = rt.reshape_like(rt.reverse_cumsum(d[ans], axis), a) * np.logical_not(np.isnan(a))


@vjp(np.nancumprod)
def _(ans, a, axis=None):
    d[a] = rt.cumprod_adjoint(d[ans], np.where(np.isnan(a), 1.0, a), axis) \
        * np.logical_not(np.isnan(a))


@vjp(np.nanprod)
def _(ans, a, axis=None, *, keepdims=False):
    d[a] = np.where(np.isnan(a), 0.0, rt.unreduce(d[ans] * ans, a, axis, keepdims) / a)


@vjp(np.nanvar)
def _(ans, a, axis=None, *, ddof=0, keepdims=False):
    d[a] = rt.nan_moments_adjoint(d[ans], ans, a, axis, ddof, keepdims, False)


@vjp(np.nanstd)
def _(ans, a, axis=None, *, ddof=0, keepdims=False):
    d[a] = rt.nan_moments_adjoint(d[ans], ans, a, axis, ddof, keepdims, True)


@vjp(np.nanmedian)
def _(ans, a, axis=None, *, keepdims=False):
    d[a] = rt.nan_quantile_adjoint(d[ans], a, 0.5, axis, "linear", keepdims)


@vjp(np.nanquantile)
def _(ans, a, q, axis=None, *, method="linear", keepdims=False):
    d[a] = rt.nan_quantile_adjoint(d[ans], a, q, axis, method, keepdims)
    d[q] = rt.quantile_q_adjoint(d[ans], a, q, axis, keepdims, True)


@vjp(np.nanpercentile)
def _(ans, a, q, axis=None, *, method="linear", keepdims=False):
    d[a] = rt.nan_quantile_adjoint(d[ans], a, q / 100.0, axis, method, keepdims)
    d[q] = rt.quantile_q_adjoint(d[ans], a, q / 100.0, axis, keepdims, True) / 100.0


# ---------------------------------------------------------------- spaced ranges


@vjp(np.logspace)
def _(ans, start, stop, num=50, endpoint=True, base=10.0, *, dtype=None, axis=0):
    d_start_stop = rt.linspace_adjoints(d[ans] * ans * np.log(base), start, stop, num,
                                        endpoint, axis)
    d[start] = d_start_stop[0]
    d[stop] = d_start_stop[1]
    d[base] = rt.unbroadcast(d[ans] * ans * (np.log(ans) / np.log(base)) / base, base)


@vjp(np.geomspace)
def _(ans, start, stop, num=50, endpoint=True, *, dtype=None, axis=0):
    d_start_stop = rt.linspace_adjoints(d[ans] * ans, start, stop, num, endpoint, axis)
    d[start] = d_start_stop[0] / start
    d[stop] = d_start_stop[1] / stop


# ---------------------------------------------------------------- polynomials, interpolation


@vjp(np.polyval)
def _(ans, p, x):
    d[p] = rt.polyval_adjoint(d[ans], p, x, 0)
    d[x] = rt.polyval_adjoint(d[ans], p, x, 1)


@vjp(np.polyder)
def _(ans, p, m=1):
    d[p] = rt.affine_adjoint(d[ans], np.polyder, p, m)


@vjp(np.polyint)
def _(ans, p, m=1):
    d[p] = rt.affine_adjoint(d[ans], np.polyint, p, m)


@vjp(np.polyadd)
def _(ans, a1, a2):
    d[a1] = rt.right_aligned(d[ans], a1)
    d[a2] = rt.right_aligned(d[ans], a2)


@vjp(np.polysub)
def _(ans, a1, a2):
    d[a1] = rt.right_aligned(d[ans], a1)
    d[a2] = -rt.right_aligned(d[ans], a2)


@vjp(np.polymul)
def _(ans, a1, a2):
    d[a1] = rt.convolve_adjoint(d[ans], a1, a2, "full", 0)
    d[a2] = rt.convolve_adjoint(d[ans], a1, a2, "full", 1)


@vjp(np.interp)
def _(ans, x, xp, fp):
    d[x] = rt.interp_adjoint(d[ans], x, xp, fp, 0)
    d[xp] = rt.interp_adjoint(d[ans], x, xp, fp, 1)
    d[fp] = rt.interp_adjoint(d[ans], x, xp, fp, 2)


# ---------------------------------------------------------------- statistics


@vjp(np.cov)
def _(ans, m, *, rowvar=True, bias=False, ddof=None):
    d[m] = rt.cov_adjoint(d[ans], m, rowvar, bias, ddof)


@vjp(np.corrcoef)
def _(ans, x, *, rowvar=True):
    d[x] = rt.corrcoef_adjoint(d[ans], ans, x, rowvar)


# ---------------------------------------------------------------- np.linalg


@vjp(np.linalg.cond)
def _(ans, x, p=None):
    d[x] = rt.cond_adjoint(d[ans], ans, x, p)


@vjp(np.linalg.tensorinv)
def _(ans, a, ind=2):
    d[a] = rt.tensorinv_adjoint(d[ans], ans, a, ind)


@vjp(np.linalg.tensorsolve)
def _(ans, a, b):
    d[a] = rt.tensorsolve_adjoint(d[ans], ans, a, b, 0)
    d[b] = rt.tensorsolve_adjoint(d[ans], ans, a, b, 1)


@vjp(np.linalg.lstsq, tuple_result=True)
def _(ans, a, b, rcond=None):
    d[a] = rt.lstsq_adjoint(d[ans], ans, a, b, 0)
    d[b] = rt.lstsq_adjoint(d[ans], ans, a, b, 1)
