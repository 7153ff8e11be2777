"""Adjoint arrays updated element by element in a loop are copied once, before the loop,
never per iteration (issue 9: a stencil's reverse sweep copied the whole adjoint array at
every element), and the gradients stay those of finite differences."""
import gast
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def stencil_copy_at_top(u0, k):
    u = u0.copy()
    for step in range(4):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un
    return np.sum(u ** 2)


def stencil_copy_after(u0, k):
    u = u0.copy()
    un = u0.copy()
    for step in range(4):
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un.copy()
    return np.sum(u ** 2)


def stencil_2d(u0, k):
    u = u0.copy()
    for step in range(3):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                un[i, j] = u[i, j] + k * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                          + u[i, j + 1] - 4.0 * u[i, j])
        u = un
    return np.sum(u ** 2)


def prefix_products(x):
    y = x.copy()
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] * x[i]
    return np.sum(y)


def scatter_in_while(x, w):
    acc = np.zeros(3)
    i = 0
    while i < x.shape[0]:
        acc[i % 3] = acc[i % 3] + w * x[i]
        i += 1
    return np.sum(acc ** 2)


def alias_inside_loop(x, w):
    # the adjoint of y is shared with z's in every iteration: the copy must stay inside
    y = x.copy()
    total = 0.0
    for i in range(x.shape[0]):
        z = y
        y[i] = z[i] * w
        total = total + np.sum(z * y)
    return total


def stencil_two_arrays(u0, k):
    # two states, one copied with np.copy, the second update reading the first's new value
    u = u0.copy()
    v = u0 * 0.5
    for step in range(3):
        un = u.copy()
        vn = np.copy(v)
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + k * (v[i - 1] - v[i + 1])
            vn[i] = v[i] + k * (un[i] - u[i])
        u = un
        v = vn
    return np.sum(u ** 2) + np.sum(v)


def stencil_with_boundary(u0, k):
    # the copy's adjoint meets a write outside the inner loop (a boundary condition)
    u = u0.copy()
    for step in range(3):
        un = np.array(u)
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        un[0] = un[1]
        u = un
    return np.sum(u ** 3)


PROGRAMS = [
    (stencil_copy_at_top, lambda r: (r.random(9), 0.2)),
    (stencil_copy_after, lambda r: (r.random(9), 0.2)),
    (stencil_2d, lambda r: (r.random((6, 5)), 0.1)),
    (prefix_products, lambda r: (r.random(7) + 0.5,)),
    (scatter_in_while, lambda r: (r.random(8), 0.7)),
    (alias_inside_loop, lambda r: (r.random(5), 0.9)),
    (stencil_two_arrays, lambda r: (r.random(8), 0.3)),
    (stencil_with_boundary, lambda r: (r.random(8), 0.2)),
]
STENCILS = PROGRAMS[:3] + PROGRAMS[-2:]


@pytest.mark.parametrize("fn, make", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_gradients_match_differences(fn, make):
    args = make(np.random.default_rng(3))
    check_grad(fn, args, grad_position=tuple(range(len(args))))


def copies_in(node):
    return [n for n in gast.walk(node) if isinstance(n, gast.Call)
            and isinstance(n.func, gast.Attribute) and n.func.attr == "copy"
            and isinstance(n.func.value, gast.Name) and n.func.value.id == "np"]


@pytest.mark.parametrize("fn, make", PROGRAMS[:3], ids=[p[0].__name__ for p in PROGRAMS[:3]])
def test_no_adjoint_copy_in_the_innermost_reversed_loop(fn, make):
    g = s2sgrad.value_and_grad(fn, (0, 1))
    g(*make(np.random.default_rng(0)))
    tree = gast.parse(g.source)
    loops = [n for n in gast.walk(tree) if isinstance(n, gast.For)]
    innermost = [loop for loop in loops
                 if not any(isinstance(n, gast.For) for b in loop.body for n in gast.walk(b))]
    # forward and reverse innermost loops: none copies an array per element
    assert innermost and not any(copies_in(loop) for loop in innermost), g.source


@pytest.mark.parametrize("fn, make", STENCILS, ids=[p[0].__name__ for p in STENCILS])
def test_no_adjoint_copy_in_any_reversed_loop(fn, make):
    """The state's adjoint of a time step takes the next step's array (``dun = du``, and
    ``du`` gets fresh zeros): no copy per time step either, one at most before the loop."""
    g = s2sgrad.value_and_grad(fn, (0, 1))
    g(*make(np.random.default_rng(0)))
    lines = g.source.splitlines()
    start = next(n for n, line in enumerate(lines, 1) if "sensitivity of the output" in line)
    loops = [n for n in gast.walk(gast.parse(g.source)) if isinstance(n, gast.For)
             and n.lineno > start]
    assert loops and not any(copies_in(loop) for loop in loops), g.source


def test_the_2d_stencil_cell_is_recomputed_not_taped():
    """The reversed cell reads its neighbours again (14 loads and flops) rather than a
    value the forward sweep stored: only the loops' trip counts go on tapes."""
    g = s2sgrad.grad(stencil_2d, (0, 1))
    g(np.random.default_rng(0).random((6, 5)), 0.1)
    assert "np.float64)" not in g.source and "n_iter_2_tape" in g.source, g.source


def test_moved_adjoints_compile_with_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = s2sgrad.grad(stencil_two_arrays, (0, 1))
    args = (np.random.default_rng(5).random(8), 0.3)
    result = g(*args)
    assert g.backend == "numba", g.fallback_reason
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    expected = s2sgrad.grad(stencil_two_arrays, (0, 1))(*args)
    for got, want in zip(result, expected):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grad(stencil_two_arrays, args, grad_position=(0, 1))


def alias_then_write(u0, k):
    u = u0.copy()
    for step in range(3):
        v = u
        for i in range(1, u.shape[0]):
            u[i] = v[i - 1] * k + np.sin(v[i])
    return np.sum(u ** 2)


def keep_old_then_copy(u0, k):
    u = u0.copy()
    for step in range(3):
        un = u
        u = u.copy()
        for i in range(1, u.shape[0] - 1):
            u[i] = un[i] * k + np.sin(un[i + 1]) * u[i - 1]
    return np.sum(u ** 2)


def sweep_in_place(u0, k):
    u = u0.copy()
    for step in range(3):
        for i in range(1, u.shape[0]):
            u[i] = u[i - 1] * k + np.sin(u[i])
    return np.sum(u ** 2)


@pytest.mark.parametrize("fn", [alias_then_write, keep_old_then_copy, sweep_in_place])
def test_in_place_updates_through_aliases_match_finite_differences(fn):
    check_grad(fn, (np.random.default_rng(3).random(7), 0.7), grad_position=(0, 1))


def test_old_values_are_saved_only_where_the_adjoint_reads_them():
    """A fresh copy written element by element whose old values no adjoint statement reads
    (the stencil's ``un``) is not saved and restored; an array the adjoint reads again
    after writing it in place (a sweep over ``u`` itself) is."""
    args = (np.random.default_rng(4).random(9), 0.1)
    for fn, saved in ((stencil_copy_at_top, False), (stencil_2d, False),
                      (sweep_in_place, True)):
        x = args[0] if fn is not stencil_2d else np.random.default_rng(4).random((5, 5))
        g = s2sgrad.grad(fn, (0, 1))
        g(x, args[1])
        assert ("_saved" in g.source) is saved, g.source
