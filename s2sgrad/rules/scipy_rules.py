"""Rules for ``scipy.special``: the generated module imports ``from scipy import special``
and calls what the templates name (``special.digamma``...)."""
import numpy as np
from scipy import special

from ..compiler.syntax.imports import search_module
from .registry import d, vjp
from .. import runtime as rt

search_module("scipy.special")   # its ufuncs do not say which module they live in


@vjp(special.gammaln)
def _(ans, x):
    d[x] = d[ans] * special.digamma(x)


@vjp(special.gamma)
def _(ans, x):
    d[x] = d[ans] * ans * special.digamma(x)


@vjp(special.digamma)
def _(ans, x):
    d[x] = d[ans] * special.polygamma(1, x)


@vjp(special.polygamma)
def _(ans, n, x):
    d[x] = d[ans] * special.polygamma(n + 1, x)


@vjp(special.erf)
def _(ans, x):
    d[x] = d[ans] * (2.0 / np.sqrt(np.pi)) * np.exp(-x * x)


@vjp(special.erfc)
def _(ans, x):
    d[x] = -d[ans] * (2.0 / np.sqrt(np.pi)) * np.exp(-x * x)


@vjp(special.erfinv)
def _(ans, y):
    d[y] = d[ans] * (np.sqrt(np.pi) / 2.0) * np.exp(ans * ans)


@vjp(special.ndtr)
def _(ans, x):
    d[x] = d[ans] * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)


@vjp(special.log_ndtr)
def _(ans, x):
    d[x] = d[ans] * np.exp(-0.5 * x * x - ans) / np.sqrt(2.0 * np.pi)


@vjp(special.expit)
def _(ans, x):
    d[x] = d[ans] * ans * (1.0 - ans)


@vjp(special.log_expit)
def _(ans, x):
    d[x] = d[ans] * special.expit(-x)


@vjp(special.logit)
def _(ans, x):
    d[x] = d[ans] / (x * (1.0 - x))


@vjp(special.xlogy)
def _(ans, x, y):
    d[x] = rt.unbroadcast(d[ans] * np.log(y), x)
    d[y] = rt.unbroadcast(d[ans] * x / y, y)


@vjp(special.xlog1py)
def _(ans, x, y):
    d[x] = rt.unbroadcast(d[ans] * np.log1p(y), x)
    d[y] = rt.unbroadcast(d[ans] * x / (1.0 + y), y)


@vjp(special.logsumexp)
def _(ans, a, axis=None, b=None, keepdims=False):
    d[a] = rt.logsumexp_adjoint(d[ans], ans, a, axis, b, keepdims, 0)
    d[b] = rt.logsumexp_adjoint(d[ans], ans, a, axis, b, keepdims, 1)


@vjp(special.softmax)
def _(ans, x, axis=None):
    d[x] = ans * (d[ans] - rt.sum(d[ans] * ans, axis, True))


@vjp(special.log_softmax)
def _(ans, x, axis=None):
    d[x] = d[ans] - np.exp(ans) * rt.sum(d[ans], axis, True)
