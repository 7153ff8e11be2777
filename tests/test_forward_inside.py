"""jvp, hvp and vjp called inside a function that is differentiated or jitted: inlined.

The JAX spellings: an hvp by reverse over forward (``grad(lambda x: jvp(f, (x,),
(v,))[1])``), forward over forward (``jvp`` of a ``jvp``), a ``vjp`` inside a loss, a
jit or a vmap of a function calling ``jvp``, a third order (``grad`` of ``jvp`` of
``grad``).  Each was refused (``s2sgrad.jvp called inside a function being
differentiated``); each is checked here against central differences in float64 of the
inner value (``jvp``/``hvp``/``vjp`` run outside, at first order) and against the
spellings that already worked (``hvp``, ``jvp(grad(f))``, ``hessian``).  Freshness: a
new tangent at each call (zero first), a global and a closure cell the inner function
reads changed after the first call.  Loop-free code runs as numpy (no compile); two
tests compile with Numba (a loop inside the inner function, a jit).
"""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.errors import DerivativeCompositionError, UnsupportedConstructError
from s2sgrad.testing import numerical_grad, numerical_jacobian

X = np.array([0.4, -0.7, 1.1])
V = np.array([0.3, -1.2, 0.5])
U = np.array([-0.8, 0.6, 0.9])
SCALE = 1.0     # read by ``f``: rebound by a test


def f(x):
    return SCALE * np.sum(np.sin(x) * x ** 2) + np.sum(np.exp(0.3 * x)) ** 2


def vector(x):
    return np.tanh(x) * x + np.sin(x[::-1])


def loop(x):
    total = 0.0
    for k in range(2):
        total = total + np.sin(x[k]) * x[k + 1] ** 2
    return total


def along_loop(x, v):
    return ms.jvp(loop, (x,), (v,))[1]


def along(x, v):
    """The directional derivative of ``f``: a jvp inside."""
    return ms.jvp(f, (x,), (v,))[1]


def outside(fn, x, v):
    """``fn``'s directional derivative at ``x`` along ``v``, by jvp called outside."""
    return ms.jvp(fn, (x,), (v,))[1]


#: one gradient object over every test (built once per argument signature)
ALONG = ms.grad(along)


def test_reverse_over_forward_is_the_hvp_for_each_tangent_in_turn():
    """A new tangent each call, an exactly zero one first: never the first call's."""
    for v in (np.zeros(3), V, -2.0 * V + 0.1, U):
        want = numerical_grad(lambda x: outside(f, x, v), [X])
        got = ALONG(X, v)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got, ms.hvp(f, X, v), rtol=1e-10, atol=1e-12)
    # and along the tangent: a jvp is linear in it, its gradient f's gradient
    np.testing.assert_allclose(ms.grad(along, 1)(X, V), ms.grad(f)(X), rtol=1e-10)


def test_the_inlined_code_names_the_users_lines_and_calls_no_jvp():
    ALONG(X, V)
    source = ALONG.source
    assert "test_forward_inside.py:" in source and "grad of:" in source
    assert "jvp(" not in source and ".cache" not in source and "_inside_" not in source


def test_a_global_and_a_closure_cell_changed_after_the_first_call(monkeypatch):
    assert abs(ALONG(X, V) - ms.hvp(f, X, V)).max() < 1e-12
    monkeypatch.setattr(__import__(__name__), "SCALE", 2.5)
    want = numerical_grad(lambda x: outside(f, x, V), [X])
    np.testing.assert_allclose(ALONG(X, V), want, rtol=1e-6, atol=1e-8)

    def factory():
        weights = np.array([1.0, 2.0, 3.0])

        def outer(x):
            return ms.jvp(lambda y: np.sum(weights * y ** 3), (x,), (V,))[1]

        def rebind(value):
            nonlocal weights
            weights = value
        return outer, rebind
    outer, rebind = factory()
    gradient = ms.grad(outer)
    for weights in (np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 4.0])):
        rebind(weights)
        np.testing.assert_allclose(gradient(X), 6 * weights * X * V, rtol=1e-12)


def test_forward_over_forward_and_a_second_derivative_of_a_jvp():
    inner = lambda x: ms.jvp(f, (x,), (V,))[1]      # noqa: E731 - the JAX spelling
    value, tangent = ms.jvp(inner, (X,), (U,))
    np.testing.assert_allclose(value, outside(f, X, V), rtol=1e-12)
    np.testing.assert_allclose(tangent, U @ ms.hvp(f, X, V), rtol=1e-10)
    # hessian of the jvp: f's third derivative along V
    want = numerical_jacobian(lambda x: ms.hvp(f, x, V), [X])
    np.testing.assert_allclose(ms.hessian(inner)(X), want, rtol=1e-6, atol=1e-8)
    # jacfwd of a vector function's jvp
    want = numerical_jacobian(lambda x: outside(vector, x, V), [X])
    got = ms.jacfwd(lambda x: ms.jvp(vector, (x,), (V,))[1])(X)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_third_order_grad_of_jvp_of_grad_and_of_hvp_inside():
    """grad of (jvp of grad(f)) . U, and of hvp(f) . U inside: the same third derivative."""
    want = numerical_grad(lambda x: U @ ms.hvp(f, x, V), [X])
    of_jvp = ms.grad(lambda x: U @ ms.jvp(ms.grad(f), (x,), (V,))[1])(X)
    of_hvp = ms.grad(lambda x: U @ ms.hvp(f, x, V))(X)
    np.testing.assert_allclose(of_jvp, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(of_hvp, of_jvp, rtol=1e-10, atol=1e-12)


def two(a, b):
    return np.sum(a ** 2 * np.sin(b)) + np.sum(a * b) ** 2


def test_several_inputs_and_a_tangent_that_is_differentiated_too():
    """jvp and hvp of two inputs (hvp's tuple, one per input), the tangent x itself
    (d/dx of grad f(x) . x is H x + grad f(x)), value_and_grad of it, has_aux."""
    def several(x):
        hv = ms.hvp(two, (x, 2.0 * x), (V, U))
        return ms.jvp(two, (x, np.cos(x)), (U, V))[1] + U @ hv[0] + V @ hv[1]
    # called as it is, ``several`` runs jvp and hvp outside any transform
    np.testing.assert_allclose(ms.grad(several)(X), numerical_grad(several, [X]),
                               rtol=1e-6, atol=1e-8)
    value, gradient = ms.value_and_grad(lambda x: ms.jvp(f, (x,), (x,))[1])(X)
    np.testing.assert_allclose(value, outside(f, X, X), rtol=1e-12)
    np.testing.assert_allclose(gradient, ms.hvp(f, X, X) + ms.grad(f)(X), rtol=1e-10)

    def with_aux(x):        # (out, tangent, aux), aux a tuple of two
        out, tangent, aux = ms.jvp(lambda y: (f(y), np.cos(y), 2.0 * y), (x,), (V,),
                                   has_aux=True)
        return out + tangent + aux[0] @ aux[1]
    np.testing.assert_allclose(ms.grad(with_aux)(X), numerical_grad(with_aux, [X]),
                               rtol=1e-6, atol=1e-8)


def g(w):
    return np.tanh(w) * np.array([2.0, 1.0, -0.5])


def vjp_loss(w, ct):
    y, pull = ms.vjp(g, w)
    return np.sum(pull(ct * y)[0] ** 2)


def test_a_vjp_inside_a_loss(monkeypatch):
    """A zero cotangent, then another; the references run as Python (vjp outside
    compiles its code with Numba)."""
    gradient = ms.grad(vjp_loss)
    for ct in (np.zeros(3), V):
        monkeypatch.setenv("S2SGRAD_BACKEND", "python")
        want = numerical_grad(lambda w: _vjp_loss_outside(w, ct), [X])
        monkeypatch.delenv("S2SGRAD_BACKEND")
        np.testing.assert_allclose(gradient(X, ct), want, rtol=1e-6, atol=1e-8)


def _vjp_loss_outside(w, ct):
    y, pull = ms.vjp(g, w)
    return np.sum(pull(ct * y)[0] ** 2)


def pair(w, s):
    return np.tanh(w) * s, np.sin(w) ** 2


def pair_loss(w):
    """A vjp of two inputs and two outputs, its pullback called twice (both spellings)."""
    (a, b), pull = ms.vjp(pair, w, 2.0 * w)
    gw, gs = pull((V * a, U))
    gw2, _ = pull(V, U * b)
    return np.sum(gw ** 2) + np.sum(gs * gw2)


def test_a_vjp_of_two_inputs_and_two_outputs_inside(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")     # (vjp outside compiles its code)
    want = numerical_grad(pair_loss, [X])       # called as it is: vjp runs outside
    np.testing.assert_allclose(ms.grad(pair_loss)(X), want, rtol=1e-6, atol=1e-8)


def test_jit_and_vmap_of_a_function_calling_jvp():
    np.testing.assert_allclose(ms.jit(along)(X, V), outside(f, X, V), rtol=1e-12)
    np.testing.assert_allclose(ms.jit(vjp_loss)(X, V), _vjp_loss_outside(X, V), rtol=1e-12)
    columns = ms.vmap(lambda t: ms.jvp(vector, (X,), (t,))[1])(np.eye(3))
    np.testing.assert_allclose(columns.T, ms.jacfwd(vector)(X), rtol=1e-12)


def objective(t, a, b):
    return np.sin(t * a) + b * t ** 2


def test_vmap_of_jvp_of_a_closure_with_star_arguments():
    """GradBench ht's held-out spelling: the Jacobian by columns, ``*rest`` read from
    the enclosing function (was refused: ``*`` on a value known only at run time)."""
    def jacobian(theta, *rest):
        column = ms.vmap(lambda v: ms.jvp(lambda t: objective(t, *rest), (theta,), (v,))[1])
        return column(np.eye(theta.shape[0])).T
    rest = (np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.2, 0.1]))
    # the same arrays again (the build is reused), one changed in place, new arrays
    for step in range(4):
        if step == 2:
            rest[1][:] = [-0.4, 0.9, 0.2]
        if step == 3:
            rest = (np.array([0.7, 0.1, -1.5]), np.array([2.0, -0.3, 0.6]))
        want = ms.jacfwd(objective)(X, *rest)
        np.testing.assert_allclose(jacobian(X, *rest), want, rtol=1e-12)


def test_compiled_by_numba_a_loop_inside_and_a_jit(monkeypatch):
    """The references run as Python (no compile of their own)."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    want = {tuple(v): (ms.hvp(loop, X, v), outside(loop, X, v)) for v in (V, U)}
    differences = numerical_grad(lambda x: outside(loop, x, V), [X])
    monkeypatch.delenv("S2SGRAD_BACKEND")
    gradient, jitted = ms.grad(along_loop), ms.jit(along_loop)
    for v in (V, U):
        np.testing.assert_allclose(gradient(X, v), want[tuple(v)][0], rtol=1e-10)
        np.testing.assert_allclose(jitted(X, v), want[tuple(v)][1], rtol=1e-12)
    np.testing.assert_allclose(gradient(X, V), differences, rtol=1e-6, atol=1e-8)
    assert gradient.backend == "numba" and jitted.backend == "numba"


def returns_the_pullback(w):
    return ms.vjp(g, w)[1]


def sums_the_pullback(w):
    y, pull = ms.vjp(g, w)
    return np.sum(pull) + np.sum(y)


def of_a_jacobian(x):
    return ms.jvp(ms.jacrev(vector), (x,), (V,))[1]


def of_a_tuple(x):
    return ms.jvp(lambda p: np.sum(p[0] * p[1]), ((x, x),), ((V, V),))[1]


@pytest.mark.parametrize("outer, error, words", [
    (returns_the_pullback, UnsupportedConstructError, ["returning a vjp's pullback",
                                                       "call vjp outside"]),
    (sums_the_pullback, UnsupportedConstructError, ["a vjp's pullback used as a value",
                                                    "pull(ct)[0]"]),
    (of_a_jacobian, DerivativeCompositionError, ["jvp of the derivative object",
                                                  "jacfwd(f)(x) is a Jacobian"]),
    (of_a_tuple, DerivativeCompositionError, ["of a tuple, list or dict input",
                                              "jvp(lambda a, b: f((a, b)), (a, b)"]),
])
def test_what_stays_refused_names_the_users_line_and_what_to_write(outer, error, words):
    """Never a silent zero (a pullback summed gave a zero gradient) or a cache file."""
    with pytest.raises(error) as info:
        ms.grad(outer)(X)
    message = str(info.value)
    assert "test_forward_inside.py:" in message and ".cache" not in message
    for word in words:
        assert word in message, (word, message)


def calls_a_jacobian(x):
    jacobian = ms.jacfwd(vector)(x)
    return np.sum(jacobian ** 2)


def calls_a_reverse_jacobian(x):
    return np.sum(ms.jacrev(vector)(x) ** 2)


def test_an_inner_jacfwd_is_inlined_and_a_jacrev_keeps_its_rule(monkeypatch):
    """jacfwd(f)(x) inside is one JVP pass per basis direction, inlined: a second
    derivative over it works (it was refused). jacrev(f)(x) keeps its rule (a Python
    call): its code is commented with the user's line, not the rule's cache module, and
    a second derivative over it is refused at that line (it named no line).  Run as
    Python: the Jacobian's loop would have Numba compile each derivative."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    gradient = ms.grad(calls_a_jacobian)
    np.testing.assert_allclose(gradient(X), numerical_grad(calls_a_jacobian, [X]),
                               rtol=1e-6, atol=1e-8)
    want = numerical_jacobian(gradient, [X])
    np.testing.assert_allclose(ms.hessian(calls_a_jacobian)(X), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ms.jit(calls_a_jacobian)(X), calls_a_jacobian(X), rtol=1e-12)
    along_jacobian = lambda x: U @ ms.jvp(ms.jacfwd(vector), (x,), (V,))[1] @ V  # noqa: E731
    np.testing.assert_allclose(ms.grad(along_jacobian)(X), numerical_grad(along_jacobian, [X]),
                               rtol=1e-6, atol=1e-8)
    reverse = ms.grad(calls_a_reverse_jacobian)
    np.testing.assert_allclose(reverse(X), gradient(X), rtol=1e-10)
    assert "derivative_rule" not in reverse.source and "test_forward_inside.py:" in \
        reverse.source
    with pytest.raises(DerivativeCompositionError) as info:
        ms.hessian(calls_a_reverse_jacobian)(X)
    assert "test_forward_inside.py:" in str(info.value) and "vector_jacrev" in str(info.value)
