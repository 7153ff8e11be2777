"""Forward-mode (JVP) rules of ``np.linalg``'s factorisations and solvers that
``jvp_rules.py`` leaves out (``qr``, ``svd``, ``lstsq``, ``cond``, ``tensorinv``,
``tensorsolve``) and of ``scipy.special``'s functions that return tuples or take a
dimension (``airy``, ``fresnel``, ``sici``, ``shichi``, ``multigammaln``), and of the
derivatives their gradient code calls (``runtime/special.py``).  The linear
algebra templates call ``runtime/linalg_tangents.py``.
"""
import numpy as np
from scipy import special

from .. import runtime as rt
from .jvp_registry import jvp_rule, t


@jvp_rule(np.linalg.qr, tuple_result=True)
def _(ans, a):
    t[ans] = rt.qr_tangent(t[a], ans)


@jvp_rule(np.linalg.svd, tuple_result=True)
def _(ans, a, full_matrices=True):
    t[ans] = rt.svd_tangent(t[a], ans, a, full_matrices)


@jvp_rule(np.linalg.lstsq, tuple_result=True)
def _(ans, a, b, rcond=None):
    t[ans] = rt.lstsq_tangent(t[a], t[b], ans, a, b)


@jvp_rule(np.linalg.cond)
def _(ans, x, p=None):
    # a number per matrix: its gradient (the adjoint of ones) against the tangent
    t[ans] = rt.sum(rt.cond_adjoint(rt.ones_like(ans), ans, x, p) * t[x], (-2, -1), False)


@jvp_rule(np.linalg.tensorinv)
def _(ans, a, ind=2):
    t[ans] = rt.tensorinv_tangent(t[a], ans, a, ind)


@jvp_rule(np.linalg.tensorsolve)
def _(ans, a, b):
    t[ans] = -np.linalg.tensorsolve(a, np.tensordot(t[a], ans, np.ndim(ans)))
    t[ans] += np.linalg.tensorsolve(a, t[b])


@jvp_rule(special.airy, tuple_result=True)
def _(ans, z):
    t[ans] = (t[z] * ans[1], t[z] * z * ans[0], t[z] * ans[3], t[z] * z * ans[2])


@jvp_rule(special.fresnel, tuple_result=True)
def _(ans, z):
    t[ans] = (t[z] * np.sin(0.5 * np.pi * z * z), t[z] * np.cos(0.5 * np.pi * z * z))


@jvp_rule(special.sici, tuple_result=True)
def _(ans, x):
    t[ans] = (t[x] * np.sin(x) / x, t[x] * np.cos(x) / x)


@jvp_rule(special.shichi, tuple_result=True)
def _(ans, x):
    t[ans] = (t[x] * np.sinh(x) / x, t[x] * np.cosh(x) / x)


@jvp_rule(special.multigammaln)
def _(ans, a, dim):
    t[ans] = rt.multigammaln_adjoint(t[a], a, dim)


# the derivatives the gradient code of these calls (second order)


@jvp_rule(rt.multigammaln_adjoint)
def _(res, g, a, d):
    t[res] = rt.multigammaln_adjoint(t[g], a, d)
    t[res] += g * rt.multigammaln_curvature(a, d) * t[a]


@jvp_rule(rt.spherical_bessel_derivative)
def _(ans, name, n, z, order):
    t[ans] = t[z] * rt.spherical_bessel_derivative(name, n, z, order + 1)
