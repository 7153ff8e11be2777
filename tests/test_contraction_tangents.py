"""Forward over reverse through the adjoints of contractions (``rt.einsum_adjoints``,
``rt.multi_dot_adjoints``): ``rt.operand_adjoints_tangent`` (runtime/second.py).

The tangent of an operand's adjoint is the adjoint along the incoming adjoint's tangent
plus, per operand with a tangent, the other operands' adjoints with that operand
replaced by its tangent.  Checked: Hessian-vector products and ``jvp(grad)`` against
central differences of the gradient for each kind of term (an incoming adjoint with and
without a tangent, operands with and without, a repeated operand, an operand not
differentiated, sublists, ``multi_dot``); that the tangent makes only the contractions
it needs (kmeans' row distances: two per use, it made six), and that the arrays it
returns are new ones (a later in-place update of one never writes into an input).
"""
import importlib

import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.testing import numerical_grad

einsum_module = importlib.import_module("s2sgrad.runtime.einsum")


def row_distances(c, points):
    diff = points - c[0]
    return np.einsum("nd,nd->n", diff, diff).sum()


def squared_contraction(a, b):
    # the incoming adjoint of the einsum has a tangent (2 * y * y_dot)
    y = np.einsum("ij,jk->ik", a, b)
    return np.sum(y ** 2)


def constant_operand(a, b):
    return np.sum(np.sin(np.einsum("ij,jk->ik", a, b)))


def sublists(a, b):
    return np.sum(np.einsum(a, [0, 1], b, [1, 2], [0, 2]) ** 2)


def chained(a, b, c):
    return np.sum(np.linalg.multi_dot([a, b, c]) ** 2)


def _hvp_against_differences(fn, args, position, direction):
    gradient = s2sgrad.grad(fn, position)
    _, got = s2sgrad.jvp(lambda x: gradient(*args[:position], x, *args[position + 1:]),
                         (args[position],), (direction,))
    eps = 1e-6
    moved = list(args)
    moved[position] = args[position] + eps * direction
    plus = gradient(*moved)
    moved[position] = args[position] - eps * direction
    minus = gradient(*moved)
    np.testing.assert_allclose(got, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-7)


CASES = [
    (row_distances, ((3, 4), (50, 4)), 0),
    (squared_contraction, ((5, 6), (6, 3)), 0),
    (squared_contraction, ((5, 6), (6, 3)), 1),
    (constant_operand, ((5, 6), (6, 3)), 1),
    (sublists, ((4, 5), (5, 3)), 0),
    (chained, ((4, 5), (5, 6), (6, 2)), 1),
    (chained, ((4, 5), (5, 6), (6, 2)), 2),
]


@pytest.mark.parametrize("fn, shapes, position", CASES,
                         ids=[f"{c[0].__name__}-{c[2]}" for c in CASES])
def test_forward_over_reverse_matches_differences_of_the_gradient(fn, shapes, position):
    rng = np.random.default_rng(7)
    args = tuple(rng.standard_normal(s) for s in shapes)
    direction = rng.standard_normal(shapes[position])
    _hvp_against_differences(fn, args, position, direction)


def test_each_contraction_is_made_once():
    """``einsum("nd,nd->n", diff, diff)``'s adjoints under a tangent along ``diff`` alone
    (the incoming adjoint's tangent zero): one contraction per operand, for the other
    operand's tangent; none along the zero tangent, none for the operand moved."""
    rng = np.random.default_rng(1)
    diff, diff_dot, g = rng.random((40, 3)), rng.random((40, 3)), rng.random(40)
    calls = []
    real = einsum_module.einsum_adjoint

    def counted(*args, **kwargs):
        calls.append(args[4])           # the operand whose adjoint it makes
        return real(*args, **kwargs)
    einsum_module.einsum_adjoint = counted
    try:
        got = rt.operand_adjoints_tangent(rt.einsum_adjoints, g, ("nd,nd->n", diff, diff),
                                          np.zeros(40), (0.0, diff_dot, diff_dot))
    finally:
        einsum_module.einsum_adjoint = real
    assert sorted(calls) == [0, 1]
    want = g[:, None] * diff_dot      # each operand's adjoint, g times the other
    assert got[0] is None
    np.testing.assert_allclose(got[1], want, rtol=1e-12)
    np.testing.assert_allclose(got[2], want, rtol=1e-12)


def test_no_tangent_at_all_gives_new_zero_arrays_of_each_operands_shape():
    a, b = np.ones((3, 4)), np.ones((4, 2))
    got = rt.operand_adjoints_tangent(rt.einsum_adjoints, np.ones((3, 2)), ("ij,jk->ik", a, b),
                                      np.zeros((3, 2)), (0.0, 0.0, 0.0))
    assert got[0] is None and got[1].shape == (3, 4) and got[2].shape == (4, 2)
    assert not got[1].any() and not got[2].any()
    got = rt.operand_adjoints_tangent(rt.multi_dot_adjoints, np.ones((3, 2)), (a, b),
                                      0.0, (0.0, 0.0))
    assert [x.shape for x in got] == [(3, 4), (4, 2)] and not any(x.any() for x in got)


def test_the_tangents_returned_are_never_views_of_the_inputs():
    """An identity contraction (``"ij->ij"``) gives a view of the adjoint's tangent: it
    is copied, so the caller may update it in place."""
    g, x = np.ones((3, 4)), np.ones((3, 4))
    g_dot = np.arange(12.0).reshape(3, 4)
    got = rt.operand_adjoints_tangent(rt.einsum_adjoints, g, ("ij->ij", x), g_dot,
                                      (0.0, np.zeros((3, 4))))
    got[1] += 1.0
    np.testing.assert_array_equal(g_dot, np.arange(12.0).reshape(3, 4))
