"""Constants read from outside that have no literal form: a module-level list or tuple of
arrays (``np.select``'s conditions or choices).  The forward code reads them through the
argument that passes them in; the adjoint's rule templates must read them the same way
(issue 19, item 9: "[array(...), ...] has no literal form" under grad, jvp worked).
Each program by every first-order transform, against central differences."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import check_grad

GRID = np.linspace(-1.0, 1.0, 5)
CONDITIONS = [GRID > 0.5, GRID < -0.5]
CONDITIONS_TUPLE = (GRID > 0.5, GRID < -0.5)
CHOICES = [np.ones(5), 3.0 * np.ones(5)]


def listed_conditions(x):
    return np.sum(np.select(CONDITIONS, [x, 2 * x]) ** 2)


def tupled_conditions(x):
    return np.sum(np.select(CONDITIONS_TUPLE, [x, 2 * x], default=x) ** 2)


def listed_choices(x):
    return np.sum(np.select([x > 0.5, x < 0.2], CHOICES, default=x) ** 2)


def conditions_in_a_loop(x):
    total = 0.0
    for k in range(2):
        total = total + np.sum(np.select(CONDITIONS, [x * k, x * x], default=x))
    return total


PROGRAMS = [listed_conditions, tupled_conditions, listed_choices, conditions_in_a_loop]
X = np.array([0.1, 0.3, 0.45, 0.7, 0.9])


def _difference(f, x, v, eps=1e-6):
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


@pytest.mark.parametrize("f", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
def test_reverse_mode_reads_a_captured_list(f):
    check_grad(f, (X,))
    g = ms.grad(f)(X)
    np.testing.assert_allclose(ms.value_and_grad(f)(X)[1], g)
    np.testing.assert_allclose(ms.jacrev(f)(X), g)
    np.testing.assert_allclose(ms.vjp(f, X)[1](1.0)[0], g)


@pytest.mark.parametrize("f", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
def test_forward_mode_reads_a_captured_list(f):
    v = np.linspace(0.5, 1.5, 5)
    np.testing.assert_allclose(ms.jvp(f, (X,), (v,))[1], _difference(f, X, v), rtol=1e-6)
