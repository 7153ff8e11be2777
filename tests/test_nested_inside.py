"""Derivative objects called inside a function being differentiated (issue 19, item 6).

An inner ``grad(f, 1)`` with two arguments that depend on the outer variable was
refused ("the backward of f_grad returned 1 gradient for 2 inputs"); a jacfwd, jacrev
or hessian object inside got a gradient's rule (a wrong value) or was refused at
s2sgrad's own source; a transform written inside the function (``grad(f, 1)(x, y)``)
was read as user code; forward mode over any of them was refused.  Here: a saddle
point (``min_x max_y f``, the inner ascent by ``grad(f, 1)``) and a particle pushed by
the gradient of a potential whose parameter is the outer variable (GradBench's saddle
and particle), every kind of inner object, made outside and inside the function,
under reverse and forward mode, each against central differences; what is still
refused names the user's line and what to write.  The Python backend runs them.
"""
import functools

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.errors import DerivativeCompositionError


@pytest.fixture(autouse=True)
def _python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def _differences(fun, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (fun(x + e) - fun(x - e)) / (2 * eps)
    return g


def payoff(x, y):
    return np.sum(x * y) - 0.5 * np.sum(y * y) + np.sum(np.sin(x)) + 0.1 * np.sum(x * x * y)


ASCENT = ms.grad(payoff, 1)


def saddle_outside(x, y0):
    y = y0
    for _ in range(3):
        y = y + 0.5 * ASCENT(x, y)
    return payoff(x, y)


def saddle_inside(x, y0):
    y = y0
    for _ in range(3):
        y = y + 0.5 * ms.grad(payoff, 1)(x, y)
    return payoff(x, y)


def potential(p, w):
    d = p - w
    return 1.0 / np.sqrt(np.sum(d * d) + 0.5)


def particle(w):
    x = np.array([1.0, 0.5])
    v = np.array([0.0, 0.3])
    for _ in range(4):
        a = -ms.grad(potential)(x, w)
        v = v + 0.1 * a
        x = x + 0.1 * v
    return np.sum(x * x)


X, Y0, W = np.array([0.3, 0.7]), np.array([0.1, -0.2]), np.array([0.2, -0.1])


@pytest.mark.parametrize("saddle", [saddle_outside, saddle_inside], ids=["outside", "inside"])
def test_saddle_point_with_the_inner_gradient_of_two_dependent_arguments(saddle):
    want_x = _differences(lambda t: saddle(t, Y0), X)
    want_y = _differences(lambda t: saddle(X, t), Y0)
    gx, gy = ms.grad(saddle, (0, 1))(X, Y0)
    np.testing.assert_allclose(gx, want_x, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(gy, want_y, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ms.jacfwd(saddle)(X, Y0), want_x, rtol=1e-6, atol=1e-9)


def test_particle_pushed_by_the_gradient_of_a_potential_with_the_outer_parameter():
    want = _differences(particle, W)
    np.testing.assert_allclose(ms.grad(particle)(W), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(ms.jvp(particle, (W,), (np.ones(2),))[1], want.sum(),
                               rtol=1e-6)
    # another point and the same objects: nothing is kept from the first call
    other = np.array([-0.4, 0.6])
    np.testing.assert_allclose(ms.grad(particle)(other), _differences(particle, other),
                               rtol=1e-6, atol=1e-9)


def both_gradients(x, y):
    gx, gy = ms.grad(payoff, (0, 1))(x, y)
    return np.sum(gx * gy) + np.sum(gy ** 2)


def test_an_inner_gradient_of_two_positions_is_unpacked_and_differentiated():
    want = _differences(lambda t: both_gradients(t, Y0), X)
    np.testing.assert_allclose(ms.grad(both_gradients)(X, Y0), want, rtol=1e-6, atol=1e-9)


def cubic(u):
    return np.sum(u ** 3 * u[0]) + np.sum(np.sin(u))


def field(u):
    return np.sin(u) * u[0]


HESSIAN, JACREV, JACFWD = ms.hessian(cubic), ms.jacrev(field), ms.jacfwd(field)
GRAD_GRAD = ms.grad(ms.grad(cubic))


def with_hessian(x):
    return np.sum(HESSIAN(x) * x[1])


def with_jacrev(x):
    return np.sum(JACREV(x) ** 2)


def with_jacfwd(x):
    return np.sum(JACFWD(x) * x)


def with_grad_grad(x):
    return np.sum(GRAD_GRAD(x) ** 2)


def with_hessian_made_inside(x):
    return np.sum(ms.hessian(cubic)(x) * x[1])


def with_jacobian_of_a_jacobian(x):
    return np.sum(ms.jacfwd(ms.jacrev(field))(x) * x[0])


INSIDE = [with_hessian, with_jacrev, with_jacfwd, with_grad_grad, with_hessian_made_inside,
          with_jacobian_of_a_jacobian]


@pytest.mark.parametrize("outer", INSIDE, ids=[f.__name__ for f in INSIDE])
def test_every_kind_of_derivative_object_inside_gets_its_own_rule(outer):
    """A hessian or jacrev object inside once got a gradient's rule: a wrong value."""
    x = np.array([0.4, -0.7, 1.1])
    want = _differences(outer, x)
    np.testing.assert_allclose(ms.grad(outer)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ms.jacfwd(outer)(x), want, rtol=1e-6, atol=1e-8)


def reads_a_local_function(x, theta):
    def shifted(p):
        return p - theta
    return np.sum(ms.grad(lambda p: potential(shifted(p), theta))(x))


def jvp_inside(x):
    # a jvp inside is inlined (tests/test_forward_inside.py); of a tuple input, refused
    return ms.jvp(lambda p: cubic(p[0]), ((x,),), ((x,),))[1]


@pytest.mark.parametrize("outer, words", [
    (reads_a_local_function, ["test_nested_inside.py", "defined in it that reads another",
                              "grad(potential, 0)(x, theta)"]),
    (jvp_inside, ["test_nested_inside.py", "s2sgrad.jvp of a tuple", "jvp(lambda a, b"]),
])
def test_what_cannot_be_made_inside_is_refused_at_the_users_line(outer, words):
    with pytest.raises(DerivativeCompositionError) as info:
        ms.grad(outer)(X, W) if outer is reads_a_local_function else ms.grad(outer)(X)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


SECOND = [ms.hessian, lambda f: ms.jacfwd(ms.jacfwd(f)), lambda f: ms.jacfwd(ms.grad(f))]


@pytest.mark.parametrize("second", SECOND, ids=["hessian", "jacfwd(jacfwd)", "jacfwd(grad)"])
def test_a_second_derivative_over_an_inner_gradient_is_the_jacobian_of_the_gradient(second):
    """The inner gradient is inlined (``compiler/front/derivative_calls.py``): a second
    derivative of the function differentiates its code like the rest."""
    gradient = ms.grad(particle)
    want = np.stack([_differences(lambda t: gradient(t)[i], W) for i in range(2)])
    np.testing.assert_allclose(second(particle)(W), want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("second", SECOND, ids=["hessian", "jacfwd(jacfwd)", "jacfwd(grad)"])
def test_a_second_derivative_over_an_inner_object_is_refused(second):
    """Not built yet where the inner object keeps its rule (a jacrev: a Python call):
    refused, naming the object, never a cache file or a wrong value."""
    with pytest.raises(DerivativeCompositionError) as info:
        second(with_jacrev)(np.array([0.4, -0.7, 1.1]))
    assert "field_jacrev" in str(info.value)
    assert ".cache" not in str(info.value) and "s2sgrad/" not in str(info.value)


# A transform of a function written inside the one differentiated: a lambda, a local def
# and functools.partial (JAX's spellings: grad(lambda y: f(x, y))(y)) read the outer
# function's values; they are lifted to take them as arguments (front/lifting.py), so
# the outer derivative runs along them too.  Made before the loop, the local def reads
# ``x`` as it is at each call (``x`` changes in the loop), as Python's closure does.


def ascent_of_a_lambda(x, y0):
    y = y0
    for _ in range(3):
        y = y + 0.5 * ms.grad(lambda v: payoff(x, v))(y)
    return payoff(x, y)


def ascent_of_a_partial(x, y0):
    y = y0
    for _ in range(3):
        y = y + 0.5 * ms.grad(functools.partial(payoff, x))(y)
    return payoff(x, y)


def ascent_of_a_lambda_with_a_default(x, y0):
    y = y0
    for _ in range(3):
        y = y + 0.5 * ms.grad(lambda v, a=x: payoff(a, v))(y)
    return payoff(x, y)


def ascent_of_a_local_def(x, y0):
    def local_payoff(v):
        return payoff(x, v) + 0.25 * np.sum(v * y0)
    ascent = ms.grad(local_payoff)
    y = y0
    for _ in range(2):
        y = y + 0.5 * ascent(y)
        x = x * 1.5
    return payoff(x, y)


def pushed_by_a_keyword_partial(w, y0):
    p = y0
    for _ in range(3):
        p = p - 0.2 * ms.grad(functools.partial(potential, w=w))(p)
    return np.sum(p * p)


def ascent_of_a_local_def_outside(x, y0):
    y = y0
    for _ in range(2):
        y = y + 0.5 * (ASCENT(x, y) + 0.25 * y0)
        x = x * 1.5
    return payoff(x, y)


FORCE = ms.grad(potential, 0)


def pushed_outside(w, y0):
    p = y0
    for _ in range(3):
        p = p - 0.2 * FORCE(p, w)
    return np.sum(p * p)


#: each spelling and the same function with its inner gradient made at module level (the
#: reference: finite differences of it, run as Python; a partial is not a function
#: s2sgrad.grad reads when called outside)
LIFTED = {"lambda": (ascent_of_a_lambda, saddle_outside),
          "partial": (ascent_of_a_partial, saddle_outside),
          "default": (ascent_of_a_lambda_with_a_default, saddle_outside),
          "local def": (ascent_of_a_local_def, ascent_of_a_local_def_outside),
          "keyword partial": (pushed_by_a_keyword_partial, pushed_outside)}
OUTER = {"grad": lambda f: ms.grad(f, 0), "jacfwd": lambda f: ms.jacfwd(f, 0)}


#: (spelling, outer transform, points): every spelling under grad, two under jacfwd;
#: a second point shows nothing is kept from the first call's values
CASES = [("lambda", "grad", 2), ("partial", "grad", 1), ("default", "grad", 1),
         ("local def", "grad", 1),
         ("keyword partial", "grad", 2), ("lambda", "jacfwd", 1),
         ("keyword partial", "jacfwd", 1)]


@pytest.mark.parametrize("spelling, outer, points", CASES)
def test_a_transform_of_a_function_written_inside_is_differentiated_along_what_it_reads(
        spelling, outer, points):
    fn, reference = LIFTED[spelling]
    derivative = OUTER[outer](fn)
    y0 = np.array([0.3, -0.4])
    for x in [np.array([0.7, 1.1]), np.array([-0.5, 0.2])][:points]:
        want = _differences(lambda t: reference(t, y0), x)
        np.testing.assert_allclose(derivative(x, y0), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("spelling", ["lambda", "local def"])
def test_a_function_compiled_with_a_lifted_transform_gives_pythons_value(spelling):
    fn, reference = LIFTED[spelling]
    x, y0 = np.array([0.7, 1.1]), np.array([0.3, -0.4])
    assert ms.jit(fn)(x, y0) == pytest.approx(reference(x, y0), rel=1e-12)


def _rebindable_ascent():
    """A function whose lambda reads ``k`` from an enclosing function's closure, and a
    setter that rebinds ``k`` (nonlocal) after the derivative was built."""
    k = 1.0

    def ascent(x, y0):
        y = y0
        for _ in range(2):
            y = y + 0.5 * ms.grad(lambda v: k * payoff(x, v))(y)
        return payoff(x, y)

    def set_k(value):
        nonlocal k
        k = value
    return ascent, set_k


def scaled_outside(x, y0, k):
    y = y0
    for _ in range(2):
        y = y + 0.5 * k * ASCENT(x, y)
    return payoff(x, y)


def test_a_lifted_function_sees_the_enclosing_closure_rebound_after_the_first_call():
    ascent, set_k = _rebindable_ascent()
    gradient, compiled = ms.grad(ascent), ms.jit(ascent)
    x, y0 = np.array([0.7, 1.1]), np.array([0.3, -0.4])
    for k in (1.0, 2.0):
        set_k(k)
        want = _differences(lambda t: scaled_outside(t, y0, k), x)
        np.testing.assert_allclose(gradient(x, y0), want, rtol=1e-6, atol=1e-8)
        assert compiled(x, y0) == pytest.approx(scaled_outside(x, y0, k), rel=1e-12)
