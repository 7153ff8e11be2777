"""Batched tangents of small matrix products (``runtime/small_matmul.py``) and the signs
of a batched tangent's products (``optimize/spelling.signs_onto_values``): GradBench's
ht carries 26 directions through 3 x 3 rotations and 4 x 4 bone transforms.

Checked: the compiled loops give numpy's products for every side up to 4 and leave
other operands (larger, float32, strided, the wrong shapes) to numpy; they are taken
once compiled and never started under ``S2SGRAD_BACKEND=python``; a result does not
depend on whether the compile has finished; a generated Jacobian negates values, not
batches; and Jacobians, Hessians and vmapped Jacobians through chains of small
products match central differences under both backends.
"""
import importlib
import re

import gast
import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.compiler.optimize.spelling import signs_onto_values
from s2sgrad.runtime.fused import Fused
from s2sgrad.compiler.syntax.source import to_source
from s2sgrad.testing import numerical_jacobian

small = importlib.import_module("s2sgrad.runtime.small_matmul")


@pytest.fixture(scope="module", autouse=True)
def compiled_loops():
    """The loops compiled once for the module (as a process has them after a while)."""
    for kernel in (small._BOTH, small._BATCH):
        kernel.ready()
        kernel.wait()
    assert small._BOTH.compiled is not None and small._BATCH.compiled is not None


def operands(width, m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((width, m, k)), rng.standard_normal((k, n)),
            rng.standard_normal((m, k)), rng.standard_normal((width, k, n)))


@pytest.mark.parametrize("width", [1, 26, 100])
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 3, 3), (4, 4, 4), (2, 3, 4), (4, 1, 2)])
def test_the_loops_give_numpys_products(width, m, k, n):
    a_dot, b, a, b_dot = operands(width, m, k, n)
    got = small.matmul_both_small(a_dot, b, a, b_dot)
    assert got is not None, "sides up to 4 are the loops'"
    np.testing.assert_allclose(got, a_dot @ b + a @ b_dot, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(rt.matmul_both(a_dot, b, a, b_dot), got, rtol=1e-13,
                               atol=1e-13)
    got = small.matmul_batch_small(a, b_dot)
    assert got is not None
    np.testing.assert_allclose(got, a @ b_dot, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(rt.matmul_batch(a, b_dot), got, rtol=1e-13, atol=1e-13)


def test_other_operands_are_numpys():
    cases = {
        "a side of 5": operands(26, 5, 3, 3),
        "too much work": operands(200, 4, 4, 4),
    }
    a_dot, b, a, b_dot = operands(26, 3, 3, 3)
    cases["float32"] = (a_dot.astype(np.float32), b.astype(np.float32),
                        a.astype(np.float32), b_dot.astype(np.float32))
    cases["a strided stack"] = (np.swapaxes(a_dot, 1, 2), b, a, b_dot)
    cases["a transposed matrix"] = (a_dot, b.T, a, b_dot)
    cases["a list"] = (a_dot, b.tolist(), a, b_dot)
    for why, (a_dot, b, a, b_dot) in cases.items():
        assert small.matmul_both_small(a_dot, b, a, b_dot) is None, why
        want = np.matmul(a_dot, np.asarray(b)) + np.matmul(a, b_dot)
        got = rt.matmul_both(a_dot, b, a, b_dot)
        assert got.dtype == want.dtype, why
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=why)
    a_dot, b, a, b_dot = operands(26, 3, 3, 3)
    assert small.matmul_both_small(a_dot, b, a[:2], b_dot) is None     # shapes unlike
    with pytest.raises(ValueError):
        rt.matmul_both(a_dot, b, a[:, :2], b_dot)                       # numpy's error
    assert small.matmul_batch_small(a, b_dot[:, :2]) is None


def test_not_started_under_the_python_backend_and_the_same_numbers_meanwhile(monkeypatch):
    """Before the loops are compiled the caller's numpy runs (the same numbers to the
    last bits), and ``S2SGRAD_BACKEND=python`` never starts a compile."""
    a_dot, b, a, b_dot = operands(26, 3, 3, 3)
    compiled = rt.matmul_both(a_dot, b, a, b_dot)
    fresh = Fused(small._both_loops, None, 1, ranks=(3, 3, 2, 2, 3))
    monkeypatch.setattr(small, "_BOTH", fresh)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    assert small.matmul_both_small(a_dot, b, a, b_dot) is None
    assert fresh.compiling is None and fresh.compiled is None
    numpys = rt.matmul_both(a_dot, b, a, b_dot)
    np.testing.assert_allclose(numpys, compiled, rtol=1e-14, atol=1e-14)
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    fresh.ready()
    fresh.wait()
    got = small.matmul_both_small(a_dot, b, a, b_dot)
    assert got is not None
    np.testing.assert_allclose(got, numpys, rtol=1e-14, atol=1e-14)


def rotation(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def chain(theta, points):
    """Points moved by a chain of rotations and 4 x 4 transforms (ht's bones)."""
    out = []
    frame = np.eye(4)
    for i in range(theta.shape[0]):
        m = np.eye(4)
        m[:3, :3] = rotation(theta[i]) @ rotation(2.0 * theta[i])
        frame = frame @ m
        out.append((points @ frame[:3, :3].T).ravel())
    return np.concatenate(out)


def energy(theta, points):
    return np.sum(chain(theta, points) ** 2 * np.linspace(0.5, 1.5, 3 * points.shape[0] *
                                                          theta.shape[0]))


@pytest.mark.parametrize("backend", ["auto", "numba"])
def test_jacobians_through_small_products_match_differences(monkeypatch, backend):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    rng = np.random.default_rng(5)
    theta, points = rng.standard_normal(5), rng.standard_normal((50, 3))   # batched
    want = numerical_jacobian(chain, (theta, points))
    for jac in (s2sgrad.jacfwd(chain), s2sgrad.jacobian(chain)):
        np.testing.assert_allclose(jac(theta, points), want, rtol=1e-6, atol=1e-7)
    # composed: a Hessian (forward over reverse) and a batch of Jacobians
    hessian = s2sgrad.hessian(energy)(theta, points)
    np.testing.assert_allclose(hessian, numerical_jacobian(
        s2sgrad.grad(energy), (theta, points)), rtol=1e-5, atol=1e-6)
    thetas = rng.standard_normal((3, 5))
    batched = s2sgrad.vmap(s2sgrad.jacfwd(chain), in_axes=(0, None))(thetas, points)
    for row, t in zip(batched, thetas):
        np.testing.assert_allclose(row, numerical_jacobian(chain, (t, points)),
                                   rtol=1e-6, atol=1e-7)


def test_a_batched_tangent_negates_values_not_batches():
    """``-(t_dot * cos(t))`` and ``-t_dot * sin(t)`` are written ``t_dot * -c``: the
    sign goes on the value (a number here), not on the batch of directions."""
    jac = s2sgrad.jacfwd(chain)
    rng = np.random.default_rng(6)
    theta, points = rng.standard_normal(3), rng.standard_normal((50, 3))
    jac(theta, points)
    source = jac.source
    assert "rt.basis_batch" in source, "the batched sweep (an argument of 128 numbers)"
    assert "_dot * -" in source
    negated_product = re.compile(r"-\(?\w+_dot [*/]|[*/] -\w+_dot")
    for line in source.splitlines():
        assert not negated_product.search(line.split("#")[0]), line
    assert negated_product.search("y_dot = -x_dot * np.sin(x)")     # the check can fail
    np.testing.assert_allclose(jac(theta, points), numerical_jacobian(chain, (theta, points)),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("before, after", [
    ("y_dot = -(x_dot * c)", "y_dot = x_dot * -c"),
    ("y_dot = -x_dot * np.sin(x)", "y_dot = x_dot * -np.sin(x)"),
    ("y_dot = c * -x_dot", "y_dot = -c * x_dot"),
    ("y_dot = -(x_dot / c)", "y_dot = x_dot / -c"),
    ("y_dot = -(x_dot * -c)", "y_dot = x_dot * c"),
    ("y_dot = -(c / x_dot)", "y_dot = -(c / x_dot)"),          # not linear in it: kept
    ("y_dot = -(x_dot * z_dot)", "y_dot = -(x_dot * z_dot)"),  # both tangents: kept
    ("y_dot = -x_dot * 2.0", "y_dot = -x_dot * 2.0"),          # a number's: another pass
    ("y = -(a * c)", "y = -(a * c)"),                          # no tangent
])
def test_signs_onto_values_spelling(before, after):
    statements = gast.parse(before).body
    got = to_source(signs_onto_values(statements, {"x_dot", "z_dot"})[0]).strip()
    assert got == after
