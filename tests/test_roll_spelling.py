"""``np.roll(a, shift)`` in code ``grad`` runs is ``rt.roll(a, shift)``
(``compiler/optimize/spelling.rolls_as_runtime``): the same values, which Numba computes
with two slice copies (``backend/numba_more._rolled``) instead of its own roll, one
element at a time through flat iterators with a modulo (15 us against 1.5 us for 10,000
float64; the held-out ode spelling with ``np.where`` + ``np.roll``: 37.8 -> 29.7 ms).
``rt.roll_adjoint`` takes the same path.  Checked: the spelling in the generated code,
the Numba roll against numpy's for every shift class and layout, and gradients through
it (central differences, numpy's bits) under grad, jit(grad) and vmap(grad).
"""
import numba
import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.testing import numerical_grad


def rolled_rhs(x, s):
    y = np.zeros_like(x)
    for _ in range(s):
        k1 = np.where(np.arange(x.shape[0]) == 0, x, x * np.roll(y, 1))
        y = y + 0.1 * k1 + 0.05 * np.roll(y, -2) * x
    return y[-1] + np.sum(np.sin(y))


def test_a_roll_in_a_loop_is_the_runtime_roll(monkeypatch):
    g = s2sgrad.grad(rolled_rhs, 0)
    x = np.linspace(0.5, 1.5, 7)
    source = s2sgrad.show(g, x, 3)
    forward = source.split("# sensitivity of the output")[0]
    assert "rt.roll(y_1, 1)" in forward and "rt.roll(y_1, -2)" in forward
    code = [line for line in source.split("\n# s2sgrad: ")[0].splitlines()
            if not line.strip().startswith("#")]        # (the comments quote the source)
    assert not any("np.roll(" in line for line in code)
    got = g(x, 3)
    assert g.backend == "numba", g.fallback_reason
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    np.testing.assert_array_equal(got, s2sgrad.grad(rolled_rhs, 0)(x, 3))
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    np.testing.assert_allclose(got, numerical_grad(rolled_rhs, (x, 3), 0), rtol=1e-7,
                               atol=1e-10)


@numba.njit
def _both(a, shift):
    return rt.roll(a, shift), rt.roll_adjoint(a, shift, None)


@pytest.mark.parametrize("shift", [-23, -10, -3, -1, 0, 1, 4, 10, 17])
@pytest.mark.parametrize("layout", ["1-d", "2-d", "strided", "empty", "one"])
def test_the_numba_roll_is_numpys(shift, layout):
    base = np.arange(20.0) * 1.5 - 3.0
    a = {"1-d": base[:10], "2-d": base.reshape(4, 5), "strided": base[::2],
         "empty": base[:0], "one": base[:1]}[layout]
    rolled, back = _both(a, shift)
    np.testing.assert_array_equal(rolled, np.roll(a, shift))
    np.testing.assert_array_equal(back, np.roll(a, -shift))
    assert rolled.shape == a.shape and back.shape == a.shape


@pytest.mark.parametrize("transform", ["jit_grad", "vmap_grad"])
def test_a_roll_under_other_transforms(transform):
    xs = np.stack([np.linspace(0.5, 1.5, 6), np.linspace(-1.0, 0.7, 6)])
    if transform == "vmap_grad":
        got = s2sgrad.vmap(s2sgrad.grad(rolled_rhs, 0), in_axes=(0, None))(xs, 3)
    else:
        g = s2sgrad.jit(s2sgrad.grad(rolled_rhs, 0))
        got = np.stack([g(x, 3) for x in xs])
    want = np.stack([numerical_grad(rolled_rhs, (x, 3), 0) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-10)
