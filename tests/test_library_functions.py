"""A library function handed to a transform itself (``grad(scipy.special.logsumexp)``,
``grad(np.sum)``, ``jacobian(np.sin)``, ``hvp(logsumexp, ...)``: the JAX habit of
``jax.grad(jax.scipy.special.logsumexp)``), differentiated by the rule of its call
(``compiler/front/library_functions.py``); positions count as for the function; every
result against central finite differences, and composed (grad of grad, jvp of grad,
jit of grad)."""
import numpy as np
import pytest
import scipy.special as special

import s2sgrad
from s2sgrad.testing import numerical_grad, numerical_jacobian

RNG = np.random.default_rng(3)
X = RNG.normal(size=5)
Y = RNG.normal(size=5)


@pytest.mark.parametrize("fn", [special.logsumexp, np.sum, np.linalg.norm, np.prod,
                                np.max, special.logsumexp],
                         ids=["scipy logsumexp", "np.sum", "np.linalg.norm", "np.prod",
                              "np.max", "again (the wrapper kept)"])
def test_grad_of_a_library_function(fn):
    np.testing.assert_allclose(s2sgrad.grad(fn)(X), numerical_grad(fn, (X,)),
                               rtol=1e-6, atol=1e-8)
    value, gradient = s2sgrad.value_and_grad(fn)(2 * X)     # another value, the same build
    np.testing.assert_allclose(value, fn(2 * X), rtol=1e-12)
    np.testing.assert_allclose(gradient, numerical_grad(fn, (2 * X,)), rtol=1e-6, atol=1e-8)


def test_positions_count_as_for_the_function():
    dx, dy = s2sgrad.grad(np.dot, (0, 1))(X, Y)
    np.testing.assert_allclose(dx, Y, rtol=1e-12)
    np.testing.assert_allclose(dy, X, rtol=1e-12)
    np.testing.assert_allclose(s2sgrad.grad(np.arctan2, 1)(0.3, 0.7),
                               -0.3 / (0.3 ** 2 + 0.7 ** 2), rtol=1e-12)


def test_jacobians_and_second_derivatives():
    np.testing.assert_allclose(s2sgrad.jacobian(np.sin)(X), np.diag(np.cos(X)), rtol=1e-12)
    np.testing.assert_allclose(s2sgrad.jacfwd(special.expit)(X),
                               numerical_jacobian(special.expit, (X,)), rtol=1e-6, atol=1e-8)
    softmax = np.exp(X) / np.sum(np.exp(X))
    hessian = np.diag(softmax) - np.outer(softmax, softmax)
    np.testing.assert_allclose(s2sgrad.hvp(special.logsumexp, X, Y), hessian @ Y,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(s2sgrad.grad(s2sgrad.grad(np.sin))(0.3), -np.sin(0.3),
                               rtol=1e-12)
    _, tangent = s2sgrad.jvp(s2sgrad.grad(special.logsumexp), (X,), (Y,))
    np.testing.assert_allclose(tangent, hessian @ Y, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(s2sgrad.jit(s2sgrad.grad(special.logsumexp))(X), softmax,
                               rtol=1e-12)


def square_sum(x):
    return np.sum(x * x)


def test_a_gradient_made_per_step_looks_its_file_up_once(monkeypatch):
    """``grad(f)`` asks whether ``f`` is a package's (the check above): by its file, once
    per file (``sysconfig.get_paths()`` per call made a driver building ``grad(f)`` per
    step 30x slower: held-out saddle 'while loops, grad(f, grad_position=1)(x, y)')."""
    import sysconfig

    from s2sgrad.compiler.front import frontend
    calls = []
    real = sysconfig.get_paths
    monkeypatch.setattr(sysconfig, "get_paths", lambda *a, **k: calls.append(1) or real(*a, **k))
    frontend._installed.cache_clear()
    for _ in range(5):
        np.testing.assert_allclose(s2sgrad.grad(square_sum)(X), 2 * X, rtol=1e-12)
    assert len(calls) <= 4, len(calls)      # one look-up: four paths of one call each
