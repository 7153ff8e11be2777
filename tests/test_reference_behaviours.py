"""The reference's typing and printing rules (docs/mindspore-semantics.md, "Tensor,
Parameter, dtypes"): Python scalars never widen a Tensor to Float64, ``ops.select``
of int and float Tensors is Float32, dtype repr/str, Dense's repr with an activation,
and has_aux=True on a function that does not return a tuple of two or more."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Tensor, nn, ops


@pytest.mark.parametrize("expr,expected", [
    (lambda t: t + 1.5, [2.5, 3.5]),
    (lambda t: 1.5 + t, [2.5, 3.5]),
    (lambda t: t * 0.5, [0.5, 1.0]),
    (lambda t: t / 2, [0.5, 1.0]),            # true division of an int Tensor
    (lambda t: 3.0 - t, [2.0, 1.0]),
    (lambda t: t ** 0.5, [1.0, np.sqrt(2.0)]),
    (lambda t: ops.add(t, 1.5), [2.5, 3.5]),
    (lambda t: ops.mul(t, np.float64(2.0)), [2.0, 4.0]),
    (lambda t: ops.maximum(t, 1.5), [1.5, 2.0]),
    (lambda t: t + Tensor(np.array([0.5, 0.5], np.float32)), [1.5, 2.5]),  # int64 + f32
])
def test_int_tensor_with_python_float_is_float32(expr, expected):
    out = expr(Tensor([1, 2]))
    assert out.dtype == ms.float32, out.dtype
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6)


def test_float64_operands_still_give_float64():
    t = Tensor(np.array([1.0, 2.0]))          # a float64 numpy array stays Float64
    assert (t + 1.5).dtype == ms.float64
    assert (Tensor([1, 2]) + t).dtype == ms.float64
    assert (Tensor([1.0, 2.0]) * 2.5).dtype == ms.float32
    assert (Tensor([1, 2]) + 1).dtype == ms.int64


def test_select_of_int_and_float_tensors_is_float32():
    cond = Tensor([True, False, True])
    x = Tensor(np.array([1, 2, 3], np.int32))
    y = Tensor(np.array([0.5, 1.5, 2.5], np.float32))
    out = ops.select(cond, x, y)
    assert out.dtype == ms.float32
    np.testing.assert_array_equal(out.asnumpy(), [1.0, 1.5, 3.0])
    assert ops.select(cond, Tensor([1, 2, 3]), 0.5).dtype == ms.float32
    assert ops.where(cond, Tensor([1, 2, 3]), y).dtype == ms.float32


def test_dtype_repr_and_str():
    assert repr(ms.float32) == "mindspore.float32"
    assert str(ms.float32) == "Float32"
    assert repr(ms.int64) == "mindspore.int64" and str(ms.int64) == "Int64"
    assert str(ms.bool_) == "Bool" and repr(ms.bool_) == "mindspore.bool_"
    assert str((Tensor([1.0]).dtype,)) == "(mindspore.float32,)"
    assert f"{Tensor([1]).dtype}" == "Int64"
    assert "dtype=Float32" in repr(Tensor([1.0]))


def test_dense_repr_shows_its_activation():
    text = repr(nn.Dense(3, 4, activation="relu"))
    assert text.splitlines()[1].strip() == (
        "input_channels=3, output_channels=4, has_bias=True, activation=ReLU()")
    assert "(activation): ReLU()" in text
    plain = repr(nn.Dense(3, 4))
    assert plain == "Dense(input_channels=3, output_channels=4, has_bias=True)"


def single(x):
    return np.sum(x * x)


def as_list(x):
    return [np.sum(x * x), x]


def one_tuple(x):
    return (np.sum(x * x),)


def pair(x):
    return np.sum(x * x), x * 2.0


@pytest.mark.parametrize("fn,what", [(single, "a single value"), (as_list, "a list"),
                                     (one_tuple, "a single value")])
@pytest.mark.parametrize("maker", [ms.grad, ms.value_and_grad])
def test_has_aux_needs_a_tuple_of_two_or_more(fn, what, maker):
    with pytest.raises(ValueError, match=f"has_aux=True needs a function that returns a "
                                         f"tuple.*returns {what}"):
        maker(fn, has_aux=True)(np.array([1.0, 2.0]))


def test_has_aux_with_a_tuple_still_works():
    grads, aux = ms.grad(pair, has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(grads, [2.0, 4.0])
    np.testing.assert_allclose(aux[0], [2.0, 4.0])
