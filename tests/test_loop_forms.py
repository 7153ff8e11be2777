"""Loop forms a new user writes: reversed(range(...)), reversed(x), enumerate, zip, dict
iteration, bounds read from shapes; the loops s2sgrad cannot walk (map, filter, sorted,
iter, sets, numbers) are refused naming the user's line and construct, never a crash
inside the generated code.  Also: float32 scalars, check_grad on pytrees, a tuple indexed
at run time."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.errors import UnsupportedConstructError
from s2sgrad.testing import check_grad, numerical_grad

X = np.linspace(0.3, 1.7, 9)


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def rev_stop(x, n):
    acc = 0.5
    for i in reversed(range(n)):
        acc = acc * 0.9 + x[i] * i + np.sin(acc) * x[i]
    return acc


def rev_step(x, a, b):
    acc = 0.5
    for i in reversed(range(a, b, 2)):
        acc = acc * 0.9 + x[i] * i + np.sin(acc) * x[i]
    return acc


def rev_negative_step(x, a, b):
    acc = 0.5
    for i in reversed(range(a, b, -3)):
        acc = acc * 0.9 + x[i] * i + np.sin(acc) * x[i]
    return acc


@pytest.mark.parametrize("fn, bounds", [
    (rev_stop, [(0,), (1,), (5,), (9,)]),
    (rev_step, [(a, b) for a in (0, 1, 3) for b in (0, 1, 4, 8, 9)]),
    (rev_negative_step, [(a, b) for a in (0, 4, 8) for b in (-1, 0, 2, 7, 8)]),
])
def test_reversed_range_value_and_gradient(fn, bounds):
    g = s2sgrad.value_and_grad(fn)
    for b in bounds:
        value, _ = g(X, *b)
        assert value == pytest.approx(fn(X, *b), rel=1e-12)
        check_grad(fn, (X,) + b)


def test_reversed_range_with_shape_bound_and_constant_bounds():
    def f(x):
        acc = 0.0
        for i in reversed(range(1, x.shape[0] - 1)):
            acc = np.tanh(acc + x[i - 1] * x[i + 1])
        for j in reversed(range(3)):
            acc = acc * x[j]
        return acc
    check_grad(f, (X,))


def test_loop_variable_read_only_by_recomputed_neighbours():
    """Was a silent wrong gradient: the adjoint loop recomputed ``x[i - 1]`` from a loop
    variable it did not walk again (it kept its last forward value)."""
    def down(x):
        acc = 0.0
        for i in range(x.shape[0] - 2, 0, -1):
            acc = np.tanh(acc + x[i - 1] * x[i + 1])
        return acc

    def up(x):
        acc = 0.0
        for i in range(1, x.shape[0] - 1, 2):
            acc = np.tanh(acc + x[i - 1] * x[i + 1])
        return acc
    check_grad(down, (X,))
    check_grad(up, (X,))


def test_reversed_range_with_a_run_time_step_is_refused():
    def f(x, s):
        acc = 0.0
        for i in reversed(range(0, 4, s)):
            acc = acc + x[i]
        return acc
    with pytest.raises(UnsupportedConstructError) as info:
        s2sgrad.grad(f)(X, 1)
    text = str(info.value)
    assert "test_loop_forms.py" in text and "reversed(range(...))" in text and "step" in text


def test_reversed_array_rows_and_tuple():
    def f(x, w):
        h = np.zeros(3)
        for row in reversed(w):
            h = np.tanh(row * x[0] + h * 0.5)
        for v in reversed((x[1], x[2] * 2.0)):
            h = h * v + 1.0
        return np.sum(h)
    w = np.random.default_rng(0).normal(size=(4, 3))
    check_grad(f, (X, w), grad_position=(0, 1))


def test_reversed_list_built_at_run_time():
    def f(x):
        hs = []
        for i in range(4):
            hs.append(x[i] * x[i + 1])
        acc = 0.0
        for h in reversed(hs):
            acc = np.sin(acc) + h
        return acc
    check_grad(f, (X,))


def test_enumerate_zip_and_dict_iteration():
    def f(x, y, params):
        acc = 0.0
        for i, a in enumerate(x):
            acc = acc * 0.5 + a * i
        for i, (a, b) in enumerate(zip(x, y)):
            acc = acc * 0.5 + a * b * i
        for (i, a), b in zip(enumerate(x[1:]), y):
            acc = acc + a * b * (i + 1.0)
        for a, b in zip(x, y):
            acc = acc * 0.5 + a * b
        for key in params:
            acc = acc + np.sum(params[key] * x[:2])
        for key, value in params.items():
            acc = acc * np.sum(value)
        return acc
    params = {"w": np.array([0.3, 0.5]), "b": np.array([1.1, -0.4])}
    check_grad(f, (X, X[::-1].copy(), params), grad_position=(0, 1, 2))


def test_reversed_inside_enumerate_and_zip():
    def f(x, y):
        acc = 0.5
        for k, r in enumerate(reversed(x)):
            acc = np.sin(acc) * 0.8 + r * (k + 1.0)
        for (k, r), q in zip(enumerate(x, 1), reversed(y * 2.0)):
            acc = np.sin(acc) * 0.8 + r * q * k
        for a, b in zip(reversed((x[0], x[1])), (y[2], y[3])):
            acc = acc + a * b
        return acc
    value, _ = s2sgrad.value_and_grad(f)(X, X[::-1] * 0.5)
    assert value == pytest.approx(f(X, X[::-1] * 0.5), rel=1e-12)
    check_grad(f, (X, X[::-1] * 0.5), grad_position=(0, 1))


def test_enumerate_and_zip_nested_over_build_time_tuples():
    def f(x):
        pair = (x[0], x[1] * 2.0)
        acc = 0.0
        for i, (a, b) in enumerate(zip(pair, (x[2], x[3]))):
            acc = acc + a * b * (i + 1.0)
        return acc
    check_grad(f, (X,))


def test_enumerate_with_a_start():
    """The start counts (it was ignored when the loop was unrolled)."""
    def f(x, k):
        acc = 0.0
        for i, a in enumerate(x, 1):
            acc = acc * 0.5 + a * i
        for i, (a, b) in enumerate(zip(x, x[1:]), start=k):
            acc = acc + a * b * i
        for i, a in enumerate((x[0], x[1] * 2.0), 3):
            acc = acc + a * i
        for i, a in enumerate((x[2], x[3]), k):      # unrolled, a run-time start
            acc = acc + a * i
        return acc
    value, _ = s2sgrad.value_and_grad(f)(X, 2)
    assert value == pytest.approx(f(X, 2), rel=1e-12)
    check_grad(f, (X, 2))


def test_enumerate_with_a_float_start_is_refused():
    def f(x):
        acc = 0.0
        for i, a in enumerate(x, 0.5):
            acc = acc + a * i
        return acc
    with pytest.raises(UnsupportedConstructError, match="enumerate"):
        s2sgrad.grad(f)(X)


@pytest.mark.parametrize("loop, what", [
    ("for v in map(np.sin, x):", "map(...)"),
    ("for v in filter(None, x):", "filter(...)"),
    ("for v in sorted(x):", "sorted(...)"),
    ("for v in iter(x):", "iter(...)"),
    ("for v in set(x):", "set"),
    ("for v in np.sum(x):", "a number"),
    ("for v in x[0]:", "a number"),
    ("for v in x.flat:", "x.flat"),
    ("for v in x.tolist():", "x.tolist()"),
    ("for v in np.nditer(x):", "np.nditer(...)"),
    ("for v in np.ndenumerate(x):", "np.ndenumerate(...)"),
    ("for v in 'ab':", "iterable"),
])
def test_loops_that_cannot_run_are_refused_naming_the_line(loop, what, tmp_path):
    path = tmp_path / "user_loop.py"
    path.write_text(f"import numpy as np\n\ndef f(x):\n    acc = 0.0\n    {loop}\n"
                    f"        acc = acc + v\n    return acc\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(UnsupportedConstructError) as info:
        s2sgrad.grad(namespace["f"])(X)
    text = str(info.value)
    assert "user_loop.py:5" in text and what in text and loop.rstrip(":") in text
    assert "loop over" in text    # says what to write instead


def test_loop_over_an_inactive_run_time_list_is_refused_not_crashed():
    def f(x, y):
        acc = np.sum(x)
        for v in y.tolist():       # y is not differentiated: no rule is asked for
            acc = acc + v
        return acc
    with pytest.raises(UnsupportedConstructError, match="tolist"):
        s2sgrad.grad(f)(X, X)


def test_tuple_indexed_at_run_time_is_refused_clearly():
    def f(x, k):
        t = (x, x * 2.0, x * 3.0)
        return np.sum(t[k])
    with pytest.raises(UnsupportedConstructError) as info:
        s2sgrad.grad(f)(X, 1)
    text = str(info.value)
    assert "tuple" in text and "run time" in text and "t[k]" in text and "np.stack" in text


def test_float32_scalars_get_float32_gradients():
    gx, gy = s2sgrad.grad(lambda x, y: x * y + np.sin(x), (0, 1))(np.float32(1.5),
                                                                    np.float32(2.0))
    assert type(gx) is np.float32 and type(gy) is np.float32
    assert gx == pytest.approx(2.0 + np.cos(1.5), rel=1e-6)


def test_check_grad_on_tuples_lists_and_dicts():
    def f(p, q):
        return np.sum(p[0] * p[1]) + np.sum(q["w"] ** 2) * q["s"]
    p = (np.arange(3.0), [np.ones(3) * 0.5])
    p = (p[0], p[1][0])
    q = {"w": np.array([0.5, -1.0]), "s": 0.7}
    check_grad(f, (p, q), grad_position=(0, 1))
    check_grad(lambda ps: np.sum(ps[0] * ps[1]), ([np.arange(3.0), np.ones(3)],))
    numerical = numerical_grad(f, (p, q), 1)
    assert set(numerical) == {"w", "s"} and numerical["s"] == pytest.approx(1.25)


@s2sgrad.custom_vjp
def wrong_double(v):
    return v * 2.0


@wrong_double.defvjp
def _wrong_double_backward(v, out, g):
    return (g * 3.0,)        # deliberately wrong: check_grad must say where


def test_check_grad_on_a_tree_reports_the_leaf(monkeypatch):
    def f(p):
        return np.sum(p["a"] * 2.0) + np.sum(wrong_double(p["b"]))
    with pytest.raises(AssertionError, match=r"argument 0\['b'\]"):
        check_grad(f, ({"a": np.ones(2), "b": np.ones(2)},))


def lstm_like(x, w, h0):
    """Bounds from x.shape[0], len(x), x.size and x.ndim; reversed loops; float32."""
    h = h0
    for t in range(x.shape[0]):
        h = np.tanh(w @ h + x[t])
    for t in range(len(x)):
        h = h * 0.9 + x[t] * 0.1
    for k in range(x.size // x.shape[1]):
        h = h + x[k] * 0.01
    for d in range(x.ndim):
        h = h * 1.01
    for t in reversed(range(x.shape[0])):
        h = np.tanh(h + x[t])
    for row in reversed(x):
        h = h - row * 0.05
    for k, (row, other) in enumerate(zip(reversed(x), x)):
        h = h + row * other * (0.01 * k)
    return np.sum(h * h)


def test_lstm_like_bounds_compile_under_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    rng = np.random.default_rng(3)
    x, w, h0 = rng.normal(size=(5, 3)), rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3)
    g = check_grad(lstm_like, (x, w, h0), grad_position=(0, 1, 2))
    assert g.backend == "numba", g.fallback_reason
    g32 = s2sgrad.grad(lstm_like, (0, 1))
    gx, gw = g32(x.astype(np.float32), w.astype(np.float32), h0.astype(np.float32))
    assert gx.dtype == np.float32 and gw.dtype == np.float32
    ref = s2sgrad.grad(lstm_like, (0, 1))(x, w, h0)
    np.testing.assert_allclose(gx, ref[0], rtol=2e-3, atol=2e-4)


def scalar_loop(x, y):
    acc = x
    for k in reversed(range(3)):
        acc = np.sin(acc) * y + x * k
    return acc


def test_float32_scalars_under_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = s2sgrad.value_and_grad(scalar_loop, (0, 1))
    value, (gx, gy) = g(np.float32(0.7), np.float32(1.3))
    assert g.backend == "numba", g.fallback_reason
    assert type(gx) is np.float32 and type(gy) is np.float32
    assert type(value) is np.float32
    ref = s2sgrad.grad(scalar_loop, (0, 1))(0.7, 1.3)
    assert float(gx) == pytest.approx(ref[0], rel=1e-4)
    assert float(gy) == pytest.approx(ref[1], rel=1e-4)
