"""Gradients whose forward code calls numpy in ways Numba does not compile as written
(reductions with ``axis=``/``keepdims=``, ``np.stack`` of a list, ``squeeze``, builtin
``abs`` on arrays...) and whose adjoints need the runtime helpers' Numba versions.

``s2sgrad/compiler/front/spellings.py`` rewrites those calls into ``rt.*`` helpers, and
``s2sgrad/backend/numba_support.py`` compiles the helpers.  Each case here must

- match central finite differences (``check_grad``), and
- run under Numba (``g.backend == 'numba'``, the reason shown otherwise), and
- give the Python backend's values.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad import Parameter, nn, ops
from s2sgrad.testing import check_grad


@pytest.fixture(autouse=True)
def compile_everything(monkeypatch):
    """These tests are about Numba: compile loop-free gradients too (not 'auto')."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")

rng = np.random.default_rng(7)


def R(*shape):
    return rng.uniform(-1.0, 1.0, size=shape)


def DISTINCT(*shape):
    """Distinct values (no ties for max / min)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.37 - n * 0.15).reshape(shape) / n


LABELS = np.array([0, 2, 1, 2])
WEIGHTS = np.arange(1.0, 5.0)


def softmax(x):
    return np.sum(ops.softmax(x) * WEIGHTS)


def softmax_axis0(x):
    return np.sum(ops.softmax(x, axis=0) * WEIGHTS)


def log_softmax(x):
    return np.sum(np.sin(ops.log_softmax(x)))


def cross_entropy(x, labels):
    return ops.cross_entropy(x, labels)


def cross_entropy_sum(x, labels):
    return ops.cross_entropy(x, labels, reduction="sum")


def mean_axis(x):
    return np.sum(np.sin(ops.mean(x, axis=1)))


def mean_tuple_axis(x):
    return np.sum(np.sin(np.mean(x, axis=(0, 2))))


def ops_sum_keepdims(x):
    return np.sum(np.sin(ops.sum(x, axis=0, keepdims=True) * x))


def sum_keepdims(x):
    return np.sum(np.sin(np.sum(x, axis=1, keepdims=True) * x))


def sum_method_keepdims(x):
    return np.sum(np.sin(x.sum(axis=-1, keepdims=True) * x))


def sum_tuple_axis(x):
    return np.sum(np.sin(np.sum(x, axis=(0, 2))))


def max_axis(x):
    return np.sum(np.sin(np.max(x, axis=1)))


def max_method(x):
    return np.sum(np.sin(x.max(axis=1)))


def amax_keepdims(x):
    return np.sum(np.sin(np.amax(x, axis=0, keepdims=True) * x))


def min_tuple_axis(x):
    return np.sum(np.sin(np.min(x, axis=(0, 2))))


def min_method(x):
    return np.sum(np.sin(x.min(0)))


def prod_axis(x):
    return np.sum(np.sin(np.prod(x, axis=1)))


def stack0(x, y):
    return np.sum(np.sin(np.stack([x, y * x], axis=0)) * np.arange(3.0))


def stack1(x, y):
    return np.sum(np.sin(np.stack([x, np.cos(y)], axis=1)) * np.arange(3.0))


def concatenate0(x, y):
    return np.sum(np.sin(np.concatenate([x, y[:1] * 2.0])) * np.arange(3.0))


def concatenate1(x, y):
    return np.sum(np.sin(np.concatenate([x, y[:, 1:]], axis=1)))


def squeeze_axis(x):
    return np.sum(np.sin(np.squeeze(x[:, :1], axis=1)) * np.arange(4.0))


def squeeze_method(x):
    return np.sum(np.sin(x[:1].squeeze(0)) * np.arange(3.0))


def expand_dims_tuple(x):
    # (Numba compiles 4-D broadcasting slowly, ~6 s per type combination: stay at 3-D)
    return np.sum(np.sin(np.expand_dims(x, (0, 2))) * np.arange(1.0, 4.0)[None, :, None])


def atleast_1d_number(x):
    s = np.sum(x)
    return np.sum(np.sin(np.atleast_1d(s) * x))


def array_copy(x):
    return np.sum(np.sin(np.array(x) * x))


def builtin_abs(x):
    return np.sum(np.sin(abs(x) * x))


def swapaxes_method(x):
    return np.sum(np.sin(x.swapaxes(0, 1)) * np.arange(4.0))


def boolean_mask(x):
    return np.sum(np.sin(x[x > 0.0]))


def boolean_mask_rows(x):
    return np.sum(np.sin(x[x[:, 0] > 0.0]))


def matmul_strided(a, b):
    # every other column of a, and b's transpose: operands neither C nor F contiguous
    # (the matmul adjoints' transposes are then copied; C/F ones are read as views)
    return np.sum(np.tanh(a[:, ::2] @ b.T[::2]))


def clip_numbers(x, limit):
    # np.clip of numbers in a loop (Numba's np.clip takes arrays only) and of an array
    total = 0.0
    for i in range(x.shape[0]):
        total += np.clip(x[i], -limit, limit) ** 2 + x[i].clip(-0.5, limit)
    return total + np.sum(np.clip(x, -limit, 0.1) * x)


# (id, function, arguments, positions)
CASES = [
    ("clip_numbers", clip_numbers, [DISTINCT(9) * 4.0, 0.2], (0, 1)),
    ("matmul_strided", matmul_strided, [R(3, 8), R(5, 8)], (0, 1)),
    ("softmax", softmax, [R(4, 4)], 0),
    ("softmax_axis0", softmax_axis0, [R(3, 4)], 0),
    ("log_softmax", log_softmax, [R(4, 4)], 0),
    ("cross_entropy", cross_entropy, [R(4, 3), LABELS], 0),
    ("cross_entropy_sum", cross_entropy_sum, [R(4, 3), LABELS], 0),
    ("ops_mean_axis", mean_axis, [R(3, 4)], 0),
    ("mean_tuple_axis", mean_tuple_axis, [R(2, 3, 4)], 0),
    ("ops_sum_keepdims", ops_sum_keepdims, [R(3, 4)], 0),
    ("sum_keepdims", sum_keepdims, [R(3, 4)], 0),
    ("sum_method_keepdims", sum_method_keepdims, [R(3, 4)], 0),
    ("sum_tuple_axis", sum_tuple_axis, [R(2, 3, 4)], 0),
    ("max_axis", max_axis, [DISTINCT(3, 4)], 0),
    ("max_method", max_method, [DISTINCT(3, 4)], 0),
    ("amax_keepdims", amax_keepdims, [DISTINCT(3, 4)], 0),
    ("min_tuple_axis", min_tuple_axis, [DISTINCT(2, 3, 4)], 0),
    ("min_method", min_method, [DISTINCT(3, 4)], 0),
    ("prod_axis", prod_axis, [R(3, 4)], 0),
    ("stack_axis0", stack0, [R(2, 3), R(2, 3)], (0, 1)),
    ("stack_axis1", stack1, [R(2, 3), R(2, 3)], (0, 1)),
    ("concatenate_axis0", concatenate0, [R(2, 3), R(2, 3)], (0, 1)),
    ("concatenate_axis1", concatenate1, [R(2, 3), R(2, 3)], (0, 1)),
    ("squeeze_axis", squeeze_axis, [R(4, 3)], 0),
    ("squeeze_method", squeeze_method, [R(2, 3)], 0),
    ("expand_dims_tuple", expand_dims_tuple, [R(3)], 0),
    ("atleast_1d_number", atleast_1d_number, [R(3)], 0),
    ("array_of_array", array_copy, [R(3, 4)], 0),
    ("builtin_abs", builtin_abs, [R(3, 4)], 0),
    ("swapaxes_method", swapaxes_method, [R(4, 3)], 0),
    ("boolean_mask", boolean_mask, [R(7)], 0),
    ("boolean_mask_rows", boolean_mask_rows, [R(5, 3)], 0),
]


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


@pytest.mark.parametrize("fn, args, positions", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_gradient_compiles_with_numba_and_matches(fn, args, positions, monkeypatch):
    g = check_grad(fn, tuple(args), grad_position=positions)   # calls it once
    assert g.backend == "numba", g.fallback_reason
    compiled = _as_tuple(g(*args))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    plain = _as_tuple(s2sgrad.grad(fn, grad_position=positions)(*args))
    for got, want in zip(compiled, plain):
        assert type(got) is type(want), (got, want)
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn, args", [
    (np.var, (R(3, 4),)), (lambda x: np.std(x, axis=1), (R(3, 4),))], ids=["var", "std"])
def test_var_std_with_axis_compile_with_numba(fn, args):
    def f(x):
        return np.sum(np.sin(fn(x) if fn is not np.var else np.var(x, axis=0)))
    g = check_grad(f, args)
    assert g.backend == "numba", g.fallback_reason


# ---------------------------------------------------------------- float32 stays float32


@pytest.mark.parametrize("fn, args", [
    (softmax, [R(4, 4)]), (cross_entropy, [R(4, 3), LABELS]), (mean_axis, [R(3, 4)]),
    (max_method, [DISTINCT(3, 4)]), (sum_keepdims, [R(3, 4)])],
    ids=["softmax", "cross_entropy", "mean_axis", "max_method", "sum_keepdims"])
def test_float32_gradients_stay_float32(fn, args, monkeypatch):
    args = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in args]
    g = s2sgrad.value_and_grad(fn)
    value, dx = g(*args)
    assert g.backend == "numba", g.fallback_reason
    assert dx.dtype == np.float32
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    value_py, dx_py = s2sgrad.value_and_grad(fn)(*args)
    assert dx_py.dtype == np.float32
    np.testing.assert_allclose(dx, dx_py, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value, value_py, rtol=1e-5)


# ---------------------------------------------------------------- a small network


def _network(dtype=np.float32):
    """Dense(4, 5) -> Tanh -> Dense(5, 3) with ``dtype`` parameters (float64 ones for a
    finite-difference check, whose arguments are float64: Numba's ``@`` wants one dtype)."""
    s2sgrad.set_seed(3)
    net = nn.SequentialCell(nn.Dense(4, 5), nn.Tanh(), nn.Dense(5, 3))
    for dense in (net[0], net[2]):
        dense.weight = Parameter(np.asarray(dense.weight).astype(dtype), name="weight")
        dense.bias = Parameter(np.asarray(dense.bias).astype(dtype), name="bias")
    return net


def test_cross_entropy_loss_through_dense_network():
    net, loss_fn = _network(np.float64), nn.CrossEntropyLoss()

    def loss(x, labels):
        return loss_fn(net(x), labels)

    g = check_grad(loss, (R(4, 4), LABELS), rtol=1e-4, atol=1e-6)
    assert g.backend == "numba", g.fallback_reason


def test_cross_entropy_loss_weight_gradients_numba_equals_python(monkeypatch):
    net, loss_fn = _network(), nn.CrossEntropyLoss()
    x = R(4, 4).astype(np.float32)

    def loss(x, labels):
        return loss_fn(net(x), labels)

    g = s2sgrad.value_and_grad(loss, None, weights=net.trainable_params())
    value, grads = g(x, LABELS)
    assert g.backend == "numba", g.fallback_reason
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    value_py, grads_py = s2sgrad.value_and_grad(loss, None, weights=net.trainable_params())(
        x, LABELS)
    np.testing.assert_allclose(np.asarray(value), np.asarray(value_py), rtol=1e-6)
    assert len(grads) == len(grads_py) == 4
    for got, want, p in zip(grads, grads_py, net.trainable_params()):
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == p.shape and got.dtype == want.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- the generated code


def test_plain_calls_keep_numpy_spelling():
    def f(x):
        return np.sum(np.max(x) * np.sum(x, axis=0)) + np.mean(x)

    source = s2sgrad.grad(f).source
    assert "np.max(x)" in source and "np.sum(x, axis=0)" in source and "np.mean(x)" in source
    assert "rt.amax" not in source and "rt.sum(" not in source


def test_rewritten_calls_read_as_helpers():
    def f(x):
        return np.sum(np.max(x, axis=1, keepdims=True) * np.stack([x, x], axis=1)[:, 0])

    source = s2sgrad.grad(f).source
    assert "rt.amax(x, 1, True)" in source
    assert "np.stack((x, x), axis=1)" in source


def sort_weighted(x):
    return np.sum(np.sort(x) * np.arange(4.0))


def builtin_sum_of_squares(x):
    return sum(x * x)


def write_with_repeated_index(x):
    y = np.zeros(3)
    y[np.array([0, 0, 2])] = x[:3] * 2.0
    return np.sum(y * y)


@pytest.mark.parametrize("fn", [sort_weighted, builtin_sum_of_squares, write_with_repeated_index])
def test_sort_builtin_sum_and_repeated_writes_compile_with_numba(fn):
    g = check_grad(fn, (np.array([0.3, -1.2, 2.1, 0.9]),))
    assert g.backend == "numba", g.fallback_reason
