"""vmap of a function calling jvp with only its tangents mapped: one batched sweep
(api/vmap_jvp.py), equal to the Python loop of jvp calls and to central differences, for
every later call (other batch sizes, shapes, changed closures and globals), and under
the other transforms."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import check_grad

RNG = np.random.default_rng(20)
X = RNG.standard_normal(4)
A = RNG.standard_normal(4)
V = RNG.standard_normal((5, 4))


def f(x, a):
    y = np.sin(x) * a
    for i in range(3):                  # a loop: the sweep carries the batch through it
        y = y + x[0] * np.cos(y)
    return y * np.sum(y)


def scalar_loop(x, a):
    s = 0.0
    for i in range(x.shape[0]):         # scalar work: no batched sweep, the loop runs
        s = s + x[i] * a[i]
    return s * x


SCALE = 1.0     # read by G: a changed value must reach the built code


def G(x, a):
    return f(x, a) * SCALE


def loop(fn, rows, axis=0):
    return np.stack([fn(r) for r in np.moveaxis(rows, axis, 0)])


def central(fn, x, v, h=1e-6):
    return (fn(x + h * v) - fn(x - h * v)) / (2 * h)


COLUMN = ms.vmap(lambda v: ms.jvp(lambda t: f(t, A), (X,), (v,))[1])


def test_vmap_of_jvp_over_tangents_is_one_batched_sweep():
    got = COLUMN(V)
    assert COLUMN.form == "vectorised" and "Batched JVP form" in COLUMN.source
    want = loop(lambda v: ms.jvp(lambda t: f(t, A), (X,), (v,))[1], V)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    fd = loop(lambda v: central(lambda t: f(t, A), X, v), V)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)


def jacobian_by_vmap(x, a):
    """JAX's idiom: the Jacobian as jvp along each basis direction."""
    return ms.vmap(lambda v: ms.jvp(lambda t: f(t, a), (x,), (v,))[1])(np.eye(x.shape[0])).T


def test_every_call_reads_its_own_values_batch_and_shape():
    for x, a in [(X, A), (X[:3], A[:3]), (RNG.standard_normal(6), RNG.standard_normal(6))]:
        np.testing.assert_allclose(jacobian_by_vmap(x, a), ms.jacfwd(f)(x, a),
                                   rtol=1e-12, atol=1e-12)
    a = A.copy()
    jacobian_by_vmap(X, a)
    a *= 3.0                    # the same array changed in place: read at the call
    np.testing.assert_allclose(jacobian_by_vmap(X, a), ms.jacfwd(f)(X, a), rtol=1e-12,
                               atol=1e-12)
    for n in (1, 3, 7):         # another batch size, the same vmap object
        rows = RNG.standard_normal((n, 4))
        np.testing.assert_allclose(
            COLUMN(rows), loop(lambda v: ms.jvp(lambda t: f(t, A), (X,), (v,))[1], rows),
            rtol=1e-12, atol=1e-12)


def test_in_axes_out_axes_unmapped_tangent_and_a_changed_global():
    global SCALE
    per = ms.vmap(lambda x, v, u: ms.jvp(G, (x, A), (v, u))[1], in_axes=(None, 1, None),
                  out_axes=1)
    u = RNG.standard_normal(4)
    want = loop(lambda v: ms.jvp(G, (X, A), (v, u))[1], V).T
    np.testing.assert_allclose(per(X, V.T, u), want, rtol=1e-12, atol=1e-12)
    assert per.form == "vectorised"
    try:
        SCALE = 3.0
        np.testing.assert_allclose(per(X, V.T, u), 3.0 * want, rtol=1e-12, atol=1e-12)
    finally:
        SCALE = 1.0


@pytest.mark.parametrize("case", ["mapped primal", "attribute of a mapped primal",
                                  "scalar loop"])
def test_what_the_sweep_does_not_run_is_the_loop(case):
    if case == "mapped primal":
        fn = ms.vmap(lambda x, v: ms.jvp(lambda t: f(t, A), (x,), (v,))[1])
        args = (V[:, ::-1].copy(), V)
        want = np.stack([ms.jvp(lambda t: f(t, A), (x,), (v,))[1] for x, v in zip(*args)])
    elif case == "attribute of a mapped primal":
        fn = ms.vmap(lambda x, v: ms.jvp(smooth, (x.T,), (v,))[1])     # x.T of the batch
        args = (RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4)))  # is (4, 4) too
        want = np.stack([ms.jvp(smooth, (x.T,), (v,))[1] for x, v in zip(*args)])
    else:
        fn = ms.vmap(lambda v: ms.jvp(lambda t: scalar_loop(t, A), (X,), (v,))[1])
        args = (V,)
        want = loop(lambda v: ms.jvp(lambda t: scalar_loop(t, A), (X,), (v,))[1], V)
    np.testing.assert_allclose(fn(*args), want, rtol=1e-12, atol=1e-12)
    assert fn.form == "python"


def total(t):
    return np.sum(f(t, A))


def test_vmap_of_an_hvp_and_of_jvp_of_grad():
    want = V @ ms.hessian(total)(X)
    for hv in (ms.vmap(lambda v: ms.jvp(ms.grad(total), (X,), (v,))[1]),
               ms.vmap(lambda v: ms.hvp(total, X, v))):
        np.testing.assert_allclose(hv(V), want, rtol=1e-10, atol=1e-12)
        assert hv.form == "vectorised"
    np.testing.assert_allclose(hv(V), loop(lambda v: ms.hvp(total, X, v), V), rtol=1e-12,
                               atol=1e-12)


def smooth(x):
    return np.sin(x) * A * np.sum(x)      # loop-free: its derivatives run as numpy


def jacobian_of_smooth(x):
    return ms.vmap(lambda v: ms.jvp(smooth, (x,), (v,))[1])(np.eye(x.shape[0])).T


def test_grad_jit_and_vmap_of_it(monkeypatch):
    def loss(x):    # the vmap made inside, its lambda reading x: x is not mapped
        cols = ms.vmap(lambda v: ms.jvp(smooth, (x,), (v,))[1])(V)
        return np.sum(cols ** 2)
    with monkeypatch.context() as patched:      # (its loop as Python: no Numba compile)
        patched.setenv("S2SGRAD_BACKEND", "python")
        check_grad(loss, (X,))
    np.testing.assert_allclose(ms.jit(jacobian_of_smooth)(X), ms.jacfwd(smooth)(X),
                               rtol=1e-12, atol=1e-12)
    batches = RNG.standard_normal((2, 3, 4))
    nested = ms.vmap(lambda rows: COLUMN(rows))(batches)
    np.testing.assert_allclose(nested, np.stack([COLUMN(b) for b in batches]),
                               rtol=1e-12, atol=1e-12)


PARAMS = {"x": X}       # the primal point read from a module global, not an argument
STEP = 1.0


@pytest.mark.parametrize("spelling", ["global subscript", "global expression",
                                      "closure expression", "unmapped argument expression"])
def test_a_primal_written_as_an_expression_of_globals_and_closures_is_batched(spelling):
    """Before: a primal other than a (dotted) name (``PARAMS["x"]``, ``X * STEP``) was
    not recognised: the Python loop of jvp calls ran (2.75 against 0.13 ms on 200 rows),
    called form 'python'.  Read at every call: the globals and closures changed between
    calls give the new point's Jacobian."""
    def closure_of(point):
        return ms.vmap(lambda v: ms.jvp(smooth, (point * STEP,), (v,))[1])
    makers = {
        "global subscript": lambda: ms.vmap(lambda v: ms.jvp(smooth, (PARAMS["x"],), (v,))[1]),
        "global expression": lambda: ms.vmap(lambda v: ms.jvp(smooth, (X * STEP + 0.0,),
                                                              (v,))[1]),
        "closure expression": lambda: closure_of(PARAMS["x"]),
        "unmapped argument expression": lambda: ms.vmap(
            lambda p, v: ms.jvp(smooth, (p[0] * STEP,), (v,))[1], in_axes=(None, 0)),
    }
    global X, STEP
    saved = X, STEP
    try:
        for point, step in [(X, 1.0), (RNG.standard_normal(4), 2.0)]:
            X, STEP = point, step
            PARAMS["x"] = point * (step if spelling == "global subscript" else 1.0)
            at = point * step
            fn = makers[spelling]()
            args = (point[None, :], V) if spelling == "unmapped argument expression" else (V,)
            got = fn(*args)
            assert fn.form == "vectorised", spelling
            np.testing.assert_allclose(got, V @ ms.jacfwd(smooth)(at).T, rtol=1e-12,
                                       atol=1e-12)
            np.testing.assert_allclose(got, loop(lambda v: central(smooth, at, v), V),
                                       rtol=1e-6, atol=1e-7)
    finally:
        X, STEP = saved
        PARAMS["x"] = X


def test_a_primal_made_by_a_call_is_the_loop():
    """A call may give another value per row (``rng.normal()``): never evaluated once for
    the batch, the loop runs it."""
    fn = ms.vmap(lambda v: ms.jvp(smooth, (np.cos(X),), (v,))[1])
    np.testing.assert_allclose(fn(V), V @ ms.jacfwd(smooth)(np.cos(X)).T, rtol=1e-12,
                               atol=1e-12)
    assert fn.form == "python"
