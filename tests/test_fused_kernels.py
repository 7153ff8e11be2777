"""Fused elementwise kernels (``compiler/optimize/kernels.py``, ``compiler/emit/kernels.py``,
``rt.Fused``): which chains become one kernel call in the generated code, that the
gradient through them is the unfused one (bit for bit but for the order of a fused sum's
additions: ``same_but_sums``) and matches finite differences, in
reverse and forward mode, and that a kernel gives numpy's result (bits, dtype, shape)
whatever it is given and whatever an earlier call was given: broadcasting, 3-D operands,
views that are not contiguous, float32, integers, 0-d arrays, numbers, shapes that change
between calls, ``out=``.

One gradient is built (and its kernels compiled) for the whole module: the tests share
it.  The suite runs every kernel as numpy (``tests/conftest.py``); this module sets the
threshold of ``runtime/fused.py`` to 8,192 numbers saved (``N`` rows of 8 float64 reach
it; the real one, ``FUSE_NUMBERS``, is 64 times that)."""
import sys

import gast
import numpy as np
import pytest

import s2sgrad
from s2sgrad.backend.cache import load
from s2sgrad.compiler import pipeline
from s2sgrad.compiler.optimize.kernels import fused_chains
from s2sgrad.runtime import buffers, fused

#: rows of 8 float64: one array of ``KEEP_BYTES``, the large size class of kept arrays
N = buffers.KEEP_BYTES // 64


@pytest.fixture(autouse=True, scope="module")
def compiled_above_a_lower_threshold():
    saved = fused.FUSE_NUMBERS
    fused.FUSE_NUMBERS = 8192
    yield
    fused.FUSE_NUMBERS = saved


def kmeans(centroids, points):
    a_sqr = np.sum(points ** 2, axis=1)[:, None]
    b_sqr = np.sum(centroids ** 2, axis=1)[None, :]
    dists = a_sqr + b_sqr - 2 * (points @ centroids.T)
    spread = np.exp(-dists) * dists
    return np.sum(np.min(dists, axis=1)) + np.sum(spread * spread * 0.5)


GRAD = s2sgrad.grad(kmeans, 0)
rng = np.random.default_rng(0)
POINTS = rng.random((N, 8))
CENTROIDS = rng.random((12, 8))


def module_of(derivative):
    """The loaded generated module of ``derivative``'s last call."""
    function = load(derivative.path, derivative._generated.function_name)
    return sys.modules[function.__module__]


def compiled_kernels():
    """``GRAD``'s kernels, called and compiled (their compile runs in a thread: wait)."""
    GRAD(CENTROIDS, POINTS)
    kernels = [v for v in vars(module_of(GRAD)).values() if isinstance(v, fused.Fused)]
    for kernel in kernels:
        kernel.wait()
    return kernels


def code_lines(source):
    return [line.strip() for line in source.splitlines() if not line.strip().startswith("#")]


def test_a_chain_of_elementwise_statements_is_one_kernel_call():
    GRAD(CENTROIDS, POINTS)
    code = code_lines(GRAD.source)
    # a_sqr + b_sqr - 2 * (points @ centroids.T): three operations, one pass; @ stays BLAS
    assert "dists = kept.fused(_dists_fused, a_sqr, b_sqr, kept.matmul(points, centroids.T))" \
        in code, GRAD.source
    assert "_dists_fused = rt.Fused(_dists_loops, lambda a_sqr, b_sqr, arg3: a_sqr + b_sqr - " \
           "2 * arg3, 3)" in code
    assert "out_i[j] = a_sqr_i[j * a_sqr_c] + b_sqr_i[j * b_sqr_c] - 2 * arg3_i[j * arg3_c]" \
        in code
    # the comment says what it fuses and from which line
    line = kmeans.__code__.co_firstlineno + 3
    assert f"# dists = a_sqr + b_sqr - 2 * (points @ centroids.T) (test_fused_kernels.py:{line}): " \
           "3 operations in one pass over the elements" in GRAD.source.replace("\n#    ", " ")
    # the adjoint's chains too (the adjoint of spread * spread: dspread + dt7 * spread); an
    # exp stays numpy's (faster than the one Numba calls)
    # (the first binding of dspread, read once by the second, is in its chain)
    assert "dspread = kept.fused(_dspread_fused, dt7, spread)" in code, GRAD.source
    assert "ddists = kept.fused(_ddists_fused, ddists, dspread, exp_neg_dists)" in code
    assert "exp_neg_dists = kept.exp(kept.negative(dists))" in code
    # the large call compiled the loops (the small chain of dcentroids and the small sum
    # of centroids ** 2 stay numpy's)
    kernels = compiled_kernels()
    assert len(kernels) >= 4 and all((k.compiled is None) == (k.loops.__name__ in (
        "_dcentroids_loops", "_t2_loops")) for k in kernels)


def unfused(monkeypatch, derivative, *args):
    """``derivative(*args)`` built afresh without the fusion pass."""
    monkeypatch.setattr(pipeline, "fused_chains", lambda s, keep, fresh, scalar: (s, []))
    return derivative(*args)


def test_the_fused_gradient_is_the_unfused_one_bit_for_bit_and_matches_differences(
        monkeypatch, tmp_path):
    compiled_kernels()
    got = GRAD(CENTROIDS, POINTS)
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    plain_grad = s2sgrad.grad(kmeans, 0)
    plain = unfused(monkeypatch, plain_grad, CENTROIDS, POINTS)
    assert "kept." in plain_grad.source and "rt.Fused" not in plain_grad.source
    same_but_sums(got, plain)
    for seed in range(2):
        v = np.random.default_rng(seed).normal(size=CENTROIDS.shape)
        h = 1e-6
        numeric = (kmeans(CENTROIDS + h * v, POINTS) - kmeans(CENTROIDS - h * v, POINTS)) / (2 * h)
        np.testing.assert_allclose(np.sum(got * v), numeric, rtol=1e-6)


def same_but_sums(got, want, name=""):
    """``got`` is ``want`` to the rounding of a sum: ``points ** 2`` summed over rows of 8
    by an ``rt.FusedSum`` adds in numpy's order, the unfused ``rt.sum`` by a BLAS product
    with ones (``runtime/fused_sum.py``); every elementwise operation is the same."""
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.max(np.abs(want)),
                               err_msg=name)


PLAIN = []      # the gradient built without the fusion pass (``unfused_call`` makes it)


def unfused_call(tmp_path_factory, *args):
    """``PLAIN[0](*args)``: any build it makes is made without the pass, in a cache folder of
    its own (the disk cache's key does not know the pass); its code is checked."""
    folder = tmp_path_factory.getbasetemp() / "unfused"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "fused_chains", lambda s, keep, fresh, scalar: (s, []))
        patch.setenv("S2SGRAD_CACHE_DIR", str(folder))
        if not PLAIN:
            PLAIN.append(s2sgrad.grad(kmeans, 0))
        result = PLAIN[0](*args)
        assert "kept." in PLAIN[0].source and "rt.Fused" not in PLAIN[0].source
        return result


@pytest.mark.parametrize("order", [("large", "float32", "other rows", "large"),
                                   ("other rows", "large", "float32")])
def test_gradients_whatever_the_earlier_calls_were_given(order, tmp_path_factory):
    """Other shapes and float32 between calls: the fused gradient is the unfused one bit
    for bit each time (float32: numpy's expressions, in float32), and matches
    differences."""
    compiled_kernels()
    r = np.random.default_rng(3)
    calls = {"large": (CENTROIDS, POINTS),
             "other rows": (r.random((7, 8)), r.random((2 * N, 8))),
             "float32": (CENTROIDS.astype(np.float32),            # 64 KiB: kept arrays
                         r.random((2 * N, 8)).astype(np.float32))}
    for name in order:
        args = calls[name]
        got = GRAD(*args)
        assert "rt.Fused" in GRAD.source, name
        want = unfused_call(tmp_path_factory, *args)
        assert got.dtype == want.dtype == args[0].dtype, name
        same_but_sums(got, want, name)
        if name != "float32":
            v, h = r.normal(size=args[0].shape), 1e-6
            numeric = (kmeans(args[0] + h * v, args[1]) -
                       kmeans(args[0] - h * v, args[1])) / (2 * h)
            np.testing.assert_allclose(np.sum(got * v), numeric, rtol=1e-6, err_msg=name)


def test_forward_over_the_fused_gradient(monkeypatch):
    """jvp of the gradient (kmeans' Newton step): its code fuses its chains too (run as
    numpy's expressions here: the loops are the same emitter's, compiled above)."""
    monkeypatch.setattr(fused, "FUSE_NUMBERS", 2 ** 62)
    v = rng.normal(size=CENTROIDS.shape)
    h = 1e-6
    for points in (POINTS, POINTS[:, ::-1].copy()):       # the second call: other values
        _, tangent = s2sgrad.jvp(GRAD, (CENTROIDS, points), (v, np.zeros_like(points)))
        numeric = (GRAD(CENTROIDS + h * v, points) - GRAD(CENTROIDS - h * v, points)) / (2 * h)
        np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-6)
    assert "kept.fused(_" in s2sgrad.show(GRAD, CENTROIDS, POINTS, mode="jvp")


def dists_kernel():
    compiled_kernels()
    return module_of(GRAD)._dists_fused


def expected(a, b, c):
    return a + b - 2 * c


R = np.random.default_rng(1)
BIG = R.random((600, 40))
CASES = {
    "broadcast rows and columns": (R.random((600, 1)), R.random((1, 40)), BIG),
    "1-D with numbers": (R.random(9000), 0.5, 3),
    "3-D merged to 2-D": (R.random((300, 5, 8)), R.random((5, 8)), R.random((300, 5, 8))),
    "3-D that does not merge": (R.random((300, 1, 8)), R.random((1, 5, 8)), 1.0),
    "an axis repeated (rt.unreduce)": (np.broadcast_to(R.random((600, 1)), (600, 40)),
                                       np.broadcast_to(R.random((1, 40)), (600, 40)), BIG),
    "every operand repeats an axis": (np.broadcast_to(R.random((1, 40)), (600, 40)),
                                      np.broadcast_to(R.random((1, 40)), (600, 40)), 2.0),
    "views not contiguous": (BIG.T, R.random((1200, 80))[::2, ::2].T, R.random((40, 1))),
    "float32": (BIG.astype(np.float32), R.random((1, 40)).astype(np.float32), np.float32(2)),
    "integers": (np.arange(24000).reshape(600, 40), 1, BIG),
    "0-d": (np.array(2.0), np.array(3.0), 1.5),
    "small": (R.random((3, 4)), R.random(4), 1.0),
    "numpy numbers": (np.float64(2.0), BIG, np.int64(3)),
}


@pytest.mark.parametrize("order", [list(CASES), list(reversed(CASES))])
def test_a_kernel_gives_numpys_result_whatever_it_is_given_and_was_given(order):
    kernel = dists_kernel()
    for name in order:
        args = CASES[name]
        got, want = kernel(*args), expected(*args)
        assert type(got) is type(want) and np.shape(got) == np.shape(want), name
        assert np.asarray(got).dtype == np.asarray(want).dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert kernel.compiled is not None
    # read-only and stride-0 operands went in as the compiled types: no other compile
    assert len(kernel.compiled.signatures) == 1
    # what runs compiled: (operations - 1) x size of FUSE_NUMBERS or more, decided per call
    fresh = fused.Fused(kernel.loops, kernel.numpy, 3)
    fresh(*CASES["small"])
    assert fresh.compiled is None
    with pytest.MonkeyPatch.context() as patch:        # S2SGRAD_BACKEND=python: no Numba
        patch.setenv("S2SGRAD_BACKEND", "python")
        np.testing.assert_array_equal(fresh(*CASES["broadcast rows and columns"]),
                                      expected(*CASES["broadcast rows and columns"]))
        assert fresh.compiled is None
    fresh(*CASES["broadcast rows and columns"])
    assert fresh.compiled is kernel.compiled              # one compile per code
    # an axis an operand repeats (stride 0) is read at index 0, never copied out full
    # size, and counts as a broadcast (2 passes saved: rt.unreduce's adjoints of sums)
    shape, grid, operands = fused._plan(CASES["an axis repeated (rt.unreduce)"], 1)
    assert [a.shape for a in operands] == [(600, 1), (1, 40), (600, 40)]
    out = np.empty((600, 40))                       # out= (kept arrays): written, returned
    assert kernel(*CASES["broadcast rows and columns"], out=out) is out
    np.testing.assert_array_equal(out, expected(*CASES["broadcast rows and columns"]))


def test_which_chains_are_fused():
    """Only maximal chains of two or more operations on arrays join; a result read twice,
    returned, or followed by an in-place write before its reader stays a statement; tuple
    joins, exp and operations of numbers only are not fused."""
    def fuse(text, keep=(), numbers=()):
        names = iter(f"_k{n}_fused" for n in range(9))
        statements, chains = fused_chains(gast.parse(text).body, set(keep),
                                          lambda base: next(names), set(numbers).__contains__)
        return [gast.unparse(s) if hasattr(gast, "unparse") else s for s in statements], chains

    _, chains = fuse("y = a * b\nz = y + c\nw = -z * 2")
    assert len(chains) == 1 and len(chains[0].what) == 3
    assert chains[0].params == ["a", "b", "c"]
    _, chains = fuse("y = a * b\nz = y + c\nw = z * y")           # y read twice
    assert [len(c.what) for c in chains] == [2]
    _, chains = fuse("y = a * b\nz = y + c", keep={"y"})
    assert chains == []
    _, chains = fuse("y = a * b\na[0] = 1.0\nz = y + c")           # a written in place
    assert chains == []
    _, chains = fuse("s = np.reshape(x, x.shape[:1] + (-1,) + x.shape[-1:][1:])")
    assert chains == []
    _, chains = fuse("y = np.exp(a - b) * c")
    assert chains == []
    _, chains = fuse("g = dt / t1 * e", numbers={"dt", "t1"})     # one pass already
    assert chains == []
    _, chains = fuse("g = rt.sum(a * b * c, 0, False)")           # inside a call
    assert len(chains) == 1 and chains[0].params == ["a", "b", "c"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")    # numpy's, of x / 0
def test_the_adjoint_of_a_min_over_rows_in_one_pass_is_numpys_bit_for_bit(monkeypatch):
    """``rt.extremum_adjoint`` over the rows of a large float64 matrix: one compiled pass
    (``runtime/extremum_rows.py``), the numbers of numpy's four passes: ties split, a NaN
    row, an infinite and a negative adjoint (0.0 * g keeps its sign and NaNs)."""
    from s2sgrad.runtime import core, extremum_rows
    monkeypatch.setattr(fused, "BACKGROUND", False)
    x = R.random((120, 90))
    x[5, :3] = 0.0
    x[7, :] = np.nan
    g = R.normal(size=120)
    g[3], g[5], g[9] = np.inf, -1.0, -0.0
    cases = [(g, x, np.min(x, axis=1), 1, False), (g, x, np.max(x, axis=1), -1, False),
             (g[:, None], x, np.min(x, axis=1, keepdims=True), 1, True),      # numpy's
             (g[:90], x, np.min(x, axis=0), 0, False),                         # numpy's
             (g.astype(np.float32), x.astype(np.float32),
              np.min(x, axis=1).astype(np.float32), 1, False)]                 # numpy's
    for args in cases:
        got = core.extremum_adjoint(*args)
        monkeypatch.setattr(fused, "FUSE_NUMBERS", 2 ** 62)
        want = core.extremum_adjoint(*args)
        monkeypatch.setattr(fused, "FUSE_NUMBERS", 8192)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert extremum_rows.rows(*cases[0], None) is not None        # the compiled pass ran
    assert extremum_rows.rows(*cases[2], None) is None
    out = np.empty_like(x)
    assert core.extremum_adjoint_into(*cases[0], out) is out
    np.testing.assert_array_equal(out, core.extremum_adjoint(*cases[0]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_kernel_divides_by_zero_as_numpy_does_from_a_module_with_no_file(monkeypatch):
    """The emitter's text run as a module Numba cannot cache beside (compiled without its
    disk cache): x / 0 is an infinity or a NaN, as numpy gives, never an exception."""
    from s2sgrad.compiler.emit.kernels import kernel_lines
    monkeypatch.setattr(fused, "BACKGROUND", False)
    _, chains = fused_chains(gast.parse("z = -a / b * c").body, set(), lambda base: "_z_fused")
    text = "import numpy as np\nfrom s2sgrad import runtime as rt\n" + "\n".join(
        line for line, _ in kernel_lines(chains))
    scope = {}
    exec(compile(text, "/no/such/folder/kernels.py", "exec"), scope)  # noqa: S102
    a, b = R.normal(size=(200, 50)), R.normal(size=(200, 1))
    a[0, :2], b[:3] = 0.0, 0.0
    got = scope["_z_fused"](a, b, 2.0)
    assert scope["_z_fused"].compiled is not None
    np.testing.assert_array_equal(got, -a / b * 2.0)


def test_a_result_that_stays_in_the_caches_runs_numpy_whatever_the_passes_saved():
    """A chain whose result is under FUSE_NUMBERS / LEAST_SHARE numbers runs numpy even
    where its passes saved times its size reach FUSE_NUMBERS (ba's (31843, 3) chains of
    four passes saved gained nothing compiled and cost kernel compiles at the first call);
    one of that size runs compiled."""
    least = fused.FUSE_NUMBERS // fused.LEAST_SHARE
    small = np.ones((least // 2 - 1, 2))
    assert small.size * 8 >= fused.FUSE_NUMBERS
    assert fused._plan([small, small], 8) is None
    large = np.ones((least // 2, 2))
    assert fused._plan([large, large], 8) is not None


def named_like_the_loops(x, y):
    out = np.exp(x) * y          # the user's names: those of the kernel's own loops
    i = x * x
    j = y + 1.0
    return np.sum(2.0 * out - i * j + out * i)


def test_operands_named_like_the_kernels_loop_variables():
    """A chain reading arrays the user named ``out``, ``i``, ``j`` (gmm's prior: ``out``):
    the kernel's output and loop indices take other names; compiled, the gradient is
    the analytic one (before: ``def _t_loops(out, ..., out)``, a SyntaxError at load)."""
    gradient = s2sgrad.grad(named_like_the_loops, (0, 1))
    x, y = rng.random((N, 8)), rng.random((N, 8))
    gradient(x, y)
    kernels = [v for v in vars(module_of(gradient)).values() if isinstance(v, fused.Fused)]
    assert kernels
    for kernel in kernels:
        kernel.wait()
        assert kernel.compiled is not None
    dx, dy = gradient(x, y)
    e = np.exp(x)
    np.testing.assert_allclose(dx, 2 * e * y - 2 * x * (y + 1) + e * y * x * x + e * y * 2 * x,
                               rtol=1e-12)
    np.testing.assert_allclose(dy, 2 * e - x * x + e * x * x, rtol=1e-12)
