"""The faster spellings of loop-free array gradients, by their effect on the generated code
and by central differences, under both backends.

- A max or min's adjoint is ``rt.extremum_adjoint`` (a comparison and one product), never
  the float one-hot ``rt.extremum_mask`` times the spread adjoint (five passes); ties
  split evenly; forward mode over it (``jvp`` of ``grad``, kmeans' Newton step) agrees.
- A sign goes on a sum (``a - rt.unbroadcast(b, a)``, not ``rt.unbroadcast(-b, a)``) or
  into a number (``b * -2``), and a number onto a reduced adjoint before it is spread
  (``rt.unreduce(g * 2, x, 1, False) * x``): a pass over the large array fewer each.
- Sums over short trailing rows (ba's (n, 3) arrays) go to BLAS (``rt.summed_over``), the
  forward sweep's ``np.sum(x, axis=1)`` over a last axis too (``rt.sum(x, 1, False)``).
- ``rt.einsum``'s BLAS products come back in C order, not as a transposed view.
- Arrays computed from sizes and plain numbers only (``llsq``'s powers of ``t``) move into
  a function of them run once per their values (``rt.Constants``): a second call with the
  same values does not run it, other values (a size, a number's bits, ``-0.0``) do, a 0-d
  array is never looked up, and what is written in place or returned stays in the
  gradient.
"""
import re

import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt


def numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


@pytest.fixture(params=["auto", "numba"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


# ---------------------------------------------------------------- max / min adjoint


def row_min_cost(c, p):
    d = np.sum(p ** 2, axis=1)[:, None] + np.sum(c ** 2, axis=1)[None, :] - 2 * (p @ c.T)
    return np.sum(np.min(d, axis=1)) + np.max(c) - np.amin(c, axis=0, keepdims=True).sum()


def test_extremum_adjoint_in_generated_code_and_values(backend):
    rng = np.random.default_rng(0)
    c, p = rng.random((4, 3)), rng.random((9, 3))
    g = s2sgrad.grad(row_min_cost, 0)
    got = g(c, p)
    source = g.source
    assert source.count("rt.extremum_adjoint(") == 3 and "extremum_mask" not in source
    np.testing.assert_allclose(got, numeric_grad(lambda v: row_min_cost(v, p), c),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (0, True), ((0, 1), False)])
def test_extremum_adjoint_is_the_old_product_with_ties_and_nan(axis, keepdims):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.5, 2.0], [np.nan, 1.0, 0.0]])
    for values in (x[:2], x):
        ans = np.max(values, axis=axis, keepdims=keepdims)
        g = np.arange(1.0, np.size(ans) + 1).reshape(np.shape(ans))
        old = rt.unreduce(g, values, axis, keepdims) * rt.extremum_mask(values, ans, axis,
                                                                           keepdims)
        np.testing.assert_array_equal(rt.extremum_adjoint(g, values, ans, axis, keepdims), old)


def test_newton_step_forward_over_reverse_with_a_tie(backend):
    """kmeans' J / diag(H): jvp of the gradient of a cost with a min over each row (ties,
    where the cost has no derivative, are checked against the old product above)."""
    c = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]])
    p = np.array([[0.5, 0.4], [0.2, 0.1], [1.9, 0.3], [1.0, 0.2]])

    def cost(c, p):
        d = np.sum((p[:, None, :] - c[None, :, :]) ** 2, axis=2)
        return np.sum(np.min(d, axis=1))
    grad = s2sgrad.grad(cost, 0)
    j, h = s2sgrad.jvp(grad, (c, p), (np.ones_like(c), np.zeros_like(p)))
    np.testing.assert_allclose(j, numeric_grad(lambda v: cost(v, p), c), atol=1e-6)
    step = 1e-5
    fd = (grad(c + step, p) - grad(c - step, p)) / (2 * step)
    np.testing.assert_allclose(h, fd, atol=1e-5)


# ---------------------------------------------------------------- values of sizes, once


def least_squares(x, n, scale):
    t = np.linspace(-1.0, 1.0, n)
    powers = t[:, None] ** np.arange(x.shape[0]) * scale
    r = np.sign(t) - powers @ x
    return 0.5 * np.sum(r * r)


LSQ = s2sgrad.grad(least_squares, 0)


def lsq_expected(x, n, scale):
    t = np.linspace(-1.0, 1.0, n)
    a = t[:, None] ** np.arange(x.shape[0]) * scale
    return -a.T @ (np.sign(t) - a @ x)


def _table(g):
    module_globals = g._compiled.py_func.__globals__
    return next(v for v in module_globals.values() if isinstance(v, rt.Constants))


def test_constants_moved_out_and_computed_once_per_value():
    x = np.array([0.3, -0.2, 0.5])
    first = LSQ(x, 7, 2.0)
    source = LSQ.source
    # the constants are computed by a table written after the function (what it calls)
    constants = source[source.index("# What the function above calls"):]
    assert "np.linspace(-1.0, 1.0, n)" in constants and " ** np.arange(" in constants
    body = source[source.index("_value_and_grad("):source.index("# What the function above")]
    assert "np.linspace" not in body and "rt.Constants" not in body
    table = _table(LSQ)
    runs = table.computed
    for _ in range(3):
        np.testing.assert_allclose(LSQ(x, 7, 2.0), first)
    assert table.computed == runs                     # the same values: not run again
    np.testing.assert_allclose(first, lsq_expected(x, 7, 2.0), rtol=1e-12)
    # every input is checked, exactly: a size, a number, its sign bit, a longer x
    for args in ((x, 9, 2.0), (x, 7, 3.0), (x, 7, -0.0), (x, 7, 0.0),
                 (np.array([0.1, 0.2, 0.3, 0.4]), 7, 2.0), (x, 7, np.float64(2.5))):
        np.testing.assert_allclose(LSQ(*args), lsq_expected(*args), rtol=1e-12, atol=1e-15)
    assert table.computed == runs + 6
    # a 0-d array could change in place: never looked up, computed afresh
    scale = np.array(2.0)
    before = table.computed
    LSQ(x, 7, scale)
    scale[()] = 5.0
    np.testing.assert_allclose(LSQ(x, 7, scale), lsq_expected(x, 7, 5.0), rtol=1e-12)
    assert table.computed == before + 2


def test_constants_gradient_by_differences(backend):
    x = np.array([0.3, -0.2, 0.5, 0.1])
    g = s2sgrad.grad(least_squares, 0)
    np.testing.assert_allclose(g(x, 11, 1.5), numeric_grad(lambda v: least_squares(v, 11, 1.5),
                                                           x), rtol=1e-6)
    if backend == "numba":      # Numba compiles the gradient as written: no table
        assert "rt.Constants" not in g.source


def triangle_filled(l, x):
    d = x.shape[1]
    cols, rows = np.triu_indices(d, 1)     # of a size only; read by the write below
    L = np.zeros((l.shape[0], d, d))
    L[:, rows, cols] = l
    return np.sum(np.einsum("ijk,mk->mij", L, x) ** 2)


TRIANGLE = s2sgrad.grad(triangle_filled, 0)


def test_index_arrays_of_an_in_place_write_are_constants_of_the_sizes():
    """``rows``, ``cols`` are read by ``L[:, rows, cols] = l``, not written, and ``d`` sizes
    the written ``L`` but is a number (no view of it): the indices are computed once per
    ``x.shape`` (GradBench gmm: 54 us a call), and again for another ``d``."""
    rng = np.random.default_rng(8)
    for d in (4, 4, 5, 4):
        l, x = rng.normal(size=(2, d * (d - 1) // 2)), rng.normal(size=(3, d))
        np.testing.assert_allclose(TRIANGLE(l, x), numeric_grad(
            lambda v: triangle_filled(v.reshape(l.shape), x), l.ravel()).reshape(l.shape),
            rtol=1e-6, atol=1e-9)
    source = TRIANGLE.source
    body = source[source.index("_value_and_grad("):source.index("# What the function above")]
    assert "triu_indices_d1 = np.triu_indices(" not in body
    assert "np.triu_indices(" in source[source.index("# What the function above"):]
    assert _table(TRIANGLE).computed == 2       # d = 4 and 5 (4 again: its values kept)


def written_and_returned(x, n):
    base = np.zeros((n, 3))
    base[:, 0] = 1.0                       # written in place: stays in the gradient
    grid = np.arange(n)[:, None] * np.ones(3)
    return np.sum(x * (base + grid)), grid


def test_written_or_returned_arrays_stay():
    g = s2sgrad.value_and_grad(written_and_returned, 0, has_aux=True)
    x = np.ones((4, 3))
    (_, grid), dx = g(x, 4)
    body = g.source[g.source.index("_value_and_grad("):]
    assert "np.zeros((n, 3))" in body and "np.arange(n)" in body
    grid[0, 0] = 7.0                       # the user's own array: writable
    (_, again), dx2 = g(x, 4)
    assert again[0, 0] == 0.0
    np.testing.assert_allclose(dx2, np.arange(4)[:, None] + np.array([1.0, 0, 0]))


# ---------------------------------------------------------------- signs and numbers


def spelled(x, w):
    a = np.max(x)
    lse = a + np.log(np.sum(np.exp(x - a)))             # -d(x - a) summed onto a scalar
    rows = np.sum(x ** 2, axis=1)                        # unreduce(g) * 2 * x
    return lse + np.sum(rows * w) + np.sum(np.min(w[:, None] - 2 * (x @ x.T), axis=0))


def test_numbers_and_signs_go_on_the_smaller_operand(backend):
    rng = np.random.default_rng(1)
    x, w = rng.random((5, 3)), rng.random(5)
    g = s2sgrad.grad(spelled, 0)
    got = g(x, w)
    source = g.source
    assert "- rt.unbroadcast(" in source and "unbroadcast(-" not in source
    assert re.search(r"rt\.unreduce\([^()]* \* 2, x_pow2, 1, False\) \* x", source)
    assert "* -2" in source and "(-d" not in source and "= -d" not in source
    assert "rows = rt.sum(x_pow2, 1, False)" in source and "np.sum(x_pow2" not in source
    np.testing.assert_allclose(got, numeric_grad(lambda v: spelled(v, w), x), rtol=1e-6,
                               atol=1e-8)


# ---------------------------------------------------------------- einsum's layout


@pytest.mark.parametrize("spec, a_shape, b_shape", [
    ("ijk,mik->mij", (5, 6, 6), (40, 5, 6)),        # gmm's: the batch axis in the middle
    ("bij,bjk->kbi", (3, 20, 10), (3, 10, 12)),
    ("abc,cd->dba", (4, 7, 30), (30, 20)),
    ("ij,kl->ilkj", (6, 8), (10, 12)),
])
def test_einsum_products_come_back_in_c_order(spec, a_shape, b_shape):
    """A transposed view of the BLAS product makes every elementwise pass over it slow
    (gmm: 5 ms against 0.2 ms for one add): rt.einsum gives numpy's C order."""
    rng = np.random.default_rng(2)
    a, b = rng.random(a_shape), rng.random(b_shape)
    got = rt.einsum(spec, a, b)
    assert got.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(got, np.einsum(spec, a, b), rtol=1e-12)


# ---------------------------------------------------------------- short rows summed by BLAS


@pytest.mark.parametrize("shape, axes, blas", [
    ((600, 3), (1,), True), ((300, 5, 2), (1, 2), True), ((300, 4, 10), (2,), True),
    ((600, 3), (0,), True), ((300, 4, 10), (0, 1), True),   # leading axes: ones @ rows
    ((300, 4, 10), (1,), False), ((100, 3), (0,), False), ((600, 40), (1,), False)])
def test_short_trailing_rows_summed_by_blas(shape, axes, blas, monkeypatch):
    """``summed_over`` (rt.sum, rt.unbroadcast): rows of a few elements by one
    matrix-vector product with ones (numpy loops once per row there), and many rows
    summed over the leading axes by ones times them (numpy adds row after row: 10,000
    rows of 8, kmeans' centroid adjoint, 126 against 15 us), the same numbers to rounding
    and shapes as numpy's; it takes that path, and no other, where it pays."""
    x = np.random.default_rng(3).random(shape)
    calls = []
    original = np.ones
    monkeypatch.setattr(np, "ones", lambda *a, **k: calls.append(a) or original(*a, **k))
    for keepdims in (False, True):
        got = rt.summed_over(x, axes, keepdims)
        want = np.sum(x, axis=axes, keepdims=keepdims)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13)
    assert len(calls) == (2 if blas else 0)
    like = np.zeros(tuple(1 if i in axes else n for i, n in enumerate(shape)))
    np.testing.assert_allclose(rt.unbroadcast(x, like), np.sum(x, axis=axes, keepdims=True),
                               rtol=1e-13)
    ints = np.ones(shape, dtype=np.int32)               # ints: numpy's own sum, in int64
    assert rt.sum(ints, axes, False).dtype == np.sum(ints, axis=axes).dtype


def literal_weights(x):
    w = np.ones(3) * 2.0
    return np.sum(np.sin(x) * w)


def test_constants_of_literals_only_say_so():
    """A constant from numbers written in the code (no input) is named as such in the
    comments: they read ``from  only`` (an empty list of inputs)."""
    g = s2sgrad.grad(literal_weights)
    np.testing.assert_allclose(g(np.ones(3)), 2.0 * np.cos(np.ones(3)), rtol=1e-12)
    assert "from numbers written in the code only, computed once (" in g.source
    assert "from  only" not in g.source and "once per their values" not in g.source
