"""Gradients through functions that return tuples (``np.linalg`` decompositions,
``np.divmod``, the splits, ``np.broadcast_arrays``) and through the helpers of
``s2sgrad/backend/numba_linalg.py`` / ``numba_surface.py`` run compiled by Numba.

Under Numba a tuple result's adjoint is a tuple, rebuilt by ``rt.item_added`` for each
item that gets a gradient.  Each function below is one Numba compile covering several
primitives (compile time is real); each must run compiled (``g.backend == 'numba'``),
match central finite differences in float64 and give the Python backend's values.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad

rng = np.random.default_rng(1357)
XS = np.array([0.0, 0.3, 0.7, 1.2, 1.6, 2.5])
HOLES = np.array([False, True, False, False, True, False])
PICK = np.array([1, 4])
W9 = np.arange(9.0).reshape(3, 3)


def decompositions(a, b):
    """qr, svd (reduced), slogdet, lstsq and eigh; and a tuple made before a loop and read
    in it (its adjoint is carried through the reversed loop)."""
    q, r = np.linalg.qr(a)
    u, sv, vh = np.linalg.svd(a, full_matrices=False)
    sign, logdet = np.linalg.slogdet(a[:3] @ a[:3].T + 1.0)
    x, res, rank, sing = np.linalg.lstsq(a, b)
    w, v = np.linalg.eigh(a.T @ a)
    s = (np.sum(q * r[0]) + np.sum(np.sin(r)) + np.sum(sv * sv)
         + np.sum(np.abs(u[0] * vh[0])) + logdet + np.sum(np.sin(x)) + np.sum(res)
         + np.sum(sing) + np.sum(w * w) + np.sum(v[0] * v[0] * w))
    for i in range(2):
        s = s + np.sum(w) * i + np.sum(np.sin(v * i))
    return s


def pieces(x, y, m):
    """divmod, frexp, modf, split, array_split, hsplit, vsplit, broadcast_arrays; a list
    made before a loop and read in it (its adjoint made before the loop, updated in it)."""
    halves = np.hsplit(m, 2)
    rows = np.vsplit(m, 2)
    s = np.sum(halves[0] * halves[1]) + np.sum(np.sin(rows[1]))
    for i in range(2):
        q, rem = np.divmod(x * (i + 2.0), 0.7)
        mant, expo = np.frexp(x * (i + 1.5))
        frac, whole = np.modf(x * 3.0)
        parts = np.split(x, 3)
        p2 = np.array_split(y, 2)
        bx, by = np.broadcast_arrays(x, y[:1])
        s = (s + np.sum(rem * rem) + np.sum(parts[0] * parts[2]) + np.sum(np.sin(p2[1]))
             + np.sum(mant * mant) + np.sum(np.sin(frac))
             + np.sum(bx * by) + np.sum(np.cos(halves[1])) * i)
    return s


def surface_helpers(x, m, s):
    """delete, insert, corrcoef, cond, nanvar, nanstd, nanmedian, nanquantile, trapezoid
    (three forms), item and tile (three forms)."""
    holed = np.where(HOLES, np.nan, x)
    return (np.sum(np.sin(np.delete(x, 2))) + np.sum(np.sin(np.delete(x, PICK)))
            + np.sum(np.sin(np.insert(x, 1, s)) * np.arange(7.0))
            + np.sum(np.sin(np.corrcoef(m)) * W9)
            + np.linalg.cond(m[:, :3])
            + np.nanvar(holed) + np.nanstd(holed) + np.nanmedian(holed)
            + np.nanquantile(x, 0.3)
            + np.trapezoid(np.sin(x)) + np.trapezoid(x * x, XS * s) + np.trapezoid(x, dx=s)
            + np.sin(x[3:4].item()) + (m[0, :1] * 2.0).item()
            + np.sum(np.sin(np.tile(x, 2)) * np.arange(12.0))
            + np.sum(np.sin(np.tile(m[:2, :2], (2, 3)))) + np.sum(np.tile(x[:2], (3, 1)) ** 2))


@pytest.mark.parametrize("fn,args", [
    (decompositions, (rng.uniform(-1, 1, (5, 3)), rng.uniform(-1, 1, 5))),
    (pieces, (rng.uniform(0.5, 1.5, 6), rng.uniform(-1, 1, 6), rng.uniform(-1, 1, (4, 4)))),
    (surface_helpers, (rng.uniform(0.5, 1.5, 6), rng.uniform(-1, 1, (3, 5)), 0.7)),
], ids=["decompositions", "pieces", "surface"])
def test_tuple_results_and_helpers_run_compiled(fn, args, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    pos = tuple(range(len(args)))
    g = check_grad(fn, args, grad_position=pos)
    assert g.backend == "numba", g.fallback_reason
    compiled = g(*args)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    for got, want in zip(compiled, s2sgrad.grad(fn, grad_position=pos)(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def eigen_and_appended(a, n):
    w, v = np.linalg.eigh(a @ a.T)
    xs = []
    for i in range(n):
        xs.append(a[i] * w[i])
    return np.sum(xs[n - 1] * v[0]) + np.sum(xs[0])


def test_tuple_adjoints_are_rebuilt_and_list_adjoints_assigned_into(monkeypatch):
    """A tuple result's adjoint is updated by ``rt.item_added`` (a constant index); a list
    the code appends to keeps ``dxs[i] = dxs[i] + ...``."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    a = rng.uniform(-1, 1, (3, 3))
    g = check_grad(lambda a: eigen_and_appended(a, 3), (a,))
    lines = [line.strip() for line in g.source.splitlines()]
    rebuilt = [line for line in lines if "= rt.item_added(" in line]
    assert len(rebuilt) == 2, g.source        # w's and v's adjoints, at constant indices
    tuple_adjoint = rebuilt[0].split(" = ")[0]
    assert rebuilt[0].startswith(f"{tuple_adjoint} = rt.item_added({tuple_adjoint}, 1, ")
    assert not any(line.startswith(tuple_adjoint + "[") for line in lines), g.source
    assert "dxs[0] = dxs[0] + " in lines[lines.index("dxs = rt.zeros_list(xs)") + 1], g.source


def linalg_tangents(a):
    """Forward mode's tangents of cholesky, eigh (a tuple tangent), eigvalsh,
    matrix_power (positive and negative) and pinv."""
    spd = a @ a.T + np.eye(3)
    w, v = np.linalg.eigh(spd)
    return (np.sum(np.sin(np.linalg.cholesky(spd)) * W9)
            + np.sum(w * w) + np.sum(v[0] * v[0] * w)
            + np.sum(np.sin(np.linalg.eigvalsh(spd + a)))
            + np.sum(np.sin(np.linalg.matrix_power(a, 3)))
            + np.sum(np.linalg.matrix_power(spd, -2) * W9)
            + np.sum(np.sin(np.linalg.pinv(a[:, :2]))))


def test_linalg_tangents_run_compiled(monkeypatch):
    from s2sgrad.api.forward import forward_function
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    a = rng.uniform(-1, 1, (3, 3))
    direction = rng.uniform(-1, 1, (3, 3))
    forward = forward_function(linalg_tangents, 0, False, False)
    value, tangent = forward.jvp_call((a,), (direction,))
    assert forward.backend == "numba", forward.fallback_reason
    eps = 1e-6
    numerical = (linalg_tangents(a + eps * direction) - linalg_tangents(a - eps * direction)) \
        / (2 * eps)
    np.testing.assert_allclose(tangent, numerical, rtol=1e-6, atol=1e-8)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    np.testing.assert_allclose(tangent, s2sgrad.jvp(linalg_tangents, a, direction)[1],
                               rtol=1e-10)


def test_frexp_and_modf_spellings_give_numpys_values_under_numba():
    """The forward sweep writes ``np.frexp`` / ``np.modf`` as ``rt.frexp`` / ``rt.modf``
    (Numba has neither): the same values, signed zeros, infinities and NaN included."""
    import numba
    from s2sgrad import runtime as rt
    from s2sgrad.backend import numba_surface  # noqa: F401  (the overloads)
    x = np.array([1.5, -2.25, np.inf, -np.inf, 0.0, -0.0, -3.0, 1e300, 5e-324, np.nan])
    both = numba.njit(lambda x: (rt.modf(x), rt.frexp(x), rt.modf(x[6]), rt.frexp(x[1])))
    for got, want in zip(both(x), (np.modf(x), np.frexp(x), np.modf(x[6]), np.frexp(x[1]))):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
            if isinstance(w, np.ndarray):   # (Numba boxes a scalar as a Python number)
                assert g.dtype == w.dtype


def stacked_rows(x, n):
    """A list built by ``append`` in a loop, then ``np.stack``-ed (Numba stacks tuples only:
    ``numba_lists`` stacks lists along the first axis)."""
    rows = [x[:2], np.ones(2)]
    for i in range(n):
        rows.append(x[i:i + 2] * x[i])
    return np.stack(rows)


def test_a_stacked_list_runs_compiled_in_gradients_and_jacobians(monkeypatch):
    x = rng.uniform(-1, 1, 5)
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = check_grad(lambda x: np.sum(np.sin(stacked_rows(x, 3))), (x,))
    assert g.backend == "numba", g.fallback_reason
    jac = s2sgrad.jacfwd(stacked_rows)
    got = jac(x, 3)
    assert jac.backend == "numba", jac.fallback_reason
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    np.testing.assert_allclose(got, s2sgrad.jacrev(stacked_rows)(x, 3), rtol=1e-12)
    assert got.shape == (5, 2, 5)
