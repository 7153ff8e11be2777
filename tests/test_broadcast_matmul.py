"""A stack of vectors against matrices broadcast along its batch axes
(``runtime/broadcast_matmul.py``): one BLAS product per matrix, the vectors its rows,
read and written in place, instead of numpy's loop of small products (gmm's held-out
spelling ``(Ls @ xc[..., None])[..., 0]``: 25 factors by 1,000 points, 1.0 -> 0.2 ms).  Checked: the plan is taken where it
should be and not elsewhere, agrees with ``np.matmul`` (values, shape, C order, ``out=``)
for every placement of the broadcast axes, and the gradient through it matches central
differences.
"""
import importlib

import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.testing import check_grad

plans = importlib.import_module("s2sgrad.runtime.broadcast_matmul")

FOLDED = [
    ((25, 10, 10), (1000, 25, 10, 1)),     # gmm's factors by points: vectors on the right
    ((10, 10), (300, 10, 1)),              # one matrix by a stack of vectors
    ((300, 25, 1, 10), (25, 10, 10)),      # vectors on the left
    ((300, 1, 3), (3, 3)),
    ((25, 1, 10, 10), (25, 40, 10, 1)),    # broadcast in the middle
    ((1, 5, 1, 3, 3), (4, 5, 6, 3, 1)),    # two folded axes apart: written through a copy
]
NUMPYS = [
    ((5, 1, 4, 3), (1, 7, 3, 2)),          # both broadcast
    ((30, 2, 3), (30, 3, 4)),              # no broadcast
    ((4, 80, 80), (80, 1)),                # few products
    ((25, 1, 10, 10), (25, 40, 10, 2)),    # not vectors: numpy's loop
    ((3, 3), (500, 3, 3)),
    ((3, 4), (4, 5)),                      # matrices
    ((2, 3, 4), (4,)),                     # a vector
]


@pytest.mark.parametrize("a_shape, b_shape", FOLDED + NUMPYS)
def test_agrees_with_numpy_and_folds_only_a_broadcast_stack(a_shape, b_shape):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    want = np.matmul(a, b)
    assert (plans._plan(a, b) is not None) == ((a_shape, b_shape) in FOLDED)
    got = plans.matmul(a, b)
    assert got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    out = np.empty_like(want)
    assert plans.matmul_into(out, a, b) is out
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_the_kept_buffers_matmul_and_the_adjoints_take_it(monkeypatch):
    rng = np.random.default_rng(4)
    ls, xc = rng.standard_normal((25, 10, 10)), rng.standard_normal((400, 25, 10, 1))
    calls = []
    real = plans._plan
    monkeypatch.setattr(plans, "_plan", lambda a, b: calls.append(1) or real(a, b))
    kept = rt.Kept()
    np.testing.assert_allclose(kept.matmul(ls, xc), ls @ xc, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal((400, 25, 10, 1))
    np.testing.assert_allclose(rt.matmul_right(g, ls, xc),
                               np.swapaxes(ls, -1, -2) @ g, rtol=1e-12, atol=1e-12)
    assert len(calls) >= 2


def factors(ls, xc, q):
    z = q * xc + (ls @ xc[..., None])[..., 0]
    return np.sum(z ** 2)


def test_gradient_through_a_broadcast_stack_matches_differences(monkeypatch):
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((5, 3, 3)), rng.standard_normal((70, 5, 3)),
            rng.standard_normal((5, 3)))
    check_grad(factors, args, (0, 1, 2))
    g = s2sgrad.grad(factors, (0, 1, 2))
    later = tuple(a * 0.5 for a in args)        # a later call's values
    got = g(*later)
    check_grad(factors, later, (0, 1, 2))
    monkeypatch.setattr(plans, "_plan", lambda a, b: None)     # numpy's loop: the same
    for a, b in zip(got, g(*later)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
