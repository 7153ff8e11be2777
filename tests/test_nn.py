"""Tests of s2sgrad.nn: Cell registration and traversal, repr, layers, containers, losses."""
from collections import OrderedDict

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Parameter, Tensor, nn, ops


def _param(value, name=None, requires_grad=True):
    return Parameter(Tensor(np.asarray(value, dtype=np.float32)), name=name,
                     requires_grad=requires_grad)


class Pair(nn.Cell):
    """Own Parameters around a child Dense, to check registration order."""

    def __init__(self):
        super().__init__()
        self.b = _param([1.0], name="pb")
        self.child = nn.Dense(2, 3)
        self.a = _param([2.0], name="pa", requires_grad=False)

    def construct(self, x):
        return self.child(x) * self.a + self.b


class Outer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.inner = Pair()


class Network(nn.Cell):
    """The network whose print-out the semantics doc shows."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(nn.Dense(28 * 28, 512), nn.ReLU())

    def construct(self, x):
        return self.dense_relu_sequential(self.flatten(x))


# ---------------------------------------------------------------------------
# Cell: registration, names, traversal

def test_parameters_registered_in_order_own_first():
    net = Pair()
    names = [name for name, _ in net.parameters_and_names()]
    assert names == ["b", "a", "child.weight", "child.bias"]
    assert list(net._params) == ["b", "a"] and list(net._cells) == ["child"]


def test_subcell_parameter_names_are_paths_top_level_names_kept():
    net = Pair()
    assert [p.name for p in net.get_parameters()] == ["pb", "pa", "child.weight", "child.bias"]
    outer = Outer()
    assert [n for n, _ in outer.parameters_and_names()] == [
        "inner.b", "inner.a", "inner.child.weight", "inner.child.bias"]
    assert [p.name for p in outer.get_parameters()] == [
        "inner.b", "inner.a", "inner.child.weight", "inner.child.bias"]


def test_unnamed_top_level_parameter_keeps_default_name():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = _param([1.0])

    net = Net()
    assert net.w.name.startswith("Parameter#")
    assert [n for n, _ in net.parameters_and_names()] == ["w"]


def test_standalone_dense_parameter_names():
    dense = nn.Dense(3, 2)
    assert (dense.weight.name, dense.bias.name) == ("weight", "bias")
    assert dense.weight.shape == (2, 3) and dense.bias.shape == (2,)


def test_shared_parameter_and_cell_listed_once():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.first = nn.Dense(2, 2)
            self.second = self.first

    net = Net()
    assert [n for n, _ in net.parameters_and_names()] == ["first.weight", "first.bias"]
    assert [n for n, _ in net.cells_and_names()] == ["", "first"]


def test_trainable_and_untrainable_params():
    net = Pair()
    assert [p.name for p in net.trainable_params()] == ["pb", "child.weight", "child.bias"]
    assert [p.name for p in net.untrainable_params()] == ["pa"]
    assert net.trainable_params(recurse=False) == [net.b]
    assert [n for n, _ in net.parameters_and_names(expand=False)] == ["b", "a"]


def test_cells_and_names_name_cells_cells():
    outer = Outer()
    pairs = list(outer.cells_and_names())
    assert [n for n, _ in pairs] == ["", "inner", "inner.child"]
    assert pairs[0][1] is outer and pairs[2][1] is outer.inner.child
    assert list(outer.inner.name_cells()) == ["child"]
    assert list(outer.inner.cells()) == [outer.inner.child]


def test_getattr_delattr_and_reassignment():
    net = Pair()
    assert net.child is net._cells["child"] and net.a is net._params["a"]
    with pytest.raises(AttributeError, match="'Pair' object has no attribute 'missing'"):
        net.missing
    new_b = _param([5.0], name="pb2")
    net.b = new_b                    # a replaced Parameter keeps its place
    assert [p for _, p in net.parameters_and_names()][0] is new_b
    net.a = 3.0                      # a plain value replaces the registered Parameter
    assert net.a == 3.0 and "a" not in net._params
    del net.child
    assert "child" not in net._cells
    with pytest.raises(AttributeError):
        net.child


def test_assign_before_super_init_is_an_error():
    class Early(nn.Cell):
        def __init__(self):
            self.w = _param([1.0])
            super().__init__()

    with pytest.raises(AttributeError, match=r"cannot assign Parameter to 'w' before .*super\(\)"):
        Early()


def test_insert_child_to_cell_checks():
    cell = nn.Cell()
    with pytest.raises(TypeError, match="child cell 'x' must be a Cell, but got int"):
        cell.insert_child_to_cell("x", 3)
    with pytest.raises(KeyError, match="without '.'"):
        cell.insert_child_to_cell("a.b", nn.ReLU())


def test_call_runs_construct_and_base_construct_raises():
    class Add(nn.Cell):
        def construct(self, x, y=1):
            return x + y

    assert Add()(2, y=3) == 5
    with pytest.raises(NotImplementedError, match="Cell must define construct"):
        nn.Cell()(1)


def test_bprop_debug_internal_params_and_training():
    net = Outer()
    assert net.bprop_debug is False and net.internal_params == []
    net.bprop_debug = True
    assert net.bprop_debug is True
    with pytest.raises(TypeError, match="bprop_debug must be bool, but got int"):
        net.bprop_debug = 1
    assert net.training is False
    assert net.set_train() is net
    assert all(cell.training for _, cell in net.cells_and_names())
    net.set_train(False)
    assert not any(cell.training for _, cell in net.cells_and_names())


# ---------------------------------------------------------------------------
# repr

def test_repr_matches_semantics_doc():
    expected = (
        "Network(\n"
        "  (flatten): Flatten()\n"
        "  (dense_relu_sequential): SequentialCell(\n"
        "    (0): Dense(input_channels=784, output_channels=512, has_bias=True)\n"
        "    (1): ReLU()\n"
        "  )\n"
        ")"
    )
    assert repr(Network()) == expected
    assert str(Network()) == expected


@pytest.mark.parametrize("cell, text", [
    (lambda: nn.ReLU(), "ReLU()"),
    (lambda: nn.Softmax(axis=1), "Softmax()"),
    (lambda: nn.Flatten(), "Flatten()"),
    (lambda: nn.SequentialCell(), "SequentialCell()"),
    (lambda: nn.Dense(3, 2, has_bias=False), "Dense(input_channels=3, output_channels=2)"),
    (lambda: nn.Dense(3, 2, activation="relu"),
     ("Dense(\n  input_channels=3, output_channels=2, has_bias=True, activation=ReLU()"
      "\n  (activation): ReLU()\n)")),
])
def test_leaf_and_small_reprs(cell, text):
    assert repr(cell()) == text


# ---------------------------------------------------------------------------
# Dense

def _dense_reference(dense, x):
    out = np.asarray(x) @ dense.weight.asnumpy().T
    return out + dense.bias.asnumpy() if dense.has_bias else out


def test_dense_forward_matches_numpy():
    ms.set_seed(0)
    dense = nn.Dense(4, 3)
    x = np.random.randn(5, 4).astype(np.float32)
    out = dense(Tensor(x))
    assert isinstance(out, Tensor) and out.dtype == ms.float32 and out.shape == (5, 3)
    np.testing.assert_allclose(out.asnumpy(), _dense_reference(dense, x), rtol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 1, 3, 4), (4,)])
def test_dense_reshapes_other_ranks(shape):
    dense = nn.Dense(4, 5)
    x = np.random.randn(*shape).astype(np.float32)
    out = dense(Tensor(x))
    assert out.shape == shape[:-1] + (5,)
    np.testing.assert_allclose(out.asnumpy(), _dense_reference(dense, x), rtol=1e-5, atol=1e-6)


def test_dense_without_bias():
    dense = nn.Dense(3, 2, weight_init="ones", has_bias=False)
    assert dense.bias is None and [n for n, _ in dense.parameters_and_names()] == ["weight"]
    np.testing.assert_allclose(dense(Tensor(np.ones((1, 3), np.float32))).asnumpy(), [[3.0, 3.0]])


def test_dense_default_init_uniform_seeded():
    ms.set_seed(3)
    first = nn.Dense(16, 32)
    ms.set_seed(3)
    again = nn.Dense(16, 32)
    other = nn.Dense(16, 32)
    bound = 1 / np.sqrt(16)
    for p in (first.weight, first.bias):
        assert p.dtype == ms.float32
        assert np.all(np.abs(p.asnumpy()) <= bound) and np.abs(p.asnumpy()).max() > 0.8 * bound
    np.testing.assert_array_equal(first.weight.asnumpy(), again.weight.asnumpy())
    np.testing.assert_array_equal(first.bias.asnumpy(), again.bias.asnumpy())
    assert not np.array_equal(first.weight.asnumpy(), other.weight.asnumpy())


def test_dense_named_inits():
    ms.set_seed(0)
    dense = nn.Dense(200, 100, weight_init="normal", bias_init="zeros")
    w = dense.weight.asnumpy()
    assert abs(w.mean()) < 1e-3 and 0.0095 < w.std() < 0.0105
    np.testing.assert_array_equal(dense.bias.asnumpy(), np.zeros(100))
    dense = nn.Dense(2, 3, weight_init="ones", bias_init=0.5)
    np.testing.assert_array_equal(dense.weight.asnumpy(), np.ones((3, 2)))
    np.testing.assert_array_equal(dense.bias.asnumpy(), np.full(3, 0.5))


@pytest.mark.parametrize("make", [Tensor, np.asarray])
def test_dense_tensor_init_is_copied(make):
    values = np.arange(6, dtype=np.float64).reshape(3, 2)
    init = make(values)
    dense = nn.Dense(2, 3, weight_init=init, bias_init=make(np.ones(3)))
    np.testing.assert_array_equal(dense.weight.asnumpy(), values)
    assert dense.weight.dtype == ms.float32
    values[0, 0] = 100.0
    assert dense.weight.asnumpy()[0, 0] == 0.0


def test_dense_init_errors():
    with pytest.raises(ValueError, match=r"weight_init has shape \(2, 3\), but the layer needs "
                                         r"shape \(3, 2\)"):
        nn.Dense(2, 3, weight_init=Tensor(np.zeros((2, 3), np.float32)))
    with pytest.raises(ValueError, match=r"bias_init has shape \(2,\), .*shape \(3,\)"):
        nn.Dense(2, 3, bias_init=np.zeros(2))
    with pytest.raises(ValueError, match="weight_init 'glorot' is not supported"):
        nn.Dense(2, 3, weight_init="glorot")
    with pytest.raises(TypeError, match="bias_init must be None, a str, a number or a Tensor"):
        nn.Dense(2, 3, bias_init=[1, 2, 3])


def test_dense_argument_errors():
    with pytest.raises(TypeError, match="in_channels must be int, but got float"):
        nn.Dense(2.0, 3)
    with pytest.raises(ValueError, match="out_channels must be >= 1, but got 0"):
        nn.Dense(2, 0)
    with pytest.raises(TypeError, match="has_bias must be bool, but got int"):
        nn.Dense(2, 3, has_bias=1)
    with pytest.raises(ValueError, match="unknown activation 'gelu'"):
        nn.Dense(2, 3, activation="gelu")
    with pytest.raises(TypeError, match="activation must be None, a str or a Cell, but got function"):
        nn.Dense(2, 3, activation=lambda x: x)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("name, fn", [
    ("relu", lambda z: np.maximum(z, 0)),
    ("softmax", _softmax),
    ("sigmoid", lambda z: 1 / (1 + np.exp(-z))),
    ("Tanh", np.tanh),
])
def test_dense_activation_strings(name, fn):
    dense = nn.Dense(4, 3, activation=name)
    x = np.random.randn(2, 4).astype(np.float32)
    np.testing.assert_allclose(dense(Tensor(x)).asnumpy(), fn(_dense_reference(dense, x)),
                               rtol=1e-5, atol=1e-6)


def test_dense_activation_cell():
    act = nn.ReLU()
    dense = nn.Dense(4, 3, activation=act)
    assert dense.activation is act
    assert [n for n, _ in dense.cells_and_names()] == ["", "activation"]


# ---------------------------------------------------------------------------
# Flatten, activations

def test_flatten_default_and_dims():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    out = nn.Flatten()(Tensor(x))
    assert out.shape == (2, 60)
    np.testing.assert_array_equal(out.asnumpy(), x.reshape(2, 60))
    assert nn.Flatten(start_dim=0)(Tensor(x)).shape == (120,)
    assert nn.Flatten(1, 2)(Tensor(x)).shape == (2, 12, 5)
    assert nn.Flatten(-3, -2)(Tensor(x)).shape == (2, 12, 5)
    assert nn.Flatten()(Tensor(np.ones((4, 3)))).shape == (4, 3)


def test_flatten_errors():
    with pytest.raises(ValueError, match=r"Flatten: input must have at least 2 dims, but got "
                                         r"shape \(3,\)"):
        nn.Flatten()(Tensor(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="end_dim=5 is out of range for a 3-D input"):
        nn.Flatten(0, 5)(Tensor(np.ones((1, 2, 3))))
    with pytest.raises(ValueError, match="start_dim=2 comes after end_dim=1"):
        nn.Flatten(2, 1)(Tensor(np.ones((1, 2, 3))))
    with pytest.raises(TypeError, match="start_dim must be int, but got str"):
        nn.Flatten("1")


def test_relu_sigmoid_tanh_softmax_values():
    x = np.random.randn(3, 4).astype(np.float32)
    t = Tensor(x)
    np.testing.assert_array_equal(nn.ReLU()(t).asnumpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.Sigmoid()(t).asnumpy(), 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(nn.Tanh()(t).asnumpy(), np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(nn.Softmax()(t).asnumpy(), _softmax(x), rtol=1e-6)
    np.testing.assert_allclose(nn.Softmax(axis=0)(t).asnumpy(), _softmax(x, 0), rtol=1e-6)
    assert nn.Softmax(axis=0)(t).dtype == ms.float32
    with pytest.raises(TypeError, match="Softmax axis must be int, but got float"):
        nn.Softmax(axis=1.0)


# ---------------------------------------------------------------------------
# SequentialCell

def test_sequential_forms_and_names():
    relu, dense = nn.ReLU(), nn.Dense(3, 2)
    for seq in (nn.SequentialCell(dense, relu), nn.SequentialCell([dense, relu])):
        assert list(seq.name_cells()) == ["0", "1"] and len(seq) == 2
        assert seq[0] is dense and seq[-1] is relu and seq[-2] is dense
    seq = nn.SequentialCell(OrderedDict([("fc", dense), ("act", relu)]))
    assert list(seq.name_cells()) == ["fc", "act"] and seq.fc is dense
    assert [p.name for p in seq.get_parameters()] == ["fc.weight", "fc.bias"]


def test_sequential_forward_is_composition():
    dense1, dense2 = nn.Dense(4, 3), nn.Dense(3, 2)
    seq = nn.SequentialCell(dense1, nn.ReLU(), dense2)
    x = np.random.randn(5, 4).astype(np.float32)
    expected = _dense_reference(dense2, np.maximum(_dense_reference(dense1, x), 0))
    np.testing.assert_allclose(seq(Tensor(x)).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    t = Tensor(x)
    assert nn.SequentialCell()(t) is t


def test_sequential_slice_append_setitem():
    cells = [nn.Dense(2, 2), nn.ReLU(), nn.Dense(2, 2)]
    seq = nn.SequentialCell(cells)
    part = seq[1:]
    assert type(part) is nn.SequentialCell and list(part.name_cells()) == ["1", "2"]
    assert list(part.cells()) == cells[1:] and len(seq[5:]) == 0
    extra = nn.Tanh()
    seq.append(extra)
    assert len(seq) == 4 and seq[3] is extra and list(seq.name_cells())[-1] == "3"
    assert seq.cell_list[-1] is extra
    sig = nn.Sigmoid()
    seq[1] = sig
    assert seq[1] is sig and list(seq.name_cells())[1] == "1" and seq.cell_list[1] is sig


def test_sequential_param_names_nested():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.seq = nn.SequentialCell(nn.Dense(2, 2), nn.ReLU(), nn.Dense(2, 1))

    assert [p.name for p in Net().get_parameters()] == [
        "seq.0.weight", "seq.0.bias", "seq.2.weight", "seq.2.bias"]


def test_sequential_errors():
    with pytest.raises(TypeError, match="SequentialCell element '1' must be a Cell, but got int"):
        nn.SequentialCell(nn.ReLU(), 3)
    with pytest.raises(TypeError, match="SequentialCell element '0' must be a Cell"):
        nn.SequentialCell([np.exp])
    with pytest.raises(TypeError, match="SequentialCell dict keys must be str, but got int"):
        nn.SequentialCell(OrderedDict([(0, nn.ReLU())]))
    seq = nn.SequentialCell(nn.ReLU())
    with pytest.raises(TypeError, match="SequentialCell append argument must be a Cell, but got str"):
        seq.append("relu")
    with pytest.raises(IndexError, match="index 1 is out of range for SequentialCell of length 1"):
        seq[1]
    with pytest.raises(IndexError, match="index -2 is out of range"):
        seq[-2]
    with pytest.raises(TypeError, match="SequentialCell indices must be int or slice, but got str"):
        seq["0"]
    with pytest.raises(TypeError, match="SequentialCell item 0 must be a Cell"):
        seq[0] = 1


# ---------------------------------------------------------------------------
# losses

def _bce_reference(x, y, weight=1.0, pos_weight=1.0):
    sig = 1 / (1 + np.exp(-x.astype(np.float64)))
    return -weight * (pos_weight * y * np.log(sig) + (1 - y) * np.log(1 - sig))


@pytest.mark.parametrize("reduction, reduce", [("mean", np.mean), ("sum", np.sum),
                                               ("none", lambda v: v)])
def test_bce_with_logits_loss(reduction, reduce):
    x = np.random.randn(3, 4).astype(np.float32)
    y = (np.random.rand(3, 4) > 0.5).astype(np.float32)
    weight = np.random.rand(4).astype(np.float32)
    pos_weight = np.random.rand(3, 4).astype(np.float32) + 0.5
    loss = nn.BCEWithLogitsLoss(reduction, Tensor(weight), Tensor(pos_weight))
    out = loss(Tensor(x), Tensor(y))
    np.testing.assert_allclose(out.asnumpy(), reduce(_bce_reference(x, y, weight, pos_weight)),
                               rtol=1e-5)
    plain = nn.BCEWithLogitsLoss()(Tensor(x), Tensor(y))
    np.testing.assert_allclose(plain.asnumpy(), _bce_reference(x, y).mean(), rtol=1e-5)


def test_mse_and_cross_entropy_losses():
    x = np.random.randn(3, 4).astype(np.float32)
    y = np.random.randn(3, 4).astype(np.float32)
    np.testing.assert_allclose(nn.MSELoss()(Tensor(x), Tensor(y)).asnumpy(),
                               ((x - y) ** 2).mean(), rtol=1e-5)
    np.testing.assert_allclose(nn.MSELoss("none")(Tensor(x), Tensor(y)).asnumpy(),
                               (x - y) ** 2, rtol=1e-5)
    labels = np.array([0, 3, 1], dtype=np.int32)
    log_probs = np.log(_softmax(x.astype(np.float64), 1))
    expected = -log_probs[np.arange(3), labels]
    np.testing.assert_allclose(nn.CrossEntropyLoss()(Tensor(x), Tensor(labels)).asnumpy(),
                               expected.mean(), rtol=1e-5)
    np.testing.assert_allclose(
        nn.CrossEntropyLoss(reduction="sum")(Tensor(x), Tensor(labels)).asnumpy(),
        expected.sum(), rtol=1e-5)


def test_loss_errors():
    with pytest.raises(ValueError, match="BCEWithLogitsLoss: reduction must be 'mean', 'sum' "
                                         "or 'none', got 'avg'"):
        nn.BCEWithLogitsLoss("avg")
    with pytest.raises(ValueError, match="MSELoss: reduction must be"):
        nn.MSELoss(reduction=None)
    with pytest.raises(TypeError, match="BCEWithLogitsLoss: weight must be a Tensor or None, "
                                        "but got list"):
        nn.BCEWithLogitsLoss(weight=[1.0])
    with pytest.raises(NotImplementedError, match="CrossEntropyLoss: label_smoothing=0.1 is "
                                                  "not supported"):
        nn.CrossEntropyLoss(label_smoothing=0.1)
    with pytest.raises(NotImplementedError, match="CrossEntropyLoss: weight is not supported"):
        nn.CrossEntropyLoss(weight=Tensor(np.ones(3, np.float32)))


def test_losses_are_cells_with_ops_semantics():
    loss = nn.BCEWithLogitsLoss()
    assert isinstance(loss, nn.Cell) and repr(loss) == "BCEWithLogitsLoss()"
    x, y = ops.ones((2,), ms.float32), ops.zeros((2,), ms.float32)
    np.testing.assert_allclose(loss(x, y).asnumpy(),
                               ops.binary_cross_entropy_with_logits(x, y).asnumpy())
