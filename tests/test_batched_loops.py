"""Batched forward-mode Jacobians of code with loops: every column in one sweep, the
directions carried through the loops (``compiler/forward/batched.py``), run as numpy or
compiled by Numba (``backend/numba_batched.py``).

A class of loop programs: an array carried through a ``for`` loop, a ``while`` loop, a
``break``, a list of tangents appended in a loop and read by index, a matrix literal of
scalars written item by item, ``@`` of a stack with a matrix on either side, an item
write, a branch in the loop, an index array and a ravel (GradBench's ht in small).  Each
Jacobian is built batched (the object says so) and equals central finite differences in
float64, as numpy (``S2SGRAD_BACKEND=python``; the auto policy over large arrays) and
compiled by Numba (``S2SGRAD_BACKEND=numba``); it stays right when the sizes change after
the first call and when the directions are split over several sweeps.  Loops over small
arrays (auto policy), a loop of scalar work and a loop-carried value whose rank changes
run one pass per direction and say why.  Compositions: ``jacfwd`` of the batched
``jacfwd``, ``jacfwd(jacrev(f))`` of a loop function, ``vmap`` of the batched ``jacfwd``.
"""
import re

import numpy as np
import pytest

import s2sgrad
from s2sgrad.runtime import batched as rt_batched

PARENTS = (-1, 0, 1, 0)


def rotation(a, b):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s * b, 0.0], [s, c, b], [0.0, 0.0, 1.0]])


def hand(theta, parents, points, weights, picks):
    """ht in small: a chain of bones, each a rotation by two parameters, then every
    point moved by each bone's transform, weighted."""
    absolutes = []
    for i in range(len(parents)):
        tr = np.eye(3)
        tr[:2, :2] = rotation(theta[2 * i], theta[2 * i + 1])[:2, :2] * 1.5
        if parents[i] == -1:
            absolutes.append(tr)
        else:
            absolutes.append(absolutes[parents[i]] @ tr)
    moved = np.zeros((points.shape[0], 2))
    for i in range(len(parents)):
        step = points @ absolutes[i].T
        moved = moved + weights[:, i:i + 1] * step[:, :2]
    scale = 1.0
    while scale < 3.0:
        moved = np.sin(moved) * 0.5 + moved
        scale = scale * 2.0
    return (moved[picks] - points[picks, :2]).ravel()


def chain(theta, points):
    """Rotations made in a loop, kept in a list, applied in a second loop."""
    mats = []
    for i in range(theta.shape[0]):
        c, s = np.cos(theta[i]), np.sin(theta[i])
        mats.append(np.array([[c, -s], [s, c]]) * theta[i])
    moved = points * 1.0
    for i in range(theta.shape[0]):
        moved = np.sin(moved @ mats[i].T) + points
    return moved.ravel()


def carried(x, y):
    s = x * 1.0
    for k in range(4):
        s = np.tanh(s * y) + x
        if k == 2:
            break
    return s * y


def looped(x):
    s = x * 1.0
    for _ in range(3):
        s = np.sin(s) + x
    return s


def looped_energy(x):
    return np.sum(looped(x) ** 2)


def scalar_work(x):
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(h * 0.5 + x[i])
    return x * h


def rank_changes(x):
    s = 0.0
    for i in range(3):
        s = s + x * i
    return s


THETA = np.array([0.3, -0.5, 0.8])
POINTS = np.array([[0.2, -1.1], [0.7, 0.4], [-0.3, 0.9], [1.2, -0.6]])
X = np.array([0.3, -0.7, 1.1, 0.4])
Y = np.array([0.9, 0.5, -1.2, 0.8])


def hand_args(n, picks=5, seed=0, parents=PARENTS):
    """(theta, (parents, points, weights, picks)) of a small hand of ``parents``' bones."""
    rng = np.random.default_rng(seed)
    points = np.ones((n, 3))
    points[:, :2] = rng.normal(size=(n, 2))
    weights = rng.random((n, len(parents)))
    weights /= weights.sum(axis=1, keepdims=True)
    theta = rng.normal(size=2 * len(parents)) * 0.5
    return theta, (np.array(parents), points, weights, rng.integers(0, n, size=picks))


def central_differences(f, args, k=0, eps=1e-6):
    """d f / d args[k], out.shape + in.shape, by central differences."""
    base = np.asarray(args[k], dtype=float)
    out = np.asarray(f(*args))
    jac = np.zeros(out.shape + base.shape)
    for idx in np.ndindex(base.shape):
        step = np.zeros_like(base)
        step[idx] = eps
        hi, lo = list(args), list(args)
        hi[k], lo[k] = base + step, base - step
        jac[(...,) + idx] = (np.asarray(f(*hi)) - np.asarray(f(*lo))) / (2 * eps)
    return jac


def test_loops_over_large_arrays_run_one_batched_numpy_sweep():
    """The auto backend: an argument of at least ``LOOP_BATCH_NUMBERS`` numbers, no
    compile; the sizes change after the first call."""
    jac = s2sgrad.jacfwd(hand)
    theta, rest = hand_args(100)
    got = jac(theta, *rest)
    assert jac.last is jac.batched and jac.backend == "numpy", jac.fallback_reason
    source = jac.source
    assert "rt.basis_batch(" in source and "for k in range" not in source
    assert "rt.array_batch" not in source and "[:, 1, 0] = " in source  # item by item
    np.testing.assert_allclose(got, central_differences(hand, (theta, *rest)),
                               rtol=1e-6, atol=1e-7)
    theta, rest = hand_args(90, picks=3, seed=1)
    again = jac(theta, *rest)
    assert again.shape == (6, theta.size) and jac.last is jac.batched
    np.testing.assert_allclose(again, central_differences(hand, (theta, *rest)),
                               rtol=1e-6, atol=1e-7)


def test_a_loop_adding_products_of_a_batch_runs_in_long_passes():
    """ht's second loop (``moved = moved + weights[:, i:i + 1] * (points @ T.T)[:, :2]``):
    the product of a matrix and a batch of matrices is one BLAS call
    (``rt.matmul_batch``), the steps' weighted products are one product after the loop
    (``rt.ProductSum``), and a batch of a few columns of many rows is laid out column by
    column, so that numpy's passes run along the rows; the Jacobian equals differences
    whichever layout the sizes give."""
    jac = s2sgrad.jacfwd(hand)
    theta, rest = hand_args(40)
    got = jac(theta, *rest)
    assert jac.last is jac.batched, jac.fallback_reason
    lines = [line.strip() for line in jac.source.splitlines() if not
             line.strip().startswith("#")]
    # the weighted products of the steps (only the 2 columns read) are one BLAS call
    # after the loop (rt.ProductSum: tests/test_product_sums.py), sharing the weighted
    # points with the value's sum
    assert any(re.fullmatch(r"moved_\w*dot_sum.add_as\(moved_\w*sum, \w+_dot, "
                            r"np.s_\[:, :, :2\]\)", line) for line in lines)
    np.testing.assert_allclose(got, central_differences(hand, (theta, *rest)),
                               rtol=1e-6, atol=1e-7)
    few = rt_batched.zeros_batch(np.zeros((40, 2)), 3)
    assert few.shape == (3, 40, 2) and few.strides[1] < few.strides[2]   # by columns
    wide = rt_batched.zeros_batch(np.zeros((4, 40)), 3)
    assert wide.flags.c_contiguous
    rng = np.random.default_rng(5)
    for m, n in ((40, 3), (3, 40), (6, 6)):              # both layouts of the product
        a, b = rng.normal(size=(m, 4)), rng.normal(size=(5, n, 4))
        np.testing.assert_allclose(rt_batched.matmul_batch(a, np.swapaxes(b, 1, 2)),
                                   a @ np.swapaxes(b, 1, 2), rtol=1e-13, atol=1e-13)
    theta, rest = hand_args(6, seed=3)                   # rows first now: still right
    np.testing.assert_allclose(jac(theta, *rest), central_differences(hand, (theta, *rest)),
                               rtol=1e-6, atol=1e-7)


def test_the_numba_backend_compiles_the_batched_sweep_of_a_loop(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    jac = s2sgrad.jacfwd(carried)
    got = jac(X, Y)
    assert jac.last is jac.batched and jac.backend == "numba", jac.fallback_reason
    np.testing.assert_allclose(got, central_differences(carried, (X, Y)), rtol=1e-6,
                               atol=1e-7)
    again = jac(X[:3], Y[:3])                 # other sizes, the same compiled code
    np.testing.assert_allclose(again, central_differences(carried, (X[:3], Y[:3])),
                               rtol=1e-6, atol=1e-7)


def test_numba_versions_of_what_batched_code_writes():
    """``@`` of a stack of matrices on either side, with a vector, of two stacks, and
    ``np.stack`` of a list of matrices along axis 1, ``rt.matmul_batch`` and
    ``rt.batch_matmul``, as numpy computes them (one compile)."""
    numba = pytest.importorskip("numba")
    from s2sgrad.backend import numba_batched  # noqa: F401  (registers the versions)

    @numba.njit
    def products(m, stack, v, rows):
        return (m @ stack, stack @ m, stack @ v, v @ stack, stack @ stack,
                np.stack(rows, axis=1), rt_batched.matmul_batch(m, stack),
                rt_batched.batch_matmul(stack, m))
    rng = np.random.default_rng(3)
    m, stack, v = rng.normal(size=(3, 3)), rng.normal(size=(4, 3, 3)), rng.normal(size=3)
    rows = [rng.normal(size=(4, 3)) for _ in range(2)]
    stack_t = np.transpose(stack, (0, 2, 1))              # a view, as batched code has
    expected = (m @ stack_t, stack_t @ m, stack_t @ v, v @ stack_t, stack_t @ stack_t,
                np.stack(rows, axis=1), m @ stack_t, stack_t @ m)
    for got, want in zip(products(m, stack_t, v, rows), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, args", [(hand, None), (chain, (THETA, POINTS)),
                                     (carried, (X, Y)), (looped, (X,))],
                         ids=["hand", "chain", "carried", "looped"])
def test_batched_loops_as_numpy_equal_finite_differences(monkeypatch, f, args):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    if args is None:
        theta, rest = hand_args(5, seed=2)
        args = (theta, *rest)
    jac = s2sgrad.jacfwd(f)
    got = jac(*args)
    assert jac.last is jac.batched, jac.fallback_reason
    np.testing.assert_allclose(got, central_differences(f, args), rtol=1e-6, atol=1e-7)
    monkeypatch.setattr(rt_batched, "BATCH_NUMBERS", 3 * int(np.size(args[0])))
    np.testing.assert_array_equal(jac(*args), got)        # in sweeps of 3 directions


def test_loops_over_small_arrays_run_compiled_passes_per_direction():
    jac = s2sgrad.jacfwd(looped)
    got = jac(X)
    assert jac.last is jac.forward and "loops over small arrays" in jac.fallback_reason
    np.testing.assert_allclose(got, central_differences(looped, (X,)), rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("f, why", [(scalar_work, "a loop of scalar work"),
                                    (rank_changes, "changes rank in a loop")])
def test_loops_without_a_batched_sweep_run_per_direction(monkeypatch, f, why):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    jac = s2sgrad.jacfwd(f)
    got = jac(X)
    assert jac.last is jac.forward and why in jac.fallback_reason
    np.testing.assert_allclose(got, central_differences(f, (X,)), rtol=1e-6, atol=1e-7)


def test_compositions_of_a_batched_loop_jacobian(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    jac = s2sgrad.jacfwd(looped)
    first = jac(X)
    assert jac.last is jac.batched
    # jacfwd of the batched jacfwd: the second derivative, against differences of it
    second = s2sgrad.jacfwd(jac)(X)
    np.testing.assert_allclose(second, central_differences(jac, (X,)), rtol=1e-6,
                               atol=1e-7)
    # a Hessian as jacfwd(jacrev(f)) of a loop function
    energy = s2sgrad.jacrev(looped_energy)
    hessian = s2sgrad.jacfwd(energy)(X)
    np.testing.assert_allclose(hessian, central_differences(energy, (X,)), rtol=1e-6,
                               atol=1e-7)
    # vmap of the batched jacfwd: one Jacobian per row
    rows = np.stack([X, X[::-1] * 0.5])
    mapped = s2sgrad.vmap(jac)(rows)
    np.testing.assert_allclose(mapped[0], first, rtol=1e-12)
    np.testing.assert_allclose(mapped[1], jac(rows[1]), rtol=1e-12)
