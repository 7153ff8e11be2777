"""Every transform of every transform, to depth 3: the derivative of the right order, or a
clear refusal from a short list (issue 19, items 1 and 6).

``grad(grad(grad(s)))`` once returned s' (the front end followed the derivative object's
``__wrapped__`` back to the user's function); ``jacfwd(jacfwd(F))`` returned F's
gradient; then 154 of these 168 chains were refused.  Here every chain of grad, jacfwd,
jacrev and hessian to depth 3 (and jvp, value_and_grad, vjp and hvp over every chain of
depth 2) is applied to scalar functions whose derivatives of every order are known in
closed form, and each must equal the closed form; chains on a vector argument must
equal central differences of the next-lower chain.  The Python backend runs them (the
point is the composition, not Numba).  What is still refused is listed in
``test_what_is_still_refused_names_the_object_and_what_to_write``.
"""
import itertools

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.errors import (DerivativeCompositionError, GradientArgumentError,
                            OutputStructureError)

T = 0.4
ORDER = {"grad": 1, "jacfwd": 1, "jacrev": 1, "hessian": 2}
TRANSFORMS = {"grad": ms.grad, "jacfwd": ms.jacfwd, "jacrev": ms.jacrev, "hessian": ms.hessian}


def exp2(t):
    return np.exp(2.0 * t)


def sin3(t):
    return np.sin(3.0 * t)


#: the n-th derivative of each function, in closed form
DERIVATIVE = {exp2: lambda n, t: 2.0 ** n * np.exp(2.0 * t),
              sin3: lambda n, t: 3.0 ** n * np.sin(3.0 * t + n * np.pi / 2)}
CHAINS = [c for depth in (1, 2, 3) for c in itertools.product(TRANSFORMS, repeat=depth)]


@pytest.fixture(autouse=True)
def _python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def _apply(chain, f):
    for name in reversed(chain):           # the last named is applied first
        f = TRANSFORMS[name](f)
    return f


def _check(got, want):
    np.testing.assert_allclose(np.ravel(np.asarray(got, dtype=float)), np.ravel(want),
                               rtol=1e-7, atol=1e-9)


#: every chain on sin3 (each order's value differs: 3 ** n), the short ones on exp2 too
#: (the suite's time: each chain builds its own code)
CASES = [(c, sin3) for c in CHAINS] + [(c, exp2) for c in CHAINS if len(c) <= 2]


@pytest.mark.parametrize("chain, f", CASES, ids=[f"{f.__name__}-" + "(".join(c)
                                                 for c, f in CASES])
def test_a_chain_is_its_derivative(chain, f):
    want = DERIVATIVE[f](sum(ORDER[c] for c in chain), T)
    _check(_apply(chain, f)(T), want)


SHORT = [c for c in CHAINS if len(c) <= 2]


@pytest.mark.parametrize("chain", SHORT, ids=["(".join(c) for c in SHORT])
def test_jvp_vjp_hvp_and_value_and_grad_over_a_chain(chain):
    order = sum(ORDER[c] for c in chain)
    d = _apply(chain, sin3)
    _check(ms.jvp(d, (T,), (1.0,))[1], DERIVATIVE[sin3](order + 1, T))
    value, grad = ms.value_and_grad(d)(T)
    _check(value, DERIVATIVE[sin3](order, T))
    _check(grad, DERIVATIVE[sin3](order + 1, T))
    value, vjp_fn = ms.vjp(d, T)
    _check(vjp_fn(1.0)[0], DERIVATIVE[sin3](order + 1, T))
    _check(ms.hvp(d, T, 1.0), DERIVATIVE[sin3](order + 2, T))


def field(x):
    return np.sum(np.sin(x) * x[0]) + x[1] ** 3


X = np.array([0.3, -0.6])
VECTOR_CHAINS = [("jacfwd", "grad"), ("jacrev", "grad"), ("grad",), ("hessian",),
                 ("jacrev", "jacfwd", "grad"), ("jacfwd", "hessian"), ("jacrev", "hessian")]


def _differences(f, x, eps=1e-5):
    """Central differences of ``f`` at ``x``, stacked on the last axes (``out + in``)."""
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.parametrize("chain", VECTOR_CHAINS, ids=["(".join(c) for c in VECTOR_CHAINS])
def test_a_chain_on_a_vector_is_the_difference_of_the_lower_one(chain):
    lower = _apply(chain[1:], field) if len(chain) > 1 else field
    got = np.asarray(_apply(chain, field)(X))
    want = _differences(lower, X)
    if chain[0] == "hessian":
        want = _differences(lambda x: _differences(lower, x, 1e-4), X, 1e-4)
    if chain[0] == "grad" and np.ndim(lower(X)):     # grad sums a non-scalar output
        want = want.reshape((-1,) + X.shape).sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_value_and_grad_object_is_differentiated_as_the_pair_it_returns():
    """value_and_grad(f) is the function t -> (f(t), f'(t)): jacfwd gives both
    derivatives, grad the derivative of their sum (was refused)."""
    d1, d2 = 3.0 * np.cos(3.0 * T), -9.0 * np.sin(3.0 * T)
    _check(ms.jacfwd(ms.value_and_grad(sin3))(T), (d1, d2))
    _check(ms.grad(ms.value_and_grad(sin3))(T), d1 + d2)
    value, gradient = ms.value_and_grad(ms.value_and_grad(sin3))(T)
    _check(value, (np.sin(3.0 * T), d1))
    _check(gradient, d1 + d2)


@pytest.mark.parametrize("make, words", [
    (lambda: ms.jacfwd(ms.jacfwd(sin3, has_aux=True))(T), ["has_aux"]),
    (lambda: ms.grad(ms.grad(sin3), has_aux=True)(T), ["has_aux"]),
])
def test_what_is_still_refused_names_the_object_and_what_to_write(make, words):
    """The refusals left: has_aux on an object giving one output (a derivative of an
    object that also gives an aux composes: tests/test_has_aux_compositions.py), and
    options only a function has."""
    with pytest.raises((DerivativeCompositionError, GradientArgumentError,
                        OutputStructureError)) as info:
        make()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_a_decorator_that_does_more_than_call_is_differentiated_as_written():
    import functools

    def doubled(f):
        @functools.wraps(f)
        def wrapper(t):
            return 2.0 * f(t)
        return wrapper

    @doubled
    def square(t):
        return t * t
    assert ms.grad(square)(1.5) == pytest.approx(6.0)      # not 3.0: the wrapper counts


def test_a_chain_built_at_one_size_is_right_at_another():
    """The code is built per rank and dtype: the same third-order object at another size
    (and back) must not keep anything of its first call."""
    third = ms.jacrev(ms.jacfwd(ms.grad(field)))
    lower = ms.jacfwd(ms.grad(field))
    for x in (X, np.array([0.1, 0.5, -0.3]), X):
        np.testing.assert_allclose(third(x), _differences(lower, x), rtol=1e-5, atol=1e-6)


def mixed(x, y):
    return np.sum(np.sin(x) * y[0]) + np.sum(x ** 2) * np.sum(y ** 3)


def two_outputs(x):
    return np.sin(x), np.sum(x ** 3)


Y = np.array([0.7, 0.2, -0.4])


def test_chains_over_several_positions_and_outputs():
    """Positions in a tuple, derivatives w.r.t. one argument of another's, and a function
    of two outputs: each block against the Hessian or differences of the lower chain."""
    by_chain = ms.jacfwd(ms.jacrev(mixed, (0, 1)), (0, 1))(X, Y)
    hessian = ms.hessian(mixed, (0, 1))(X, Y)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(by_chain[i][j], hessian[i][j], rtol=1e-12)
    third = ms.jacfwd(ms.jacrev(ms.grad(mixed, 0), 1), 0)(X, Y)
    lower = ms.jacrev(ms.grad(mixed, 0), 1)
    np.testing.assert_allclose(third, _differences(lambda t: lower(t, Y), X), rtol=1e-6,
                               atol=1e-8)
    blocks = ms.jacfwd(ms.jacfwd(two_outputs))(X)
    for k, block in enumerate(blocks):
        np.testing.assert_allclose(
            block, _differences(lambda t: ms.jacfwd(two_outputs)(t)[k], X), rtol=1e-6,
            atol=1e-8)


def test_a_derivative_of_a_tuple_of_tuples_is_refused():
    with pytest.raises(DerivativeCompositionError, match="one position at a time"):
        ms.grad(ms.hessian(mixed, (0, 1)), 1)(X, Y)


def cumulative(x):
    return np.sum(np.cumprod(x) * x)


def test_a_missing_rule_in_generated_code_names_the_users_line():
    """jacfwd over jacfwd's code meets rt.cumprod_tangent, which has no forward rule yet:
    the error names this file's line, never the cache file of the generated code."""
    from s2sgrad.errors import UserCodeError
    with pytest.raises(UserCodeError) as info:
        ms.jacfwd(ms.jacfwd(cumulative))(X)
    assert "test_compositions.py" in str(info.value) and ".py:" in str(info.value)
    assert "cache" not in str(info.value)
