"""The adjoint of a row read in a loop (``d = x[i] - x[j]``) is added into the adjoint
array's row in place, ``rt.add_into(dx[j], g)`` (issue 9: ``dx[j] += g`` made Numba write
the row back through its general setitem, and a pairwise loop over rows ran at 18x its
forward; now ~4x), and the first and second derivatives stay those of finite
differences under both backends."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad, numerical_grad


def pairwise_rows(x):
    energy = 0.0
    for i in range(x.shape[0]):
        for j in range(i + 1, x.shape[0]):
            d = x[i] - x[j]
            energy = energy + 1.0 / (1.0 + np.dot(d, d))
    return energy


def rows_of_a_matrix(W, xs):
    h = np.zeros(W.shape[1])
    for t in range(xs.shape[0]):
        h = np.tanh(W[t % W.shape[0]] * h + xs[t])
    return np.sum(h ** 2)


ARGS = {pairwise_rows: (np.random.default_rng(0).normal(size=(6, 3)),),
        rows_of_a_matrix: (np.random.default_rng(1).normal(size=(2, 3)) * 0.5,
                           np.random.default_rng(2).normal(size=(5, 3)))}


@pytest.mark.parametrize("backend", ["numba", "python"])
@pytest.mark.parametrize("fn", list(ARGS), ids=lambda f: f.__name__)
def test_row_adjoints_are_added_in_place(fn, backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    args = ARGS[fn]
    positions = tuple(range(len(args)))
    g = check_grad(fn, args, grad_position=positions)
    assert "rt.add_into(dx" in g.source or "rt.add_into(dW" in g.source, g.source
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


def test_second_derivatives_through_row_updates(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x = ARGS[pairwise_rows][0]
    v = np.random.default_rng(3).normal(size=x.shape)
    hv = s2sgrad.hvp(pairwise_rows, x, v)
    grad = s2sgrad.grad(pairwise_rows)
    eps = 1e-5
    expected = (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv, expected,
                               rtol=1e-5, atol=1e-7)


def pairwise_rows_squared(x):
    energy = 0.0
    for i in range(x.shape[0]):
        for j in range(i + 1, x.shape[0]):
            d = x[i] - x[j]
            energy = energy + 1.0 / (1.0 + np.sum(d * d))
    return energy


def test_nothing_is_kept_for_its_shape_alone(monkeypatch):
    """``np.sum(d * d)``'s adjoint needs ``d * d``'s shape only: the reversed loop reads
    ``d``'s and ``d * d`` is not taped. ``d = x[i] - x[j]`` reads arrays the loop does not
    change, so it is made again in the reversed loop rather than taped either: no array
    is kept per iteration at all."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x = np.random.default_rng(4).normal(size=(5, 3))
    g = check_grad(pairwise_rows_squared, (x,))
    stacks = [line.split("=")[0].strip() for line in g.source.splitlines()
              if line.strip().endswith("= []")]
    assert stacks == [], g.source
    assert g.source.count("d_1 = x_i - x_j") == 2, g.source
    assert "rt.unreduce(" in g.source, g.source
