"""Numba versions of the elementwise ``scipy.special`` functions a model calls in a loop
(``expit`` for an LSTM's gates, ``log_expit``, ``logit``, ``erf``, ``erfc``, ``ndtr``,
``gammaln``; its adjoint's ``digamma`` and ``polygamma`` are in ``numba_polygamma``,
imported here), on a number or a float array, so the generated code that calls them (the
forward and the rules' adjoints) compiles: Numba has none of them, and a gradient
calling one ran as Python (``precheck.unresolved`` names it).  Each is numpy's or
``math``'s arithmetic for the function (``expit(x) = 1 / (1 + exp(-x))``), equal to
scipy's to a few units in the last place."""
import math

import numpy as np
from numba import types
from numba.extending import overload, register_jitable
from scipy import special

from .numba_polygamma import digamma_scalar  # (and polygamma's @overload)


def _numeric(x):
    return isinstance(x, types.Number) or \
        (isinstance(x, types.Array) and isinstance(x.dtype, (types.Float, types.Integer)))


def _elementwise(fn, formula):
    """``fn`` on numbers and arrays as ``formula``, an expression of numpy ufuncs."""
    jitted = register_jitable(formula)

    @overload(fn)
    def _typer(x):
        if _numeric(x):
            return lambda x: jitted(x)
        return None


def _by_element(fn, scalar):
    """``fn`` on numbers and arrays by ``scalar`` (a ``math`` function), element by element."""
    @overload(fn)
    def _typer(x):
        if isinstance(x, types.Number):
            return lambda x: scalar(x)
        if not _numeric(x):
            return None

        def impl(x):
            flat = x.ravel()
            out = np.empty(flat.size)
            for i in range(flat.size):
                out[i] = scalar(flat[i])
            return out.reshape(x.shape)
        return impl


_elementwise(special.expit, lambda x: 1.0 / (1.0 + np.exp(-x)))
_elementwise(special.log_expit, lambda x: np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x))))
_elementwise(special.logit, lambda x: np.log(x / (1.0 - x)))
_by_element(special.erf, math.erf)
_by_element(special.erfc, math.erfc)
_by_element(special.gammaln, math.lgamma)
_by_element(special.digamma, digamma_scalar)      # (special.psi is the same ufunc)


@register_jitable
def _ndtr(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


_by_element(special.ndtr, _ndtr)
