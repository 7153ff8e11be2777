"""Tests of s2sgrad.dtype and s2sgrad.tensor: DType, Tensor, Parameter,
ParameterTuple, set_seed, numpy interop and MindSpore-exact reprs."""
import copy

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import nn, ops, Parameter, ParameterTuple, Tensor
from s2sgrad.tensor import module_rng


# ---------------------------------------------------------------- dtypes

@pytest.mark.parametrize("dt, name, np_type", [
    (ms.float16, "Float16", np.float16), (ms.float32, "Float32", np.float32),
    (ms.float64, "Float64", np.float64), (ms.int8, "Int8", np.int8),
    (ms.int16, "Int16", np.int16), (ms.int32, "Int32", np.int32),
    (ms.int64, "Int64", np.int64), (ms.uint8, "UInt8", np.uint8),
    (ms.bool_, "Bool", np.bool_),
])
def test_dtype_names_and_numpy_equivalence(dt, name, np_type):
    assert str(dt) == name
    assert repr(dt) == "mindspore." + np.dtype(np_type).name.replace("bool", "bool_")
    assert dt.np == np.dtype(np_type) and dt.dtype == np.dtype(np_type)
    assert np.dtype(dt) == np.dtype(np_type)
    assert np.zeros(2, dtype=dt).dtype == np.dtype(np_type)
    assert dt == np_type and dt == np.dtype(np_type) and dt == np.dtype(np_type).name
    assert ms.DType.from_numpy(np_type) is dt


def test_dtype_inequality_and_hashing():
    assert ms.float32 != np.float64 and ms.float32 != ms.float64
    assert ms.float32 != "not a dtype" and ms.float32 != None  # noqa: E711
    assert {ms.float32: 1}[ms.DType.from_numpy(np.float32)] == 1
    assert len({ms.float32, ms.float32, ms.int64}) == 2
    assert copy.deepcopy(ms.float32) is ms.float32


@pytest.mark.parametrize("given, expected", [
    (ms.float32, np.float32), (np.dtype("int32"), np.int32), (np.float64, np.float64),
    (float, np.float64), (bool, np.bool_), ("float16", np.float16),
    ("Float32", np.float32), ("Int64", np.int64),
])
def test_dtype_to_numpy(given, expected):
    assert ms.dtype_to_numpy(given) == np.dtype(expected)
    assert isinstance(ms.dtype_to_numpy(given), np.dtype)


def test_dtype_to_numpy_none_and_errors():
    assert ms.dtype_to_numpy(None) is None
    with pytest.raises(TypeError, match="is not a data type"):
        ms.dtype_to_numpy("nonsense")
    with pytest.raises(TypeError, match="is not a data type"):
        ms.dtype_to_numpy(3.5)


# ---------------------------------------------------------------- construction

@pytest.mark.parametrize("data, dtype_name", [
    ([1, 2, 3], "Int64"), ([1.0, 2.0], "Float32"), (2.5, "Float32"), (3, "Int64"),
    ([True, False], "Bool"), (np.arange(3, dtype=np.float64), "Float64"),
    (np.arange(3, dtype=np.int32), "Int32"), (np.float64(1.5), "Float64"),
])
def test_tensor_default_dtypes(data, dtype_name):
    t = Tensor(data)
    assert str(t.dtype) == dtype_name
    assert isinstance(t.dtype, ms.DType)
    np.testing.assert_array_equal(t.asnumpy(), np.asarray(data))


def test_tensor_casts_with_dtype():
    t = Tensor([1.7, -2.2], ms.int32)
    assert t.dtype == ms.int32 and t.tolist() == [1, -2]
    assert Tensor(np.arange(3), np.float64).dtype == ms.float64


def test_tensor_from_tensor_shares_unless_cast():
    a = Tensor(np.arange(4.0))
    assert np.shares_memory(Tensor(a).asnumpy(), a.asnumpy())
    assert np.shares_memory(Tensor(a, ms.float64).asnumpy(), a.asnumpy())  # same dtype: no copy
    b = Tensor(a, ms.float32)
    assert not np.shares_memory(b.asnumpy(), a.asnumpy()) and b.dtype == ms.float32


def test_tensor_from_nested_tensors_and_errors():
    t = Tensor([Tensor([1.0, 2.0]), Tensor([3.0, 4.0])])
    assert t.shape == (2, 2) and t.dtype == ms.float32
    with pytest.raises(TypeError, match="input_data is None"):
        Tensor()
    with pytest.raises(TypeError, match="cannot make a numeric tensor"):
        Tensor([{"a": 1}])


# ---------------------------------------------------------------- numpy interop

def test_asnumpy_and_asarray_are_zero_copy():
    t = Tensor(np.ones((2, 3), np.float32))
    assert t.asnumpy() is t._data
    assert np.asarray(t) is t._data
    assert np.shares_memory(np.asarray(t), t.asnumpy())
    cast = np.asarray(t, dtype=np.float64)
    assert cast.dtype == np.float64 and not np.shares_memory(cast, t.asnumpy())
    assert not np.shares_memory(np.array(t), t.asnumpy())  # np.array copies


def test_numpy_functions_give_tensors():
    t = Tensor([1.0, 2.0, 3.0])
    e = np.exp(t)
    assert type(e) is Tensor and e.dtype == ms.float32
    np.testing.assert_allclose(e.asnumpy(), np.exp(np.array([1, 2, 3], np.float32)))
    s = np.sum(t)
    assert type(s) is Tensor and float(s) == 6.0
    c = np.concatenate([t, t])
    assert type(c) is Tensor and c.shape == (6,)
    assert isinstance(np.split(t, 3)[0], Tensor)
    assert np.shape(t) == (3,) and np.allclose(t, [1, 2, 3]) is True


def test_ndarray_on_the_left_gives_tensor():
    t = Tensor([1.0, 2.0])
    r = np.array([10.0, 20.0], np.float32) + t
    assert type(r) is Tensor and r.tolist() == [11.0, 22.0]


def test_ufunc_out_argument_writes_into_tensor():
    t = Tensor(np.zeros(3))
    result = np.add(Tensor(np.ones(3)), 2.0, out=t)
    assert result is t and t.tolist() == [3.0, 3.0, 3.0]


def test_operations_on_parameter_give_plain_tensors():
    p = Parameter(Tensor([1.0, 2.0]), name="p")
    for result in (p + 1, 2 * p, -p, np.exp(p), p[0], p @ p, p.reshape(2, 1), p.T):
        assert type(result) is Tensor


# ---------------------------------------------------------------- attributes & methods

def test_shape_attributes():
    t = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6 and len(t) == 2
    assert t.T.shape == (3, 2) and t.T.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert t.reshape(3, 2).shape == (3, 2) and t.reshape((6,)).shape == (6,)
    assert t.transpose().shape == (3, 2) and t.transpose(1, 0).shape == (3, 2)
    assert t.transpose((1, 0)).tolist() == t.T.tolist()
    assert t.flatten().shape == (6,) and t.view(6, 1).shape == (6, 1)


def test_astype_argmax_and_reductions():
    t = Tensor(np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], np.float32))
    assert t.astype(ms.float64).dtype == ms.float64
    assert t.astype(np.int32).dtype == ms.int32
    am = t.argmax(1)
    assert am.dtype == ms.int64 and am.tolist() == [1, 0]
    assert t.argmax().item() == 3 and t.argmin(axis=1).tolist() == [0, 1]
    assert t.sum().item() == 18.0 and t.sum(axis=0).tolist() == [8.0, 5.0, 5.0]
    assert t.sum(axis=1, keepdims=True).shape == (2, 1)
    np.testing.assert_allclose(t.mean(axis=1, keep_dims=True).asnumpy(), [[8 / 3], [10 / 3]])
    assert t.max().item() == 7.0 and t.min(axis=[0, 1]).item() == 0.0
    assert t.max(axis=0).tolist() == [7.0, 5.0, 3.0]
    assert t.sum(dtype=ms.float64).dtype == ms.float64
    assert Tensor([-1.5, 2.0]).abs().tolist() == [1.5, 2.0]


def test_copy_item_tolist_and_scalar_conversions():
    t = Tensor([1.5, 2.5])
    c = t.copy()
    c[0] = 9.0
    assert t.tolist() == [1.5, 2.5] and c.tolist() == [9.0, 2.5]
    assert t.item(1) == 2.5 and isinstance(t.item(1), float)
    s = Tensor(3.0)
    assert float(s) == 3.0 and int(s) == 3 and bool(s) is True
    assert [10, 20, 30][Tensor(1)] == 20  # __index__
    assert not Tensor(0.0)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(Tensor([1.0, 2.0]))
    assert f"{Tensor(1.23456):.2f}" == "1.23"
    assert f"{Tensor([1.0, 2.0])}" == "[1. 2.]"


def test_indexing_iteration_and_setitem():
    t = Tensor(np.arange(6.0).reshape(2, 3))
    row = t[1]
    assert type(row) is Tensor and row.tolist() == [3.0, 4.0, 5.0]
    assert type(t[0, 1]) is Tensor and t[0, 1].item() == 1.0
    assert t[Tensor([1, 0])].tolist()[0] == [3.0, 4.0, 5.0]
    assert t[t > 3].tolist() == [4.0, 5.0]
    rows = list(t)
    assert len(rows) == 2 and all(type(r) is Tensor for r in rows)
    t[0, 0] = Tensor(100.0)
    t[1] = 7.0
    assert t.tolist() == [[100.0, 1.0, 2.0], [7.0, 7.0, 7.0]]


def test_setitem_on_readonly_data_copies_first():
    base = np.zeros(3)
    t = Tensor(np.broadcast_to(base, (2, 3)))
    t[0, 0] = 1.0
    assert t[0, 0].item() == 1.0 and base[0] == 0.0


@pytest.mark.parametrize("expr, expected", [
    (lambda a, b: a + b, [5.0, 7.0]), (lambda a, b: a - b, [-3.0, -3.0]),
    (lambda a, b: a * b, [4.0, 10.0]), (lambda a, b: b / a, [4.0, 2.5]),
    (lambda a, b: b // a, [4.0, 2.0]), (lambda a, b: b % a, [0.0, 1.0]),
    (lambda a, b: a ** 2, [1.0, 4.0]), (lambda a, b: 2 ** a, [2.0, 4.0]),
    (lambda a, b: 1 + a, [2.0, 3.0]), (lambda a, b: 1 - a, [0.0, -1.0]),
    (lambda a, b: 3 * a, [3.0, 6.0]), (lambda a, b: 2 / a, [2.0, 1.0]),
    (lambda a, b: -a, [-1.0, -2.0]), (lambda a, b: +a, [1.0, 2.0]),
    (lambda a, b: abs(-a), [1.0, 2.0]), (lambda a, b: a @ b, 14.0),
])
def test_arithmetic_operators(expr, expected):
    a, b = Tensor([1.0, 2.0]), Tensor([4.0, 5.0])
    result = expr(a, b)
    assert type(result) is Tensor and result.dtype == ms.float32
    np.testing.assert_allclose(result.asnumpy(), expected)


def test_comparison_operators_give_bool():
    a = Tensor([1.0, 2.0, 3.0])
    for result, expected in ((a > 2, [False, False, True]), (a >= 2, [False, True, True]),
                             (a < 2, [True, False, False]), (a <= 2, [True, True, False]),
                             (a == 2, [False, True, False]), (a != 2, [True, False, True]),
                             (2 < a, [False, False, True]), (a == Tensor([1.0, 0.0, 3.0]),
                                                             [True, False, True])):
        assert type(result) is Tensor and result.dtype == ms.bool_
        assert result.tolist() == expected
    assert (a == None) is False and (a != None) is True  # noqa: E711
    assert (a == "text") is False
    flags = Tensor([True, False])
    assert (flags & Tensor([True, True])).tolist() == [True, False]
    assert (~flags).tolist() == [False, True]


def test_tensors_hash_by_identity():
    a, b = Tensor([1.0]), Tensor([1.0])
    d = {a: "a", b: "b"}
    assert d[a] == "a" and d[b] == "b"


# ---------------------------------------------------------------- repr / str

def test_repr_doc_example_float32_vector():
    t = Tensor([20, 0.2, 0.3], ms.float32)
    assert repr(t) == ("Tensor(shape=[3], dtype=Float32, value= [ 2.00000000e+01,  "
                       "2.00000003e-01,  3.00000012e-01])")


def test_repr_scalar_int_and_bool():
    assert repr(Tensor(np.float32(4.04506))) == "Tensor(shape=[], dtype=Float32, value= 4.04506)"
    assert repr(Tensor(1.3423151)) == "Tensor(shape=[], dtype=Float32, value= 1.34232)"
    assert repr(Tensor(7)) == "Tensor(shape=[], dtype=Int64, value= 7)"
    assert repr(Tensor(True)) == "Tensor(shape=[], dtype=Bool, value= True)"
    assert repr(Tensor([1, 2, 3])) == "Tensor(shape=[3], dtype=Int64, value= [1, 2, 3])"
    assert repr(Tensor([False, True])) == "Tensor(shape=[2], dtype=Bool, value= [False,  True])"
    assert repr(Tensor([1, -20, 300], ms.int32)) == \
        "Tensor(shape=[3], dtype=Int32, value= [  1, -20, 300])"


def test_repr_2d_puts_value_on_next_line():
    t = Tensor(np.array([[1.0, -2.0], [3.0, 4.0]], np.float32))
    assert repr(t) == ("Tensor(shape=[2, 2], dtype=Float32, value=\n"
                       "[[ 1.00000000e+00, -2.00000000e+00],\n"
                       " [ 3.00000000e+00,  4.00000000e+00]])")
    assert repr(Tensor(np.array([[0.5]], np.float16))) == \
        "Tensor(shape=[1, 1], dtype=Float16, value=\n[[ 5.0000e-01]])"


def test_repr_summarises_long_rows_and_dims():
    t = Tensor(np.arange(7 * 8).reshape(7, 8))
    assert repr(t) == ("Tensor(shape=[7, 8], dtype=Int64, value=\n"
                       "[[ 0,  1,  2 ...  5,  6,  7],\n"
                       " [ 8,  9, 10 ... 13, 14, 15],\n"
                       " [16, 17, 18 ... 21, 22, 23],\n"
                       " ...\n"
                       " [32, 33, 34 ... 37, 38, 39],\n"
                       " [40, 41, 42 ... 45, 46, 47],\n"
                       " [48, 49, 50 ... 53, 54, 55]])")
    long = Tensor(np.arange(1001, dtype=np.float32))
    assert repr(long) == ("Tensor(shape=[1001], dtype=Float32, value= [ 0.00000000e+00,  "
                          "1.00000000e+00,  2.00000000e+00 ...  9.98000000e+02,  "
                          "9.99000000e+02,  1.00000000e+03])")


def test_repr_1d_line_feed_every_12_floats():
    t = Tensor(np.ones(13, np.float32))
    one = " 1.00000000e+00"
    assert repr(t) == ("Tensor(shape=[13], dtype=Float32, value= [" +
                       ", ".join([one] * 12) + ", \n " + one + "])")


def test_repr_empty_and_str():
    assert repr(Tensor(np.zeros((0,), np.float32))) == "Tensor(shape=[0], dtype=Float32, value= )"
    t = Tensor(np.array([[1.0, 2.0]], np.float32))
    assert str(t) == str(t.asnumpy()) == "[[1. 2.]]"
    assert str(Tensor(1.3423151)) == "1.3423151"


# ---------------------------------------------------------------- Parameter

def test_parameter_repr_name_and_flags():
    p = Parameter(Tensor(np.zeros((5, 3)), ms.float32), name="w")
    assert repr(p) == "Parameter (name=w, shape=(5, 3), dtype=Float32, requires_grad=True)"
    assert str(p) == repr(p)
    q = Parameter(Tensor([1.0]), name="b", requires_grad=False)
    assert repr(q) == "Parameter (name=b, shape=(1,), dtype=Float32, requires_grad=False)"
    assert isinstance(p, Tensor) and p.data is p


def test_parameter_default_names_count_up():
    a, b = Parameter(Tensor([1.0])), Parameter(Tensor([2.0]))
    assert a.name.startswith("Parameter#") and b.name.startswith("Parameter#")
    assert int(b.name.split("#")[1]) == int(a.name.split("#")[1]) + 1
    a.name = "renamed"
    assert a.name == "renamed"


def test_parameter_validation():
    with pytest.raises(TypeError, match="name must be a str"):
        Parameter(Tensor([1.0]), name=3)
    with pytest.raises(TypeError, match="requires_grad must be a bool"):
        Parameter(Tensor([1.0]), requires_grad=1)
    p = Parameter(Tensor([1.0]), name="p")
    p.requires_grad = False
    assert p.requires_grad is False
    with pytest.raises(TypeError, match="requires_grad must be a bool"):
        p.requires_grad = "yes"


def test_parameter_owns_a_copy_of_its_input():
    source = np.array([1.0, 2.0], np.float32)
    p = Parameter(Tensor(source), name="p")
    source[0] = 50.0
    assert p.tolist() == [1.0, 2.0]
    assert Parameter(3.0).dtype == ms.float32


def test_set_data_in_place():
    p = Parameter(Tensor(np.zeros(3, np.float32)), name="p")
    arr = p.asnumpy()
    result = p.set_data(Tensor([1.0, 2.0, 3.0]))
    assert result is p and p.asnumpy() is arr
    assert arr.tolist() == [1.0, 2.0, 3.0]
    p.set_data(np.array([4, 5, 6], np.int64))
    assert p.dtype == ms.float32 and p.tolist() == [4.0, 5.0, 6.0]
    with pytest.raises(ValueError, match=r"set_data got shape \(2,\), but the parameter has shape \(3,\)"):
        p.set_data(Tensor([1.0, 2.0]))


def test_parameters_hash_by_identity():
    p, q = Parameter(Tensor([1.0]), name="p"), Parameter(Tensor([1.0]), name="q")
    grads = {p: 1, q: 2}
    assert grads[p] == 1 and grads[q] == 2


def test_parameter_tuple():
    p, q = Parameter(Tensor([1.0]), name="p"), Parameter(Tensor([1.0]), name="q")
    pt = ParameterTuple([p, q, p])
    assert isinstance(pt, tuple) and len(pt) == 3 and pt[0] is p
    with pytest.raises(TypeError, match="every element must be a Parameter"):
        ParameterTuple([p, Tensor([1.0])])
    with pytest.raises(ValueError, match="two different Parameters are named 'p'"):
        ParameterTuple([p, Parameter(Tensor([2.0]), name="p")])


# ---------------------------------------------------------------- set_seed

def test_set_seed_reproducible():
    ms.set_seed(123)
    first = (np.random.rand(3), module_rng().rand(3))
    ms.set_seed(123)
    second = (np.random.rand(3), module_rng().rand(3))
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


def test_set_seed_errors():
    with pytest.raises(TypeError, match="seed must be an int"):
        ms.set_seed(1.5)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        ms.set_seed(-1)


# ---------------------------------------------------------------- tutorial

def test_tutorial_threshold_example():
    class Threshold(nn.Cell):
        def __init__(self, threshold, value):
            super().__init__()
            self.threshold = threshold
            self.value = value

        def construct(self, inputs):
            cond = ops.gt(inputs, self.threshold)
            value = ops.fill(inputs.dtype, inputs.shape, self.value)
            return ops.select(cond, inputs, value)

    m = Threshold(0.1, 20)
    inputs = ms.Tensor([0.1, 0.2, 0.3], ms.float32)
    assert repr(m(inputs)) == ("Tensor(shape=[3], dtype=Float32, value= [ 2.00000000e+01,  "
                               "2.00000003e-01,  3.00000012e-01])")
