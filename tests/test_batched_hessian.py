"""Batched Hessians: ``hessian`` (and ``jacfwd`` of a gradient object) as one batched
forward sweep over the gradient's generated code, every direction at once, run as numpy
(``compiler/forward/batched.py`` over ``compiler/pipeline_higher.py``).

A class of loop-free programs (an unrolled recursion, elementwise work with broadcasting,
reductions over an axis with and without keepdims, a scalar argument, several positions,
a branch on a value, ``@`` of a transpose, a max taken out, a flatten to a shape made
at run time): the Hessian is batched (the generated code says so, no Numba
compile), matches central differences of the gradient in float64, stays right when the
sizes change after the first call and whichever backend ran first; an operation of the
gradient without a batched rule falls back to one pass per direction, named in
``fallback_reason``, still as numpy; compositions (``jacfwd(hessian(f))``,
``jacfwd(grad(f))``, ``jacfwd(value_and_grad(f))``, ``jacfwd(jacrev(f))``) agree.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad import grad, hessian, jacfwd, jacrev, value_and_grad
from s2sgrad.testing import numerical_jacobian

RNG = np.random.default_rng(11)


def tree(x, depth):
    if depth == 0:
        return np.tanh(x)
    left, right = tree(x * 0.5, depth - 1), tree(x[::-1], depth - 1)
    return np.sin(left) * right + x


def tree_loss(x):                       # an unrolled recursion (test_recursion.py's)
    return np.sum(tree(x, 3) ** 2)


def broadcasting(x):
    y = x[:, None] * x[None, :] + np.cos(x)
    return np.sum(np.exp(-y ** 2)) + np.mean(x ** 3)


def axis_reductions(x):
    rows = np.sum(x * x, axis=1)
    kept = np.mean(np.sin(x), axis=0, keepdims=True)
    return np.sum(rows ** 2) + np.sum(kept * x)


def with_scalar(x, s):
    return np.sum(np.log1p(x ** 2) * s) + s ** 3 * np.sum(x)


def branching(x):
    if np.sum(x) > 0:
        y = x ** 3
    else:
        y = np.sin(x)
    return np.sum(y * x)


def matrix_product(x):
    return np.sum((x @ x.T) ** 2)


def network(w, x):
    """The tutorial network's kind of loss: a flatten to a shape made at run time, ``@``
    of a transpose, a max taken out, log-sum-exp and a ReLU (the gradient's adjoints of
    ``@``, of the transpose and of the max, differentiated again, batched)."""
    z = np.reshape(x, x.shape[:1] + (-1,)) @ w.T
    top = np.max(z, axis=1, keepdims=True)
    shifted = z - top
    return np.sum(np.log(np.sum(np.exp(shifted), axis=1))) + np.sum(
        np.maximum(z, 0.0) ** 2) + np.sum(np.max(z, axis=0) ** 2)


def no_rule(x):                          # np.cumprod has no batched rule
    return np.sum(np.cumprod(x * x) ** 2)


def looping(x):
    s = x * 0.0
    for _ in range(3):
        s = np.sin(s + x) * x
    return np.sum(s ** 2)


def fd_hessian(fn, args, position=0):
    """Central differences of ``grad(fn)`` at ``args`` w.r.t. ``args[position]``."""
    return numerical_jacobian(grad(fn, position), args, position)


def _assert_batched(h):
    assert h.ran_batched and h.backend == "numpy", h.fallback_reason
    assert "rt.basis_batch" in h.source and "batch of basis directions" in h.source
    assert "rt.basis_tangent" not in h.source


CASES = [(tree_loss, lambda n: (RNG.normal(size=n),)),
         (broadcasting, lambda n: (RNG.normal(size=n) * 0.5,)),
         (axis_reductions, lambda n: (RNG.normal(size=(n, 3)),)),
         (with_scalar, lambda n: (RNG.normal(size=n), 0.7)),
         (branching, lambda n: (RNG.normal(size=n) + 0.5,)),
         (branching, lambda n: (RNG.normal(size=n) - 2.0,)),
         (matrix_product, lambda n: (RNG.normal(size=(n, 3)),)),
         (network, lambda n: (RNG.normal(size=(3, 4)), RNG.normal(size=(n, 2, 2))))]


@pytest.mark.parametrize("fn, make", CASES,
                         ids=["tree", "broadcast", "axes", "scalar", "branch+", "branch-",
                              "matmul", "network"])
def test_loop_free_hessians_are_batched_and_match_differences(fn, make, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    h = hessian(fn)
    for n in (5, 3, 7):                  # sizes change after the first call
        args = make(n)
        np.testing.assert_allclose(h(*args), fd_hessian(fn, args), rtol=1e-5, atol=1e-7)
        _assert_batched(h)


def test_several_positions_and_a_scalar_position(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    x = RNG.normal(size=4)
    h = hessian(with_scalar, (0, 1))(x, 0.7)
    np.testing.assert_allclose(h[0][0], fd_hessian(with_scalar, (x, 0.7), 0), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(h[1][1], fd_hessian(with_scalar, (x, 0.7), 1), rtol=1e-5,
                               atol=1e-7)
    g1 = grad(with_scalar, 1)
    eps = 1e-6
    cross = np.array([(g1(x + eps * e, 0.7) - g1(x - eps * e, 0.7)) / (2 * eps)
                      for e in np.eye(4)])
    np.testing.assert_allclose(h[1][0], cross, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h[0][1], cross, rtol=1e-5, atol=1e-7)


def test_no_batched_rule_falls_back_per_direction_as_numpy(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    h = hessian(no_rule)
    x = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(h(x), fd_hessian(no_rule, (x,)), rtol=1e-5, atol=1e-7)
    assert not h.ran_batched and h.fallback_reason.startswith("Not batched:")
    assert "has no batched rule" in h.fallback_reason
    assert h.backend == "numpy" and "rt.basis_tangent" in h.source   # no Numba compile


def test_the_first_call_decides_nothing_for_later_ones(monkeypatch):
    """numba first (loop-free: per direction, compiled), then auto (batched), python
    (batched), and loops: per direction under auto for small arrays, batched when one is
    large or under python; every result matches differences."""
    x = RNG.normal(size=4)
    h = hessian(broadcasting)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    np.testing.assert_allclose(h(x), fd_hessian(broadcasting, (x,)), rtol=1e-5, atol=1e-7)
    assert h.ran_batched
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    np.testing.assert_allclose(h(x[:3]), fd_hessian(broadcasting, (x[:3],)), rtol=1e-5,
                               atol=1e-7)
    _assert_batched(h)
    loop = hessian(looping)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    np.testing.assert_allclose(loop(x), fd_hessian(looping, (x,)), rtol=1e-5, atol=1e-7)
    assert loop.ran_batched
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    big = RNG.normal(size=130) * 0.3
    hb = loop(big)
    assert loop.ran_batched
    d = np.diag(hb)
    # the diagonal of a separable loop: each element's own second derivative
    one = hessian(lambda v: looping(v))(big[:1])
    np.testing.assert_allclose(d[0], one[0, 0], rtol=1e-10)
    np.testing.assert_allclose(hb, np.diag(d), atol=1e-12)    # elementwise: diagonal


@pytest.mark.parametrize("make", [lambda f: jacfwd(grad(f)),
                                  lambda f: jacfwd(value_and_grad(f)),
                                  lambda f: jacfwd(jacrev(f))],
                         ids=["jacfwd-grad", "jacfwd-value_and_grad", "jacfwd-jacrev"])
def test_jacfwd_of_a_gradient_object_is_batched(make, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    j = make(tree_loss)
    for n in (130, 4):       # jacrev's loop over its rows is no loop of the function's:
        x = RNG.normal(size=n)       # batched at any size, with no Numba compile
        out = j(x)
        got = out[1] if isinstance(out, tuple) else out
        want = s2sgrad.hessian(tree_loss)(x)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10)
        assert j.last is j.batched and j.backend == "numpy", j.fallback_reason
    np.testing.assert_allclose(want, fd_hessian(tree_loss, (x,)), rtol=1e-5, atol=1e-7)


def test_jacfwd_of_a_batched_hessian_matches_differences(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    h = hessian(broadcasting)
    x = RNG.normal(size=3) * 0.5
    third = jacfwd(h)(x)
    eps = 1e-5
    want = np.stack([(h(x + eps * e) - h(x - eps * e)) / (2 * eps) for e in np.eye(3)],
                    axis=-1)
    np.testing.assert_allclose(third, want, rtol=1e-5, atol=1e-6)
    assert third.shape == (3, 3, 3)
