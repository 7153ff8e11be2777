"""Outer products of arrays that are not differentiated are constants looked up by the
arrays' contents (``compiler/optimize/constants.py``, ``runtime/constants.py``).

GradBench llsq's held-out class spelling holds ``t`` and ``s`` on an instance and
computes ``self.t[:, None] ** np.arange(x.size)`` in its loss: 200x the eval's spelling,
whose ``t`` is made from a size and whose powers were computed once.  Here the powers of
a held array (an attribute, a global, an argument not differentiated) move into the
constants' function, keyed by the array's bytes: a change in place, another array, a
longer ``x`` are each seen; the same contents in another array are not computed again;
what the table keeps is never a view of the caller's array; a value of no more
dimensions than its arrays (``np.sign(s)``) stays in the gradient.
"""
import time

import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.testing import check_grad


@pytest.fixture(params=["auto", "numba"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


class Fit:
    def __init__(self, n):
        self.t = np.linspace(-1.0, 1.0, n)
        self.s = np.sign(self.t)

    def loss(self, x):
        A = self.t[:, np.newaxis] ** np.arange(x.size)
        r = A @ x - self.s
        return 0.5 * np.sum(np.square(r))


def expected(x, t, s):
    A = t[:, None] ** np.arange(x.size)
    return A.T @ (A @ x - s)


def _code(source):
    """The gradient function's statements, without the comments."""
    body = source[source.index("_value_and_grad("):source.index("# What the function above")]
    return "\n".join(line.split("#")[0] for line in body.splitlines())


def _table(g):
    return next(v for v in g._compiled.py_func.__globals__.values()
                if isinstance(v, rt.Constants))


def test_powers_of_a_held_array_are_looked_up_by_its_contents():
    fit = Fit(300)
    g = s2sgrad.grad(fit.loss)
    x = np.array([0.3, -0.2, 0.5, 0.1])
    for _ in range(3):
        np.testing.assert_allclose(g(x), expected(x, fit.t, fit.s), rtol=1e-12)
    source = g.source
    body = _code(source)
    assert "np.arange" not in body and "_constants(t, x.shape)" in body, source
    assert "t compared by contents" in source
    table = _table(g)
    assert table.computed == 1
    fit.t[3] = 0.25                                    # changed in place: seen
    np.testing.assert_allclose(g(x), expected(x, fit.t, fit.s), rtol=1e-12)
    fit.t = fit.t.copy()                               # the same contents: kept
    np.testing.assert_allclose(g(x), expected(x, fit.t, fit.s), rtol=1e-12)
    assert table.computed == 2
    fit.t = np.linspace(0.0, 2.0, 300)                 # another array: seen
    y = np.array([0.3, -0.2, 0.5, 0.1, 0.7])           # a longer x: seen
    np.testing.assert_allclose(g(y), expected(y, fit.t, fit.s), rtol=1e-12)
    assert table.computed == 3


def powers_of_an_argument(x, t):
    return np.sum((t[:, None] ** np.arange(x.shape[0]) @ x - np.sign(t)) ** 2)


def test_an_argument_not_differentiated_and_its_gradient(backend):
    rng = np.random.default_rng(3)
    x, t = rng.normal(size=5), rng.uniform(-1, 1, size=40)
    g = check_grad(powers_of_an_argument, (x, t), 0)
    check_grad(powers_of_an_argument, (x, t), (0, 1))     # t differentiated: not moved
    if backend == "numba":      # Numba compiles the gradient as written: no table
        return
    source = s2sgrad.show(g, x, t)
    body = _code(source)
    assert "np.arange" not in body and "np.sign(t)" in body, source
    g(x, t)
    t[0] = 0.5                                           # the caller's array, changed
    np.testing.assert_allclose(g(x, t), s2sgrad.grad(powers_of_an_argument, 0)(x, t.copy()))
    both = s2sgrad.show(s2sgrad.grad(powers_of_an_argument, (0, 1)), x, t)
    assert "compared by contents" not in both


def data_weighted(x, data):
    return np.sum(np.exp(data) * x) + np.sum(np.sign(data) @ x)


def test_a_value_no_wider_than_its_arrays_stays():
    x, data = np.ones(4), np.arange(4.0)
    source = s2sgrad.show(s2sgrad.grad(data_weighted, 0), x, data)
    assert "rt.Constants" not in source and "np.exp(data)" in source


def test_kept_values_are_never_views_of_the_callers_array():
    def slow_view(t):
        time.sleep(0.01)                    # worth a key: looked up
        return t[:, None],
    table = rt.Constants(slow_view)
    t = np.array([1.0, 2.0, 3.0])
    first, = table(t)
    t[0] = 9.0                             # the caller writes into its array
    assert first[0, 0] == 1.0 and not first.flags.writeable
    again, = table(np.array([1.0, 2.0, 3.0]))
    assert again[0, 0] == 1.0 and table.computed == 1      # those contents: kept


def test_a_key_that_costs_what_computing_does_is_not_made():
    table = rt.Constants(lambda t: (t[:3] * 2.0,))      # a key of t costs far more
    t = np.arange(100000.0)
    for k in range(3):
        t[0] = k
        np.testing.assert_array_equal(table(t)[0], t[:3] * 2.0)
    assert table.computed == 3 and not table.table and table.small == {((100000,),)}


def test_vmap_of_the_gradient_of_a_held_array():
    fit = Fit(50)
    xs = np.random.default_rng(4).normal(size=(3, 4))
    batched = s2sgrad.vmap(s2sgrad.grad(fit.loss))(xs)
    for x, got in zip(xs, batched):
        np.testing.assert_allclose(got, expected(x, fit.t, fit.s), rtol=1e-10)


def test_jit_of_the_gradient_and_second_derivatives_of_a_held_array():
    fit = Fit(40)
    x = np.array([0.3, -0.2, 0.5])
    jitted = s2sgrad.jit(s2sgrad.grad(fit.loss))
    np.testing.assert_allclose(jitted(x), expected(x, fit.t, fit.s), rtol=1e-12)
    fit.t[2] = 0.7                                     # seen through jit too
    np.testing.assert_allclose(jitted(x), expected(x, fit.t, fit.s), rtol=1e-12)
    A = fit.t[:, None] ** np.arange(3)
    np.testing.assert_allclose(s2sgrad.hessian(fit.loss)(x), A.T @ A, rtol=1e-10)
    np.testing.assert_allclose(s2sgrad.jacfwd(s2sgrad.grad(fit.loss))(x), A.T @ A,
                               rtol=1e-10)
