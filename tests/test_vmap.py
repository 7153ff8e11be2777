"""vmap (issue 21): the batched function against a Python loop of the function, its forms
(vectorised, loop, compiled prange loop), every transform composed with it both ways,
misuse naming the user's line, and results that do not depend on an earlier call.

Lean: small sizes, one compiled prange loop (``sim``) reused by every test that needs it.
"""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import check_grad
from s2sgrad.errors import VmapAxisError

RNG = np.random.default_rng(21)
W = RNG.standard_normal((3, 2))
X = RNG.standard_normal((4, 3))
Y = RNG.standard_normal((4, 2))


def loss(w, x, y):
    z = np.tanh(x @ w)
    return np.sum((z - y) ** 2)


def two_outputs(x, y):
    return x * y + 1.0, np.mean(np.exp(x), axis=-1)


def rows_dot(a, v):
    return a @ v, v @ a.T


def indexed(x, y):
    return x[0] * y + np.sum(x[1:])            # indexing: x[:, 0], x[:, 1:] (vectorised)


def masked(x, y):
    return np.sum(x[x > 0.0]) * y              # a mask: the loop form


def sim(a, x0):
    s = x0
    for i in range(30):
        s = s * a - 0.1 * np.sin(s)
    return s


def pytree(params, x):
    return np.tanh(x @ params["w"] + params["b"])


def loop_of(fn, args, in_axes, out_axes=0):
    """What vmap must give, by a Python loop over the mapped axis."""
    mapped = [a for a, ax in zip(args, in_axes) if ax is not None]
    n = mapped[0].shape[[ax for ax in in_axes if ax is not None][0]]
    results = []
    for b in range(n):
        example = [a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)]
        results.append(fn(*example))
    return _stacked(results, out_axes)


def _stacked(items, axis):
    """The results of each index stacked leaf by leaf (tuples stay tuples)."""
    if isinstance(items[0], tuple):
        axes = axis if isinstance(axis, tuple) else (axis,) * len(items[0])
        return tuple(_stacked([r[k] for r in items], a) for k, a in enumerate(axes))
    return items[0] if axis is None else np.moveaxis(np.stack(items), 0, axis)


def assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.shape(got) == np.shape(want)


CASES = [
    ("loss", loss, (W, X, Y), (None, 0, 0), 0, "vectorised"),
    ("two outputs, axis 1, out_axes (1, 0)", two_outputs,
     (RNG.standard_normal((3, 4)), RNG.standard_normal(3)), (1, None), (1, 0), "vectorised"),
    ("negative axes", two_outputs, (RNG.standard_normal((2, 5)), RNG.standard_normal((2, 5))),
     (-1, -1), (-1, 0), "vectorised"),
    ("matmul rules", rows_dot, (RNG.standard_normal((4, 3, 2)), RNG.standard_normal((4, 2))),
     (0, 0), 0, "vectorised"),
    ("unmapped matrix, mapped vector", rows_dot,
     (RNG.standard_normal((3, 2)), RNG.standard_normal((5, 2))), (None, 0), 0, "vectorised"),
    ("indexing", indexed, (RNG.standard_normal((3, 4)), RNG.standard_normal(3)),
     (1, None), 0, "vectorised"),
    ("a mask: loop form", masked, (RNG.standard_normal((3, 4)), RNG.standard_normal(3)),
     (1, None), 0, "python"),
    ("one output moved, loop form", masked,
     (RNG.standard_normal((3, 4)), RNG.standard_normal(3)), (1, None), 1, "python"),
    ("loops: prange", sim, (RNG.uniform(0.5, 0.9, 6), RNG.standard_normal(6)), 0, 0, "numba"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_vmap_equals_a_python_loop(case):
    _, fn, args, in_axes, out_axes, form = case
    v = ms.vmap(fn, in_axes, out_axes)
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    assert_same(v(*args), loop_of(fn, args, axes, out_axes))
    assert v.form == form, v.not_vectorised
    assert f"def make({fn.__name__}" in v.source


def test_tree_arguments_map_leaf_by_leaf():
    params = {"w": RNG.standard_normal((4, 3, 2)), "b": RNG.standard_normal(2)}
    x = RNG.standard_normal(3)
    v = ms.vmap(pytree, in_axes=({"w": 0, "b": None}, None))
    want = np.stack([pytree({"w": params["w"][i], "b": params["b"]}, x) for i in range(4)])
    assert_same(v(params, x), want)
    assert v.form == "python"


SIM = ms.vmap(sim)
A = RNG.uniform(0.5, 0.9, 7)
X0 = RNG.standard_normal(7)


def test_prange_equals_the_sequential_run_bit_for_bit():
    import numba
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = SIM(A, X0)
        numba.set_num_threads(max(threads, 2) if numba.config.NUMBA_NUM_THREADS > 1 else 1)
        many = SIM(A, X0)
    finally:
        numba.set_num_threads(threads)
    assert SIM.form == "numba" and "prange(1, n)" in SIM.source
    assert np.array_equal(one, many)
    assert np.array_equal(one, [sim(a, x) for a, x in zip(A, X0)])


def test_both_backends_give_the_loop(monkeypatch):
    compiled = SIM(A, X0)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    as_python = SIM(A, X0)
    assert SIM.form == "python" and "range(1, n)" in SIM.source
    monkeypatch.delenv("S2SGRAD_BACKEND")
    np.testing.assert_allclose(as_python, compiled, rtol=1e-13, atol=0)
    assert np.array_equal(SIM(A, X0), compiled) and SIM.form == "numba"


def test_result_does_not_depend_on_the_first_call():
    v = ms.vmap(loss, in_axes=(None, 0, 0))
    small = (W.astype(np.float32), X[:2].astype(np.float32), Y[:2].astype(np.float32))
    for args in [(W, X, Y), small, (W, X[:3], Y[:3]), (W, X, Y)]:
        got = v(*args)
        assert got.dtype == args[1].dtype
        np.testing.assert_allclose(got, loop_of(loss, args, (None, 0, 0)), rtol=1e-6)
    # the same object for another function signature: a rank the first call did not have
    w = ms.vmap(lambda x, y: x * y)
    assert_same(w(X, Y[:, :1]), X * Y[:, :1])
    assert_same(w(X[:, 0], Y[:, 0]), X[:, 0] * Y[:, 0])


# ---------------------------------------------------------------- vmap of each transform

def scalar_loss(w, x):
    return np.sum(np.sin(w * x)) + np.sum(w ** 3)


WV = RNG.standard_normal(3)
XS = RNG.standard_normal((4, 3))

INNER = {
    "grad": lambda: ms.grad(scalar_loss),
    "value_and_grad": lambda: ms.value_and_grad(scalar_loss, (0, 1)),
    "jacfwd": lambda: ms.jacfwd(scalar_loss, 1),
    "jacrev": lambda: ms.jacrev(scalar_loss, (0, 1)),
    "hessian": lambda: ms.hessian(scalar_loss),
    "jvp": lambda: (lambda w, x: ms.jvp(scalar_loss, (w, x), (np.ones(3), x))[1]),
    "vjp": lambda: (lambda w, x: ms.vjp(scalar_loss, w, x)[1](1.0)),
}


@pytest.mark.parametrize("name", sorted(INNER))
def test_vmap_of_every_transform_is_the_loop_of_it(name):
    inner = INNER[name]()
    got = ms.vmap(inner, in_axes=(None, 0))(WV, XS)
    assert_same(got, loop_of(inner, (WV, XS), (None, 0)))


def test_per_example_gradients():
    per_example = ms.vmap(ms.grad(loss), in_axes=(None, 0, 0))(W, X, Y)
    assert per_example.shape == (4, 3, 2)
    np.testing.assert_allclose(per_example.sum(axis=0), ms.grad(
        lambda w: sum(loss(w, X[i], Y[i]) for i in range(4)))(W), rtol=1e-12)


# ---------------------------------------------------------------- each transform of vmap

BATCHED = ms.vmap(scalar_loss, in_axes=(None, 0))
SIM_BATCHED = ms.vmap(sim, in_axes=(0, None))


def looped(w, xs):
    return np.stack([scalar_loss(w, xs[i]) for i in range(xs.shape[0])])


def test_grad_of_a_function_calling_a_vmap_matches_finite_differences():
    def outer(w, xs):
        return np.sum(BATCHED(w, xs) ** 2)
    check_grad(outer, (WV, XS), (0, 1))

    def outer_loop(a, x0):
        return np.sum(np.tanh(SIM_BATCHED(a, x0)))
    check_grad(outer_loop, (A, 0.3), (0, 1))


OUTER = {
    "grad": lambda f: ms.grad(lambda w, xs: np.sum(f(w, xs)), (0, 1)),
    "value_and_grad": lambda f: ms.value_and_grad(lambda w, xs: np.sum(f(w, xs) ** 2), 0),
    "jacfwd": lambda f: ms.jacfwd(f, (0, 1)),
    "jacrev": lambda f: ms.jacrev(f, 0),
    "hessian": lambda f: ms.hessian(lambda w, xs: np.sum(f(w, xs)), 0),
    "jvp": lambda f: (lambda w, xs: ms.jvp(f, (w, xs), (np.ones(3), xs))),
    "vjp": lambda f: (lambda w, xs: ms.vjp(f, w, xs)[1](np.arange(4.0))),
}


@pytest.mark.parametrize("name", sorted(OUTER))
def test_every_transform_of_a_vmap_is_that_of_the_loop(name):
    got = OUTER[name](BATCHED)(WV, XS)
    want = OUTER[name](looped)(WV, XS)
    flat_got = [np.asarray(g) for g in _leaves(got)]
    flat_want = [np.asarray(w) for w in _leaves(want)]
    assert len(flat_got) == len(flat_want)
    for g, w in zip(flat_got, flat_want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def test_a_vmap_made_inside_maps_its_own_parameters_only():
    # its lambda reads w from the function being differentiated: w is lifted to a
    # parameter after v, and must not be mapped (main indexed it per row: with as many
    # rows as w has items, a wrong gradient and no error)
    rows = RNG.standard_normal((3, 3))
    check_grad(lambda w: np.sum(ms.vmap(lambda v: np.sin(w) * v)(rows) ** 2), (WV,))
    check_grad(lambda w: np.sum(ms.vmap(lambda v, u: w * v * u, (0, None))(rows, WV)), (WV,))


def test_a_derivative_of_a_vmapped_jacobian_is_refused_naming_the_line():
    from s2sgrad.errors import DerivativeCompositionError
    per_example = ms.vmap(ms.jacrev(scalar_loss), (None, 0))
    with pytest.raises(DerivativeCompositionError, match=r"made at test_vmap\.py:\d+"):
        ms.grad(lambda w, xs: np.sum(per_example(w, xs)))(WV, XS)


# ---------------------------------------------------------------- per-example derivatives,
# compiled: one prange driver calling the derivative's Numba-compiled code

DECAY = 0.1      # read by sim_loss: a changed value must reach a built vmap


def sim_loss(a, x0):
    s = x0
    for i in range(8):
        s = s * a - DECAY * np.sin(s)
    return np.sum(s ** 2)


def sim_vector(a, x0):
    s = x0
    for i in range(8):
        s = s * a - 0.1 * np.sin(s)
    return s


AM, XM = RNG.uniform(0.5, 0.9, (5, 3)), RNG.standard_normal((5, 3))
PER_EXAMPLE = {     # built once: each is one Numba compile of a gradient and a driver
    "grad": (ms.grad(sim_loss, (0, 1)), (None, 0), (AM[0], XM)),
    "jacrev": (ms.jacrev(sim_vector), (0, 0), (AM, XM)),
}
PER_EXAMPLE_VMAPS = {name: ms.vmap(inner, axes) for name, (inner, axes, _) in
                     PER_EXAMPLE.items()}


def _bits(got, want):
    """Leaf by leaf: the same structure, shapes, dtypes and bits."""
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
        assert np.array_equal(g, w), (g, w)


@pytest.mark.parametrize("name", sorted(PER_EXAMPLE))
def test_vmap_of_a_compiled_derivative_is_one_prange_driver_bit_for_bit(name):
    import numba
    inner, axes, args = PER_EXAMPLE[name]
    v = PER_EXAMPLE_VMAPS[name]
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = v(*args)
        numba.set_num_threads(max(threads, 2) if numba.config.NUMBA_NUM_THREADS > 1 else 1)
        many = v(*args)
    finally:
        numba.set_num_threads(threads)
    assert v.form == "numba", v.not_vectorised
    # the driver says what it calls, and calls it from a prange
    assert "prange(1, n)" in v.source and "Numba-compiled code of" in v.source
    assert f"code of {name}(sim_" in " ".join(v.source.split())
    _bits(one, many)
    _bits(many, loop_of(inner, args, axes))


def test_vmap_of_a_compiled_value_and_grad_picks_the_value_and_each_gradient():
    # its code is grad(sim_loss, (0, 1))'s (Numba's cache); the driver is built, not run
    v = ms.vmap(ms.value_and_grad(sim_loss, (0, 1)), in_axes=(None, 0))
    generated = v.show_for((AM[0], XM), {})
    assert generated.form == "numba", generated.not_vectorised
    for line in ["out_0[b] = result[0]", "out_1_row = result[1][0].ravel()",
                 "out_2_row = result[1][1].ravel()", "code of value_and_grad(sim_loss)"]:
        assert line in " ".join(generated.source.split()), line


def shadowing_loss(k, n, b, first, result, out_0):
    s = k
    for i in range(3):
        s = s * n - b * np.sin(s) + first * result * out_0
    return np.sum(s ** 2)


def test_the_drivers_own_names_never_shadow_the_users_parameters():
    # a parameter named k was rebound by the driver's item loop (`for k in range(...)`):
    # Numba refused the prange ("reduction variable 'k'"); its Python loop would have
    # passed the loop's k instead of the user's
    import ast
    v = ms.vmap(ms.grad(shadowing_loss), in_axes=(0, None, None, None, None, None))
    args = (XM, 0.9, 0.1, 0.2, 0.3, 0.4)
    rows = ast.parse(v.show_for(args, {}).source).body[-1].body[0]
    params = {a.arg for a in rows.args.args}
    assert params == {"k_arg", "n_arg", "b_arg", "first_arg", "result_arg", "out_0_arg"}
    bound = {t.id for node in ast.walk(rows) if isinstance(node, (ast.Assign, ast.For))
             for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
             for t in ast.walk(target) if isinstance(t, ast.Name)}
    assert not params & bound
    want = np.stack([ms.grad(shadowing_loss)(x, *args[1:]) for x in XM])
    np.testing.assert_allclose(v(*args), want, rtol=1e-12)
    assert v.form == "numba", v.not_vectorised


def first_item_loss(w, x):
    return np.sum(np.sin(w * x[0])) + np.sum(w ** 3) * np.sum(x[x > 0.0])   # a mask


def test_vmap_of_a_derivative_that_does_not_compile_says_why():
    v = ms.vmap(ms.grad(first_item_loss), in_axes=(None, 0))   # loop-free: runs as numpy
    v(WV, XS)
    assert v.form == "python" and "not compiled: its code runs as numpy" in v.not_vectorised
    assert "no batched gradient: first_item_loss is not vectorised: an index by " \
        "'x > 0.0', not known to be integers" in v.not_vectorised
    assert "not compiled: its code runs as numpy" in " ".join(v.source.split())


def test_compiled_per_example_gradients_follow_a_changed_global():
    global DECAY
    v = PER_EXAMPLE_VMAPS["grad"]
    inner, axes, args = PER_EXAMPLE["grad"]
    before = v(*args)
    try:
        DECAY = 0.3
        changed = v(*args)
        assert v.form == "numba"
        _bits(changed, loop_of(inner, args, axes))
        assert not np.array_equal(changed[0], before[0])
    finally:
        DECAY = 0.1
    _bits(v(*args), before)      # the loop over the first code, found again
    assert len(v._earlier) == 1


def test_grad_and_jvp_of_functions_calling_vmapped_gradients(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")      # the compositions, not Numba
    per_example = ms.vmap(ms.grad(sim_loss, (0, 1)), (None, 0))
    values = ms.vmap(ms.value_and_grad(sim_loss), (None, 0))

    def outer(w, xs):
        da, dx = per_example(w, xs)
        return np.sum(np.sin(da)) + np.sum(dx * dx)

    def outer_value(w, xs):
        v, da = values(w, xs)
        return np.sum(np.sin(da)) + np.sum(v * v)
    w = AM[0]
    for fn in (outer, outer_value):
        check_grad(fn, (w, XM), (0, 1))
        _, tangent = ms.jvp(fn, (w, XM), (np.ones(3), XM))
        eps = 1e-6
        fd = (fn(w + eps, XM * (1 + eps)) - fn(w - eps, XM * (1 - eps))) / (2 * eps)
        np.testing.assert_allclose(tangent, fd, rtol=1e-6)
    # jvp of the vmap of a gradient itself: the tangent of every example's gradient
    _, tangent = ms.jvp(per_example, (w, XM), (np.ones(3), np.zeros_like(XM)))
    eps = 1e-6
    fd = [(p - m) / (2 * eps) for p, m in zip(per_example(w + eps, XM),
                                              per_example(w - eps, XM))]
    for t, f in zip(tangent, fd):
        np.testing.assert_allclose(t, f, rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------- misuse

def _raises(call, *words):
    with pytest.raises(VmapAxisError) as info:
        call()
    text = str(info.value)
    assert "test_vmap.py:" in text, text
    for word in words:
        assert word in text, text


def test_misuse_names_the_users_line_and_what_to_do():
    v = ms.vmap(two_outputs, in_axes=(0, 0))
    _raises(lambda: v(np.ones((3, 2)), np.ones((4, 2))), "differ in size", "3", "4")
    _raises(lambda: ms.vmap(two_outputs, in_axes=(0,))(X, X), "1 entries", "2 arguments")
    _raises(lambda: ms.vmap(two_outputs, in_axes=(0, 2))(X, X[0]), "out of range")
    _raises(lambda: ms.vmap(two_outputs, in_axes=None)(X, X), "maps no argument")
    _raises(lambda: ms.vmap(two_outputs, out_axes=(0, 0, 0))(X, X), "tuple of 2")
    _raises(lambda: ms.vmap(two_outputs, out_axes=(3, 0))(X, X), "out_axis", "out of range")
    _raises(lambda: ms.vmap(two_outputs, in_axes="rows"), "must be an int")
    _raises(lambda: ms.vmap(two_outputs, out_axes=(0, None))(X, X), "differs along")
    _raises(lambda: ms.vmap(pytree, in_axes=({"w": 0}, None))({"w": X, "b": Y}, X),
            "keys")


def test_show_prints_the_batched_code(capsys):
    source = ms.show(ms.vmap(loss, in_axes=(None, 0, 0)), W, X, Y)
    assert "np.sum((z - y) ** 2, axis=(1,))" in source
    assert "batched code" in capsys.readouterr().out
    assert ms.ops.vmap(loss, (None, 0, 0))(W, X, Y).shape == (4,)


def test_a_reason_quoting_the_users_strings_keeps_the_module_parsable():
    # astor writes a string constant of a refused expression as """ijk,mik->mij""": the
    # module's docstring ended there (SyntaxError at the vmap's first call)
    import ast
    from s2sgrad.compiler.pipeline_vmap import docstring
    for text in ['the expression \'"""ijk,mik->mij"""\'', 'a\\b ends in "', '\\']:
        assert ast.literal_eval(docstring(text)) == text + "\n"
