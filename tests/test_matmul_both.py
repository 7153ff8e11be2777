"""The batched tangent of a product of two matrices that both have one: one call,
``rt.matmul_both(a_dot, b, a, b_dot)`` (``compiler/forward/batched.py``,
``runtime/batched.py``), the batch-times-matrix product made as one BLAS product of the
batch's matrices one under the other, the other product added into it.

Checked: the generated code of a chain of small rotation matrices (GradBench's ht's
``Rz @ Ry @ Rx`` in small), its Jacobian against central differences and its
compositions (grad of a function of it, vmap of it); the helper against numpy for the
layouts batched code makes (C order, a transposed view, a batch laid out by columns,
mixed float dtypes) and under Numba (``backend/numba_batched.py``)."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.runtime import batched as rt_batched
from s2sgrad.testing import numerical_jacobian


def rotations(theta, rest):
    """Three small rotations (literals of their angles) chained, then a product of the
    chain with its transpose (loop-free: the batched sweep runs it)."""
    c, s = np.cos(theta), np.sin(theta)
    rx = np.array([[1.0, 0.0, 0.0], [0.0, c[0], -s[0]], [0.0, s[0], c[0]]])
    ry = np.array([[c[1], 0.0, -s[1]], [0.0, 1.0, 0.0], [s[1], 0.0, c[1]]])
    rz = np.array([[c[2], -s[2], 0.0], [s[2], c[2], 0.0], [0.0, 0.0, theta[3]]])
    out = rest @ (rz @ ry @ rx)
    return (out @ out.T + out).ravel()


def data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=4), rng.normal(size=(3, 3))


def test_a_chain_of_products_writes_one_call_per_product():
    jac = s2sgrad.jacfwd(rotations)
    jac(*data())
    source = jac.source
    assert jac.last is jac.batched
    assert source.count("rt.matmul_both(") == 3       # rz @ ry, ... @ rx, out @ out.T
    assert "rt.batch_matmul(" not in source           # never a sum of two products
    assert "rt.matmul_batch(rest, " in source         # one tangent: its own product


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_jacobian_against_central_differences(seed):
    args = data(seed)
    got = s2sgrad.jacfwd(rotations)(*args)
    assert np.allclose(got, numerical_jacobian(rotations, args), rtol=1e-6, atol=1e-7)


def test_compositions(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")      # (no Numba compiles)
    theta, rest = data(4)
    jac = s2sgrad.jacfwd(rotations)

    def energy(t):
        return np.sum(jac(t, rest) ** 2)
    gradient = s2sgrad.grad(energy)(theta)
    assert np.allclose(gradient, numerical_jacobian(energy, (theta,)), rtol=1e-6, atol=1e-6)
    moved = np.stack([theta, theta * 0.5])
    mapped = s2sgrad.vmap(lambda t: jac(t, rest))(moved)
    assert np.allclose(mapped[1], jac(moved[1], rest), rtol=1e-12, atol=1e-14)


def _layouts(rng):
    """(a_dot, b, a, b_dot) as batched code has them."""
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    c_order = (rng.normal(size=(5, 3, 4)), b, a, rng.normal(size=(5, 4, 2)))
    transposed = (np.transpose(rng.normal(size=(5, 4, 3)), (0, 2, 1)), b, a,
                  np.transpose(rng.normal(size=(5, 2, 4)), (0, 2, 1)))
    by_columns = rt_batched.zeros_batch(np.zeros((40, 3)), 5)     # (5, 40, 3), by columns
    by_columns[...] = rng.normal(size=by_columns.shape)
    tall = rng.normal(size=(40, 3))
    columns = (by_columns, rng.normal(size=(3, 2)), tall, rng.normal(size=(5, 3, 2)))
    mixed = (c_order[0].astype(np.float32), b, a, c_order[3])
    return {"C order": c_order, "transposed views": transposed, "by columns": columns,
            "mixed dtypes": mixed}


@pytest.mark.parametrize("layout", ["C order", "transposed views", "by columns",
                                    "mixed dtypes"])
def test_the_helper_is_numpys_sum_of_products(layout):
    a_dot, b, a, b_dot = _layouts(np.random.default_rng(7))[layout]
    got = rt_batched.matmul_both(a_dot, b, a, b_dot)
    want = a_dot @ b + a @ b_dot
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    if layout == "by columns":
        assert got.strides[1] < got.strides[2]           # laid out as the batch is


def test_the_numba_version():
    numba = pytest.importorskip("numba")
    from s2sgrad.backend import numba_batched  # noqa: F401  (registers the versions)

    @numba.njit
    def both(a_dot, b, a, b_dot):
        return rt_batched.matmul_both(a_dot, b, a, b_dot)
    a_dot, b, a, b_dot = _layouts(np.random.default_rng(8))["transposed views"]
    np.testing.assert_allclose(both(a_dot, b, a, b_dot), a_dot @ b + a @ b_dot,
                               rtol=1e-12, atol=1e-12)


def test_a_batch_times_a_matrix_is_one_product_of_matrices(monkeypatch):
    # a C-ordered batch: its matrices one under the other, one 2-D product (not numpy's
    # product per matrix of the batch)
    ranks = []
    matmul = np.matmul
    monkeypatch.setattr(np, "matmul", lambda x, y: ranks.append((x.ndim, y.ndim)) or
                        matmul(x, y))
    rng = np.random.default_rng(9)
    batch, matrix = rng.normal(size=(6, 4, 4)), rng.normal(size=(4, 2))
    got = rt_batched.batch_matmul(batch, matrix)
    monkeypatch.undo()
    assert ranks == [(2, 2)]
    assert got.shape == (6, 4, 2) and np.allclose(got, batch @ matrix, rtol=1e-13,
                                                  atol=1e-13)
