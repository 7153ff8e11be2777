"""A while loop's counter (``j = 1`` ... ``j += 1``) is an int in the body
(``compiler/front/lower_loops.py``), as a range loop's index is.

GradBench kmeans' held-out ``while j < centroids.shape[0]`` loop read ``centroids[j]``
with ``j`` of unknown type: the row's shape, and every shape computed from it, was
unknown, so the gradient taped the row, ``points - row`` and its square for every
iteration (three 10,000 x 8 arrays a centroid) where it now takes the row again as a
view and reads the square's shape from ``points - row`` (118 -> 63 ms).  A variable that
enters as an int and does not stay one (``j = j / 2``, in a branch too) is lowered
again without the assumption.  Every spelling is checked against central differences,
under both backends and forward over reverse.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad


@pytest.fixture(params=["auto", "numba"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


def nearest_by_while(centroids, points):
    best = np.sum((points - centroids[0]) ** 2, axis=1)
    j = 1
    while j < centroids.shape[0]:
        d = np.sum((points - centroids[j]) ** 2, axis=1)
        best = np.where(d < best, d, best)
        j += 1
    return best.sum()


def halving(x, y):
    total = 0.0
    j = 8
    while j > 1:
        total = total + np.sum(np.sin(x * j) * y)
        j = j / 2          # a float from the first iteration on
    return total


def halving_in_a_branch(x, y):
    total = 0.0
    j = 0
    while j < 5:
        total = total + np.sum(np.cos(x * (j + 1)) * y)
        if total > 100.0:
            j = j + 0.5
        else:
            j = j + 1
    return total


ARGS = {nearest_by_while: lambda rng: (rng.normal(size=(4, 3)), rng.normal(size=(9, 3))),
        halving: lambda rng: (rng.normal(size=5), rng.normal(size=5)),
        halving_in_a_branch: lambda rng: (rng.normal(size=5), rng.normal(size=5))}


@pytest.mark.parametrize("fn", list(ARGS), ids=lambda f: f.__name__)
def test_gradients_of_counted_while_loops(fn, backend):
    args = ARGS[fn](np.random.default_rng(5))
    check_grad(fn, args, (0, 1))


def test_the_counter_reads_a_row_as_a_view():
    c, p = ARGS[nearest_by_while](np.random.default_rng(6))
    code = s2sgrad.show(s2sgrad.grad(nearest_by_while), c, p)
    reverse = code[code.index("for _ in range(n_iter)"):]
    assert "centroids[j]" in reverse, code            # taken again, not taped
    # j and d < best: not the row, nor the square (its shape is t4's), nor points - row
    assert "tape.append((j, d_lt_best))" in code, code


def test_an_array_op_of_loop_invariant_arrays_is_made_again_not_taped():
    """``points - centroids[j]`` reads an array the loop never changes and a view of
    another: the reversed loop makes it again (a pass over ``points``, in cache) instead
    of keeping one per iteration; forward over reverse keeps no tangent of it either."""
    c, p = ARGS[nearest_by_while](np.random.default_rng(6))
    code = s2sgrad.show(s2sgrad.grad(nearest_by_while), c, p)
    reverse = code[code.index("for _ in range(n_iter)"):]
    assert "= points - centroids_j" in reverse, code
    tangents = s2sgrad.show(s2sgrad.grad(nearest_by_while), c, p, mode="jvp")
    assert "Jacobian-vector product of nearest_by_while_grad" in tangents
    assert "j_stack" in tangents and "_stack_dot" not in tangents, tangents


def written_between(x, w):
    total = 0.0
    y = x.copy()
    for k in range(3):
        t = y * w                  # y is written below: t is taped, not made again
        y[0] = y[1] * w[0]
        total = total + np.sum(t * y)
    return total


def test_an_array_written_in_the_loop_is_not_an_invariant(backend):
    rng = np.random.default_rng(9)
    check_grad(written_between, (rng.normal(size=4), rng.normal(size=4)), (0, 1))


def test_newton_direction_of_the_while_spelling():
    c, p = ARGS[nearest_by_while](np.random.default_rng(7))
    grad = s2sgrad.grad(nearest_by_while)
    j, h = s2sgrad.jvp(grad, (c, p), (np.ones_like(c), np.zeros_like(p)))
    assert np.allclose(j, check_grad(nearest_by_while, (c, p), 0)(c, p))
    eps = 1e-6
    diff = (grad(c + eps, p) - grad(c - eps, p)) / (2 * eps)
    np.testing.assert_allclose(h, diff, rtol=1e-6, atol=1e-8)
