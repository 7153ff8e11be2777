"""Loop-free gradients at GradBench's gmm and lse (issue 20): what the generated code
and the runtime do with a broadcast, an einsum, a full max and a returned name bound
twice, and that the numbers are numpy's (bits where one IEEE operation is the same;
1e-12 where BLAS sums in another order) and the finite differences'.

- ``runtime/broadcast.py``: ``+ - * /`` of two float64 arrays over a broadcast with
  rows numpy runs slowly, from ``rt.Kept``, as one compiled loop: numpy's bits,
  whatever it is given (3 axes, stride-0 views, views, float32, 0-d, ``out=``);
- ``rt.einsum``: the product oriented so that BLAS writes the output's rows, a small
  operand of strided rows copied (``"ijk,mik->mij"``); ``kept.einsum_adjoints``;
- ``extremum_rows``: the adjoint of a full max/min in one pass (lse);
- ``optimize/buffers.py``: an earlier binding of a returned name is a kept temporary.

One compile of the broadcast loop for the module (the extremum loop is kmeans' own, shared
with test_fused_kernels); the thresholds are lowered here (``FUSE_NUMBERS`` 8,192), the
suite's are out of reach (``tests/conftest.py``)."""
import importlib

import numpy as np
import pytest

import s2sgrad
from s2sgrad.runtime import broadcast, buffers, fused

einsum_module = importlib.import_module("s2sgrad.runtime.einsum")

R = np.random.default_rng(7)


@pytest.fixture(autouse=True, scope="module")
def compiled_above_a_lower_threshold():
    saved = fused.FUSE_NUMBERS, fused.BACKGROUND
    fused.FUSE_NUMBERS, fused.BACKGROUND = 8192, False
    yield
    fused.FUSE_NUMBERS, fused.BACKGROUND = saved


X3 = R.random((300, 1, 8))
CASES = {       # name: (a, b, whether the compiled loop takes it)
    "3 axes: (n, 1, d) - (1, k, d)": (X3, R.random((1, 5, 8)), True),
    "(k, d) over (n, k, d)": (R.random((5, 8)), R.random((300, 5, 8)), True),
    "a number per row": (R.random((1500, 1)), R.random((1500, 8)), True),
    "stride-0 view (rt.unreduce)": (np.broadcast_to(R.random((300, 5, 1)), (300, 5, 8)),
                                    R.random((300, 5, 8)), True),
    "views not contiguous": (R.random((16, 1200))[::2].T, R.random((1, 8)), True),
    "rows numpy runs fast": (R.random((2, 5000)), R.random(5000), False),
    "same shapes": (R.random((300, 8)), R.random((300, 8)), False),
    "float32": (X3.astype(np.float32), R.random((1, 5, 8)).astype(np.float32), False),
    "0-d": (np.array(2.0), R.random((300, 8)), False),
    "small": (R.random((3, 1)), R.random(4), False),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")       # numpy's, of x / 0
@pytest.mark.parametrize("order", [list(CASES), list(reversed(CASES))])
def test_a_kept_broadcast_is_numpys_result_bit_for_bit_whatever_came_before(order):
    for name in order:
        a, b, taken = CASES[name]
        for fn in (np.add, np.subtract, np.multiply, np.true_divide):
            want = fn(a, b)
            done = broadcast.binary(fn, a, b, None)
            assert (done is not None) == taken, name
            kept = buffers.Kept()
            for _ in range(2):                 # made, then written into the kept array
                kept.at = 0
                got = kept.run(fn, (a, b))
                assert got.dtype == want.dtype and got.shape == want.shape, name
                np.testing.assert_array_equal(got, want, err_msg=f"{name} {fn.__name__}")
    assert len(broadcast._KERNEL.compiled.signatures) == 1    # read-only views copied
    a, b, _ = CASES["3 axes: (n, 1, d) - (1, k, d)"]
    zero = np.zeros_like(b)
    np.testing.assert_array_equal(broadcast.binary(np.true_divide, a, zero, None), a / zero)
    out = np.empty((300, 5, 8))
    assert broadcast.binary(np.subtract, a, b, out) is out
    assert broadcast.binary(np.subtract, a, b, out[:, ::-1]) is None     # out not C-ordered
    with pytest.MonkeyPatch.context() as patch:                          # no Numba
        patch.setenv("S2SGRAD_BACKEND", "python")
        assert broadcast.binary(np.subtract, a, b, None) is None


def gmm_like(alpha, mu, q, Ls, x):
    """gmm's loop-free core at small sizes: centred points for every component, the
    einsum of the factors, a square summed over the last axis, a log-sum-exp per point
    and a max of ``alpha``."""
    xcentered = x[:, None, :] - mu[None, :, :]
    Lx = np.exp(q) * xcentered + np.einsum("ijk,mik->mij", Ls, xcentered)
    inner = alpha + np.sum(q, axis=1) - 0.5 * np.sum(Lx ** 2, axis=2)
    top = np.max(inner, axis=1)
    slse = np.sum(top + np.log(np.sum(np.exp(inner - top[:, None]), axis=1)))
    return slse - inner.shape[0] * np.max(alpha) + np.sum(Ls * Ls) * 0.5


def lse(x):
    a = np.max(x)
    return a + np.log(np.sum(np.exp(x - a)))


GMM = s2sgrad.grad(gmm_like, (0, 1, 2, 3))
LSE = s2sgrad.grad(lse, 0)


def gmm_args(n, k, d, dtype=np.float64):
    rng = np.random.default_rng(n + k + d)
    return tuple(a.astype(dtype) for a in (
        rng.normal(size=k), rng.random((k, d)), rng.normal(size=(k, d)) * 0.3,
        rng.normal(size=(k, d, d)) * 0.3, rng.normal(size=(n, d))))


def differences(fn, args, index, h=1e-6):
    """The central differences of ``fn`` w.r.t. ``args[index]``, element by element."""
    base = [np.array(a, dtype=np.float64) for a in args]
    grad = np.zeros_like(base[index])
    for i in np.ndindex(grad.shape):
        up, down = [a.copy() for a in base], [a.copy() for a in base]
        up[index][i] += h
        down[index][i] -= h
        grad[i] = (fn(*up) - fn(*down)) / (2 * h)
    return grad


def test_the_generated_code_keeps_the_einsum_contractions_and_a_rebound_returned_name():
    args = gmm_args(1500, 3, 6)                 # the large size class: kept arrays
    GMM(*args)
    # the centred points: one compiled loop over (n, 1, d) - (1, k, d)
    assert "xcentered = kept.subtract(x[:, None, :], mu[None, :, :])" in GMM.source
    assert broadcast.binary(np.subtract, args[4][:, None, :], args[1][None], None) is not None
    # the adjoints (compiler/optimize/summed_adjoints.py): the factors', and the centred
    # points' summed over the points as mu's, contracted summed
    assert "kept.einsum('mij,mik->ijk'" in GMM.source and "kept.einsum('ijk,mik->mij'" in GMM.source
    assert "kept.einsum('ij,ijk->ik', rt.sum(" in GMM.source
    LSE(R.random(20000))
    # dx_minus_a is bound before dx = dx + ...: a temporary, written into a kept array
    assert "dx_minus_a = kept.multiply(kept.true_divide(dt3, t1), exp_x_minus_a)" in LSE.source
    assert "dx = dx + kept.extremum_adjoint(da, x, a, None, False)" in LSE.source
    # the einsum runs as xcentered @ Ls^T (the output's rows are BLAS's), Ls^T copied
    spec, a, b = einsum_module._oriented("ijk,mik->mij", "Ls", "xc")
    assert (spec, a, b) == ("mik,ijk->mij", "xc", "Ls")


def test_only_the_last_binding_of_a_returned_name_is_left_fresh():
    """``b = a; b = b + x``: ``a`` is a temporary (a kept array), ``b + x`` is returned
    (computed as written); ``c[0] = 1.0`` writes into ``c``, it binds nothing."""
    import gast

    from s2sgrad.compiler.optimize.buffers import kept_results
    from s2sgrad.compiler.syntax.source import to_source
    statements = gast.parse("a = x * y\nb = a\nb = b + x\nc = x - y\nc[0] = 1.0\n").body
    out, count = kept_results(statements, {"b", "c"}, lambda name: False, "kept")
    assert [to_source(s).strip() for s in out] == [
        "a = kept.multiply(x, y)", "b = a", "b = b + x", "c = x - y", "c[0] = 1.0"]
    assert count == 1


@pytest.mark.parametrize("sizes", [(40, 5, 4), (1500, 3, 6), (1, 3, 2)])
def test_gmm_like_gradient_matches_differences_and_plain_numpy(sizes, monkeypatch):
    """FD at shapes that change between calls of one gradient (the large one takes the
    compiled broadcast, the fused adjoints and the oriented einsum; the others numpy), and
    the same numbers as the code run without Numba to 1e-12 (BLAS's order of sums)."""
    args = gmm_args(*sizes)
    got = GMM(*args)
    with monkeypatch.context() as patch:
        patch.setenv("S2SGRAD_BACKEND", "python")       # no kernel, no compiled loop
        plain = s2sgrad.grad(gmm_like, (0, 1, 2, 3))(*args)
    for index in range(4):
        np.testing.assert_allclose(got[index], plain[index], rtol=1e-12, atol=1e-12)
        if sizes[0] <= 40:
            np.testing.assert_allclose(got[index], differences(gmm_like, args, index),
                                       rtol=1e-6, atol=1e-6)


def test_gmm_like_in_float32_and_on_views():
    args = gmm_args(3000, 3, 6, np.float32)           # large, float32: numpy's passes
    got = GMM(*args)
    assert all(g.dtype == np.float32 for g in got)
    want = GMM(*(a.astype(np.float64) for a in args))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-3)
    a64 = gmm_args(1500, 3, 6)
    x_view = np.asfortranarray(a64[4])[:, :]                  # not C-ordered
    mu_view = np.repeat(a64[1], 2, axis=1)[:, ::2]            # strided
    got = GMM(a64[0], mu_view, a64[2], a64[3], x_view)
    want = GMM(*a64)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_lse_gradient_and_the_one_pass_full_max_adjoint(monkeypatch):
    from s2sgrad.runtime import core, extremum_rows
    x = R.random(12000)
    np.testing.assert_allclose(LSE(x), np.exp(x - lse(x)), rtol=1e-12)
    small = R.random(7)
    np.testing.assert_allclose(LSE(small), differences(lse, (small,), 0), rtol=1e-7)
    x[[3, 900]] = x.max() + 1.0                       # a tie: split evenly
    x2 = x.reshape(60, 200)
    nan = x.copy()
    nan[5] = np.nan
    cases = [(1.5, x, np.max(x)), (np.float64(-0.0), x2, np.max(x2)),
             (np.array(np.inf), x, np.max(x)), (2.0, nan, np.max(nan))]
    for g, v, ans in cases:
        assert extremum_rows.rows(g, v, ans, None, False, None) is not None
        got = core.extremum_adjoint(g, v, ans, None, False)
        monkeypatch.setattr(fused, "FUSE_NUMBERS", 2 ** 62)
        want = core.extremum_adjoint(g, v, ans, None, False)
        monkeypatch.setattr(fused, "FUSE_NUMBERS", 8192)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # numpy's passes: float32, keepdims, a matrix out of C order
    assert extremum_rows.rows(1.0, x.astype(np.float32), np.float32(1), None, False,
                              None) is None
    assert extremum_rows.rows(1.0, x2.T, np.max(x2), None, False, None) is None


def test_a_kernel_compiled_at_another_optimisation_level_is_not_cached_on_disk(monkeypatch):
    """Numba's cache key does not hold ``NUMBA_OPT``: a runtime loop compiled by the test
    suite (``NUMBA_OPT=0``) and cached was loaded by every later process, unoptimised
    (gmm's centring 16 ms instead of 0.12).  Only the default level reads and writes
    the disk cache."""
    import numba
    from numba.core import config
    asked = []

    class Compile:
        def __init__(self, **options):
            asked.append(options["cache"])

        def __call__(self, fn):
            return self

        def compile(self, signature):
            pass

    monkeypatch.setattr(numba, "njit", Compile)
    for level, cached in ((0, False), (3, True)):
        monkeypatch.setattr(fused, "_COMPILED", {})
        monkeypatch.setattr(config, "OPT", level)
        fused._compiled(broadcast._loops, (0, 3, 3, 3))
        assert asked[-1] is cached


def test_forward_over_the_gradient_through_the_compiled_broadcasts(monkeypatch):
    """jvp of the gradient object (forward over reverse: its own kept build, whose
    tangent broadcasts take the compiled loop too) against differences of the gradient
    along the direction.  (A threshold that no fused chain here reaches but the
    broadcasts do: one compile less each.)"""
    monkeypatch.setattr(fused, "FUSE_NUMBERS", 2 ** 17)
    args = gmm_args(1500, 3, 6)
    vs = tuple(np.random.default_rng(3).normal(size=a.shape) for a in args[:4]) + \
        (np.zeros_like(args[4]),)
    _, tangent = s2sgrad.jvp(GMM, args, vs)
    h = 1e-6
    up = GMM(*(a + h * v for a, v in zip(args, vs)))
    down = GMM(*(a - h * v for a, v in zip(args, vs)))
    for t, u, d in zip(tangent, up, down):
        np.testing.assert_allclose(t, (u - d) / (2 * h), rtol=1e-5, atol=1e-5)
