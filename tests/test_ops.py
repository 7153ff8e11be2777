"""Tests of s2sgrad.ops: values against direct numpy, dtypes, broadcasting,
errors, Dropout2D, the tensor_op decorator and the raw-body rules."""
import ast
import inspect
import textwrap

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import ops, Tensor, Parameter
from s2sgrad.ops import tensor_op

FLOATS = [np.float32, np.float64]
rng = np.random.default_rng(0)


def _arr(shape, dtype, low=-2.0, high=2.0):
    return rng.uniform(low, high, size=shape).astype(dtype)


def _check(result, expected, dtype=None, rtol=1e-6):
    """result is a Tensor equal to the ndarray expected (same dtype)."""
    assert type(result) is Tensor
    expected = np.asarray(expected)
    assert result.shape == expected.shape
    assert np.dtype(result.dtype) == (expected.dtype if dtype is None else np.dtype(dtype))
    np.testing.assert_allclose(result.asnumpy(), expected, rtol=rtol, atol=1e-7)


# ---------------------------------------------------------------- elementwise

UNARY = [
    (ops.neg, np.negative, (-2, 2)), (ops.exp, np.exp, (-2, 2)), (ops.log, np.log, (0.1, 3)),
    (ops.sin, np.sin, (-2, 2)), (ops.cos, np.cos, (-2, 2)), (ops.tanh, np.tanh, (-2, 2)),
    (ops.abs, np.abs, (-2, 2)), (ops.sqrt, np.sqrt, (0.1, 3)), (ops.square, np.square, (-2, 2)),
    (ops.relu, lambda x: np.maximum(x, 0), (-2, 2)),
    (ops.sigmoid, lambda x: 1 / (1 + np.exp(-x)), (-5, 5)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op, ref, bounds", UNARY, ids=[u[0].__name__ for u in UNARY])
def test_unary_ops(op, ref, bounds, dtype):
    x = _arr((3, 4), dtype, *bounds)
    _check(op(Tensor(x)), ref(x))
    _check(op(x), ref(x))  # ndarrays are accepted too


BINARY = [
    (ops.add, np.add), (ops.sub, np.subtract), (ops.mul, np.multiply),
    (ops.div, np.true_divide), (ops.maximum, np.maximum), (ops.minimum, np.minimum),
    (ops.pow, lambda a, b: np.power(np.abs(a), b)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op, ref", BINARY, ids=[b[0].__name__ for b in BINARY])
def test_binary_ops_broadcast(op, ref, dtype):
    a, b = _arr((3, 1), dtype, 0.5, 2), _arr((1, 4), dtype, 0.5, 2)
    if op is ops.pow:
        a = np.abs(a)
    _check(op(Tensor(a), Tensor(b)), ref(a, b))
    _check(op(Tensor(a), 2.0), ref(a, np.asarray(2.0, dtype)))  # python scalar keeps dtype


COMPARE = [(ops.gt, np.greater), (ops.ge, np.greater_equal), (ops.lt, np.less),
           (ops.le, np.less_equal), (ops.eq, np.equal), (ops.ne, np.not_equal)]


@pytest.mark.parametrize("op, ref", COMPARE, ids=[c[0].__name__ for c in COMPARE])
def test_comparisons_broadcast_and_give_bool(op, ref):
    a = np.array([[1.0], [2.0], [3.0]], np.float32)
    b = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    result = op(Tensor(a), Tensor(b))
    assert result.dtype == ms.bool_ and result.shape == (3, 4)
    np.testing.assert_array_equal(result.asnumpy(), ref(a, b))
    np.testing.assert_array_equal(op(Tensor(b), 2.0).asnumpy(), ref(b, 2.0))


def test_gt_compares_in_the_tensor_dtype():
    # 0.1 as float32 is not greater than the python float 0.1 taken as float32
    assert ops.gt(Tensor([0.1, 0.2], ms.float32), 0.1).tolist() == [False, True]


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul(dtype):
    v, m, batch = _arr((5,), dtype), _arr((5, 3), dtype), _arr((2, 4, 5), dtype)
    _check(ops.matmul(Tensor(v), Tensor(m)), v @ m)
    _check(ops.matmul(Tensor(m.T), Tensor(m)), m.T @ m)
    _check(ops.matmul(Tensor(batch), Tensor(m)), batch @ m)
    with pytest.raises(ValueError):
        ops.matmul(Tensor(m), Tensor(m))


# ---------------------------------------------------------------- activations

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis, dtype):
    x = _arr((3, 4), dtype, -3, 3)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    expected = e / e.sum(axis=axis, keepdims=True)
    _check(ops.softmax(Tensor(x), axis), expected)
    _check(ops.log_softmax(Tensor(x), axis=axis), np.log(expected), rtol=1e-5)
    _check(ops.softmax(Tensor(x), dim=axis), expected)  # MindSpore keyword


def test_activations_are_numerically_stable():
    x = Tensor(np.array([-1000.0, 0.0, 1000.0], np.float32))
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        assert ops.sigmoid(x).tolist() == [0.0, 0.5, 1.0]
        big = Tensor(np.array([[1000.0, 1000.0, 0.0]], np.float32))
        np.testing.assert_allclose(ops.softmax(big).asnumpy(), [[0.5, 0.5, 0.0]])
        np.testing.assert_allclose(ops.log_softmax(big).asnumpy(),
                                   [[-np.log(2), -np.log(2), -1000 - np.log(2)]], rtol=1e-6)


def test_relu_keeps_integer_dtype():
    _check(ops.relu(Tensor([-3, 0, 4])), np.array([0, 0, 4]))


# ---------------------------------------------------------------- reductions

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op, ref", [(ops.sum, np.sum), (ops.mean, np.mean),
                                     (ops.amax, np.max), (ops.amin, np.min),
                                     (ops.max, np.max), (ops.min, np.min)])
@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, True),
                                            ((0, 2), False), (-1, True)])
def test_reductions(op, ref, axis, keepdims, dtype):
    x = _arr((2, 3, 4), dtype)
    _check(op(Tensor(x), axis, keepdims), ref(x, axis=axis, keepdims=keepdims))
    _check(op(Tensor(x), axis=axis, keepdims=keepdims), ref(x, axis=axis, keepdims=keepdims))


def test_reduction_mindspore_keywords():
    x = _arr((2, 3), np.float32)
    _check(ops.sum(Tensor(x), dim=1, keepdim=True), x.sum(axis=1, keepdims=True))
    _check(ops.mean(Tensor(x), axis=0, keep_dims=True), x.mean(axis=0, keepdims=True))
    with pytest.raises(TypeError, match=r"sum\(\) got 'axis' twice \(through the alias 'dim'\)"):
        ops.sum(Tensor(x), axis=0, dim=1)


def test_max_min_give_values_only():
    x = Tensor([[1.0, 9.0], [4.0, 2.0]])
    assert ops.max(x).item() == 9.0 and ops.min(x, 0).tolist() == [1.0, 2.0]


def test_reduction_axis_errors():
    with pytest.raises(TypeError, match=r"axis must be None, an int or a tuple of ints, got list \[0, 1\]"):
        ops.sum(Tensor(np.ones((2, 2))), [0, 1])
    with pytest.raises(TypeError, match="axis must be None or an int"):
        ops.argmax(Tensor(np.ones((2, 2))), (0, 1))


def test_argmax_argmin_int64():
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], np.float32)
    for op, ref in ((ops.argmax, np.argmax), (ops.argmin, np.argmin)):
        for axis in (None, 0, 1):
            result = op(Tensor(x), axis)
            assert result.dtype == ms.int64
            np.testing.assert_array_equal(result.asnumpy(), ref(x, axis=axis))
    assert ops.argmax(Tensor(x), dim=1, keepdim=True).shape == (2, 1)


# ---------------------------------------------------------------- creation

def test_ones_zeros_defaults():
    _check(ops.ones(5), np.ones(5, np.float32))
    _check(ops.zeros((2, 3)), np.zeros((2, 3), np.float32))
    _check(ops.ones((1, 28, 28), ms.float32), np.ones((1, 28, 28), np.float32))
    _check(ops.zeros(3, ms.int32), np.zeros(3, np.int32))
    _check(ops.ones(2, dtype=np.float64), np.ones(2))


def test_like_ops_keep_dtype():
    x = Tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    _check(ops.ones_like(x), np.ones((2, 3), np.int32))
    _check(ops.zeros_like(x), np.zeros((2, 3), np.int32))
    _check(ops.ones_like(x, dtype=ms.float64), np.ones((2, 3)))
    assert ops.zeros_like(Parameter(Tensor([1.0]), name="p")).dtype == ms.float32


def test_fill_casts_value():
    _check(ops.fill(ms.int32, (2, 2), 2.7), np.full((2, 2), 2, np.int32))
    _check(ops.fill(ms.float32, 3, 20), np.full(3, 20.0, np.float32))
    _check(ops.fill(ms.bool_, (1,), 1), np.array([True]))
    with pytest.raises(TypeError, match="is not a data type"):
        ops.fill("nonsense", (2,), 1)


# ---------------------------------------------------------------- shape ops

def test_reshape_transpose_squeeze_expand():
    x = _arr((2, 3, 4), np.float64)
    _check(ops.reshape(Tensor(x), (6, -1)), x.reshape(6, 4))
    _check(ops.transpose(Tensor(x), (2, 0, 1)), x.transpose(2, 0, 1))
    _check(ops.transpose(Tensor(x), input_perm=(1, 0, 2)), x.transpose(1, 0, 2))
    _check(ops.transpose(Tensor(x)), x.T)
    y = x.reshape(2, 1, 12)
    _check(ops.squeeze(Tensor(y)), x.reshape(2, 12))
    _check(ops.squeeze(Tensor(y), 1), x.reshape(2, 12))
    _check(ops.expand_dims(Tensor(x), 0), x[None])
    _check(ops.expand_dims(Tensor(x), axis=-1), x[..., None])
    with pytest.raises(ValueError):
        ops.reshape(Tensor(x), (5, 5))


def test_concat_and_stack():
    a, b = _arr((2, 3), np.float32), _arr((1, 3), np.float32)
    _check(ops.concat((Tensor(a), Tensor(b))), np.concatenate([a, b]))
    _check(ops.cat([Tensor(a), b]), np.concatenate([a, b]))
    _check(ops.concat([Tensor(a), Tensor(a)], axis=1), np.concatenate([a, a], axis=1))
    _check(ops.stack([Tensor(a), Tensor(a)], 2), np.stack([a, a], 2))
    _check(ops.stack((Tensor(a), Tensor(a)), dim=1), np.stack([a, a], 1))


def test_where_and_select():
    cond = np.array([True, False, True])
    x, y = np.array([1.0, 2.0, 3.0], np.float32), np.array([9.0, 8.0, 7.0], np.float32)
    _check(ops.where(Tensor(cond), Tensor(x), Tensor(y)), np.where(cond, x, y))
    _check(ops.select(Tensor(cond), Tensor(x), 20), np.array([1.0, 20.0, 3.0], np.float32))
    _check(ops.select(Tensor(cond[:, None]), Tensor(x), Tensor(y)),
           np.where(cond[:, None], x, y))


def test_stop_gradient_identity_and_tuples():
    x = Tensor([1.0, 2.0])
    out = ops.stop_gradient(x)
    assert type(out) is Tensor and np.shares_memory(out.asnumpy(), x.asnumpy())
    pair = ops.stop_gradient((x, Tensor([3])))
    assert isinstance(pair, tuple) and len(pair) == 2 and pair[1].tolist() == [3]


# ---------------------------------------------------------------- losses

def _bce_reference(x, y, w=1.0, p=1.0):
    s = 1 / (1 + np.exp(-x.astype(np.float64)))
    return -w * (p * y * np.log(s) + (1 - y) * np.log(1 - s))


@pytest.mark.parametrize("dtype", FLOATS)
def test_bce_with_logits_values(dtype):
    x, y = _arr((3, 4), dtype, -3, 3), rng.uniform(0, 1, (3, 4)).astype(dtype)
    w, p = _arr((4,), dtype, 0.5, 2), _arr((3, 1), dtype, 0.5, 2)
    ref = _bce_reference(x, y, w, p)
    bce = ops.binary_cross_entropy_with_logits
    _check(bce(Tensor(x), Tensor(y), Tensor(w), Tensor(p), "none"), ref.astype(dtype), rtol=1e-5)
    _check(bce(Tensor(x), Tensor(y), Tensor(w), Tensor(p)), np.asarray(ref.mean(), dtype), rtol=1e-5)
    _check(bce(Tensor(x), Tensor(y), weight=Tensor(w), reduction="sum"),
           np.asarray(_bce_reference(x, y, w).sum(), dtype), rtol=1e-5)
    _check(bce(Tensor(x), Tensor(y), pos_weight=Tensor(p), reduction="mean"),
           np.asarray(_bce_reference(x, y, 1.0, p).mean(), dtype), rtol=1e-5)
    _check(bce(Tensor(x), Tensor(y)), np.asarray(_bce_reference(x, y).mean(), dtype), rtol=1e-5)


def test_bce_with_logits_is_stable_for_large_logits():
    x = Tensor(np.array([1000.0, -1000.0, 1000.0], np.float32))
    y = Tensor(np.array([0.0, 1.0, 1.0], np.float32))
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        loss = ops.binary_cross_entropy_with_logits(x, y, reduction="none",
                                                    pos_weight=Tensor(np.float32(2.0)))
    np.testing.assert_allclose(loss.asnumpy(), [1000.0, 2000.0, 0.0])


def test_bce_with_logits_tutorial_value():
    np.random.seed(42)
    x, y = ops.ones(5, ms.float32), ops.zeros(3, ms.float32)
    w = Parameter(Tensor(np.random.randn(5, 3), ms.float32), name="w")
    b = Parameter(Tensor(np.random.randn(3,), ms.float32), name="b")
    z = ops.matmul(x, w) + b
    loss = ops.binary_cross_entropy_with_logits(z, y, ops.ones_like(z), ops.ones_like(z))
    assert loss.dtype == ms.float32 and loss.shape == ()
    assert str(loss) == "1.3423151"


def test_bce_with_logits_errors():
    x = Tensor(np.zeros((2, 3), np.float32))
    bce = ops.binary_cross_entropy_with_logits
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'avg'"):
        bce(x, x, reduction="avg")
    with pytest.raises(ValueError, match=r"input shape \(2, 3\) and target shape \(3,\) must be equal"):
        bce(x, Tensor(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match=r"weight of shape \(2,\) does not broadcast"):
        bce(x, x, Tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match=r"pos_weight of shape \(4,\) does not broadcast"):
        bce(x, x, None, Tensor(np.ones(4, np.float32)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_cross_entropy(dtype):
    logits = _arr((4, 3), dtype, -3, 3)
    labels = np.array([0, 2, 1, 2])
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    per_sample = -logp[np.arange(4), labels]
    _check(ops.cross_entropy(Tensor(logits), Tensor(labels)), np.asarray(per_sample.mean(), dtype),
           rtol=1e-5)
    _check(ops.cross_entropy(Tensor(logits), Tensor(labels), "none"), per_sample, rtol=1e-5)
    probs = np.eye(3, dtype=dtype)[labels] * 0.5 + 0.5 / 3
    _check(ops.cross_entropy(Tensor(logits), Tensor(probs), reduction="sum"),
           np.asarray(-(probs * logp).sum(), dtype), rtol=1e-5)


def test_cross_entropy_errors():
    logits = Tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="input must be 2-D logits"):
        ops.cross_entropy(Tensor(np.zeros(3, np.float32)), Tensor(np.array(1)))
    with pytest.raises(ValueError, match=r"class indices must be in \[0, 3\)"):
        ops.cross_entropy(logits, Tensor([0, 3]))
    with pytest.raises(ValueError, match=r"class-index target must have shape \(2,\)"):
        ops.cross_entropy(logits, Tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="probability target must have the input shape"):
        ops.cross_entropy(logits, Tensor(np.zeros((2, 2), np.float32)))
    with pytest.raises(ValueError, match="reduction must be"):
        ops.cross_entropy(logits, Tensor([0, 1]), reduction="max")


@pytest.mark.parametrize("dtype", FLOATS)
def test_mse_loss(dtype):
    x, y = _arr((3, 4), dtype), _arr((4,), dtype)
    sq = (x - y) ** 2
    _check(ops.mse_loss(Tensor(x), Tensor(y)), np.asarray(sq.mean(), dtype))
    _check(ops.mse_loss(Tensor(x), Tensor(y), "sum"), np.asarray(sq.sum(), dtype), rtol=1e-5)
    _check(ops.mse_loss(Tensor(x), Tensor(y), reduction="none"), sq)
    with pytest.raises(ValueError, match="mse_loss: reduction must be"):
        ops.mse_loss(Tensor(x), Tensor(y), "avg")


# ---------------------------------------------------------------- Dropout2D

def test_dropout2d_mask_and_output():
    ms.set_seed(0)
    x = _arr((8, 16, 3, 5), np.float32)
    out, mask = ops.Dropout2D(keep_prob=0.75)(Tensor(x))
    assert type(out) is Tensor and mask.dtype == ms.bool_ and mask.shape == x.shape
    m = mask.asnumpy()
    assert (m == m[:, :, :1, :1]).all()  # constant over each (n, c) channel
    assert 0.5 < m[:, :, 0, 0].mean() < 0.95
    _check(out, x * m / np.float32(0.75))


def test_dropout2d_reproducible_with_set_seed():
    x = Tensor(np.ones((4, 8, 2, 2), np.float32))
    drop = ops.Dropout2D(0.5)
    ms.set_seed(7)
    first = drop(x)[1].asnumpy()
    ms.set_seed(7)
    np.testing.assert_array_equal(drop(x)[1].asnumpy(), first)


def test_dropout2d_edge_probabilities_and_raw():
    x = Tensor(np.ones((2, 3, 2, 2), np.float32))
    out, mask = ops.Dropout2D(0.0)(x)
    assert not mask.asnumpy().any() and not out.asnumpy().any()
    out, mask = ops.Dropout2D(1)(x)
    assert mask.asnumpy().all() and (out.asnumpy() == 1).all()
    drop = ops.Dropout2D(0.8)
    raw_out = drop.raw(np.full((1, 2, 1, 1), 2.0, np.float32), np.array([True, False]).reshape(1, 2, 1, 1))
    np.testing.assert_allclose(raw_out.ravel(), [2.5, 0.0])
    assert repr(drop) == "Prim[Dropout2D]<keep_prob=0.8>"


def test_dropout2d_errors():
    with pytest.raises(ValueError, match=r"keep_prob must be in \[0, 1\], got 1.5"):
        ops.Dropout2D(1.5)
    with pytest.raises(ValueError, match=r"keep_prob must be in \[0, 1\], got -0.1"):
        ops.Dropout2D(-0.1)
    with pytest.raises(TypeError, match="keep_prob must be a float"):
        ops.Dropout2D("0.5")
    with pytest.raises(ValueError, match=r"input must be 4-D \(N, C, H, W\), got shape \(2, 3\)"):
        ops.Dropout2D(0.5)(Tensor(np.ones((2, 3), np.float32)))


# ---------------------------------------------------------------- tensor_op contract

def test_tensor_op_unwraps_checks_and_wraps():
    seen = {}

    def check(a, pair, scale=1.0):
        seen["check"] = (type(a), [type(p) for p in pair])
        if scale < 0:
            raise ValueError("scale must be >= 0")

    @tensor_op(check=check, aliases={"factor": "scale"})
    def combine(a, pair, scale=1.0):
        """Doc."""
        seen["raw"] = (type(a), [type(p) for p in pair])
        return a * scale, pair[0] + pair[1]

    t = Tensor([1.0, 2.0])
    scaled, total = combine(t, [t, np.array([1.0, 1.0], np.float32)], factor=3.0)
    assert seen["raw"] == (np.ndarray, [np.ndarray, np.ndarray]) == seen["check"]
    assert type(scaled) is Tensor and scaled.tolist() == [3.0, 6.0] and total.tolist() == [2.0, 3.0]
    with pytest.raises(ValueError, match="scale must be >= 0"):
        combine(t, [t, t], -1.0)
    assert combine.raw is combine.__wrapped__ and combine.__s2sgrad_op__ is True
    assert combine.__name__ == "combine" and combine.__doc__ == "Doc."
    assert list(inspect.signature(combine).parameters) == ["a", "pair", "scale"]


def _all_function_ops():
    return [getattr(ops, n) for n in ops.__all__
            if getattr(getattr(ops, n), "__s2sgrad_op__", False)]


def test_every_function_op_is_a_tensor_op():
    names = {op.__name__ for op in _all_function_ops()}
    for required in ("gt", "fill", "select", "ones", "zeros", "ones_like", "zeros_like", "matmul",
                     "stop_gradient", "binary_cross_entropy_with_logits", "relu", "softmax"):
        assert required in names


@pytest.mark.parametrize("op", _all_function_ops(), ids=lambda op: op.__name__)
def test_raw_bodies_are_straight_line(op):
    """The differentiator parses raw bodies: no loops, try, with, or nested defs."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(op.raw)))
    body = tree.body[0]
    for node in ast.walk(body):
        assert not isinstance(node, (ast.For, ast.While, ast.Try, ast.With, ast.Lambda,
                                     ast.ListComp, ast.GeneratorExp)), \
            f"{op.__name__}: {type(node).__name__} in raw body"
        assert node is body or not isinstance(node, (ast.FunctionDef, ast.ClassDef))
    returns = [n for n in ast.walk(body) if isinstance(n, ast.Return)]
    assert len(returns) == 1 and body.body[-1] is returns[0]
