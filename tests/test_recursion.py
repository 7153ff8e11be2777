"""Recursion unrolled while building (``compiler/front/recursion.py``).

A recursion whose end is decided by shapes or literal numbers (a determinant by minors,
divide and conquer on halving arrays, ``x ** n`` by ``x * p(x, n - 1)`` with a literal
``n``, a tree of fixed depth, a local recursive ``def``) is unrolled like tracing would
run it, in every mode (reverse, forward, split, second order, compositions), checked
against closed forms and central differences in float64.  The code is built again for
new sizes (what decided the unrolling is in the key the code is kept under), never
reused from the first call.  A recursion decided at run time, or too deep, is refused
naming the user's line.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad import grad, hessian, hvp, jacfwd, jacrev, jvp, value_and_grad, vjp
from s2sgrad.compiler.front import recursion
from s2sgrad.errors import RecursionUnrollError, UnsupportedConstructError
from s2sgrad.testing import fresh_function, numerical_grad


# ---------------------------------------------------------------- the recursions


def power(x, n):
    return 1.0 if n == 0 else x * power(x, n - 1)


def cube_sum(x):
    return np.sum(power(x, 3))


def det_delete(a):
    """Cofactor expansion along the first row, minors by np.delete."""
    n = a.shape[0]
    if n == 1:
        return a[0, 0]
    total = 0.0
    for j in range(n):
        minor = np.delete(np.delete(a, 0, axis=0), j, axis=1)
        total = total + (-1) ** j * a[0, j] * det_delete(minor)
    return total


def det_slices(a):
    """The same with len() and minors joined from column slices."""
    n = len(a)
    if n == 2:
        return a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    total = 0.0
    for j in range(n):
        rows = a[1:]
        minor = np.concatenate([rows[:, :j], rows[:, j + 1:]], axis=1)
        total = total + (-1) ** j * a[0, j] * det_slices(minor)
    return total


def halving_product(x):
    """Divide and conquer: the product of the squares, halves multiplied."""
    if x.shape[0] == 1:
        return x[0] ** 2
    h = x.shape[0] // 2
    return halving_product(x[:h]) * halving_product(x[h:])


def tree(x, depth):
    """A binary tree of fixed depth over one vector: each node mixes its two children."""
    if depth == 0:
        return np.tanh(x)
    left, right = tree(x * 0.5, depth - 1), tree(x[::-1], depth - 1)
    return np.sin(left) * right + x


def tree_loss(x):
    return np.sum(tree(x, 3) ** 2)


def local_recursion(x):
    def unfold(y, k):
        if k == 0:
            return y
        return unfold(np.cos(y) + y * 0.3, k - 1)
    return np.sum(unfold(x, 4))


RNG = np.random.default_rng(7)
VECTOR = RNG.normal(size=5)


def _det_gradient(a):
    return np.linalg.det(a) * np.linalg.inv(a).T


# ---------------------------------------------------------------- reverse and forward


@pytest.mark.parametrize("det", [det_delete, det_slices])
def test_determinant_by_minors_in_every_first_order_mode(det):
    g = grad(det)
    for n in (3, 4, 3):
        a = RNG.normal(size=(n, n))
        np.testing.assert_allclose(g(a), _det_gradient(a), atol=1e-12)
    a, v = RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))
    want = _det_gradient(a)
    np.testing.assert_allclose(value_and_grad(det)(a)[0], np.linalg.det(a), atol=1e-12)
    np.testing.assert_allclose(jacfwd(det)(a), want, atol=1e-12)
    np.testing.assert_allclose(jacrev(det)(a), want, atol=1e-12)
    np.testing.assert_allclose(jvp(det, (a,), (v,))[1], np.sum(want * v), atol=1e-12)
    np.testing.assert_allclose(vjp(det, a)[1](1.0)[0], want, atol=1e-12)


def test_power_with_a_literal_depth_has_the_closed_form():
    x = np.array([0.5, -1.5, 2.0])
    np.testing.assert_allclose(grad(cube_sum)(x), 3 * x ** 2, rtol=1e-13)
    np.testing.assert_allclose(jacfwd(cube_sum)(x), 3 * x ** 2, rtol=1e-13)
    np.testing.assert_allclose(hessian(cube_sum)(x), np.diag(6 * x), rtol=1e-13)
    # the derivative of x -> x ** 7 by the same function, called with another literal
    np.testing.assert_allclose(grad(lambda t: power(t, 7))(1.3), 7 * 1.3 ** 6, rtol=1e-13)


@pytest.mark.parametrize("fn", [halving_product, tree_loss, local_recursion],
                         ids=["halving", "tree", "local-def"])
def test_divide_and_conquer_trees_and_local_recursion_match_differences(fn):
    g, f = grad(fn), jacfwd(fn)
    for size in (4, 5, 8) if fn is halving_product else (5, 3):
        x = RNG.normal(size=size) * 0.8 + 0.2
        want = numerical_grad(fn, (x,))
        np.testing.assert_allclose(g(x), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(f(x), want, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------- second order


def _hessian_by_differences(fn, x, eps=1e-6):
    g = grad(fn)
    flat = x.ravel()
    cols = []
    for k in range(flat.size):
        e = np.zeros_like(flat)
        e[k] = eps
        cols.append(((g((flat + e).reshape(x.shape)) - g((flat - e).reshape(x.shape)))
                     / (2 * eps)).ravel())
    return np.stack(cols, axis=-1)


def test_second_order_of_a_determinant_by_minors():
    h, inner = hessian(det_delete), jacfwd(grad(det_delete))
    for n in (3, 2):
        a = RNG.normal(size=(n, n))
        v = RNG.normal(size=(n, n))
        want = _hessian_by_differences(det_delete, a)
        np.testing.assert_allclose(h(a).reshape(n * n, n * n), want, atol=1e-7)
        np.testing.assert_allclose(inner(a).reshape(n * n, n * n), want, atol=1e-7)
        np.testing.assert_allclose(hvp(det_delete, a, v).ravel(), want @ v.ravel(), atol=1e-7)


def test_second_order_of_a_tree():
    x = VECTOR * 0.5
    np.testing.assert_allclose(hessian(tree_loss)(x), _hessian_by_differences(tree_loss, x),
                               rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- built per size


def test_code_is_built_again_for_new_sizes_never_reused_from_the_first_call():
    g = grad(fresh_function(halving_product))   # grad(f) is kept: count this one's builds
    for size in (2, 2, 2, 4, 4, 2, 3):       # repeated calls too: the fast path of a call
        x = RNG.normal(size=size)
        np.testing.assert_allclose(g(x), numerical_grad(halving_product, (x,)), rtol=1e-6)
        assert f"x[:{size // 2}]" in g.source            # the code unrolled for this size
    assert len(g._variants) == 3                          # built once per size


def test_the_generated_code_keeps_each_levels_line_comment():
    g = grad(cube_sum)
    g(VECTOR)
    assert "# return 1.0 if n == 0 else x * power(x, n - 1)" in g.source
    assert "# return np.sum(power(x, 3))" in g.source
    assert "for " not in g.source and "while " not in g.source      # unrolled: no loop


def test_compiled_by_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    x = RNG.normal(size=4)
    g = grad(halving_product)
    np.testing.assert_allclose(g(x), numerical_grad(halving_product, (x,)), rtol=1e-6)
    assert g.backend == "numba"


# ---------------------------------------------------------------- refused


def ends_at_run_time(x):
    if np.sum(x) > 1.0:
        return ends_at_run_time(x / 2)
    return x


def never_ends(x, n):
    return x * never_ends(x, n - 1)


def fib(x, n):
    if n < 2:
        return x
    return fib(x, n - 1) + fib(x, n - 2)


def by_int_argument(x, n):
    return power(x, n)


@pytest.mark.parametrize("fn, args, words", [
    (lambda x: np.sum(ends_at_run_time(x)), (VECTOR,),
     ["recursion into ends_at_run_time under a condition decided at run time",
      "the `if` at line", "return ends_at_run_time(x / 2)"]),
    (lambda x: np.sum(never_ends(x, 3)), (VECTOR,),
     ["recursion into never_ends deeper than 32 levels", "return x * never_ends(x, n - 1)"]),
    (lambda x: np.sum(fib(x, 30)), (VECTOR,),
     ["recursion into fib unrolls into more than 40 calls"]),
    # an int argument is a run-time value: its recursion is not unrolled
    (by_int_argument, (1.5, 3), ["recursion into power under a condition decided at run"]),
], ids=["run-time", "too-deep", "too-many", "int-argument"])
def test_recursion_not_decided_while_building_is_refused_naming_the_line(fn, args, words,
                                                                       monkeypatch):
    monkeypatch.setattr(recursion, "MAX_CALLS", 40)     # (256: lean tests)
    for transform in (grad, jacfwd):
        with pytest.raises(RecursionUnrollError) as info:
            transform(fn)(*args)
        assert isinstance(info.value, UnsupportedConstructError)
        message = str(info.value)
        assert "test_recursion.py:" in message, message
        assert "write this recursion as a loop" in message, message
        for word in words:
            assert word in message, message


def test_a_negative_number_to_a_run_time_power(monkeypatch):
    """``(-1) ** j`` with ``j`` a loop index was written ``-1 ** j`` (that is -1)."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")    # the text is wrong: no compile needed
    def alternating(x):
        total = 0.0
        for j in range(x.shape[0]):
            total = total + (-1) ** j * x[j] ** 2 + (-2.5) ** j * x[j]
        return total
    x = VECTOR
    signs = (-1.0) ** np.arange(5)
    want = 2 * signs * x + (-2.5) ** np.arange(5)
    np.testing.assert_allclose(grad(alternating)(x), want, rtol=1e-13)
    np.testing.assert_allclose(jacfwd(alternating)(x), want, rtol=1e-13)


def test_s2sgrad_names_the_error_class():
    assert issubclass(s2sgrad.errors.RecursionUnrollError, UnsupportedConstructError)
