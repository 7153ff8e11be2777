"""A repeated ``jvp`` call takes the hot call path (issue 20), and stays exact.

``s2sgrad.jvp(fn, inputs, v)`` called again like the last call runs the plan it kept on
``fn`` (``api/forward.py``'s ``HotJvp``; ``api/call_plan.py``'s ``JvpPlan``): no lookup
of the derivative, no plan key, no conversion of the tangents, and no pass over a
tangent that is not zero at its first number.  Here: the work a call does, counted (it
fails on code that looks the derivative up or scans every tangent per call); the
results of calls whose tangents, dtypes, shapes, closures or globals differ from the
first call's, against the derivative computed by hand; jvp composed with jvp, grad,
vmap.  Loop-free functions under the python backend: no Numba compile.
"""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.api import arguments, forward

X = np.array([0.3, -0.7, 1.1])
Y = np.array([2.0, 0.5, -1.5])
SCALE = 2.0


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def product(x, y):
    return np.sum(np.sin(x) * y)


def product_jvp(x, y, tx, ty):      # by hand
    return np.sum(np.cos(x) * tx * y + np.sin(x) * ty)


def scaled(x):
    return np.sum(SCALE * x * x)


@pytest.fixture
def scans(monkeypatch):
    """How many passes over a tangent's numbers (``arguments.all_zeros``) calls make."""
    count = []
    original = arguments.all_zeros

    def counted(array):
        count.append(array.shape)
        return original(array)
    monkeypatch.setattr(arguments, "all_zeros", counted)
    return count


def _no_lookups(monkeypatch):
    """From now on, a jvp call that looks up its derivative or builds a plan key fails."""
    def refused(*args, **kwargs):
        raise AssertionError("a repeated jvp call took the full path")
    monkeypatch.setattr(forward, "forward_function", refused)
    monkeypatch.setattr(forward, "plan_key", refused)


@pytest.mark.parametrize("ty", ["ones", "zeros"])
def test_a_repeated_jvp_runs_its_kept_plan_and_scans_only_zero_tangents(
        ty, scans, monkeypatch):
    tangent = np.ones(3) if ty == "ones" else np.zeros(3)
    def fn(x, y):
        return np.sum(np.sin(x) * y)
    for _ in range(2):
        ms.jvp(fn, (X, Y), (np.ones(3), tangent))
    _no_lookups(monkeypatch)
    scans.clear()
    for k in range(3):
        tx = np.full(3, k + 1.0)
        value, out = ms.jvp(fn, (X, Y), (tx, tangent.copy()))
        np.testing.assert_allclose(out, product_jvp(X, Y, tx, tangent), rtol=1e-12)
    # x's tangent is not zero at its first number: never read through; y's, when zero,
    # once per call (the pass its zero tangent saves costs more)
    assert len(scans) == (3 if ty == "zeros" else 0), scans


CASES = {
    # (tangents of the first call, of the second): which inputs move changes
    "zero, then not": ((np.ones(3), np.zeros(3)), (np.ones(3), np.ones(3))),
    "not, then zero": ((np.ones(3), np.ones(3)), (np.ones(3), np.zeros(3))),
    "all zero, then x's first number 0": ((np.zeros(3), np.zeros(3)),
                                          (np.array([0.0, 0.0, 1.0]), np.zeros(3))),
    "x's first number 0, then all zero": ((np.array([0.0, 1.0, 0.0]), np.zeros(3)),
                                          (np.zeros(3), np.zeros(3))),
    "only y, then only x": ((np.zeros(3), np.ones(3)), (np.ones(3), np.zeros(3))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_which_tangents_are_zero_is_decided_at_every_call(name):
    def fn(x, y):
        return np.sum(np.sin(x) * y)
    for tx, ty in CASES[name] + CASES[name]:
        np.testing.assert_allclose(ms.jvp(fn, (X, Y), (tx, ty))[1],
                                   product_jvp(X, Y, tx, ty), rtol=1e-12, atol=1e-15)


def test_a_zero_tangent_leaves_out_its_terms_whatever_the_first_call_was():
    # an infinity in x: along y alone the derivative is exactly sum(sin(x) * ty), no NaN
    # from 0 * inf, whether the first call moved x or not
    def fn(x, y):
        return np.sum(x * y)
    x = np.array([np.inf, 1.0, 2.0])
    along_y = (np.zeros(3), np.ones(3))
    for first in [(np.ones(3), np.ones(3)), along_y]:
        ms.jvp(fn, (x, Y), first)
        assert ms.jvp(fn, (x, Y), along_y)[1] == np.inf
        assert ms.jvp(fn, (np.array([1.0, 1.0, 2.0]), Y), along_y)[1] == 4.0


def test_other_dtypes_shapes_and_tangent_kinds_take_the_full_path():
    def fn(x, y):
        return np.sum(np.sin(x) * y)
    ms.jvp(fn, (X, Y), (np.ones(3), np.ones(3)))
    ms.jvp(fn, (X, Y), (np.ones(3), np.ones(3)))
    for x, y, tx, ty in [
            (X.astype(np.float32), Y.astype(np.float32), np.ones(3, np.float32), np.ones(3)),
            (np.linspace(0, 1, 5), np.ones(5), np.ones(5), np.zeros(5)),
            (X, Y, np.ones(6)[::2], np.ones(3)),             # a strided tangent
            (X, Y, np.ones(3, np.float32), np.ones(3))]:     # a tangent of another dtype
        out = ms.jvp(fn, (x, y), (tx, ty))[1]
        np.testing.assert_allclose(out, product_jvp(x, y, np.asarray(tx, float), ty),
                                   rtol=1e-6)
    with pytest.raises(ms.errors.GradientArgumentError):
        ms.jvp(fn, (X, Y), (np.ones(4), np.ones(3)))
    with pytest.raises(ms.errors.GradientArgumentError):
        ms.jvp(fn, (X, Y), (np.ones(3),))


def test_a_closure_rebound_and_a_global_changed_are_seen():
    global SCALE
    c = np.ones(3)

    def fn(x):
        return np.sum(c * x * x)
    for value in [1.0, 3.0, -2.0]:
        c = np.full(3, value)
        assert ms.jvp(fn, (X,), (np.ones(3),))[1] == pytest.approx(np.sum(2 * value * X))
    try:
        for value in [2.0, 5.0, 2.0]:
            SCALE = value
            assert ms.jvp(scaled, (X,), (np.ones(3),))[1] == pytest.approx(
                np.sum(2 * value * X))
    finally:
        SCALE = 2.0


def sin_product(z):
    return np.sum(np.sin(z) * z)


def sin_product_jvp(x):             # its derivative along ones, computed by jvp
    return ms.jvp(sin_product, (x,), (np.ones(3),))[1]


def test_jvp_composes_with_grad_vmap_and_jacfwd():
    # (jvp written inside a function being differentiated, jvp of jvp or grad of it, is
    # refused by the front end, naming the line: make the derivative object instead)
    def by_hand(x):                 # sin_product_jvp
        return np.sum(np.cos(x) * x + np.sin(x))

    def hessian_diagonal(x):        # of sin_product
        return -np.sin(x) * x + 2 * np.cos(x)
    v = np.array([1.0, -2.0, 0.5])
    rows = np.stack([X, 2 * X])
    for _ in range(2):                                   # the second call: hot
        np.testing.assert_allclose(ms.jvp(ms.grad(sin_product), (X,), (v,))[1],
                                   hessian_diagonal(X) * v, rtol=1e-10)
        np.testing.assert_allclose(ms.vmap(sin_product_jvp)(rows),
                                   [by_hand(X), by_hand(2 * X)], rtol=1e-10)
        np.testing.assert_allclose(ms.jvp(ms.vmap(sin_product), (rows,), (rows,))[1],
                                   [np.sum((np.cos(r) * r + np.sin(r)) * r) for r in rows],
                                   rtol=1e-10)
        np.testing.assert_allclose(ms.jvp(ms.jacfwd(sin_product), (X,), (v,))[1],
                                   hessian_diagonal(X) * v, rtol=1e-10)


PRODUCT_GRAD = ms.grad(product)


def test_a_derivative_run_by_jvp_still_pickles():
    import pickle
    for _ in range(2):
        ms.jvp(PRODUCT_GRAD, (X, Y), (np.ones(3), np.zeros(3)))
    again = pickle.loads(pickle.dumps(PRODUCT_GRAD))
    np.testing.assert_allclose(again(X, Y), np.cos(X) * Y, rtol=1e-12)


def test_a_repeated_hvp_reuses_its_plan_and_stays_exact(monkeypatch):
    def hessian_times(x, y, vx, vy):      # of product: d/dx (cos x * y), d/dy sin x
        return (-np.sin(x) * y * vx + np.cos(x) * vy, np.cos(x) * vx)

    vs = (np.ones(3), np.array([0.5, -1.0, 2.0]))
    for _ in range(2):
        ms.hvp(product, (X, Y), vs)
        # (a zero tangent of x: the build that leaves x's tangent out, as jvp's)
        ms.hvp(product, (X, Y), (np.zeros(3), vs[1]))
    prepared = []
    prepare = ms.api.derivative.Derivative._prepare
    monkeypatch.setattr(ms.api.derivative.Derivative, "_prepare",
                        lambda self, *a: prepared.append(a) or prepare(self, *a))
    for x, vx in [(X, np.full(3, 2.0)), (X, np.ones(6)[::2]), (2 * X, np.zeros(3))]:
        out = ms.hvp(product, (x, Y), (vx, vs[1]))
        for got, want in zip(out, hessian_times(x, Y, vx, vs[1])):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    assert prepared == []
    x32 = X.astype(np.float32)                   # another dtype: the full path
    out = ms.hvp(product, (x32, Y), vs)
    assert out[0].dtype == np.float32 and len(prepared) == 1
