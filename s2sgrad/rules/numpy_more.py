"""More numpy rules: elementwise functions, cumulative products, and the functions that
build or rearrange arrays (kron, tensordot, repeat, tile, pad, stacks, rolls...).

Their helpers are in ``s2sgrad/runtime/arrays.py`` (read as ``rt.<name>``).
A rule's parameters are the forms it covers: a call with another argument
(``np.cross(a, b, axis=0)``, ``np.pad(x, 1, constant_values=2)``) does not
bind and is refused with ``MissingRuleError`` where a gradient flows.  A
parameter numpy takes after others the rule leaves out is keyword-only here
(``np.nansum(a, axis, dtype, out, keepdims)``: ``def _(ans, a, axis=None, *,
keepdims=False)``), so a positional ``dtype`` cannot bind to it.
"""
import numpy as np

from .. import primitives as prims
from .registry import d, vjp
from .. import runtime as rt

# ---------------------------------------------------------------- elementwise


@vjp(np.radians, np.deg2rad)
def _(ans, x):
    d[x] = d[ans] * (np.pi / 180.0)


@vjp(np.degrees, np.rad2deg)
def _(ans, x):
    d[x] = d[ans] * (180.0 / np.pi)


@vjp(np.arcsinh)
def _(ans, x):
    d[x] = d[ans] / np.sqrt(x * x + 1.0)


@vjp(np.arccosh)
def _(ans, x):
    d[x] = d[ans] / np.sqrt(x * x - 1.0)


@vjp(np.arctanh)
def _(ans, x):
    d[x] = d[ans] / (1.0 - x * x)


@vjp(np.fabs)
def _(ans, x):
    d[x] = d[ans] * np.sign(x)


@vjp(np.reciprocal)
def _(ans, x):
    d[x] = -d[ans] * ans * ans


@vjp(np.cbrt)
def _(ans, x):
    d[x] = d[ans] / (3.0 * ans * ans)


@vjp(np.sinc)
def _(ans, x):
    d[x] = d[ans] * rt.sinc_derivative(x)


@vjp(np.nan_to_num)
def _(ans, x):
    d[x] = d[ans] * np.isfinite(x)


@vjp(np.conj, np.conjugate, np.real)
def _(ans, x):
    d[x] = d[ans]


@vjp(np.logaddexp)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * np.exp(x1 - ans), x1)
    d[x2] = rt.unbroadcast(d[ans] * np.exp(x2 - ans), x2)


@vjp(np.logaddexp2)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * np.exp2(x1 - ans), x1)
    d[x2] = rt.unbroadcast(d[ans] * np.exp2(x2 - ans), x2)


@vjp(np.fmax)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * ((x1 >= x2) | np.isnan(x2)), x1)
    d[x2] = rt.unbroadcast(d[ans] * np.logical_not((x1 >= x2) | np.isnan(x2)), x2)


@vjp(np.fmin)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * ((x1 <= x2) | np.isnan(x2)), x1)
    d[x2] = rt.unbroadcast(d[ans] * np.logical_not((x1 <= x2) | np.isnan(x2)), x2)


@vjp(np.float_power)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * x2 * np.float_power(x1, x2 - 1), x1)
    d[x2] = rt.unbroadcast(d[ans] * ans * np.log(np.where(x1 > 0, x1, 1)), x2)


@vjp(np.fmod)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans], x1)
    d[x2] = rt.unbroadcast(-d[ans] * np.trunc(x1 / x2), x2)


@vjp(np.copysign)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * np.sign(x1) * np.sign(ans), x1)


# ---------------------------------------------------------------- cumulative products


@vjp(np.cumprod)
def _(ans, a, axis=None):
    d[a] = rt.cumprod_adjoint(d[ans], a, axis)


# ---------------------------------------------------------------- reductions


@vjp(np.nansum)
def _(ans, a, axis=None, *, keepdims=False):
    d[a] = rt.unreduce(d[ans], a, axis, keepdims) * np.logical_not(np.isnan(a))


@vjp(np.nanmean)
def _(ans, a, axis=None, *, keepdims=False):
    d[a] = (rt.unreduce(d[ans], a, axis, keepdims) * np.logical_not(np.isnan(a))
            / np.sum(np.logical_not(np.isnan(a)), axis=axis, keepdims=True))


@vjp(np.nanmax, np.nanmin)
def _(ans, a, axis=None, *, keepdims=False):
    d[a] = rt.unreduce(d[ans], a, axis, keepdims) * rt.nan_extremum_mask(a, ans, axis, keepdims)


@vjp(np.ptp)
def _(ans, a, axis=None, *, keepdims=False):
    d[a] = rt.unreduce(d[ans], a, axis, keepdims) * (
        rt.extremum_mask(a, rt.amax(a, axis, keepdims), axis, keepdims)
        - rt.extremum_mask(a, rt.amin(a, axis, keepdims), axis, keepdims))


@vjp(np.median)
def _(ans, a, axis=None, *, keepdims=False):
    d[a] = rt.quantile_adjoint(d[ans], a, 0.5, axis, "linear", keepdims)


@vjp(np.quantile)
def _(ans, a, q, axis=None, *, method="linear", keepdims=False):
    d[a] = rt.quantile_adjoint(d[ans], a, q, axis, method, keepdims)
    d[q] = rt.quantile_q_adjoint(d[ans], a, q, axis, keepdims, False)


@vjp(np.percentile)
def _(ans, a, q, axis=None, *, method="linear", keepdims=False):
    d[a] = rt.quantile_adjoint(d[ans], a, q / 100.0, axis, method, keepdims)
    d[q] = rt.quantile_q_adjoint(d[ans], a, q / 100.0, axis, keepdims, False) / 100.0


@vjp(np.average)
def _(ans, a, axis=None, weights=None, *, keepdims=False):
    d[a] = rt.average_adjoint(d[ans], ans, a, axis, weights, keepdims, 0)
    d[weights] = rt.average_adjoint(d[ans], ans, a, axis, weights, keepdims, 1)


@vjp(np.trapezoid)
def _(ans, y, x=None, dx=1.0, axis=-1):
    d[y] = rt.trapezoid_adjoint(d[ans], y, x, dx, axis, 0)
    d[x] = rt.trapezoid_adjoint(d[ans], y, x, dx, axis, 1)
    d[dx] = rt.trapezoid_adjoint(d[ans], y, x, dx, axis, 2)


# ---------------------------------------------------------------- products


@vjp(np.cross)
def _(ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    d[a] = rt.cross_adjoint(d[ans], a, b, axisa, axisb, axisc, axis, 0)
    d[b] = rt.cross_adjoint(d[ans], a, b, axisa, axisb, axisc, axis, 1)


@vjp(np.linalg.cross)
def _(ans, x1, x2, *, axis=-1):
    d[x1] = rt.cross_adjoint(d[ans], x1, x2, -1, -1, -1, axis, 0)
    d[x2] = rt.cross_adjoint(d[ans], x1, x2, -1, -1, -1, axis, 1)


@vjp(np.kron)
def _(ans, a, b):
    d[a] = rt.kron_adjoint(d[ans], a, b, 0)
    d[b] = rt.kron_adjoint(d[ans], a, b, 1)


@vjp(np.tensordot, np.linalg.tensordot)
def _(ans, a, b, axes=2):
    d[a] = rt.tensordot_adjoint(d[ans], a, b, axes, 0)
    d[b] = rt.tensordot_adjoint(d[ans], a, b, axes, 1)


@vjp(np.vecdot, np.linalg.vecdot)
def _(ans, x1, x2, *, axis=-1):
    d[x1] = rt.vecdot_adjoint(d[ans], x1, x2, axis, 0)
    d[x2] = rt.vecdot_adjoint(d[ans], x1, x2, axis, 1)


@vjp(np.matvec)
def _(ans, x1, x2):
    d[x1] = rt.matvec_adjoint(d[ans], x1, x2, 0)
    d[x2] = rt.matvec_adjoint(d[ans], x1, x2, 1)


@vjp(np.vecmat)
def _(ans, x1, x2):
    d[x1] = rt.matvec_adjoint(d[ans], np.swapaxes(x2, -1, -2), x1, 1)
    d[x2] = np.swapaxes(rt.matvec_adjoint(d[ans], np.swapaxes(x2, -1, -2), x1, 0), -1, -2)


@vjp(np.convolve)
def _(ans, a, v, mode="full"):
    d[a] = rt.convolve_adjoint(d[ans], a, v, mode, 0)
    d[v] = rt.convolve_adjoint(d[ans], a, v, mode, 1)


@vjp(np.correlate)
def _(ans, a, v, mode="valid"):
    d[a] = rt.correlate_adjoint(d[ans], a, v, mode, 0)
    d[v] = rt.correlate_adjoint(d[ans], a, v, mode, 1)


@vjp(np.vdot)
def _(ans, a, b):
    d[a] = rt.reshape_like(d[ans] * np.ravel(b), a)
    d[b] = rt.reshape_like(d[ans] * np.ravel(a), b)


# ---------------------------------------------------------------- diagonals and triangles


@vjp(np.trace)
def _(ans, a, offset=0, axis1=0, axis2=1):
    d[a] = rt.trace_adjoint(d[ans], a, offset, axis1, axis2)


@vjp(np.diagonal)
def _(ans, a, offset=0, axis1=0, axis2=1):
    d[a] = rt.diagonal_adjoint(d[ans], a, offset, axis1, axis2)


@vjp(np.diag)
def _(ans, v, k=0):
    d[v] = rt.diag_adjoint(d[ans], v, k)


@vjp(np.triu)
def _(ans, m, k=0):
    d[m] = rt.unbroadcast(np.triu(d[ans], k), m)


@vjp(np.tril)
def _(ans, m, k=0):
    d[m] = rt.unbroadcast(np.tril(d[ans], k), m)


# ---------------------------------------------------------------- copies and rearrangements


@vjp(np.take)
def _(ans, a, indices, axis=None):
    d[a] = rt.take_adjoint(d[ans], a, indices, axis)


@vjp(np.take_along_axis)
def _(ans, arr, indices, axis=-1):
    d[arr] = rt.take_along_axis_adjoint(d[ans], arr, indices, axis)


@vjp(np.split, np.array_split, tuple_result=True)
def _(ans, ary, indices_or_sections, axis=0):
    d[ary] = rt.split_adjoint(d[ans], ary, axis)


@vjp(np.repeat)
def _(ans, a, repeats, axis=None):
    d[a] = rt.repeat_adjoint(d[ans], a, repeats, axis)


@vjp(np.tile)
def _(ans, A, reps):
    d[A] = rt.tile_adjoint(d[ans], A, reps)


@vjp(np.diff)
def _(ans, a, n=1, axis=-1):
    d[a] = rt.diff_adjoint(d[ans], n, axis)


@vjp(np.gradient)
def _(ans, f, *varargs, axis=None, edge_order=1):
    d[f] = rt.gradient_adjoint(d[ans], f, varargs, axis, edge_order)
    d[varargs] = rt.gradient_spacing_adjoints(d[ans], ans, varargs, axis, np.ndim(f))


@vjp(np.moveaxis)
def _(ans, a, source, destination):
    d[a] = np.moveaxis(d[ans], destination, source)


@vjp(np.rollaxis)
def _(ans, a, axis, start=0):
    d[a] = rt.rollaxis_adjoint(d[ans], axis, start)


@vjp(np.roll)
def _(ans, a, shift, axis=None):
    d[a] = rt.roll_adjoint(d[ans], shift, axis)


@vjp(np.rot90)
def _(ans, m, k=1, axes=(0, 1)):
    d[m] = np.rot90(d[ans], -k, axes)


@vjp(np.flipud)
def _(ans, m):
    d[m] = np.flipud(d[ans])


@vjp(np.fliplr)
def _(ans, m):
    d[m] = np.fliplr(d[ans])


@vjp(np.pad)
def _(ans, array, pad_width, mode="constant"):
    d[array] = rt.pad_adjoint(d[ans], array, pad_width, mode)


@vjp(np.partition)
def _(ans, a, kth, axis=-1):
    d[a] = rt.permutation_adjoint(d[ans], a, ans, axis)


# ---------------------------------------------------------------- joining and choosing


@vjp(np.vstack, np.row_stack)
def _(ans, tup):
    d[tup] = rt.stacked_adjoints(d[ans], tup, "vstack")


@vjp(np.hstack)
def _(ans, tup):
    d[tup] = rt.stacked_adjoints(d[ans], tup, "hstack")


@vjp(np.column_stack)
def _(ans, tup):
    d[tup] = rt.stacked_adjoints(d[ans], tup, "column_stack")


@vjp(np.dstack)
def _(ans, tup):
    d[tup] = rt.stacked_adjoints(d[ans], tup, "dstack")


@vjp(np.append)
def _(ans, arr, values, axis=None):
    d[arr] = rt.append_adjoint(d[ans], arr, values, axis, 0)
    d[values] = rt.append_adjoint(d[ans], arr, values, axis, 1)


@vjp(np.select)
def _(ans, condlist, choicelist, default=0):
    d[choicelist] = rt.select_adjoints(d[ans], condlist, choicelist)
    d[default] = rt.select_default_adjoint(d[ans], condlist, default)


@vjp(prims.INDEX_R)
def _(ans, *items):
    d[items] = rt.index_trick_adjoints(d[ans], items, "r_")


@vjp(prims.INDEX_C)
def _(ans, *items):
    d[items] = rt.index_trick_adjoints(d[ans], items, "c_")
