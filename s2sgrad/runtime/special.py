"""Derivatives of ``scipy.special`` functions that the rule tables read at any order, as
``rt.<name>``: the spherical Bessel functions' (by their differential equation) and
``multigammaln``'s second derivative.  Plain numpy and scipy; the rules of
``rules/scipy_more.py`` and ``rules/jvp_linalg.py`` call them, and
``tests/test_second_order_rules.py`` checks them against differences of the gradients.
"""
import numpy as np
from scipy import special

__all__ = ["spherical_bessel_derivative", "multigammaln_curvature"]

_MODIFIED = ("spherical_in", "spherical_kn")


def spherical_bessel_derivative(name, n, z, order):
    """The ``order``-th derivative in ``z`` of ``scipy.special.<name>(n, z)``, ``name`` one
    of ``spherical_jn``, ``spherical_yn`` (``s = 1``), ``spherical_in`` or ``spherical_kn``
    (``s = -1``): scipy gives orders 0 and 1; the higher ones follow from ``z^2 y'' + 2 z
    y' + (s z^2 - n(n+1)) y = 0`` differentiated ``k`` times (Leibniz):
    ``z^2 y[k+2] = -((2k+2) z y[k+1] + (k(k+1) + s z^2 - c) y[k] + 2 s k z y[k-1]
    + s k(k-1) y[k-2])``."""
    fn = getattr(special, name)
    s = -1.0 if name in _MODIFIED else 1.0
    c = n * (n + 1.0)
    z = np.asarray(z, dtype=np.result_type(z, np.float64))
    ys = [fn(n, z), fn(n, z, derivative=True)]
    for k in range(0, int(order) - 1):
        prev = ys[k - 1] if k >= 1 else 0.0
        prev2 = ys[k - 2] if k >= 2 else 0.0
        ys.append(-((2 * k + 2) * z * ys[k + 1] + (k * (k + 1) + s * z * z - c) * ys[k]
                    + 2 * s * k * z * prev + s * k * (k - 1) * prev2) / (z * z))
    return ys[int(order)]


def multigammaln_curvature(a, d):
    """The second derivative of ``scipy.special.multigammaln(a, d)`` in ``a``: ``sum_j
    polygamma(1, a - j / 2)`` for ``j`` in ``0 .. d-1``."""
    a = np.asarray(a, dtype=float)
    return sum(special.polygamma(1, a - j / 2.0) for j in range(int(d)))
