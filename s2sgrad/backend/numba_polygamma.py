"""Numba versions of ``scipy.special.digamma`` (``psi``; its @overload is ``numba_special``'s
by-element one over ``digamma_scalar``) and ``polygamma(n, x)``: the
adjoint of ``gammaln`` (``digamma``), of ``digamma`` (``polygamma(1, x)``) and of
``polygamma(n, x)`` (``polygamma(n + 1, x)``), so a gradient or a Hessian through
``gammaln`` in a loop compiles (it ran as Python: "Numba does not support
scipy.special.digamma").  The same algorithms as scipy's (Cephes): ``digamma`` by
reflection for negative ``x``, the sum for integers up to 10, the recurrence into [1, 2]
and a rational approximation there, the asymptotic series above 10; ``polygamma(n, x) =
(-1)**(n + 1) * n! * zeta(n + 1, x)`` for ``n >= 1``, the Hurwitz zeta by Euler-Maclaurin
summation.  Equal to scipy's to about 1e-15 relative (``tests/test_numba_helpers.py``
checks 1e-12), with scipy's values at the poles (``inf``, ``nan``)."""
import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable
from scipy import special

_EULER = 0.5772156649015328606
_MACHEP = 1.11022302462515654042e-16
#: the asymptotic series of digamma in 1 / x**2: -B_2k / (2k) from k = 7 down to 1
_ASYMPTOTIC = np.array([8.33333333333333333333e-2, -2.10927960927960927961e-2,
                        7.57575757575757575758e-3, -4.16666666666666666667e-3,
                        3.96825396825396825397e-3, -8.33333333333333333333e-3,
                        8.33333333333333333333e-2])
#: digamma(x) = (x - root) * (Y + P(x - 1) / Q(x - 1)) on [1, 2] (Boost's approximation)
_P = np.array([-0.0020713321167745952, -0.045251321448739056, -0.28919126444774784,
               -0.65031853770896507, -0.32555031186804491, 0.25479851061131551])
_Q = np.array([-0.55789841321675513e-6, 0.0021284987017821144, 0.054151797245674225,
               0.43593529692665969, 1.4606242909763515, 2.0767117023730469, 1.0])
#: (2k)! / B_2k, the Euler-Maclaurin remainder's coefficients of the Hurwitz zeta
_ZETA_A = np.array([12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
                    -1.8924375803183791606e9, 7.47242496e10, -2.950130727918164224e12,
                    1.1646782814350067249e14, -4.5979787224074726105e15,
                    1.8152105401943546773e17, -7.1661652561756670113e18])


@register_jitable
def _horner(x, coefficients):
    value = coefficients[0]
    for c in coefficients[1:]:
        value = value * x + c
    return value


@register_jitable
def digamma_scalar(x):
    if math.isnan(x) or x == math.inf:
        return x
    if x == -math.inf:
        return math.nan
    if x == 0.0:
        return math.copysign(math.inf, -x)
    y = 0.0
    if x < 0.0:         # reflection: psi(x) = psi(1 - x) - pi / tan(pi x)
        r = x - math.trunc(x)
        if r == 0.0:
            return math.nan
        y = -math.pi / math.tan(math.pi * r)
        x = 1.0 - x
    if x <= 10.0 and x == math.floor(x):        # harmonic number minus Euler's constant
        for i in range(1, int(x)):
            y += 1.0 / i
        return y - _EULER
    if x < 1.0:
        y -= 1.0 / x
        x += 1.0
    elif x < 10.0:
        while x > 2.0:
            x -= 1.0
            y += 1.0 / x
    if x <= 2.0:
        g = x - 1569415565.0 / 1073741824.0
        g -= (381566830.0 / 1073741824.0) / 1073741824.0
        g -= 0.9016312093258695918615325266959189453125e-19
        r = _horner(x - 1.0, _P) / _horner(x - 1.0, _Q)
        return y + g * 0.99558162689208984 + g * r
    z = 1.0 / (x * x) if x < 1.0e17 else 0.0
    return y + math.log(x) - 0.5 / x - z * _horner(z, _ASYMPTOTIC)


@register_jitable
def _hurwitz_zeta(s, q):
    """sum over k >= 0 of (q + k)**-s, for s > 1 (an integer s for q < 0)."""
    if s == 1.0:
        return math.inf
    if s < 1.0 or math.isnan(q):
        return math.nan
    if math.isinf(q):
        return 0.0 if q > 0.0 else math.inf
    if q <= 0.0:
        if q == math.floor(q):
            return math.inf
        if s != math.floor(s):
            return math.nan
    if q > 1e8:
        return (1.0 / (s - 1.0) + 1.0 / (2.0 * q)) * q ** (1.0 - s)
    total = q ** -s
    a, b, i = q, 0.0, 0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = a ** -s
        total += b
        if abs(b / total) < _MACHEP:
            return total
    w = a
    total += b * w / (s - 1.0) - 0.5 * b
    a, k = 1.0, 0.0
    for j in range(12):
        a *= s + k
        b /= w
        t = a * b / _ZETA_A[j]
        total += t
        if abs(t / total) < _MACHEP:
            break
        k += 1.0
        a *= s + k
        b /= w
        k += 1.0
    return total


@register_jitable
def _polygamma_scalar(n, x):
    if n == 0:
        return digamma_scalar(x)
    sign = 1.0 if n % 2 == 1 else -1.0
    return sign * math.gamma(n + 1.0) * _hurwitz_zeta(n + 1.0, x)


def _is_array(x):
    return isinstance(x, types.Array) and isinstance(x.dtype, (types.Float, types.Integer))


@overload(special.polygamma)
def _polygamma(n, x):
    if not isinstance(n, types.Integer):
        return None
    if isinstance(x, types.Number):
        return lambda n, x: _polygamma_scalar(n, x)
    if _is_array(x):
        def impl(n, x):
            flat = x.ravel()
            out = np.empty(flat.size)
            for i in range(flat.size):
                out[i] = _polygamma_scalar(n, flat[i])
            return out.reshape(x.shape)
        return impl
    return None
