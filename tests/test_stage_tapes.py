"""A loop's tape holds what its adjoint reads by value, not arrays kept for their shapes
(issue 20, GradBench's ode: an RK4 step taped 25 arrays, 21 of them for shapes alone).

The class: a loop-carried state updated by stages that shift it with a constant piece
(``np.concatenate((np.ones(1), y[:-1]))``, along any axis) and combine it with other arrays.
Its shapes are known while building (the state keeps its entry's dimensions; a slice
joined with the piece it lost has the dimension back), so every ``rt.unbroadcast`` goes,
and the shape-only reads that stay (``np.zeros_like``, ``rt.split_like``'s parts, arrays of
a constant shape) need no tape: the step tapes the four stage arrays the adjoint
multiplies by.  Gradients are checked against central finite differences under both
backends, at a second size after the first call, with no iteration, and through jacrev.
"""
import re

import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.compiler.analysis.shapes import Dim, ShapeTable
from s2sgrad.testing import numerical_grad


def rhs(x, y):
    return x * np.concatenate((np.ones(1), y[:-1]))


def rk4(x, s):
    h = 2.0 / s
    y = np.zeros_like(x)
    for step in range(s):
        k1 = rhs(x, y)
        k2 = rhs(x, y + h / 2 * k1)
        k3 = rhs(x, y + h / 2 * k2)
        k4 = rhs(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def rk4_last(x, s):
    return rk4(x, s)[-1]


def rows_rk2(w, y0, s):
    # two stages along axis 1 of a 2-D state, a shift of two columns
    y = y0 * 1.0
    for step in range(s):
        k1 = w * np.concatenate((np.ones((y.shape[0], 2)), y[:, :-2]), axis=1)
        k2 = w * np.concatenate((np.ones((y.shape[0], 2)), (y + 0.1 * k1)[:, :-2]), axis=1)
        y = y + 0.05 * (k1 + k2)
    return np.sum(y * y)


@pytest.fixture(scope="module")
def built():
    """rk4_last's gradient under each backend, built and called once (n = 7, 3 steps)."""
    x = np.random.default_rng(0).uniform(0.5, 1.5, 7)
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        for backend in ("python", "numba"):
            mp.setenv("S2SGRAD_BACKEND", backend)
            g = s2sgrad.grad(rk4_last, 0)
            g(x, 3)
            assert backend == "python" or g.backend == "numba", g.fallback_reason
            out[backend] = g
    return out


def _loop_record(source):
    """The names the forward loop pushes in its one record (``tape.append((a, b))``)."""
    pushes = re.findall(r"tape\w*\.append\(\(([^)]*)\)\)", source, re.S)
    assert len(pushes) == 1, source
    return [n.strip() for n in pushes[0].split(",") if n.strip()]


def test_an_rk4_step_tapes_its_four_stage_arrays_only(built):
    source = built["numba"].source
    record = _loop_record(source)
    # what the adjoint multiplies by: x * concatenate(...) of each stage, nothing kept for
    # its shape (the state, the shifted sums, np.ones(1)) -- on main: 25 arrays
    assert len(record) == 4, source
    for name in record:
        assert re.search(rf"\b{name} = np\.concatenate\(", source), (name, source)
    assert "unbroadcast" not in source, source
    assert built["python"].source == source


@pytest.mark.parametrize("n, s", [(7, 3), (11, 4), (5, 1)])
@pytest.mark.parametrize("backend", ["python", "numba"])
def test_rk4_gradients_match_finite_differences_at_any_size(built, backend, n, s):
    # (7, 3) is the size of the first call; the others follow it in the same objects
    x = np.random.default_rng(n).uniform(0.5, 1.5, n)
    got = built[backend](x, s)
    want = numerical_grad(rk4_last, (x, s), 0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got, built["python"](x, s), rtol=1e-12, atol=0)


def test_a_shift_along_axis_1_tapes_no_shapes_and_matches_finite_differences(monkeypatch):
    # the same generated code runs under Numba in the tests above; Python here (a compile
    # of seconds saved)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    rng = np.random.default_rng(1)
    w, y0 = rng.uniform(0.5, 1.5, (3, 6)), rng.uniform(-1, 1, (3, 6))
    g = s2sgrad.grad(rows_rk2, (0, 1))
    got = g(w, y0, 3)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], numerical_grad(rows_rk2, (w, y0, 3), k),
                                   rtol=1e-6, atol=1e-9)
    # the two stages and the two pieces of ones (split_like reads their widths): not the
    # state, nor the shifted sum -- on main: 11 arrays
    record = _loop_record(g.source)
    assert len(record) == 4, g.source
    for name in record:
        assert re.search(rf"\b{name} = np\.(concatenate|ones)\(", g.source), (name, g.source)
    assert "unbroadcast" not in g.source.split("for _ in range")[1], g.source


def test_jacrev_of_the_rk4_solution_matches_finite_differences(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x = np.random.default_rng(2).uniform(0.5, 1.5, 5)
    jac = s2sgrad.jacrev(rk4, 0)(x, 3)
    eps = 1e-6
    want = np.stack([(rk4(x + eps * e, 3) - rk4(x - eps * e, 3)) / (2 * eps)
                     for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(jac, want, rtol=1e-6, atol=1e-9)


def test_split_like_gives_the_rest_of_g_as_its_last_piece():
    g = np.arange(10.0)
    pieces = rt.split_like(g, (np.ones(3), np.ones(1)), 0)   # the last part's size unread
    assert [p.tolist() for p in pieces] == [[0.0, 1.0, 2.0], list(np.arange(3.0, 10.0))]
    numba = pytest.importorskip("numba")
    import s2sgrad.backend.numba_backend  # noqa: F401  (registers the overloads)

    @numba.njit
    def split(g, a, b):
        return rt.split_like(g, (a, b), 1)

    g2 = np.arange(12.0).reshape(2, 6)
    compiled = split(g2, np.ones((2, 2)), np.ones((2, 1)))
    assert [p.tolist() for p in compiled] == [p.tolist() for p in np.split(g2, [2], axis=1)]


def test_a_slice_joined_with_what_it_lost_has_its_dimension_back():
    table = ShapeTable()
    n = Dim("n", True)
    assert table.joined([(1,), (table.sliced(n, slice(None, -1)),)]) == (n,)
    assert table.joined([(table.sliced(n, slice(2, None)),), (2,)]) == (n,)
    assert table.joined([(table.sliced(n, slice(1, -1)),), (1,)]) != (n,)   # one short
    assert table.joined([(1,), (table.sliced(n, slice(None, -2)),)]) != (n,)


def zero_trip_outer(x, a):
    # found by the second-order fuzz: the reversed outer loop read the size of
    # t789 * x through a witness (the inner loop's np.sqrt value) that only the inner
    # reversed loop restores, initialised before the outer one from the forward's last
    # value, unbound when the outer loop ran no iteration
    for i in range(0):
        a = np.tanh(a * 0.7 + x[i] * a)
        for k in range(1):
            t789 = np.sqrt(x * x + 1.0) + k
        a = a + np.sum(t789 * x) * 0.1
    return np.sum(x) + a


@pytest.mark.parametrize("trips", [0, 2])
def test_a_shape_witness_is_never_a_value_only_a_nested_loop_restores(trips, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")

    def program(x, a):
        for i in range(trips):
            a = np.tanh(a * 0.7 + x[i] * a)
            for k in range(1):
                t789 = np.sqrt(x * x + 1.0) + k
            a = a + np.sum(t789 * x) * 0.1
        return np.sum(x) + a

    fn = zero_trip_outer if trips == 0 else program
    x, a = np.linspace(0.1, 0.4, 4), 0.3
    v = (np.linspace(-1.0, 1.0, 4), 0.5)
    hv = s2sgrad.hvp(fn, (x, a), v)
    eps = 1e-6
    g = s2sgrad.grad(fn, (0, 1))
    up = g(x + eps * v[0], a + eps * v[1])
    down = g(x - eps * v[0], a - eps * v[1])
    for got, u, d in zip(hv, up, down):
        np.testing.assert_allclose(got, (np.asarray(u) - np.asarray(d)) / (2 * eps),
                                   rtol=1e-5, atol=1e-7)
