"""A number read from an array in a batched forward sweep (``forward/batched.py``'s
``getitem``): its batch of directions is a view of the array's batch, copied only where
the array (or anything sharing its memory) is written in place (``lowered.mutated``,
``shared_at_write``).  GradBench's ht reads 86 angles a call: ~50 us of copies.

Checked: the effect on the generated code (no copy of an array nothing writes; a copy
where a later write, direct or through a view or in a loop, would change the view), and
that every such spelling's Jacobian, Hessian, vmapped and nested Jacobian match central
differences.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import numerical_jacobian


def read_only(x):
    a, b = x[0], x[1]
    return np.array([a * b, np.sin(a), b ** 2]) * x[2:5]


def written_after(x):
    y = x * 2.0
    a = y[0]
    y[0] = 0.0              # the number read above keeps its value
    return a * y


def written_through_its_base(x):
    y = x * 2.0
    v = y[1:]
    a = v[0]
    y[1] = 5.0              # v[0] through y
    return a * y


def overwritten_in_a_loop(x):
    """Each row's first number read, then the row overwritten, then the number used:
    a view of the row's batch would give the new value's directions."""
    y = x.reshape(-1, 10).copy()
    out = np.zeros(10)
    for i in range(y.shape[0]):
        a = y[i, 0]
        y[i] = y[i] * 2.0
        out = out + y[i] * a
    return out


def read_in_a_loop(x):
    rows = x.reshape(-1, 10)
    out = np.zeros(10)
    for i in range(rows.shape[0]):
        a = rows[i, 0]
        out = out * np.cos(a) + rows[i] * a
    return out


def scalar_loop(x):
    buf = np.zeros(3)
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        buf[0] = x[i] ** 2
        a = buf[0]
        buf[0] = a * 3.0
        out[i] = a * buf[0] + x[(i + 1) % x.shape[0]]
    return out


SPELLINGS = [read_only, written_after, written_through_its_base]
LOOPS = [overwritten_in_a_loop, read_in_a_loop]


def batched_source(fn, x):
    jac = s2sgrad.jacfwd(fn)
    jac(x)
    assert "rt.basis_batch" in jac.source, "the batched sweep"
    return jac.source


def test_a_number_of_an_array_nothing_writes_is_a_view():
    source = batched_source(read_only, np.arange(1.0, 6.0))
    assert "np.copy" not in source
    assert "x0_dot = x_dot[:, 0]" in source
    x = np.arange(200.0) / 200
    assert "np.copy" not in batched_source(read_in_a_loop, x)


@pytest.mark.parametrize("fn", [written_after, written_through_its_base])
def test_a_number_of_an_array_written_later_is_copied(fn):
    assert "np.copy(" in batched_source(fn, np.arange(1.0, 6.0))
    assert "np.copy(" in batched_source(overwritten_in_a_loop, np.arange(200.0) / 200)


@pytest.mark.parametrize("fn", SPELLINGS + LOOPS + [scalar_loop], ids=lambda f: f.__name__)
def test_jacobians_match_differences(fn):
    """jacfwd batched (a loop's from 128 numbers: 200 here), jacrev's batched adjoint
    sweep (scalar loops too, reading numbers from tapes and adjoints written in place)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(200 if fn in LOOPS + [scalar_loop] else 5)
    if fn in LOOPS:
        batched_source(fn, x)
    want = numerical_jacobian(fn, (x,))
    for jac in (s2sgrad.jacfwd(fn), s2sgrad.jacrev(fn), s2sgrad.jacobian(fn)):
        np.testing.assert_allclose(jac(x), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", SPELLINGS + LOOPS + [scalar_loop], ids=lambda f: f.__name__)
def test_composed_derivatives_match_differences(fn):
    rng = np.random.default_rng(8)
    x = rng.standard_normal(40 if fn in LOOPS else 6)

    def energy(x):
        return np.sum(fn(x) ** 2)
    np.testing.assert_allclose(s2sgrad.hessian(energy)(x), numerical_jacobian(
        s2sgrad.grad(energy), (x,)), rtol=1e-5, atol=1e-6)
    nested = s2sgrad.jacfwd(s2sgrad.jacfwd(fn))(x)
    np.testing.assert_allclose(nested, numerical_jacobian(s2sgrad.jacfwd(fn), (x,)),
                               rtol=1e-5, atol=1e-6)
    xs = rng.standard_normal((3, x.shape[0]))
    batched = s2sgrad.vmap(s2sgrad.jacfwd(fn))(xs)
    for row, x in zip(batched, xs):
        np.testing.assert_allclose(row, numerical_jacobian(fn, (x,)), rtol=1e-6, atol=1e-7)
