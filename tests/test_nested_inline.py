"""A gradient object called inside a differentiated function is inlined (issue 20).

Its generated code (the differentiable spelling) is lowered as a callee of the outer
function (``compiler/front/derivative_calls.py``), so the outer generated code holds its
statements: no Python call per use, one module that Numba compiles.  Checked here, on
GradBench's two nested evals (a particle pushed by the gradient of a potential whose
parameter is the outer variable, a saddle point found by ascent steps of an inner
gradient) and on inner gradients that broadcast and reduce:

- the generated code shows the inlining (the inner statements, no call of the rule);
- results equal the path through the custom rule (``api/inside.py``, forced here) and
  central differences, under both backends, in reverse and forward mode;
- the reverse rules of ``rt.unbroadcast`` / ``rt.unreduce`` (``rules/runtime_vjp.py``)
  that the inlined code needs, against central differences;
- ``grad(f)`` made in a Python loop is one object, built once.
"""
import inspect
import re

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import runtime as rt
from s2sgrad.api.reverse import GradFunction
from s2sgrad.testing import numerical_grad


def potential(p, w):
    return (1.0 / np.sqrt((p[0] - 10.0) ** 2 + (p[1] - (10.0 - w)) ** 2)
            + 1.0 / np.sqrt((p[0] - 10.0) ** 2 + p[1] ** 2))


FORCE = ms.grad(potential, 0)


def miss(w):
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    for _ in range(6):
        x = x + 0.1 * xdot
        xdot = xdot - 0.1 * FORCE(x, w)
    return x[0] ** 2


def payoff(x, y):
    return (x[0] ** 2 + y[0] ** 2) - (x[1] ** 2 + y[1] ** 2) + np.sum(x * y * y)


def saddle(x, y0):
    y = y0
    for _ in range(4):
        y = y + 0.1 * ms.grad(payoff, 1)(x, y)   # made inside: the same object each time
    return payoff(x, y)


def spread(u, c):
    # broadcasts (c is a column, u a row) and reductions over an axis: rt.unbroadcast
    # and rt.unreduce in the inner gradient's code
    return np.sum(np.tanh(u * c) ** 2, axis=0).sum() + np.mean(u * u) * np.sum(c)


def with_spread(u, c):
    g = ms.grad(spread, (0, 1))(u, c)
    return np.sum(g[0] * u) + np.sum(np.sin(g[1]))


U, C = np.array([0.3, -0.5, 0.8]), np.array([[0.7], [-0.2]])
X, Y0 = np.array([0.4, -0.3]), np.array([0.2, 0.5])
CASES = {
    "particle": (miss, (0.3,), 0),
    "saddle": (saddle, (X, Y0), 0),
    "broadcasts": (with_spread, (U, C), 1),
}


@pytest.fixture(params=["python", "numba"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


@pytest.mark.parametrize("name", list(CASES))
def test_inlined_equals_the_rule_and_differences(name, backend, monkeypatch):
    outer, args, position = CASES[name]
    want = numerical_grad(outer, args, position)
    inlined = ms.grad(outer, position)
    got = inlined(*args)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    if backend == "numba":
        assert inlined.backend == "numba"      # one module, compiled whole
    np.testing.assert_allclose(ms.jacfwd(outer, position)(*args), want, rtol=1e-6, atol=1e-8)
    if name == "broadcasts":
        return  # the rule's path takes a tuple of gradients of two shapes as one array
    # the path without inlining: the inner object's custom rule (a Python call per use)
    monkeypatch.setattr(GradFunction, "__s2sgrad_inline_call__", lambda self, types: None)
    ruled = GradFunction(outer, position, None, False, False, False)
    np.testing.assert_allclose(ruled(*args), got, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_generated_code_holds_the_inner_gradient(name):
    """The outer code has the inner gradient's statements and calls no rule."""
    outer, args, position = CASES[name]
    code = ms.show(ms.grad(outer, position), *args)
    # the inner code's lines: its adjoint in the outer forward sweep, commented with the
    # user's line it differentiates (not the cache file's)
    inner_function = {"particle": potential, "saddle": payoff, "broadcasts": spread}[name]
    forward = code.split("# sensitivity of the output")[0]
    lines, first = inspect.getsourcelines(inner_function)
    k, line = next((k, t) for k, t in enumerate(lines) if t.strip().startswith("return"))
    assert f"# grad of: {line.strip()[:24]}" in forward
    assert f"(test_nested_inline.py:{first + k})" in forward
    assert not re.search(r"_value_and_grad_[0-9a-f]+\.py", code)
    assert "hessian_times" not in code and "derivative(" not in code
    signature = code.split(f"def {outer.__name__}_value_and_grad(", 1)[1].split(")")[0]
    assert signature.count(",") == len(args) - 1       # no rule passed in as a value


def test_grad_made_in_a_python_loop_builds_once():
    made = [ms.grad(payoff, 1) for _ in range(3)]
    assert made[0] is made[1] is made[2]
    assert ms.grad(payoff, 0) is not made[0]            # other options: another object
    assert ms.value_and_grad(payoff, 1) is not made[0]


def _made_and_dropped():
    import weakref

    def square(x):
        return np.sum(x * x)
    gradient = ms.grad(square)
    gradient(np.ones(2))
    return weakref.ref(gradient), weakref.ref(square)


def test_kept_derivatives_go_with_their_function():
    """Kept beside the function (not in a table that their reference to it would keep
    alive): a function made and dropped in a loop takes its derivatives with it."""
    import functools
    import gc
    refs = _made_and_dropped()
    gc.collect()
    assert refs[0]() is None and refs[1]() is None

    @functools.wraps(payoff)      # copies payoff's __dict__: still its own derivatives
    def wrapped(x, y):
        return np.sum(x * y * y)
    x = np.array([0.3, -0.2])
    assert ms.grad(wrapped, 1) is not ms.grad(payoff, 1)
    np.testing.assert_allclose(ms.grad(wrapped, 1)(x, x), 2 * x * x)


@pytest.mark.parametrize("helper, args", [
    (lambda g: rt.unbroadcast(g, np.ones((2, 1))), (np.array([[0.3, -1.2, 0.4],
                                                              [0.9, 0.1, -0.5]]),)),
    (lambda g: rt.unbroadcast(g, 1.0), (np.array([0.3, -1.2]),)),
    (lambda g: rt.unbroadcast(g, np.ones(3)), (np.array(0.7),)),
    (lambda g: rt.unreduce(g, np.ones((2, 3)), 1, False), (np.array([0.3, -1.2]),)),
    (lambda g: rt.unreduce(g, np.ones((2, 3)), 0, True), (np.array([[0.3, -1.2, 0.5]]),)),
    (lambda g: rt.unreduce(g, np.ones((2, 3)), None, False), (np.array(0.4),)),
    (lambda g: rt.sum(g, 1, True), (np.array([[0.3, -1.2, 0.5], [0.1, 0.2, -0.6]]),)),
    (lambda g: rt.mean(g, 0, False), (np.array([[0.3, -1.2, 0.5], [0.1, 0.2, -0.6]]),)),
], ids=["sum to a column", "sum to a number", "number spread", "axis", "keepdims", "all",
        "rt.sum", "rt.mean"])
def test_reverse_rules_of_the_adjoint_helpers(helper, args):
    def f(g):
        out = helper(g)
        return np.sum(np.sin(out) * out)
    want = numerical_grad(f, args)
    np.testing.assert_allclose(ms.grad(f)(*args), want, rtol=1e-6, atol=1e-9)


def looped(x):
    s = x
    for _ in range(2):
        s = np.sin(s) * x
    return s


def test_a_derivative_of_a_derivative_runs_compiled(monkeypatch):
    """``grad(jacfwd(f))`` stacks the Jacobian's columns (a list) and slices them per
    input: Numba compiles it (``np.stack`` of a list along the last axis,
    ``backend/numba_lists.py``; contiguous columns to reshape), where it ran as Python."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    x = np.array([0.3, 0.5, -0.2])
    outer = ms.grad(ms.jacfwd(looped))
    got = outer(x)
    assert outer.forward.backend == "numba", outer.forward.fallback_reason
    jacobian = ms.jacfwd(looped)
    want = numerical_grad(jacobian, (x,))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_a_derivative_of_a_lambdas_hessian():
    """The wrapper of a lambda's gradient was named ``<lambda>_grad`` (a SyntaxError)."""
    x = np.array([0.3, -0.5])
    third = ms.jacfwd(ms.hessian(lambda t: np.sum(t ** 4)))(x)
    want = np.zeros((2, 2, 2))
    want[0, 0, 0], want[1, 1, 1] = 24 * x[0], 24 * x[1]
    np.testing.assert_allclose(third, want, rtol=1e-10, atol=1e-12)


def quartic(p, w):
    return np.sum(p ** 4) * w


INNER = ms.grad(payoff, 1)


def through_inner(x):
    return np.sum(INNER(x, x * 0.5) ** 2)


def test_an_inner_gradient_rebound_between_calls_is_seen(monkeypatch):
    """The inlined code is the object's as the outer build saw it: rebinding the global
    that names it (another gradient) or changing what its function reads is a change the
    outer derivative checks for (its guards), never a stale result."""
    import sys
    here = sys.modules[__name__]
    outer = ms.grad(through_inner)
    x = np.array([0.3, -0.6])
    first = outer(x)
    np.testing.assert_allclose(first, numerical_grad(through_inner, (x,)), rtol=1e-6)
    monkeypatch.setattr(here, "INNER", ms.grad(quartic, 0))
    again = outer(x)
    assert not np.allclose(again, first)
    np.testing.assert_allclose(again, numerical_grad(through_inner, (x,)), rtol=1e-6)
