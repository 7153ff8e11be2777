"""Loop programs of the held-out benchmark classes (benchmarks/bench_heldout.py): what the
generated code must not do, and gradients against central finite differences under both
backends (Numba and plain Python).

- An adjoint array written element by element inside a branch of a loop is copied once,
  before the loop (not per element: the upwind stencil copied ``dun`` at every cell).
- Arrays a loop carries keep their rank and dimensions that are not 1 (checked; lowered
  again without the assumption where they do not): ``y = y + h * f(y)`` needs no
  ``rt.unbroadcast`` in its adjoint, nor the temporaries it read the shapes of.
- Scalars read from arrays the function makes (``np.zeros``, ``np.zeros_like``, ``@``,
  ``np.concatenate``) or computed by ``math`` functions go on typed array tapes, not
  lists (the n-body forces taped 14 Python floats per pair on lists).
"""
import ast
import math

import gast
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad


@pytest.fixture(params=["numba", "python"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


@pytest.fixture
def source_only(monkeypatch):
    """Tests that read the generated code (their programs' gradients are checked under
    both backends elsewhere in this file) build it without compiling it."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


# ------------------------------------------------------------ writes inside branches

def upwind_if_else(u0, vel):
    u = u0.copy()
    for step in range(3):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            if vel[i] > 0.0:
                un[i] = u[i] - 0.4 * vel[i] * (u[i] - u[i - 1])
            else:
                un[i] = u[i] - 0.4 * vel[i] * (u[i + 1] - u[i])
        u = un
    return np.sum(u * u)


def write_in_one_branch(u0, vel):
    u = u0.copy()
    for step in range(3):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            if vel[i] > 0.0:
                un[i] = u[i] * vel[i] + u[i - 1]
        u = un
    return np.sum(u * u)


def write_in_elif_chain(u0, vel):
    u = u0.copy()
    for step in range(2):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            if vel[i] > 0.5:
                un[i] = u[i] - vel[i] * u[i - 1]
            elif vel[i] < -0.5:
                un[i] = u[i] + vel[i] * u[i + 1]
            else:
                un[i] = 0.5 * u[i] * vel[i]
        u = un
    return np.sum(u * u)


def write_in_branch_2d(u0, vel):
    u = u0.copy()
    for step in range(2):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                if vel[i, j] > 0.0:
                    un[i, j] = u[i, j] + vel[i, j] * (u[i - 1, j] - u[i, j - 1])
        u = un
    return np.sum(u * u)


BRANCH_WRITES = [
    (upwind_if_else, lambda r: (r.normal(size=9), r.normal(size=9))),
    (write_in_one_branch, lambda r: (r.normal(size=9), r.normal(size=9))),
    (write_in_elif_chain, lambda r: (r.normal(size=9), r.normal(size=9))),
    (write_in_branch_2d, lambda r: (r.normal(size=(5, 6)), r.normal(size=(5, 6)))),
]


def _copies(node):
    return [n for n in gast.walk(node) if isinstance(n, gast.Call)
            and isinstance(n.func, gast.Attribute) and n.func.attr == "copy"
            and isinstance(n.func.value, gast.Name) and n.func.value.id == "np"]


def _innermost_loops(source):
    loops = [n for n in gast.walk(gast.parse(source)) if isinstance(n, gast.For)]
    return [loop for loop in loops
            if not any(isinstance(n, gast.For) for b in loop.body for n in gast.walk(b))]


@pytest.mark.parametrize("fn, make", BRANCH_WRITES, ids=[p[0].__name__ for p in BRANCH_WRITES])
def test_branch_writes_copy_the_adjoint_once_and_match_differences(fn, make, backend):
    g = check_grad(fn, make(np.random.default_rng(5)), grad_position=(0, 1))
    innermost = _innermost_loops(g.source)
    assert innermost and not any(_copies(loop) for loop in innermost), g.source
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


# ------------------------------------------------------------ typed tapes

def pair_forces(pos):
    x = pos.copy()
    f = np.zeros_like(x)
    n = x.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            dx = x[j, 0] - x[i, 0]
            dy = x[j, 1] - x[i, 1]
            r2 = dx * dx + dy * dy + 0.1
            inv = 1.0 / (r2 * np.sqrt(r2))
            f[i, 0] += dx * inv
            f[i, 1] += dy * inv
            f[j, 0] -= dx * inv
            f[j, 1] -= dy * inv
    return np.sum(f * f)


def rows_with_math(W, xs):
    H = W.shape[0]
    h = np.zeros(H)
    for t in range(xs.shape[0]):
        hn = np.zeros((H,))
        for i in range(H):
            a = xs[t, i]
            for j in range(H):
                a += W[i, j] * h[j]
            hn[i] = math.tanh(a)
        h = hn
    return np.sum(h)


def carried_from_products(A, y0):
    y = np.concatenate((y0, y0))
    total = 0.0
    for step in range(3):
        y = A @ y - 0.1 * y
        for i in range(y.shape[0]):
            total = total + math.exp(-y[i] * y[i])
    return total


TYPED = [
    (pair_forces, lambda r: (r.normal(size=(6, 2)),)),
    (rows_with_math, lambda r: (r.normal(size=(4, 4)) / 2, r.normal(size=(3, 4)))),
    (carried_from_products, lambda r: (r.normal(size=(6, 6)) / 3, r.normal(size=3))),
]


@pytest.mark.parametrize("fn, make", TYPED, ids=[p[0].__name__ for p in TYPED])
def test_scalars_of_made_arrays_go_on_typed_tapes(fn, make, backend):
    args = make(np.random.default_rng(6))
    g = check_grad(fn, args, grad_position=tuple(range(len(args))))
    # the innermost loops tape scalars only: none of them on a list
    for loop in _innermost_loops(g.source):
        pops = [n for n in gast.walk(loop) if isinstance(n, gast.Attribute) and n.attr == "pop"]
        assert not pops, g.source
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


# ------------------------------------------------------------ array state through loops

def euler_arrays(A, y0):
    y = y0.copy()
    for step in range(4):
        y = y + 0.1 * (A @ y - y ** 3)
    return np.sum(y ** 2)


def verlet_arrays(k, x0, v0):
    x = x0.copy()
    v = v0.copy()
    a = -k * x - x ** 3
    for step in range(4):
        v = v + 0.05 * a
        x = x + 0.1 * v
        a = -k * x - x ** 3
        v = v + 0.05 * a
    return np.sum(x * x) + np.sum(v * v)


def broadcast_in_loop(x, b):
    total = 0.0
    for step in range(3):
        total = total + np.sum(np.tanh(x * step + b))
    return total


def collapses(x, w):
    # y is (n,) on entry and (1,) after the first iteration: y * x broadcasts y then
    y = x.copy()
    total = 0.0
    for k in range(3):
        total = total + np.sum(y * x * w)
        y = np.sum(y, keepdims=True) * 0.5
    return total


def grows(x):
    y = x.copy()
    total = 0.0
    for k in range(2):
        total = total + np.sum(np.sin(y) * y)
        y = np.concatenate((y, 0.5 * y))
    return total


ARRAY_STATE = [
    (euler_arrays, lambda r: (r.normal(size=(5, 5)) / 3, r.normal(size=5))),
    (verlet_arrays, lambda r: (1.5, r.normal(size=6), r.normal(size=6))),
    (broadcast_in_loop, lambda r: (r.normal(size=(3, 4)), r.normal(size=4))),
    (collapses, lambda r: (r.normal(size=4), 0.7)),
    (grows, lambda r: (r.normal(size=3),)),
]


@pytest.mark.parametrize("fn, make", ARRAY_STATE, ids=[p[0].__name__ for p in ARRAY_STATE])
def test_array_state_through_loops_matches_differences(fn, make, backend):
    args = make(np.random.default_rng(8))
    g = check_grad(fn, args, grad_position=tuple(range(len(args))))
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


def _reversed_loop(source):
    """The adjoint sweep's loop (the last top-level for loop of the function)."""
    fn = gast.parse(source).body[-1]
    return [s for s in fn.body if isinstance(s, gast.For)][-1]


@pytest.mark.parametrize("fn, make", ARRAY_STATE[:2], ids=[p[0].__name__ for p in ARRAY_STATE[:2]])
def test_elementwise_array_updates_need_no_unbroadcast_nor_their_temporaries(fn, make,
                                                                               source_only):
    """``y = y + h * f(y)`` on arrays of no unit dimension: in the reversed loop no
    ``rt.unbroadcast`` (no operand was broadcast), so no temporary is kept for its shape."""
    args = make(np.random.default_rng(8))
    g = s2sgrad.value_and_grad(fn, tuple(range(len(args))))
    g(*args)
    loop = _reversed_loop(g.source)
    likes = [n.args[1].id for n in gast.walk(loop) if isinstance(n, gast.Call)
             and isinstance(n.func, gast.Attribute) and n.func.attr == "unbroadcast"]
    # only Verlet's scalar -k is summed down to (a scalar broadcast over x; the loop's
    # -k repeats the description neg_k of the one before it, so it has a t<n> name)
    assert all(f"{like} = -k" in g.source for like in likes), g.source
    # what the reversed iteration pops: the loop-carried arrays (and, for Verlet, the
    # intermediate v), not the temporaries t1, t2... of each line
    popped = [n for n in gast.walk(loop) if isinstance(n, gast.Attribute) and n.attr == "pop"]
    assert len(popped) <= 4, g.source


def test_a_carried_array_that_collapses_to_one_element_keeps_its_unbroadcast(source_only):
    """``collapses``'s y does not keep its shape: nothing is assumed of it, and the
    adjoint of ``y * x`` sums over what y was broadcast along."""
    g = s2sgrad.value_and_grad(collapses, (0, 1))
    g(np.random.default_rng(1).normal(size=4), 0.7)
    loop = ast.unparse(gast.gast_to_ast(_reversed_loop(g.source)))
    assert "rt.unbroadcast(" in loop, g.source


# ------------------------------------------------------------ recomputation budget

def wave_point(u0, c):
    # a 2-D stencil point of 14 operations (index arithmetic included)
    u_prev = u0.copy()
    u = u0.copy()
    for step in range(2):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
                un[i, j] = 2.0 * u[i, j] - u_prev[i, j] + c * lap
        u_prev = u
        u = un
    return np.sum(u ** 2)


def long_chain(x, a):
    # r is a short chain; s a chain of ~60 operations, past the recomputation budget
    total = 0.0
    for i in range(1, x.shape[0]):
        r = x[i] - x[i - 1]
        s = ((((r * a + 1.0) * a + 2.0) * a + 3.0) * a + 4.0) * a + 5.0
        s = ((((s * a + 1.0) * a + 2.0) * a + 3.0) * a + 4.0) * a + 5.0
        s = ((((s * a + 1.0) * a + 2.0) * a + 3.0) * a + 4.0) * a + 5.0
        s = ((((s * a + 1.0) * a + 2.0) * a + 3.0) * a + 4.0) * a + 5.0
        s = ((((s * a + 1.0) * a + 2.0) * a + 3.0) * a + 4.0) * a + 5.0
        s = ((((s * a + 1.0) * a + 2.0) * a + 3.0) * a + 4.0) * a + 5.0
        total = total + r * r * s
    return total


def _taped(source):
    """The names pushed on tapes in the forward sweep."""
    return {n.args[2].id for n in gast.walk(gast.parse(source)) if isinstance(n, gast.Call)
            and isinstance(n.func, gast.Attribute) and n.func.attr == "push"
            and isinstance(n.args[2], gast.Name)}


def test_a_stencil_point_is_recomputed_not_taped(backend):
    g = check_grad(wave_point, (np.random.default_rng(9).normal(size=(5, 6)), 0.2),
                   grad_position=(0, 1))
    assert "lap" not in _taped(g.source), g.source


def test_past_the_budget_the_short_chains_are_still_recomputed(backend):
    g = check_grad(long_chain, (np.random.default_rng(9).normal(size=6), 0.3),
                   grad_position=(0, 1))
    taped = _taped(g.source)
    assert "r" not in taped and taped, g.source


# ------------------------------------------------------------ products accumulated in place

def rnn_matvec(W, U, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h * h)


def rnn_vecmat(W, xs):
    h = np.zeros(W.shape[1])
    for t in range(xs.shape[0]):
        h = np.tanh(h @ W + xs[t])
    return np.sum(h)


def rnn_np_dot(W, U, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(np.dot(W, h) + U.dot(xs[t]))
    return np.sum(h * h)


def batch_matmul(W, X):
    total = 0.0
    for k in range(X.shape[0]):
        total = total + np.sum(np.sin(X[k] @ W))
    return total


PRODUCTS = [
    (rnn_matvec, lambda r: (r.normal(size=(4, 4)) / 3, r.normal(size=(4, 2)),
                            r.normal(size=(3, 2))),
     ("add_matmul_left",)),
    (rnn_vecmat, lambda r: (r.normal(size=(3, 3)) / 3, r.normal(size=(4, 3))),
     ("add_matmul_right",)),
    (batch_matmul, lambda r: (r.normal(size=(3, 2)), r.normal(size=(2, 4, 3))),
     ("add_matmul_right",)),
    (rnn_np_dot, lambda r: (r.normal(size=(4, 4)) / 3, r.normal(size=(4, 2)), r.normal(size=(3, 2))),
     ("add_dot_left",)),
]


@pytest.mark.parametrize("fn, make, helpers", PRODUCTS, ids=[p[0].__name__ for p in PRODUCTS])
def test_weight_adjoints_accumulate_products_in_place(fn, make, helpers, backend):
    """``dW += rt.matmul_left(g, W, h)`` in a reversed loop is the in-place
    ``rt.add_matmul_left(dW, g, W, h)`` (an outer product added element by element under
    Numba), and the gradients are those of finite differences."""
    args = make(np.random.default_rng(10))
    g = check_grad(fn, args, grad_position=tuple(range(len(args))))
    for helper in helpers:
        assert f"rt.{helper}(" in g.source, g.source
    assert "+= rt.matmul_" not in g.source and "+= rt.dot_" not in g.source, g.source
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


# ------------------------------------------------------------ shapes of made and joined arrays

def gru_cell(Wz, Wh, xs):
    H = Wz.shape[0]
    h = np.zeros(H)
    for t in range(xs.shape[0]):
        hx = np.concatenate((h, xs[t]))
        z = 1.0 / (1.0 + np.exp(-(Wz @ hx)))
        hc = np.tanh(Wh @ np.concatenate((z * h, xs[t])))
        h = (1.0 - z) * h + z * hc
    return np.sum(h * h)


def made_from_shape(x):
    acc = np.zeros(x.shape)
    for k in range(3):
        acc = acc * 0.5 + np.sin(x + acc)
    return np.sum(acc)


@pytest.mark.parametrize("fn, make", [
    (gru_cell, lambda r: (r.normal(size=(3, 5)) / 2, r.normal(size=(3, 5)) / 2,
                          r.normal(size=(4, 2)))),
    (made_from_shape, lambda r: (r.normal(size=(3, 2)),)),
], ids=["gru_cell", "made_from_shape"])
def test_made_and_joined_arrays_need_no_unbroadcast_in_the_loop(fn, make, backend):
    """``np.zeros(H)`` (H read from a shape), ``np.zeros(x.shape)`` and
    ``np.concatenate((h, x))`` have known shapes with no unit dimension: their loops'
    elementwise adjoints carry no ``rt.unbroadcast``."""
    args = make(np.random.default_rng(11))
    g = check_grad(fn, args, grad_position=tuple(range(len(args))))
    loop = ast.unparse(gast.gast_to_ast(_reversed_loop(g.source)))
    assert "unbroadcast" not in loop, g.source
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


def test_a_made_array_of_one_element_keeps_its_unbroadcast(source_only):
    def one_element(x):
        acc = np.zeros(1)
        for k in range(2):
            acc = acc + np.sin(x * acc + x)
        return np.sum(acc)
    g = check_grad(one_element, (np.random.default_rng(2).normal(size=3),))
    assert "unbroadcast" in ast.unparse(gast.gast_to_ast(_reversed_loop(g.source))), g.source


# ------------------------------------------------------------ slices

def heat_with_slices(u0, k):
    u = u0.copy()
    for step in range(3):
        un = u.copy()
        un[1:-1] = u[1:-1] + k * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        u = un
    return np.sum(u ** 2)


def shrinking_window(x):
    # y loses an element per iteration: its slices' lengths change between iterations
    y = x.copy()
    total = 0.0
    for k in range(3):
        z = y[1:] * y[:-1]
        total = total + np.sum(z * y[1:])
        y = y[1:] + 0.5 * y[:-1]
    return total


def slice_of_one(x, w):
    # x[2:3] has one element: it broadcasts against x[1:-1]
    total = 0.0
    for k in range(2):
        total = total + np.sum(np.sin(x[1:-1] * w + x[2:3]))
    return total


SLICES = [
    (heat_with_slices, lambda r: (r.normal(size=8), 0.2)),
    (shrinking_window, lambda r: (r.normal(size=7),)),
    (slice_of_one, lambda r: (r.normal(size=6), 0.8)),
]


@pytest.mark.parametrize("fn, make", SLICES, ids=[p[0].__name__ for p in SLICES])
def test_slices_through_loops_match_differences(fn, make, backend):
    args = make(np.random.default_rng(12))
    g = check_grad(fn, args, grad_position=tuple(range(len(args))))
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


def test_slices_of_one_length_need_no_unbroadcast_nor_taped_temporaries(source_only):
    """``u[1:-1]``, ``u[:-2]`` and ``u[2:]`` have one length: the stencil written with
    slices keeps only what its adjoint reads the values of (the state and k's factor),
    not the temporaries of each operation nor the value written into the slice (it has
    the slice's shape: its adjoint is the slice of ``dun``, nothing to sum)."""
    g = s2sgrad.value_and_grad(heat_with_slices, (0, 1))
    g(np.random.default_rng(0).normal(size=8), 0.2)
    loop = ast.unparse(gast.gast_to_ast(_reversed_loop(g.source)))
    assert loop.count("rt.unbroadcast(") <= 1, g.source   # k's sum only
    assert loop.count(".pop()") <= 2, g.source


# ------------------------------------------------------------ one expression per line

def _forward_loop(source):
    fn = gast.parse(source).body[-1]
    return [s for s in fn.body if isinstance(s, gast.For)][0]


def write_between(x, w):
    # t reads y before y[0] is written: t cannot move past the write
    total = 0.0
    y = x.copy()
    for k in range(3):
        t = y * w
        y[0] = y[1] * w
        total = total + np.sum(t * y + 1.0)
    return total


def test_elementwise_temporaries_of_a_line_are_one_expression(source_only):
    """``y = y + 0.1 * (A @ y - y ** 3)`` in a loop is one array expression in the forward
    sweep (Numba makes one loop and one array of it), not a statement per operation."""
    args = (np.random.default_rng(13).normal(size=(5, 5)) / 3,
            np.random.default_rng(14).normal(size=5))
    g = check_grad(euler_arrays, args, grad_position=(0, 1))
    loop = ast.unparse(gast.gast_to_ast(_forward_loop(g.source)))
    assert any("** 3" in line and "+ 0.1 * (" in line for line in loop.splitlines()), g.source


def test_a_temporary_does_not_move_past_a_write_it_reads(backend):
    g = check_grad(write_between, (np.random.default_rng(15).normal(size=4), 0.6),
                   grad_position=(0, 1))
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


# ------------------------------------------------------------ recomputed from stored values

def sgd_steps(w0, X, y):
    w = w0.copy()
    for i in range(X.shape[0]):
        p = 1.0 / (1.0 + np.exp(-np.dot(X[i], w)))
        w = w - 0.1 * (p - y[i]) * X[i]
    return np.sum(w * w)


def periodic_neighbours(F, y0):
    y = y0.copy()
    n = y.shape[0]
    for step in range(3):
        dy = np.empty(n)
        for i in range(n):
            dy[i] = (y[(i + 1) % n] - y[i - 2]) * y[i - 1] - y[i] + F
        y = y + 0.01 * dy
    return np.sum(y * y)


def _assigned_value(source, name):
    """The source of the expression the forward sweep assigns to ``name``."""
    for n in gast.walk(gast.parse(source)):
        if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Name) and \
                n.targets[0].id == name:
            return ast.unparse(gast.gast_to_ast(n.value))
    return None


@pytest.mark.parametrize("fn, make, stored", [
    (sgd_steps, lambda r: (r.normal(size=3), r.normal(size=(5, 3)), (r.random(5) > 0.5) * 1.0),
     "np.exp("),
    (periodic_neighbours, lambda r: (8.0, r.normal(size=6)), " % n"),
], ids=["sgd_steps", "periodic_neighbours"])
def test_cheap_values_are_computed_again_from_values_stored_anyway(fn, make, stored, backend):
    """``1.0 + exp(...)`` and ``0.1 * (p - y[i])`` from the stored exp (SGD);
    ``y[(i + 1) % n] - y[i - 2]`` from the stored index (Lorenz-96): one tape each."""
    args = make(np.random.default_rng(16))
    g = check_grad(fn, args, grad_position=(0, 1))
    innermost_tapes = [t for t in _taped(g.source) if not t.startswith("n_iter")]
    assert len(innermost_tapes) == 1, g.source
    assert stored in _assigned_value(g.source, innermost_tapes[0]), g.source
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


# ------------------------------------------------------------ near the shape and fusion rules

def view_then_write(u0, k):
    u = u0.copy()
    for s in range(3):
        a = u[1:] * k
        u[1:] = u[:-1] + np.sin(a)
        b = u[:-1] - a
        u[0] = np.sum(b * b)
    return np.sum(u ** 2)


def varying_window(x, k):
    y = x.copy()
    tot = 0.0
    for s in range(1, 4):
        z = y[s:] * k + y[:-s]
        tot = tot + np.sum(np.tanh(z) * z)
        y = y * 0.9 + x * k
    return tot


def carried_slice_grow(x):
    y = x[:2].copy()
    tot = 0.0
    for s in range(3):
        y = np.concatenate((y, y[-1:] * 0.5))
        tot = tot + np.sum(y[1:] * y[:-1])
    return tot


def broadcast_rows(X, b):
    tot = 0.0
    H = X
    for s in range(3):
        H = np.tanh(H * 0.5 + b)     # (n, m) + (m,)
        tot = tot + np.sum(H[:, 1:] * H[:, :-1])
    return tot


def keepdims_norm(X):
    Y = X.copy()
    for s in range(3):
        Y = Y / np.sqrt(np.sum(Y * Y, axis=1, keepdims=True)) + 0.1 * X
    return np.sum(Y[0] * Y[-1])


def outer_in_loop(a, b):
    M = np.zeros((a.shape[0], b.shape[0]))
    for s in range(3):
        M = M * 0.5 + np.outer(a, b) * s
        a = np.tanh(M @ b)
    return np.sum(M * M)


NEAR_THE_RULES = [
    (view_then_write, lambda r: (r.normal(size=6), 0.7)),
    (varying_window, lambda r: (r.normal(size=7), 0.6)),
    (carried_slice_grow, lambda r: (r.normal(size=4),)),
    (broadcast_rows, lambda r: (r.normal(size=(4, 3)), r.normal(size=3))),
    (keepdims_norm, lambda r: (r.normal(size=(3, 4)),)),
    (outer_in_loop, lambda r: (r.normal(size=3), r.normal(size=4))),
]
#: what these programs test is how the code is generated, the same for both backends;
#: these three take 3-6 s each to compile and are checked as Python only
PYTHON_ONLY = {broadcast_rows, keepdims_norm, outer_in_loop}


@pytest.mark.parametrize("fn, make", NEAR_THE_RULES, ids=[p[0].__name__ for p in NEAR_THE_RULES])
def test_spellings_near_the_shape_and_fusion_rules_match_differences(fn, make, backend):
    """Views read before an in-place write of their base (not fused past it), slices whose
    lengths change between iterations, an array that grows, rows broadcast against a
    vector, a keepdims reduction, an outer product in a loop."""
    if backend == "numba" and fn in PYTHON_ONLY:
        pytest.skip("generated the same for both backends; compiling it takes seconds")
    args = make(np.random.default_rng(17))
    g = check_grad(fn, args, grad_position=tuple(range(len(args))))
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason
