"""Batched forward-mode Jacobians: every column in one sweep, tangents with the directions
first (``compiler/forward/batched.py``).

A class of loop-free programs (elementwise with broadcasting, reductions, ``@`` of every
rank pair, indexing and item writes, ``np.array`` literals, reshapes, transposes, stacks,
several inputs and outputs, a scalar input): the batched Jacobian is built (the object
says so), equals the per-direction one and central finite differences (float64); the
sweep width splits the directions into blocks without changing a column; a form without
a batched rule, and a loop of scalar work, fall back to per-direction sweeps (named in
``fallback_reason``); ``S2SGRAD_BACKEND=numba`` runs the per-direction sweeps; the
generated code is one sweep with ``rt.basis_batch``.  Loops: ``test_batched_loops.py``.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.runtime import batched as rt_batched

X = np.array([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4]])
Y = np.array([[1.2, 0.4, -0.3], [0.9, -1.5, 0.6]])


def elementwise(x, y):
    return np.sin(x) * y + np.exp(-x) / (1.0 + y ** 2) - np.where(x > 0.25, x, y)


def broadcasts(x, y):
    r = y[0] + x
    q = x[0, 0] * y - r.sum(axis=0)
    return np.clip(q, -0.5, 0.5) + np.maximum(x, 0.1 * y)


def reductions(x, y):
    a = np.sum(x * y, axis=0)
    b = np.mean(x ** 2, axis=1, keepdims=True)
    return np.concatenate([a, np.sum(b * x, axis=(0, 1))[None], np.mean(y)[None]])


def matmuls(x, y):
    w = x @ y.T
    v = x @ y[0]
    return np.tanh(w) @ v + y @ x[1] + np.dot(v, v) + x[0] @ y.T @ v


def indexing(x, y):
    z = x[1:, ::2] * y[0, 1] + x[0][:, None].T[0, :2].sum()
    w = x.copy()
    w[0, 1] = y[1, 2] * 3.0
    w[1] = z[0, 0]
    return np.stack([w.ravel(), np.reshape(y, (-1,)) * 2.0], axis=1)


def literal(x, y):
    c, s = np.cos(x[0, 0]), np.sin(y[1, 1])
    rotation = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return (rotation @ y.T).T + x.mean()


def two_outputs(x, y):
    return np.sum(x * y), np.transpose(x) * y[1][:, None]


PROGRAMS = [elementwise, broadcasts, reductions, matmuls, indexing, literal, two_outputs]


def central_differences(f, args, k, eps=1e-6):
    """d f / d args[k] by central differences, out.shape + in.shape (a tuple per output)."""
    outs = f(*args)
    many = isinstance(outs, tuple)
    outs = outs if many else (outs,)
    base = np.asarray(args[k], dtype=float)
    jac = [np.zeros(np.shape(o) + base.shape) for o in outs]
    for idx in np.ndindex(base.shape):
        step = np.zeros_like(base)
        step[idx] = eps
        plus, minus = list(args), list(args)
        plus[k], minus[k] = base + step, base - step
        hi, lo = f(*plus), f(*minus)
        hi, lo = (hi, lo) if many else ((hi,), (lo,))
        for j, (a, b) in enumerate(zip(hi, lo)):
            jac[j][(...,) + idx] = (np.asarray(a) - np.asarray(b)) / (2 * eps)
    return tuple(jac) if many else jac[0]


def leaves(result):
    if isinstance(result, tuple):
        return [a for r in result for a in leaves(r)]
    return [np.asarray(result)]


@pytest.fixture(scope="module")
def built():
    """Each program's jacfwd w.r.t. both inputs, called once (batched), and its result."""
    out = {}
    for f in PROGRAMS:
        jac = s2sgrad.jacfwd(f, grad_position=(0, 1))
        out[f.__name__] = (jac, jac(X, Y))
    return out


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_batched_jacobian_equals_columns_and_finite_differences(f, built):
    jac, result = built[f.__name__]
    assert jac.last is jac.batched, jac.fallback_reason
    assert "rt.basis_batch(" in jac.source and "for k in range" not in jac.source
    per_direction = jac.forward(X, Y)
    for a, b in zip(leaves(result), leaves(per_direction)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    many = isinstance(f(X, Y), tuple)
    for k in (0, 1):
        expected = central_differences(f, (X, Y), k)
        got = tuple(r[k] for r in result) if many else result[k]
        for a, b in zip(leaves(got), leaves(expected)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_narrow_sweep_gives_the_same_columns(monkeypatch, built):
    """Directions in blocks of 5 (of 12): every block's columns land in place."""
    jac, result = built["matmuls"]
    monkeypatch.setattr(rt_batched, "BATCH_NUMBERS", 5 * X.size)
    again = jac(X, Y)
    for a, b in zip(leaves(again), leaves(result)):
        np.testing.assert_array_equal(a, b)


def scalar_input(t, x):
    return np.sin(t * x) + t ** 2


def test_a_scalar_input_and_single_position():
    jac = s2sgrad.jacfwd(scalar_input)
    got = jac(0.7, X[0])
    assert jac.last is jac.batched
    np.testing.assert_allclose(got, X[0] * np.cos(0.7 * X[0]) + 1.4, rtol=1e-12)


def not_batched(x):
    return np.cumprod(x) * np.linalg.norm(x)


def scalar_loop(x):
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(h * 0.5 + x[i])
    return x * h


@pytest.mark.parametrize("f, why", [(not_batched, "no batched rule"),
                                    (scalar_loop, "a loop of scalar work")])
def test_forms_without_a_batched_rule_run_per_direction(f, why):
    jac = s2sgrad.jacfwd(f)
    got = jac(X[0])
    assert jac.last is jac.forward and why in jac.fallback_reason
    np.testing.assert_allclose(got, central_differences(f, (X[0],), 0), rtol=1e-6, atol=1e-7)


def test_the_numba_backend_runs_per_direction_sweeps(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    jac = s2sgrad.jacfwd(broadcasts, grad_position=(0, 1))
    got = jac(X, Y)
    assert jac.last is jac.forward
    expected = central_differences(broadcasts, (X, Y), 0)
    np.testing.assert_allclose(got[0], expected, rtol=1e-6, atol=1e-7)


def test_basis_batch_spans_the_directions_of_each_input():
    x = np.zeros((2, 2))
    blocks = [rt_batched.basis_batch(x, start, 3) for start in (-2, 1, 3)]
    assert blocks[0].reshape(3, 4).tolist() == [[0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]]
    assert blocks[1].reshape(3, 4).tolist() == [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    assert blocks[2].reshape(3, 4).tolist() == [[0, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]]


def number_read_then_written(x):
    y = x * 2.0
    a = y[0]
    y[0] = 0.0
    return a * y + a


def test_a_number_read_before_its_item_is_written():
    """``a = y[0]`` is a copy; its batch ``y_dot[:, 0]`` is a view, copied too: the write
    ``y[0] = 0`` after it must not zero ``a``'s columns (was: silently wrong)."""
    jac = s2sgrad.jacfwd(number_read_then_written)
    got = jac(X[0])
    assert jac.last is jac.batched, jac.fallback_reason
    np.testing.assert_allclose(got, central_differences(number_read_then_written, (X[0],), 0),
                               rtol=1e-6, atol=1e-7)
