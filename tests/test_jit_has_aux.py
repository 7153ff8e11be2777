"""``s2sgrad.jit`` of a program calling ``grad(f, has_aux=True)`` or
``value_and_grad(f, has_aux=True)``: the gradient's code inlined and compiled with the
program (``api/nested.py``: ``gradient_code_inlined``), its result ``(gradients,
aux)`` / ``((value, *aux), gradients)`` as the gradient object gives it.  Before, the
gradient object was an argument compiled code cannot take: the whole program ran as
Python (saddle's held-out 'grad has_aux (final y as aux), jit': 10x the time of the
same program without the aux)."""
import numpy as np

import s2sgrad
from s2sgrad.testing import numerical_grad


def inner(x, start):
    y = start + 0.1 * np.cos(x * start)
    return np.sum(x * x * y), y, 2.0 * y


grad_aux = s2sgrad.grad(inner, 0, has_aux=True)
value_aux = s2sgrad.value_and_grad(inner, 0, has_aux=True)


def descend(x, start):
    for _ in range(4):
        g, (y, twice) = grad_aux(x, start)
        (v, y2, twice2), g2 = value_aux(x, start)
        x = x - 0.05 * (g + g2) + 0.01 * (y + twice + y2 + twice2) + 0.001 * v
    return x


COMPILED = s2sgrad.jit(descend)
X, START = np.array([0.4, -0.7, 1.1]), np.array([1.0, 0.5, -0.3])


def test_jit_of_has_aux_gradients_compiles_with_the_objects_results():
    got = COMPILED(X, START)
    assert COMPILED.backend == "numba", COMPILED.fallback_reason
    np.testing.assert_allclose(got, descend(X, START), rtol=1e-13)
    np.testing.assert_allclose(COMPILED(2 * X, START), descend(2 * X, START), rtol=1e-13)
    g, aux = grad_aux(X, START)
    np.testing.assert_allclose(g, numerical_grad(lambda x: inner(x, START)[0], (X,)),
                               rtol=1e-6, atol=1e-9)
