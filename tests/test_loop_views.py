"""Fused loops that take the array a slice or row is of (compiler/optimize/loop_views.py):
the loop reads ``x[lo + i]`` and ``w[k, i]`` where it read a view made before each call,
the guard compares the views' lengths from the base's shape and the bounds
(``rt.cut_shape``, ``rt.row_shape``), and a view nothing else reads is made only where
the statements run as numpy.  Checked: the generated code's shape, the gradient against
central differences and the numpy statements run as Python, for bounds that change
between calls of one compiled gradient (negative rows; slices that numpy clips or counts
from the end, which the guard sends to numpy), values that change between calls, and
vmap and jit of the gradient.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.testing import numerical_grad


def windows(x, w, lo, hi, k):
    total = 0.0
    for t in range(w.shape[0]):
        a = x[lo:hi]
        r = w[k]
        b = np.sin(a) * r
        c = b * a + r
        d = np.tanh(c) * b
        w[t] = w[t] * 0.5 + d
        total = total + np.sum(d * d)
    return total


def _args(seed=0, m=4):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, 9), rng.uniform(-1, 1, (3, m))


def _python(fn, args):
    import os
    os.environ["S2SGRAD_BACKEND"] = "python"
    try:
        return s2sgrad.grad(fn, (0, 1))(*args)
    finally:
        os.environ["S2SGRAD_BACKEND"] = "auto"


def _check(grad, x, w, lo, hi, k):
    args = (x, w.copy(), lo, hi, k)
    got = grad(*args)
    want = _python(windows, (x, w.copy(), lo, hi, k))
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-14)
    for position in (0, 1):
        fd = numerical_grad(lambda x_, w_: windows(x_, w_.copy(), lo, hi, k), (x, w),
                            position)
        np.testing.assert_allclose(got[position], fd, rtol=1e-6, atol=1e-9)
    return got


def test_the_loops_read_slices_and_rows_from_their_arrays():
    """Before: ``t = x[lo:hi]``, ``r = w[k]`` and the adjoint's ``dw_part = dw[k]`` made
    before each call and passed (Numba counts each one's references)."""
    x, w = _args()
    source = s2sgrad.show(s2sgrad.grad(windows, (0, 1)), x, w, 2, 6, 1)
    calls = [line.strip() for line in source.splitlines()
             if "_pass(" in line and "def " not in line]
    assert len(calls) == 2
    forward, adjoint = calls
    assert forward.startswith("t") and "(x, lo, w, k, t, hi)" in forward, forward
    assert "dw, t, x, lo" in adjoint, adjoint
    assert "rt.cut_shape(x.shape, lo, hi)" in source and "rt.row_shape(w.shape, k)" in source
    loops = "\n".join(f for f in source.split("\ndef ") if f.startswith("_"))
    assert "x[lo + i]" in loops and "w[k, i]" in loops and "dw[t, i] +=" in loops
    assert "n = hi - lo" in loops            # the forward loop's arrays are all views
    # the views nothing else reads are made only in the else (the statements as numpy)
    for line in source.splitlines():
        if line.strip() in ("a = x[lo:hi]", "dw_part = dw[t]", "w_t = w[t]"):
            assert len(line) - len(line.lstrip()) >= 12, line


def test_the_views_gradient_matches_numpy_and_central_differences():
    """One compiled gradient: row and slice bounds, sizes and values change between calls
    (a negative row is read from the end, as numpy does)."""
    grad = s2sgrad.grad(windows, (0, 1))
    x, w = _args(1)
    first = _check(grad, x, w, 2, 6, 1)
    _check(grad, x, w, 5, 9, -1)
    x2, w2 = _args(2, m=7)
    _check(grad, x2, w2, 0, 7, 2)
    again = _check(grad, x * 1.5, w, 2, 6, 1)           # new values: a new gradient
    assert not np.allclose(again[0], first[0])
    # every call ran the loops (no guard failed: the code without the numpy else)
    assert grad.backend == "numba" and grad._compiled.skips_else


@pytest.mark.parametrize("lo, hi, k", [(-6, -2, 0), (5, 20, 0), (3, 2, 0)])
def test_bounds_numpy_clips_or_counts_from_the_end_run_as_numpy(lo, hi, k):
    """``x[-6:-2]``, ``x[5:20]`` (4 elements), ``x[3:2]`` (none): ``rt.cut_shape`` is -1,
    the guard fails, and the statements run as numpy (the same gradient)."""
    x, w = _args(3, m=len(range(9)[lo:hi]))
    grad = s2sgrad.grad(windows, (0, 1))
    _check(grad, x, w, lo, hi, k)
    assert grad.backend == "numba" and not grad._compiled.skips_else   # the guard failed


def test_the_views_loops_compose_with_vmap_and_jit():
    x, w = _args(4)
    grad = s2sgrad.grad(windows, 0)
    batch = np.stack([x, -x, x * 0.25])
    mapped = s2sgrad.vmap(lambda x_: grad(x_, w.copy(), 2, 6, 1))(batch)
    jitted = s2sgrad.jit(lambda x_: grad(x_, w.copy(), 2, 6, 1) * 2.0)
    for row in range(3):
        want = numerical_grad(lambda x_: windows(x_, w.copy(), 2, 6, 1), (batch[row],), 0)
        np.testing.assert_allclose(mapped[row], want, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(jitted(batch[row]), 2.0 * want, rtol=1e-6, atol=1e-9)


def test_the_guard_s_shapes_of_views():
    shape = (9,)
    assert rt.cut_shape(shape, 2, 6) == (4,) and rt.cut_shape(shape, 3, None) == (6,)
    assert rt.cut_shape(shape, -1, None) == (-1,) and rt.cut_shape(shape, 5, 20) == (-1,)
    assert rt.cut_shape(shape, 3, 2) == (-1,)
    assert rt.row_shape((3, 4), -3) == (4,) and rt.row_shape((3, 4), 3) == (-1,)
