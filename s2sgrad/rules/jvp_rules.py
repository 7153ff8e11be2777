"""Forward-mode (JVP) rules: templates for the primitives whose tangent is not the
call itself, and the lists of linear and multilinear primitives.

Elementwise primitives (numpy ufuncs, ``math`` functions, Python's arithmetic
operators) need no entry: their JVP rule is derived from the VJP template
(``jvp_registry.derive_from_vjp``); the entries here replace a derived rule
where a hand-written one reads better (``x_dot * y + x * y_dot``).  A
reduction whose VJP helper gives each input element's partial derivative
(norms, logsumexp) reuses it: ``t[ans] = sum(vjp(ones) * t[x])`` over the
reduced axes.
"""
import math  # noqa: F401  (templates may read it)
import operator

import numpy as np
from scipy import special

from .. import primitives as prims
from .. import runtime as rt
from .jvp_registry import jvp_linear, jvp_multilinear, jvp_reduction, jvp_rule, t

# ---------------------------------------------------------------- arithmetic


@jvp_rule(operator.add, np.add)
def _(ans, a, b):
    t[ans] = rt.broadcast_like(t[a], ans)
    t[ans] += rt.broadcast_like(t[b], ans)


@jvp_rule(operator.sub, np.subtract)
def _(ans, a, b):
    t[ans] = rt.broadcast_like(t[a], ans)
    t[ans] += -rt.broadcast_like(t[b], ans)


@jvp_rule(operator.mul, np.multiply)
def _(ans, a, b):
    t[ans] = t[a] * b
    t[ans] += a * t[b]


@jvp_rule(operator.truediv, np.divide, np.true_divide)
def _(ans, a, b):
    t[ans] = t[a] / b
    t[ans] += -t[b] * ans / b


@jvp_rule(operator.pow, np.power)
def _(ans, a, b):
    t[ans] = t[a] * b * a ** (b - 1)
    t[ans] += t[b] * ans * np.log(np.where(a > 0, a, 1))


@jvp_rule(np.clip)
def _(ans, a, a_min, a_max):
    t[ans] = t[a] * ((a >= a_min) & (a <= a_max))
    t[ans] += rt.broadcast_like(t[a_min] * (a < a_min), ans)
    t[ans] += rt.broadcast_like(t[a_max] * (a > a_max), ans)


@jvp_rule(np.where, rt.where)
def _(ans, condition, x, y):
    t[ans] = np.where(condition, t[x], 0.0)
    t[ans] += np.where(condition, 0.0, t[y])


# ---------------------------------------------------------------- reductions


@jvp_rule(np.max, np.amax, np.min, np.amin)
def _(ans, a, axis=None, keepdims=False):
    t[ans] = rt.sum(t[a] * rt.extremum_mask(a, ans, axis, keepdims), axis, keepdims)


@jvp_rule(np.prod)
def _(ans, a, axis=None, keepdims=False):
    t[ans] = ans * rt.sum(t[a] / a, axis, keepdims)


@jvp_rule(np.var)
def _(ans, a, axis=None, ddof=0, keepdims=False):
    t[ans] = (rt.sum((a - rt.mean(a, axis, True)) * t[a], axis, keepdims) * 2
              / (rt.reduction_count(a, axis) - ddof))


@jvp_rule(np.std)
def _(ans, a, axis=None, ddof=0, keepdims=False):
    t[ans] = rt.divide_or_zero(rt.sum((a - rt.mean(a, axis, True)) * t[a], axis, keepdims)
                               / (rt.reduction_count(a, axis) - ddof), ans)


@jvp_rule(np.linalg.norm)
def _(ans, x, ord=None, axis=None, keepdims=False):
    t[ans] = rt.sum(rt.norm_adjoint(rt.ones_like(ans), ans, x, ord, axis, keepdims) * t[x],
                    axis, keepdims)


@jvp_rule(np.linalg.vector_norm)
def _(ans, x, axis=None, keepdims=False, ord=2):
    t[ans] = rt.sum(rt.vector_norm_adjoint(rt.ones_like(ans), ans, x, ord, axis, keepdims)
                    * t[x], axis, keepdims)


@jvp_rule(np.linalg.matrix_norm)
def _(ans, x, keepdims=False, ord="fro"):
    t[ans] = rt.sum(rt.matrix_norm_axes_adjoint(rt.ones_like(ans), x, ord, (-2, -1), keepdims)
                    * t[x], (-2, -1), keepdims)


@jvp_rule(special.logsumexp)
def _(ans, a, axis=None, b=None, keepdims=False):
    t[ans] = rt.sum(rt.logsumexp_adjoint(rt.ones_like(ans), ans, a, axis, b, keepdims, 0)
                    * t[a], axis, keepdims)
    t[ans] += rt.sum(np.exp(a - rt.unreduce(ans, a, axis, keepdims)) * t[b], axis, keepdims)


@jvp_rule(special.softmax)
def _(ans, x, axis=None):
    t[ans] = ans * (t[x] - rt.sum(ans * t[x], axis, True))


@jvp_rule(special.log_softmax)
def _(ans, x, axis=None):
    t[ans] = t[x] - rt.sum(np.exp(ans) * t[x], axis, True)


# ---------------------------------------------------------------- linear algebra


@jvp_rule(np.linalg.det)
def _(ans, a):
    t[ans] = ans * rt.sum(np.swapaxes(np.linalg.inv(a), -1, -2) * t[a], (-2, -1), False)


@jvp_rule(np.linalg.inv)
def _(ans, a):
    t[ans] = -(ans @ t[a] @ ans)


@jvp_rule(np.linalg.solve)
def _(ans, a, b):
    t[ans] = -np.linalg.solve(a, t[a] @ ans)
    t[ans] += np.linalg.solve(a, t[b])


@jvp_rule(np.linalg.slogdet, tuple_result=True)
def _(ans, a):
    t[ans] = (ans[0] * 0.0,
              rt.sum(np.swapaxes(np.linalg.inv(a), -1, -2) * t[a], (-2, -1), False))


@jvp_rule(np.linalg.cholesky)
def _(ans, a):
    t[ans] = rt.cholesky_tangent(t[a], ans)


@jvp_rule(np.linalg.eigh, tuple_result=True)
def _(ans, a):
    t[ans] = rt.eigh_tangent(t[a], ans)


@jvp_rule(np.linalg.eigvalsh)
def _(ans, a):
    t[ans] = rt.eigvalsh_tangent(t[a], a)


@jvp_rule(np.linalg.matrix_power)
def _(ans, a, n):
    t[ans] = rt.matrix_power_tangent(t[a], a, n)


@jvp_rule(np.linalg.pinv)
def _(ans, a):
    t[ans] = rt.pinv_tangent(t[a], ans, a)


@jvp_rule(np.linalg.svdvals)
def _(ans, x):
    t[ans] = rt.svdvals_tangent(t[x], x)


@jvp_rule(np.unwrap)
def _(ans, p, discont=None, axis=-1, *, period=2 * np.pi):
    t[ans] = t[p]


@jvp_rule(np.nancumsum)
def _(ans, a, axis=None):
    t[ans] = np.cumsum(np.where(np.isnan(a), 0.0, t[a]), axis)


@jvp_rule(np.interp)
def _(ans, x, xp, fp):
    t[ans] = rt.interp_adjoint(rt.ones_like(ans), x, xp, fp, 0) * t[x]
    t[ans] += np.interp(x, xp, t[fp])
    # ans = fp[i] + s (x - xp[i]) with slope s: moving xp[i], xp[i+1] moves it by -s times
    # their tangents interpolated at x (0 outside xp's range, where s is 0)
    t[ans] += -rt.interp_adjoint(rt.ones_like(ans), x, xp, fp, 0) * np.interp(x, xp, t[xp])


@jvp_rule(np.trapezoid)
def _(ans, y, x=None, dx=1.0, axis=-1):
    t[ans] = np.trapezoid(t[y], x, dx, axis)
    t[ans] += t[dx] * np.trapezoid(y, None, 1.0, axis)
    t[ans] += np.trapezoid(y, t[x], dx, axis)      # linear in the sample points x


@jvp_rule(np.divmod, tuple_result=True)
def _(ans, x1, x2):
    t[ans] = (ans[0] * 0.0, rt.broadcast_like(t[x1], ans[1])
              - rt.broadcast_like(t[x2] * ans[0], ans[1]))


@jvp_rule(np.modf, rt.modf, tuple_result=True)
def _(ans, x):
    t[ans] = (t[x], ans[1] * 0.0)


@jvp_rule(np.frexp, rt.frexp, tuple_result=True)
def _(ans, x):
    t[ans] = (t[x] * np.exp2(-ans[1]), ans[1] * 0)


@jvp_rule(np.polyval)
def _(ans, p, x):
    t[ans] = np.polyval(t[p], x)
    t[ans] += np.polyval(np.polyder(p), x) * t[x]


@jvp_rule(np.cumprod)
def _(ans, a, axis=None):
    t[ans] = rt.cumprod_tangent(t[a], a, axis)


@jvp_rule(np.sort)
def _(ans, a, axis=-1):
    t[ans] = np.take_along_axis(t[a], np.argsort(a, axis=axis), axis=axis)


# ---------------------------------------------------------------- linear and multilinear

jvp_linear(
    # copies, casts, the identity
    operator.neg, np.negative, operator.pos, np.positive, float, np.float64, np.float32,
    prims.ASTYPE, np.copy, np.ascontiguousarray, np.array, np.asarray,
    np.asanyarray, np.asfortranarray, prims.method("item"), np.real,
    # sums and fills
    sum, np.sum, np.mean, np.cumsum, np.full, np.full_like, np.linspace, np.trace,
    np.linalg.trace, np.diff,
    # shapes and layouts
    np.reshape, np.ravel, np.transpose, np.swapaxes, np.expand_dims, np.squeeze,
    np.atleast_1d, np.atleast_2d, np.atleast_3d, np.broadcast_to, np.stack, np.concatenate,
    np.vstack, np.hstack, np.column_stack, np.dstack, np.flip, np.flipud, np.fliplr,
    np.rot90, np.roll, np.moveaxis, np.rollaxis, np.diagonal, np.linalg.diagonal, np.diag,
    np.triu, np.tril, np.take, np.take_along_axis, np.repeat, np.tile,
    np.matrix_transpose, np.linalg.matrix_transpose, prims.INDEX_R, prims.INDEX_C,
    np.row_stack, np.append, np.pad, np.split, np.array_split, np.hsplit, np.vsplit,
    np.dsplit, np.unstack, np.block, np.insert, np.delete, np.compress, np.extract, np.choose,
    np.resize, np.ediff1d, np.diagflat, np.broadcast_arrays, np.meshgrid, np.require,
    np.real_if_close, np.asarray_chkfinite, np.cumulative_sum, np.polyadd, np.polysub,
    np.polyder, np.polyint, np.select,
)

jvp_multilinear(
    operator.matmul, np.matmul, np.linalg.matmul, np.dot, np.inner, np.outer,
    np.linalg.outer, np.vdot, np.tensordot, np.linalg.tensordot, np.kron, np.einsum,
    np.cross, np.linalg.cross, np.linalg.multi_dot, np.vecdot, np.linalg.vecdot,
    np.matvec, np.vecmat, np.polymul, np.convolve, np.correlate,
)

jvp_reduction(np.median, np.nanmedian, np.nanvar, np.nanstd, np.nanprod)
