"""Held-out spellings of the GradBench evals (benchmarks/gradbench/heldout.py), as small
programs of each class: what the generated code must do, gradients against central
finite differences, fresh values after the first call, and compositions.

- A list of arrays a loop carries and rebuilds (``hidden = new_hidden``: the lstm eval's
  functional rows) is a list in the generated code under every name it is bound to: its
  adjoint is made by ``rt.zeros_list`` (``rt.zeros_like`` of a list has no Numba version:
  the whole gradient ran as Python, 25x slower).
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad

rng = np.random.default_rng(7)


# ------------------------------------------------------------ lists carried by a loop

def _layers(w, rows, x):
    new_rows = []
    for j in range(len(rows)):
        new_rows.append(np.tanh(rows[j] * w[j] + x))
        x = new_rows[j]
    return new_rows, np.sum(x * x)


def carried_rows(w, state, xs):
    rows = [state[j] for j in range(state.shape[0])]
    total = 0.0
    for t in range(xs.shape[0]):
        rows, term = _layers(w, rows, xs[t])
        total = total + term
    return total + np.sum(rows[0])


W, STATE, XS = rng.uniform(-1, 1, (2, 5)), rng.uniform(-1, 1, (2, 5)), rng.uniform(-1, 1, (4, 5))
ROWS = s2sgrad.grad(carried_rows, (0, 1))


def test_a_carried_list_of_rows_gets_a_list_adjoint_and_runs_compiled(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    source = s2sgrad.show(ROWS, W, STATE, XS)
    assert "drows = rt.zeros_list(rows)" in source
    assert "rt.zeros_like(rows)" not in source
    check_grad(carried_rows, (W, STATE, XS), grad_position=(0, 1))
    ROWS(W, STATE, XS)
    assert ROWS.backend == "numba", ROWS.fallback_reason
    # fresh values after the first call: another state, another sequence length
    state, xs = rng.uniform(-1, 1, (2, 5)), rng.uniform(-1, 1, (6, 5))
    check_grad(carried_rows, (W, state, xs), grad_position=(0, 1))
    got = ROWS(W, state, xs)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    want = s2sgrad.grad(carried_rows, (0, 1))(W, state, xs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("how", ["jit", "vmap"])
def test_a_carried_list_of_rows_composes(how, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")   # compiled above; lean here
    gradient = s2sgrad.grad(carried_rows)
    if how == "jit":
        np.testing.assert_allclose(s2sgrad.jit(gradient)(W, STATE, XS),
                                   gradient(W, STATE, XS), rtol=1e-12)
        return
    ws = rng.uniform(-1, 1, (3, 2, 5))
    got = s2sgrad.vmap(gradient, in_axes=(0, None, None))(ws, STATE, XS)
    for k in range(3):
        np.testing.assert_allclose(got[k], gradient(ws[k], STATE, XS), rtol=1e-12)


# ------------------------------------------------------------ jvp of a gradient called inside

def _cost(c, p):
    d = np.sum((p[:, None, :] - c[None, :, :]) ** 2, axis=-1)
    return np.sum(np.min(d, axis=1)) + np.sum(np.sin(c) * c)


COST_GRAD = s2sgrad.grad(_cost)
C, P = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (7, 2))


def _gradient_jvp(c, p, v):
    return s2sgrad.jvp(lambda x: COST_GRAD(x, p), (c,), (v,))


def test_jvp_of_a_gradient_called_inside_computes_the_gradient_once():
    """``jvp(lambda x: gradient(x, p))``: one forward-over-reverse pass gives the gradient
    and its tangent (the kmeans eval's closure spelling called the gradient again, 2x)."""
    source = s2sgrad.show(lambda x: COST_GRAD(x, P), C, mode="jvp")
    body = source.split("def lambda_jvp", 1)[1]
    assert "_value_and_tangent(x, P, x_dot" in body
    assert "derivative(x, P)" not in body
    for p in (P, rng.uniform(-1, 1, (7, 2))):       # fresh values after the first call
        v = rng.uniform(-1, 1, C.shape)
        value, tangent = _gradient_jvp(C, p, v)
        np.testing.assert_allclose(value, COST_GRAD(C, p), rtol=1e-12)
        eps = 1e-6
        central = (COST_GRAD(C + eps * v, p) - COST_GRAD(C - eps * v, p)) / (2 * eps)
        np.testing.assert_allclose(tangent, central, rtol=1e-6, atol=1e-8)
        # composed: forward mode over the same call as a Jacobian, column by column
        jac = s2sgrad.jacfwd(lambda x: COST_GRAD(x, p))(C)
        np.testing.assert_allclose(np.tensordot(jac, v, axes=2), tangent, rtol=1e-10,
                                   atol=1e-12)
