"""Forward-mode (JVP) rules of the rule table's adjoint helpers that depend smoothly on a
primal operand and that ``runtime_jvp.py`` leaves out: what second derivatives
(``hessian``, ``hvp``, ``grad(grad)``) of cumulative products, averages, the trapezoid
rule, ``np.gradient``, polynomials, interpolation, NaN-aware moments, covariances and
``np.linalg``'s factorisations, norms and solvers differentiate.

Each adjoint is linear in the incoming adjoint ``g``: its first term is the helper on
``g``'s tangent; the second is the part from the primal operands, computed by
``runtime/second_arrays.py`` and ``runtime/second_linalg.py`` (a helper bilinear in ``g``
and one operand reuses itself).  ``tests/test_second_order_rules.py`` checks each against
central differences of the gradient.
"""
from .. import runtime as rt
from .jvp_registry import jvp_rule, t


@jvp_rule(rt.cumprod_adjoint)
def _(res, g, a, axis):
    t[res] = rt.cumprod_adjoint(t[g], a, axis)
    t[res] += rt.cumprod_adjoint_tangent(g, a, axis, t[a])


@jvp_rule(rt.average_adjoint)
def _(res, g, ans, a, axis, weights, keepdims, wrt):
    t[res] = rt.average_adjoint(t[g], ans, a, axis, weights, keepdims, wrt)
    t[res] += rt.average_adjoint_tangent(g, ans, a, axis, weights, keepdims, wrt, t[ans], t[a],
                                         t[weights])


@jvp_rule(rt.trapezoid_adjoint)
def _(res, g, y, x, dx, axis, wrt):
    t[res] = rt.trapezoid_adjoint(t[g], y, x, dx, axis, wrt)
    t[res] += rt.trapezoid_adjoint_tangent(g, y, x, dx, axis, wrt, t[y], t[x], t[dx])


@jvp_rule(rt.gradient_adjoint)
def _(res, g, f, spacing, axis, edge_order):
    t[res] = rt.gradient_adjoint(t[g], f, spacing, axis, edge_order)
    t[res] += rt.gradient_adjoint_tangent(g, f, spacing, axis, edge_order, t[spacing])


@jvp_rule(rt.gradient_spacing_adjoints)
def _(res, g, ans, spacing, axis, ndim):
    # one term: the adjoints are a list (`+` would join two lists)
    t[res] = rt.gradient_spacing_adjoints_tangent(g, ans, spacing, axis, ndim, t[g], t[ans],
                                                  t[spacing])


@jvp_rule(rt.vander_adjoint)
def _(res, g, x, N, increasing):
    t[res] = rt.vander_adjoint(t[g], x, N, increasing)
    t[res] += rt.vander_adjoint_tangent(g, x, N, increasing, t[x])


@jvp_rule(rt.polyval_adjoint)
def _(res, g, p, x, wrt):
    t[res] = rt.polyval_adjoint(t[g], p, x, wrt)
    t[res] += rt.polyval_adjoint_tangent(g, p, x, wrt, t[p], t[x])


@jvp_rule(rt.interp_adjoint)
def _(res, g, x, xp, fp, wrt):
    t[res] = rt.interp_adjoint(t[g], x, xp, fp, wrt)
    t[res] += rt.interp_adjoint_tangent(g, x, xp, fp, wrt, t[x], t[xp], t[fp])


@jvp_rule(rt.nan_moments_adjoint)
def _(res, g, ans, a, axis, ddof, keepdims, std):
    t[res] = rt.nan_moments_adjoint(t[g], ans, a, axis, ddof, keepdims, std)
    t[res] += rt.nan_moments_adjoint_tangent(g, ans, a, axis, ddof, keepdims, std, t[ans],
                                             t[a])


@jvp_rule(rt.cov_adjoint)
def _(res, g, m, rowvar, bias, ddof):
    # (G + G^T) xc / f: linear in g and in m (the centring is linear)
    t[res] = rt.cov_adjoint(t[g], m, rowvar, bias, ddof)
    t[res] += rt.cov_adjoint(g, t[m], rowvar, bias, ddof)


@jvp_rule(rt.corrcoef_adjoint)
def _(res, g, ans, x, rowvar):
    t[res] = rt.corrcoef_adjoint(t[g], ans, x, rowvar)
    t[res] += rt.corrcoef_adjoint_tangent(g, ans, x, rowvar, t[ans], t[x])


# ---------------------------------------------------------------- np.linalg


@jvp_rule(rt.matrix_norm_axes_adjoint)
def _(res, g, x, ord, axis, keepdims):
    t[res] = rt.matrix_norm_axes_adjoint(t[g], x, ord, axis, keepdims)
    t[res] += rt.matrix_norm_axes_adjoint_tangent(g, x, ord, axis, keepdims, t[x])


@jvp_rule(rt.svdvals_adjoint)
def _(res, g, a):
    t[res] = rt.svdvals_adjoint(t[g], a)
    t[res] += rt.svdvals_adjoint_tangent(g, a, t[a])


@jvp_rule(rt.cond_adjoint)
def _(res, g, ans, x, p):
    t[res] = rt.cond_adjoint(t[g], ans, x, p)
    t[res] += rt.cond_adjoint_tangent(g, ans, x, p, t[ans], t[x])


@jvp_rule(rt.qr_adjoint)
def _(res, g, ans, a):
    t[res] = rt.qr_adjoint(t[g], ans, a)
    t[res] += rt.qr_adjoint_tangent(g, ans, a, t[ans])


@jvp_rule(rt.svd_adjoint)
def _(res, g, ans, a, full_matrices):
    t[res] = rt.svd_adjoint(t[g], ans, a, full_matrices)
    t[res] += rt.svd_adjoint_tangent(g, ans, a, full_matrices, t[ans])


@jvp_rule(rt.lstsq_adjoint)
def _(res, g, ans, a, b, wrt):
    t[res] = rt.lstsq_adjoint(t[g], ans, a, b, wrt)
    t[res] += rt.lstsq_adjoint_tangent(g, ans, a, b, wrt, t[ans], t[a], t[b])


@jvp_rule(rt.tensorinv_adjoint)
def _(res, g, ans, a, ind):
    t[res] = rt.tensorinv_adjoint(t[g], ans, a, ind)
    t[res] += rt.tensorinv_adjoint_tangent(g, ans, a, ind, t[ans])


@jvp_rule(rt.tensorsolve_adjoint)
def _(res, g, ans, a, b, wrt):
    t[res] = rt.tensorsolve_adjoint(t[g], ans, a, b, wrt)
    t[res] += rt.tensorsolve_adjoint_tangent(g, ans, a, b, wrt, t[ans], t[a])
