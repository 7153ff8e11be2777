"""A fresh function object with the code of one built before reuses its build (issue 20).

``jvp(lambda x: g(x, points), ...)`` or ``jvp(grad(lambda x: cost(x, points)), ...)``
written inside a function makes a new function object at every call; its derivative
takes the builds of the last derivative of a function with the same code, globals,
closure contents and defaults (``api/derivative.py``'s ``derivative_for``), its guards
moved to the new function's closure cells (``api/guards.py``'s ``retargeted``).  Here:
each transform of a fresh lambda builds once over several calls (the count fails on
code that builds per function object), and stays exact when what it reads differs (a
closure value, a nonlocal rebound after a call, a global, a default).  Loop-free
functions only: no Numba compile.
"""
import sys

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.api.forward import ForwardFunction
from s2sgrad.api.higher import HvpFunction
from s2sgrad.api.reverse import GradFunction

HERE = sys.modules[__name__]
X = np.array([0.3, -0.7, 1.1])
ONES = np.ones(3)
SCALE = 2.0


def cost(x, p):
    return np.sum(np.sin(x * p) * x)


def cost_grad(x, p):           # d/dx of cost
    return np.cos(x * p) * p * x + np.sin(x * p)


def cost_hess_diag(x, p):      # d/dx of cost_grad, elementwise
    return -np.sin(x * p) * p * p * x + 2 * np.cos(x * p) * p


GRADIENT = ms.grad(cost, 0)


@pytest.fixture
def builds(monkeypatch):
    """The positions of each build the derivative classes run (recorded per class)."""
    made = []
    for cls in (GradFunction, ForwardFunction, HvpFunction):
        original = cls.build_code

        def counted(self, *args, _original=original, **kwargs):
            made.append((type(self).__name__, self.positions))
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(cls, "build_code", counted)
    return made


# each spelling, as a function writing a fresh lambda at every call, and what it computes
SPELLINGS = {
    "grad": (lambda x, p: ms.grad(lambda y: cost(y, p))(x), cost_grad),
    "jvp": (lambda x, p: ms.jvp(lambda y: cost(y, p) * y, (x,), (ONES,))[1],
            lambda x, p: np.sum(cost_grad(x, p)) * x + cost(x, p)),
    "jvp of grad": (lambda x, p: ms.jvp(ms.grad(lambda y: cost(y, p)), (x,), (ONES,))[1],
                    cost_hess_diag),
    "jvp of a gradient called": (
        lambda x, p: ms.jvp(lambda y: GRADIENT(y, p), (x,), (ONES,))[1], cost_hess_diag),
    "jacfwd": (lambda x, p: np.diag(ms.jacfwd(lambda y: np.sin(y * p) * y)(x)),
               lambda x, p: np.cos(x * p) * p * x + np.sin(x * p)),
    "vmap of grad": (lambda x, p: ms.vmap(ms.grad(lambda y: cost(y, p)))(
        np.stack([x, 2 * x])), lambda x, p: np.stack([cost_grad(x, p), cost_grad(2 * x, p)])),
}


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_fresh_lambda_per_call_builds_once(name, builds):
    run, expected = SPELLINGS[name]
    p = np.array([1.5, -0.5, 2.0])
    np.testing.assert_allclose(run(X, p), expected(X, p), rtol=1e-10)
    first = len(builds)
    for _ in range(3):
        np.testing.assert_allclose(run(X, p), expected(X, p), rtol=1e-10)
    assert len(builds) == first, builds[first:]
    # a closure value that differs (another array object): the new result
    q = np.array([0.5, 3.0, -1.0])
    np.testing.assert_allclose(run(X, q), expected(X, q), rtol=1e-10)
    np.testing.assert_allclose(run(X, p), expected(X, p), rtol=1e-10)


def smallest(x, p):             # a min: the gradient called inside keeps its rule
    return np.sum(np.min(np.stack([x * p, np.sin(x)]), axis=0) * x)


def test_a_zero_tangent_of_an_input_not_differentiated_is_left_out(builds):
    """``jvp(lambda y, q: g(y, q))`` along (ones, zeros): the gradient's tangent is the
    jvp of ``g`` along y only (``jvp(g, ...)``'s own code), never a pass along (y, q);
    a tangent of q that is not zero moves q too (checked at every call)."""
    p = np.array([0.5, 2.0, 0.3])      # x * p is the smaller everywhere: sum(x^2 p)
    g = ms.grad(smallest, 0)
    out = ms.jvp(lambda y, q: g(y, q), (X, p), (ONES, np.zeros(3)))[1]
    np.testing.assert_allclose(out, 2 * p, rtol=1e-10)
    assert all(b[1] == (0,) for b in builds), builds
    v = np.array([0.0, 1.0, 0.0])
    out = ms.jvp(lambda y, q: g(y, q), (X, p), (ONES, v))[1]
    np.testing.assert_allclose(out, 2 * p + 2 * X * v, rtol=1e-10)
    assert ("ForwardFunction", (0, 1)) in builds


def _closure(k):
    def rebind(value):
        nonlocal k
        k = value
    return (lambda y: np.sum(k * np.sin(y))), rebind


@pytest.mark.parametrize("how", ["grad", "jvp"])
def test_a_nonlocal_rebound_after_the_first_call_builds_again(how):
    def derivative(f):
        return ms.grad(f)(X) if how == "grad" else ms.jvp(f, (X,), (ONES,))[1]

    f1, rebind1 = _closure(2.0)
    expected = (lambda k: k * np.cos(X)) if how == "grad" else \
        (lambda k: np.sum(k * np.cos(X)))
    np.testing.assert_allclose(derivative(f1), expected(2.0))
    f2, rebind2 = _closure(2.0)          # same code and contents: takes f1's build
    np.testing.assert_allclose(derivative(f2), expected(2.0))
    rebind2(3.0)                         # f2's own cell: the build must see it
    np.testing.assert_allclose(derivative(f2), expected(3.0))
    np.testing.assert_allclose(derivative(f1), expected(2.0))
    rebind1(5.0)
    f3, _ = _closure(2.0)
    np.testing.assert_allclose(derivative(f3), expected(2.0))
    np.testing.assert_allclose(derivative(f1), expected(5.0))


def test_a_global_changed_between_fresh_lambdas_builds_again():
    def gradient():
        return ms.grad(lambda y: np.sum(SCALE * np.sin(y)))(X)
    try:
        np.testing.assert_allclose(gradient(), 2.0 * np.cos(X))
        HERE.SCALE = 4.0
        np.testing.assert_allclose(gradient(), 4.0 * np.cos(X))
    finally:
        HERE.SCALE = 2.0
    np.testing.assert_allclose(gradient(), 2.0 * np.cos(X))


def test_defaults_that_differ_give_their_own_results():
    def gradient(k, w):
        return ms.grad(lambda y, k=k, w=w: np.sum(k * np.sin(y) * w))(X)
    w = np.array([1.0, 2.0, 3.0])
    for k in (2.0, 3.0, 2.0):
        np.testing.assert_allclose(gradient(k, w), k * np.cos(X) * w)
    np.testing.assert_allclose(gradient(2.0, 2 * w), 4.0 * np.cos(X) * w)


def pairwise(x, points):        # a result of len(x) * len(points) numbers
    return np.sum(np.tanh(x[:, None] - points[None, :]) ** 2)


def pairwise_grad(x, points):
    t = np.tanh(x[:, None] - points[None, :])
    return np.sum(2 * t * (1 - t * t), axis=1)


def test_a_large_array_read_from_outside_counts_in_the_size_class():
    """A fresh lambda closing over a large array (``grad(lambda c: cost(c, points))``)
    gets the build ``grad(cost)`` called with the points as an argument gets: its large
    results written into kept arrays (``rt.Buffers``), not numpy's fresh ones."""
    points = np.linspace(-1.0, 1.0, 10_000)        # 80 kB: the large size class
    small = points[::1000].copy()
    x = np.array([0.1, -0.4, 0.8])
    as_argument = ms.grad(pairwise)
    as_argument(x, points)
    assert "rt.Buffers()" in as_argument.source
    for p, kept in ((points, True), (small, False), (points, True)):
        gradient = ms.grad(lambda c: pairwise(c, p))
        np.testing.assert_allclose(gradient(x), pairwise_grad(x, p), rtol=1e-10)
        assert ("rt.Buffers()" in gradient.source) is kept
        out = ms.jvp(ms.grad(lambda c: pairwise(c, p)), (x,), (ONES,))[1]
        t = np.tanh(x[:, None] - p[None, :])
        np.testing.assert_allclose(out, np.sum(2 * (1 - t * t) * (1 - 3 * t * t), axis=1),
                                   rtol=1e-10)


def test_a_fresh_lambda_takes_its_guard_check_without_compiling_it(monkeypatch):
    from s2sgrad.api import guards
    p = np.array([1.5, -0.5, 2.0])
    for _ in range(2):
        ms.jvp(lambda y: cost(y, p) * y, (X,), (ONES,))
    compiled = []
    monkeypatch.setattr(guards, "exec", lambda *a: compiled.append(a) or exec(*a),
                        raising=False)
    for _ in range(3):
        out = ms.jvp(lambda y: cost(y, p) * y, (X,), (ONES,))[1]
        np.testing.assert_allclose(out, np.sum(cost_grad(X, p)) * X + cost(X, p))
    assert compiled == []


def _nested(p, how):
    """A lambda made per call calling a function made per call: a lambda, or a gradient
    of one; and a way to rebind what the inner lambda reads."""
    def rebind(value):
        nonlocal p
        p = value
    inner = lambda y: cost(y, p)                              # noqa: E731
    if how == "grad object":
        g = ms.grad(inner)
        return (lambda y: np.sum(g(y) * y)), rebind
    return (lambda y: inner(y) * 2.0), rebind


NESTED = {   # what each spelling's jvp along ONES computes, by hand
    "lambda": lambda x, p: 2.0 * np.sum(cost_grad(x, p)),
    "grad object": lambda x, p: np.sum(cost_hess_diag(x, p) * x + cost_grad(x, p)),
}


@pytest.mark.parametrize("how", list(NESTED))
def test_a_lambda_holding_a_fresh_lambda_or_gradient_builds_once(how, builds):
    p = np.array([1.5, -0.5, 2.0])
    for _ in range(2):
        f, _ = _nested(p, how)
        np.testing.assert_allclose(ms.jvp(f, (X,), (ONES,))[1], NESTED[how](X, p),
                                   rtol=1e-10)
    first = len(builds)
    for _ in range(3):
        f, _ = _nested(p, how)
        np.testing.assert_allclose(ms.jvp(f, (X,), (ONES,))[1], NESTED[how](X, p),
                                   rtol=1e-10)
    assert len(builds) == first, builds[first:]
    # what the inner lambda reads: another array, then rebound after a call
    q = np.array([0.5, 3.0, -1.0])
    f, rebind = _nested(q, how)
    np.testing.assert_allclose(ms.jvp(f, (X,), (ONES,))[1], NESTED[how](X, q), rtol=1e-10)
    rebind(p)
    np.testing.assert_allclose(ms.jvp(f, (X,), (ONES,))[1], NESTED[how](X, p), rtol=1e-10)
    f2, rebind2 = _nested(q, how)        # takes f's build
    np.testing.assert_allclose(ms.jvp(f2, (X,), (ONES,))[1], NESTED[how](X, q),
                               rtol=1e-10)
    rebind2(p)
    np.testing.assert_allclose(ms.jvp(f2, (X,), (ONES,))[1], NESTED[how](X, p),
                               rtol=1e-10)
    np.testing.assert_allclose(ms.jvp(f, (X,), (ONES,))[1], NESTED[how](X, p), rtol=1e-10)


class _Wraps:
    """A callable whose ``__wrapped__`` is itself (a mock's attributes are like that)."""

    @property
    def __wrapped__(self):
        return self

    def __call__(self, y):
        return y


def test_what_the_size_class_reads_is_bounded():
    from s2sgrad.api.identity import reads_large_array
    wrapped = _Wraps()
    assert not reads_large_array(lambda y: wrapped(y) + cost(y, y))
    big = np.zeros(20_000)
    chain = lambda y: y                                        # noqa: E731
    for _ in range(50):                                         # 50 functions deep
        chain = (lambda f: lambda y: f(y))(chain)
    assert reads_large_array(lambda y: chain(y) * big[0])       # its own closure
    assert not reads_large_array(chain)


# ---------------------------------------------------------- a fresh array in the closure


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_fresh_lambda_over_a_fresh_array_builds_once(name, builds):
    """``grad(lambda v: f(x, v))(y)`` with a new ``x`` at each call (JAX's spelling of a
    step): the array is read at each call, so its type keys the build, not its ``id``;
    each call gives its own array's result, a shape or layout of another kind too."""
    run, expected = SPELLINGS[name]
    base = np.array([1.5, -0.5, 2.0])
    np.testing.assert_allclose(run(X, base.copy()), expected(X, base), rtol=1e-10)
    first = len(builds)
    for k in range(1, 4):
        p = base * k                       # a new array object, with new values
        np.testing.assert_allclose(run(X, p), expected(X, p), rtol=1e-10)
    if name != "jvp of grad":       # (its inner gradient's code made into a function
        assert len(builds) == first, builds[first:]     # holds the array: built again)
    strided = np.array([0.5, 9.0, 3.0, 9.0, -1.0, 9.0])[::2]    # another layout
    np.testing.assert_allclose(run(X, strided), expected(X, strided), rtol=1e-10)
    np.testing.assert_allclose(run(X, base * 5), expected(X, base * 5), rtol=1e-10)


def test_a_fresh_array_of_another_length_or_size_class_gives_its_result(builds):
    x = np.array([0.1, -0.4, 0.8])
    for n in (4, 7, 4, 10_000, 5):       # 80 kB: the large size class
        points = np.linspace(-1.0, 1.0, n)
        gradient = ms.grad(lambda c: pairwise(c, points))
        np.testing.assert_allclose(gradient(x), pairwise_grad(x, points), rtol=1e-10)
        assert ("rt.Buffers()" in gradient.source) is (n == 10_000)
        # a branch on its length: decided at each call, never by the first array's
        branchy = ms.grad(lambda c: np.sum(np.sin(c)) * points[0] if points.shape[0] > 4
                          else np.sum(np.cos(c)) * points[-1])
        np.testing.assert_allclose(branchy(x), np.cos(x) * points[0] if n > 4 else
                                   -np.sin(x) * points[-1], rtol=1e-10)


def test_an_array_the_build_holds_as_one_object_is_checked_by_identity():
    """Two closure names holding one array object are passed to the code as one value
    (its guard compares the object): a fresh lambda whose names hold two arrays builds
    again and gives their result, never the first array's."""
    def gradient(p, q):
        return ms.grad(lambda y: cost(y, p) + cost(y, q))(X)
    a, b = np.array([1.5, -0.5, 2.0]), np.array([0.5, 3.0, -1.0])
    np.testing.assert_allclose(gradient(a, a), 2 * cost_grad(X, a), rtol=1e-10)
    np.testing.assert_allclose(gradient(a.copy(), b), cost_grad(X, a) + cost_grad(X, b),
                               rtol=1e-10)
    np.testing.assert_allclose(gradient(b, b.copy()), 2 * cost_grad(X, b), rtol=1e-10)


@pytest.mark.parametrize("how", list(NESTED))
def test_a_lambda_holding_a_fresh_lambda_over_a_fresh_array_builds_once(how, builds):
    base = np.array([1.5, -0.5, 2.0])
    for k in (1, 2):
        f, _ = _nested(base * k, how)
        np.testing.assert_allclose(ms.jvp(f, (X,), (ONES,))[1], NESTED[how](X, base * k),
                                   rtol=1e-10)
    first = len(builds)
    for k in (3, 4, 5):
        f, rebind = _nested(base * k, how)
        np.testing.assert_allclose(ms.jvp(f, (X,), (ONES,))[1], NESTED[how](X, base * k),
                                   rtol=1e-10)
    if how == "lambda":        # (a gradient object's code inlined holds its arrays)
        assert len(builds) == first, builds[first:]
    rebind(base * 7)                        # the inner lambda's own cell, after a call
    np.testing.assert_allclose(ms.jvp(f, (X,), (ONES,))[1], NESTED[how](X, base * 7),
                               rtol=1e-10)


class _Model:
    def __init__(self):
        self.scale = 2.0

    def loss(self, x):
        return np.sum(np.sin(x) * self.scale)


def _jvp_of_grad_of_a_method():
    import weakref
    model = _Model()
    gradient = ms.grad(model.loss)
    ms.jvp(gradient, (X,), (ONES,))
    return weakref.ref(model), weakref.ref(gradient)


def test_a_derivative_of_a_gradient_object_goes_with_it(monkeypatch):
    """jvp(grad(obj.method)) keeps its forward object on the gradient object: kept in a
    weak-keyed table beside it, the forward object (which holds the gradient) kept the
    gradient, and its instance, alive for ever, one entry per fresh grad(lambda)."""
    import gc
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    model, gradient = _jvp_of_grad_of_a_method()
    gc.collect()
    assert gradient() is None and model() is None
