"""More ``scipy.special`` rules: exponentials and logarithms, error functions, gamma and
beta families, Bessel functions, elliptic integrals, orthogonal polynomials, losses.

Derivatives are the standard identities (DLMF); a parameter with no closed-form
derivative (a Bessel function's order, ``a`` of ``gammainc``) is listed in ``refuse``:
differentiating through it is refused with MissingRuleError, never a zero.
"""
import numpy as np
from scipy import special

from .registry import d, nondifferentiable, vjp
from .. import runtime as rt

# ---------------------------------------------------------------- exponentials, logarithms


@vjp(special.exp2)
def _(ans, x):
    d[x] = d[ans] * ans * np.log(2.0)


@vjp(special.exp10)
def _(ans, x):
    d[x] = d[ans] * ans * np.log(10.0)


@vjp(special.expm1)
def _(ans, x):
    d[x] = d[ans] * (ans + 1.0)


@vjp(special.log1p)
def _(ans, x):
    d[x] = d[ans] / (1.0 + x)


@vjp(special.cbrt)
def _(ans, x):
    d[x] = d[ans] / (3.0 * ans * ans)


@vjp(special.cosm1)
def _(ans, x):
    d[x] = -d[ans] * np.sin(x)


@vjp(special.exprel)
def _(ans, x):
    d[x] = d[ans] * np.where(x == 0, 0.5, (np.exp(x) * (x - 1.0) + 1.0)
                             / np.where(x == 0, 1.0, x * x))


@vjp(special.softplus)
def _(ans, x):
    d[x] = d[ans] * special.expit(x)


@vjp(special.powm1)
def _(ans, x, y):
    d[x] = rt.unbroadcast(d[ans] * y * np.power(x, y - 1.0), x)
    d[y] = rt.unbroadcast(d[ans] * (ans + 1.0) * np.log(x), y)


@vjp(special.boxcox)
def _(ans, x, lmbda):
    d[x] = rt.unbroadcast(d[ans] * np.power(x, lmbda - 1.0), x)
    d[lmbda] = rt.unbroadcast(d[ans] * np.where(
        lmbda == 0, np.log(x) ** 2 / 2.0,
        (np.power(x, lmbda) * np.log(x) - ans) / np.where(lmbda == 0, 1.0, lmbda)), lmbda)


@vjp(special.boxcox1p)
def _(ans, x, lmbda):
    d[x] = rt.unbroadcast(d[ans] * np.power(1.0 + x, lmbda - 1.0), x)
    d[lmbda] = rt.unbroadcast(d[ans] * np.where(
        lmbda == 0, np.log1p(x) ** 2 / 2.0,
        (np.power(1.0 + x, lmbda) * np.log1p(x) - ans) / np.where(lmbda == 0, 1.0, lmbda)),
        lmbda)


@vjp(special.entr)
def _(ans, x):
    d[x] = -d[ans] * (np.log(x) + 1.0)


@vjp(special.rel_entr)
def _(ans, x, y):
    d[x] = rt.unbroadcast(d[ans] * (np.log(x / y) + 1.0), x)
    d[y] = rt.unbroadcast(-d[ans] * x / y, y)


@vjp(special.kl_div)
def _(ans, x, y):
    d[x] = rt.unbroadcast(d[ans] * np.log(x / y), x)
    d[y] = rt.unbroadcast(d[ans] * (1.0 - x / y), y)


@vjp(special.huber)
def _(ans, delta, r):
    d[delta] = rt.unbroadcast(d[ans] * np.where(np.abs(r) <= delta, 0.0,
                                                np.abs(r) - delta), delta)
    d[r] = rt.unbroadcast(d[ans] * np.where(np.abs(r) <= delta, r, delta * np.sign(r)), r)


@vjp(special.pseudo_huber)
def _(ans, delta, r):
    root = np.sqrt(1.0 + (r / delta) ** 2)
    d[delta] = rt.unbroadcast(d[ans] * (2.0 * delta * (root - 1.0) - r * r / (delta * root)),
                              delta)
    d[r] = rt.unbroadcast(d[ans] * r / root, r)


@vjp(special.wrightomega)
def _(ans, z):
    d[z] = d[ans] * ans / (1.0 + ans)


@vjp(special.spence)
def _(ans, z):
    d[z] = d[ans] * np.where(z == 1, -1.0, np.log(z) / np.where(z == 1, 0.5, 1.0 - z))


# ---------------------------------------------------------------- trigonometry in degrees


@vjp(special.sindg)
def _(ans, x):
    d[x] = d[ans] * special.cosdg(x) * (np.pi / 180.0)


@vjp(special.cosdg)
def _(ans, x):
    d[x] = -d[ans] * special.sindg(x) * (np.pi / 180.0)


@vjp(special.tandg)
def _(ans, x):
    d[x] = d[ans] * (1.0 + ans * ans) * (np.pi / 180.0)


@vjp(special.cotdg)
def _(ans, x):
    d[x] = -d[ans] * (1.0 + ans * ans) * (np.pi / 180.0)


# ---------------------------------------------------------------- error functions


@vjp(special.erfcx)
def _(ans, x):
    d[x] = d[ans] * (2.0 * x * ans - 2.0 / np.sqrt(np.pi))


@vjp(special.erfi)
def _(ans, x):
    d[x] = d[ans] * (2.0 / np.sqrt(np.pi)) * np.exp(x * x)


@vjp(special.erfcinv)
def _(ans, y):
    d[y] = -d[ans] * (np.sqrt(np.pi) / 2.0) * np.exp(ans * ans)


@vjp(special.dawsn)
def _(ans, x):
    d[x] = d[ans] * (1.0 - 2.0 * x * ans)


@vjp(special.ndtri)
def _(ans, y):
    d[y] = d[ans] * np.sqrt(2.0 * np.pi) * np.exp(0.5 * ans * ans)


@vjp(special.ndtri_exp)
def _(ans, y):
    d[y] = d[ans] * np.sqrt(2.0 * np.pi) * np.exp(0.5 * ans * ans + y)


@vjp(special.owens_t)
def _(ans, h, a):
    d[h] = rt.unbroadcast(-d[ans] * np.exp(-0.5 * h * h) / np.sqrt(2.0 * np.pi) * 0.5
                          * special.erf(a * h / np.sqrt(2.0)), h)
    d[a] = rt.unbroadcast(d[ans] * np.exp(-0.5 * h * h * (1.0 + a * a))
                          / (2.0 * np.pi * (1.0 + a * a)), a)


@vjp(special.fresnel, tuple_result=True)
def _(ans, z):
    d[z] = (d[ans][0] * np.sin(0.5 * np.pi * z * z) + d[ans][1] * np.cos(0.5 * np.pi * z * z))


# ---------------------------------------------------------------- exponential integrals


@vjp(special.exp1)
def _(ans, x):
    d[x] = -d[ans] * np.exp(-x) / x


@vjp(special.expi)
def _(ans, x):
    d[x] = d[ans] * np.exp(x) / x


@vjp(special.expn)
def _(ans, n, x):
    d[x] = -d[ans] * special.expn(n - 1, x)


@vjp(special.sici, tuple_result=True)
def _(ans, x):
    d[x] = (d[ans][0] * np.sin(x) + d[ans][1] * np.cos(x)) / x


@vjp(special.shichi, tuple_result=True)
def _(ans, x):
    d[x] = (d[ans][0] * np.sinh(x) + d[ans][1] * np.cosh(x)) / x


# ---------------------------------------------------------------- gamma and beta families


@vjp(special.loggamma)
def _(ans, x):
    d[x] = d[ans] * special.digamma(x)


@vjp(special.rgamma)
def _(ans, x):
    d[x] = -d[ans] * ans * special.digamma(x)


@vjp(special.multigammaln)
def _(ans, a, dim):
    d[a] = rt.multigammaln_adjoint(d[ans], a, dim)


@vjp(special.beta)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans] * ans * (special.digamma(a) - special.digamma(a + b)), a)
    d[b] = rt.unbroadcast(d[ans] * ans * (special.digamma(b) - special.digamma(a + b)), b)


@vjp(special.betaln)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans] * (special.digamma(a) - special.digamma(a + b)), a)
    d[b] = rt.unbroadcast(d[ans] * (special.digamma(b) - special.digamma(a + b)), b)


@vjp(special.binom)
def _(ans, x, y):
    d[x] = rt.unbroadcast(d[ans] * ans * (special.digamma(x + 1.0)
                                          - special.digamma(x - y + 1.0)), x)
    d[y] = rt.unbroadcast(d[ans] * ans * (special.digamma(x - y + 1.0)
                                          - special.digamma(y + 1.0)), y)


@vjp(special.poch)
def _(ans, z, m):
    d[z] = rt.unbroadcast(d[ans] * ans * (special.digamma(z + m) - special.digamma(z)), z)
    d[m] = rt.unbroadcast(d[ans] * ans * special.digamma(z + m), m)


@vjp(special.gammainc, refuse=("a",))
def _(ans, a, x):
    d[x] = rt.unbroadcast(d[ans] * np.exp((a - 1.0) * np.log(x) - x - special.gammaln(a)), x)


@vjp(special.gammaincc, refuse=("a",))
def _(ans, a, x):
    d[x] = rt.unbroadcast(-d[ans] * np.exp((a - 1.0) * np.log(x) - x - special.gammaln(a)), x)


@vjp(special.gammaincinv, refuse=("a",))
def _(ans, a, y):
    d[y] = rt.unbroadcast(d[ans] * np.exp(ans - (a - 1.0) * np.log(ans) + special.gammaln(a)),
                          y)


@vjp(special.gammainccinv, refuse=("a",))
def _(ans, a, y):
    d[y] = rt.unbroadcast(-d[ans] * np.exp(ans - (a - 1.0) * np.log(ans)
                                           + special.gammaln(a)), y)


@vjp(special.zeta, refuse=("x",))
def _(ans, x, q):
    d[q] = rt.unbroadcast(-d[ans] * x * special.zeta(x + 1.0, q), q)


# ---------------------------------------------------------------- Bessel functions


@vjp(special.i0)
def _(ans, x):
    d[x] = d[ans] * special.i1(x)


@vjp(special.i1)
def _(ans, x):
    d[x] = d[ans] * (special.i0(x) - np.where(x == 0, 0.5, ans / np.where(x == 0, 1.0, x)))


@vjp(special.i0e)
def _(ans, x):
    d[x] = d[ans] * (special.i1e(x) - np.sign(x) * ans)


@vjp(special.i1e)
def _(ans, x):
    d[x] = d[ans] * (special.i0e(x) - np.sign(x) * ans
                     - np.where(x == 0, 0.5, ans / np.where(x == 0, 1.0, x)))


@vjp(special.j0)
def _(ans, x):
    d[x] = -d[ans] * special.j1(x)


@vjp(special.j1)
def _(ans, x):
    d[x] = d[ans] * (special.j0(x) - np.where(x == 0, 0.5, ans / np.where(x == 0, 1.0, x)))


@vjp(special.y0)
def _(ans, x):
    d[x] = -d[ans] * special.y1(x)


@vjp(special.y1)
def _(ans, x):
    d[x] = d[ans] * (special.y0(x) - ans / x)


@vjp(special.k0)
def _(ans, x):
    d[x] = -d[ans] * special.k1(x)


@vjp(special.k1)
def _(ans, x):
    d[x] = -d[ans] * (special.k0(x) + ans / x)


@vjp(special.k0e)
def _(ans, x):
    d[x] = d[ans] * (ans - special.k1e(x))


@vjp(special.k1e)
def _(ans, x):
    d[x] = d[ans] * (ans - special.k0e(x) - ans / x)


@vjp(special.jv, special.jn, refuse=("v",))
def _(ans, v, z):
    d[z] = rt.unbroadcast(d[ans] * 0.5 * (special.jv(v - 1.0, z) - special.jv(v + 1.0, z)), z)


@vjp(special.yv, special.yn, refuse=("v",))
def _(ans, v, z):
    d[z] = rt.unbroadcast(d[ans] * 0.5 * (special.yv(v - 1.0, z) - special.yv(v + 1.0, z)), z)


@vjp(special.iv, refuse=("v",))
def _(ans, v, z):
    d[z] = rt.unbroadcast(d[ans] * 0.5 * (special.iv(v - 1.0, z) + special.iv(v + 1.0, z)), z)


@vjp(special.kv, special.kn, refuse=("v",))
def _(ans, v, z):
    d[z] = rt.unbroadcast(-d[ans] * 0.5 * (special.kv(v - 1.0, z) + special.kv(v + 1.0, z)), z)


@vjp(special.spherical_jn)
def _(ans, n, z, derivative=False):
    d[z] = d[ans] * rt.spherical_bessel_derivative("spherical_jn", n, z,
                                                   1 + derivative)


@vjp(special.spherical_yn)
def _(ans, n, z, derivative=False):
    d[z] = d[ans] * rt.spherical_bessel_derivative("spherical_yn", n, z,
                                                   1 + derivative)


@vjp(special.spherical_in)
def _(ans, n, z, derivative=False):
    d[z] = d[ans] * rt.spherical_bessel_derivative("spherical_in", n, z,
                                                   1 + derivative)


@vjp(special.spherical_kn)
def _(ans, n, z, derivative=False):
    d[z] = d[ans] * rt.spherical_bessel_derivative("spherical_kn", n, z,
                                                   1 + derivative)


@vjp(special.airy, tuple_result=True)
def _(ans, z):
    d[z] = d[ans][0] * ans[1] + d[ans][1] * z * ans[0] + d[ans][2] * ans[3] \
        + d[ans][3] * z * ans[2]


# ---------------------------------------------------------------- elliptic integrals


@vjp(special.ellipk)
def _(ans, m):
    d[m] = d[ans] * (special.ellipe(m) - (1.0 - m) * ans) / (2.0 * m * (1.0 - m))


@vjp(special.ellipe)
def _(ans, m):
    d[m] = d[ans] * (ans - special.ellipk(m)) / (2.0 * m)


# ---------------------------------------------------------------- orthogonal polynomials


@vjp(special.eval_hermite)
def _(ans, n, x):
    d[x] = rt.unbroadcast(d[ans] * 2.0 * n * special.eval_hermite(np.maximum(n - 1, 0), x), x)


@vjp(special.eval_hermitenorm)
def _(ans, n, x):
    d[x] = rt.unbroadcast(d[ans] * n * special.eval_hermitenorm(np.maximum(n - 1, 0), x), x)


@vjp(special.eval_chebyt)
def _(ans, n, x):
    d[x] = rt.unbroadcast(d[ans] * n * special.eval_chebyu(n - 1, x), x)


@vjp(special.eval_legendre)
def _(ans, n, x):
    d[x] = rt.unbroadcast(d[ans] * n * (x * ans - special.eval_legendre(n - 1, x))
                          / (x * x - 1.0), x)


@vjp(special.eval_laguerre)
def _(ans, n, x):
    d[x] = rt.unbroadcast(-d[ans] * special.eval_genlaguerre(n - 1, 1.0, x), x)


@vjp(special.eval_chebyu)
def _(ans, n, x):
    d[x] = rt.unbroadcast(d[ans] * ((n + 1.0) * special.eval_chebyt(n + 1, x) - x * ans)
                          / (x * x - 1.0), x)


@vjp(special.eval_genlaguerre, refuse=("alpha",))
def _(ans, n, alpha, x):
    d[x] = rt.unbroadcast(-d[ans] * special.eval_genlaguerre(n - 1, alpha + 1.0, x), x)


nondifferentiable(special.gammasgn, special.round,
                  reason="the sign of gamma, or rounding: piecewise constant, so the "
                         "derivative is zero almost everywhere")
