"""grad / value_and_grad as decorators: bare, with options, on methods of plain classes
and of Cells (``self`` bound, weights from the instance), and show() == the code that
ran."""
import copy
import gc
import pickle
import re
import weakref

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Parameter, Tensor, nn, ops
from s2sgrad.errors import GradientArgumentError


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    """Structure tests run the generated code as Python: no Numba compile per test."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


X = np.array([1.0, 2.0, 3.0])
Y = np.array([0.5, -1.0, 2.0])


@ms.grad
def square_sum(x):
    return np.sum(x * x)


@ms.grad(grad_position=1)
def weighted(x, y):
    return np.sum(x * y * y)


@ms.value_and_grad(grad_position=(0, 1), has_aux=True)
def with_aux(x, y):
    return np.sum(np.sin(x) * y), x * y


def test_bare_decorator_is_the_gradient():
    np.testing.assert_allclose(square_sum(X), 2 * X)
    assert square_sum.__name__ == "square_sum_grad" and square_sum.__wrapped__(X) == 14.0


def test_decorator_with_options_takes_them():
    np.testing.assert_allclose(weighted(X, Y), 2 * X * Y)


def test_value_and_grad_decorator_with_positions_and_aux():
    (value, aux), (dx, dy) = with_aux(X, Y)
    assert np.isclose(value, np.sum(np.sin(X) * Y))
    np.testing.assert_allclose(aux, X * Y)
    np.testing.assert_allclose(dx, np.cos(X) * Y)
    np.testing.assert_allclose(dy, np.sin(X))


@pytest.mark.parametrize("make", [ms.grad, ms.value_and_grad])
def test_options_are_checked_when_the_decorator_is_made(make):
    with pytest.raises(ValueError, match="can not both be None"):
        make(grad_position=None)
    with pytest.raises(TypeError, match="has_aux must be a bool"):
        make(has_aux=1)


def test_a_position_passed_as_the_function_says_to_name_it():
    with pytest.raises(TypeError, match=r"@grad\(grad_position=1\)"):
        ms.grad(1)
    with pytest.raises(TypeError, match="differentiates a function"):
        ms.value_and_grad("loss")


class Spring:
    """A plain class: the decorated method differentiates w.r.t. x, self bound."""

    def __init__(self, k):
        self.k = k

    @ms.grad
    def force(self, x):
        return 0.5 * self.k * np.sum(x * x)

    @ms.value_and_grad(grad_position=(0, 1))
    def both(self, x, y):
        return self.k * np.sum(x * y)


def test_decorated_method_binds_self():
    s = Spring(3.0)
    np.testing.assert_allclose(s.force(X), 3.0 * X)
    value, (dx, dy) = s.both(X, Y)
    assert np.isclose(value, 3.0 * np.sum(X * Y))
    np.testing.assert_allclose(dx, 3.0 * Y)
    np.testing.assert_allclose(dy, 3.0 * X)
    # each instance its own self; the bound gradient is built once per instance
    np.testing.assert_allclose(Spring(5.0).force(X), 5.0 * X)
    assert s.force is s.force
    assert isinstance(Spring.force, ms.api.reverse.GradFunction)
    assert repr(s.both).startswith("<s2sgrad value_and_grad of both (grad_position=(0, 1))")


class Curves:
    """jacrev and hessian on methods: each binds as its own kind of derivative."""

    def __init__(self, k):
        self.k = k

    @ms.jacrev
    def scaled(self, x):
        return self.k * np.sin(x)

    @ms.hessian
    def energy(self, x):
        return self.k * np.sum(x ** 3)


def test_jacrev_and_hessian_on_methods_bind_as_themselves():
    c = Curves(2.0)
    assert isinstance(c.scaled, ms.api.split.JacrevFunction)
    assert isinstance(c.energy, ms.api.higher.HessianFunction)
    np.testing.assert_allclose(c.scaled(X), np.diag(2.0 * np.cos(X)))
    np.testing.assert_allclose(c.energy(X), np.diag(12.0 * X))
    assert c.scaled is c.scaled


class Classifier(nn.Cell):
    """A Cell whose loss method is differentiated w.r.t. its trainable parameters."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, 3, weight_init="normal")
        self.loss_fn = nn.CrossEntropyLoss()

    def construct(self, x):
        return self.dense(x)

    @ms.value_and_grad(grad_position=None, weights=nn.Cell.trainable_params)
    def train_loss(self, x, y):
        return self.loss_fn(self(x), y)

    @ms.grad
    def input_saliency(self, x, y):
        return self.loss_fn(self(x), y)


def _reference_grads(net, x, y):
    """The same gradients by the reference spelling: value_and_grad(forward_fn, None, w)."""
    def forward_fn(x, y):
        return net.loss_fn(net(x), y)
    return ms.value_and_grad(forward_fn, None, weights=net.trainable_params())(x, y)


def test_cell_loss_method_with_weights_from_the_instance():
    ms.set_seed(3)
    net = Classifier()
    x = Tensor(np.random.default_rng(0).normal(size=(5, 4)), ms.float32)
    y = Tensor(np.array([0, 2, 1, 1, 0]), ms.int32)
    loss, grads = net.train_loss(x, y)
    ref_loss, ref_grads = _reference_grads(net, x, y)
    assert np.isclose(float(loss), float(ref_loss))
    assert len(grads) == 2
    for g, r, p in zip(grads, ref_grads, net.trainable_params()):
        assert g.shape == p.shape
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-6)
    assert np.abs(np.asarray(grads[0])).sum() > 0
    assert "weights=Cell.trainable_params" in repr(Classifier.train_loss)
    # frozen weights are left out: the weights function is read at each lookup
    net.dense.bias.requires_grad = False
    _, grads = net.train_loss(x, y)
    assert len(grads) == 1 and grads[0].shape == (3, 4)


def test_cell_method_gradient_w_r_t_its_input():
    net = Classifier()
    x = Tensor(np.ones((2, 4)), ms.float32)
    y = Tensor(np.array([0, 2]), ms.int32)
    dx = net.input_saliency(x, y)
    w = np.asarray(net.dense.weight)
    logits = np.ones((2, 4)) @ w.T + np.asarray(net.dense.bias)
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(3)[[0, 2]]
    np.testing.assert_allclose(np.asarray(dx), (p - onehot) @ w / 2, rtol=1e-5)


def test_weights_from_the_instance_need_an_instance():
    with pytest.raises(GradientArgumentError, match="must be a method called on an instance"):
        Classifier.train_loss(Classifier(), np.ones((1, 4)), np.array([0]))


# ------------------------------------------------------------------ show


def deep(x, flag=None):
    if x.ndim == 1:
        x = x * 2.0
    if flag is None:
        return np.sum(np.tanh(x) * x)
    return np.sum(x)


def test_show_with_example_arguments_is_the_code_that_runs(capsys):
    g = ms.value_and_grad(deep)
    g(X)
    shown = ms.show(deep, X)
    assert shown == g.source == open(g.path).read()
    out = capsys.readouterr().out
    assert "the code that runs for arguments like (float64[3])" in out and shown in out
    # on the gradient object itself, before and after a call: the same module
    h = ms.grad(deep)
    assert ms.show(h, X) == g.source
    h(X)
    assert h.source == g.source


def test_show_without_arguments_is_the_generic_build_and_says_so(capsys):
    shown = ms.show(deep)
    header = capsys.readouterr().out.splitlines()[0]
    assert "generic build" in header and "flag=None" in header
    assert "def deep_value_and_grad(x, flag):" in shown and "np.tanh" in shown
    # the generic build branches on x.ndim at run time; the code for a vector folds it
    specialised = ms.show(deep, X)
    assert re.search(r"^\s+if \w+:$", shown, re.M) and "if " not in specialised


def test_show_of_a_decorated_method_with_examples():
    s = Spring(2.0)
    shown = ms.show(s.force, X)
    s.force(X)
    assert shown == s.force.source


def test_show_of_other_arguments_leaves_the_last_call_reported(capsys):
    h = ms.grad(deep)
    h(X)
    ran = h.source
    matrix_code = ms.show(h, np.ones((2, 2)))
    assert matrix_code != ran and "x_1 = x * 2.0" not in matrix_code
    assert h.source == ran == open(h.path).read()


class Scaled(nn.Cell):
    """A Cell with its own bprop: a decorated method differentiates the method's body,
    calling the Cell (and so its bprop) where the body calls self(x)."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([2.0], dtype=np.float32)), name="weight")

    def construct(self, x):
        return self.w * x

    def bprop(self, x, out, dout):
        return (dout * 10.0,)

    @ms.grad
    def loss(self, x):
        return (self(x) * x).sum()


def test_method_of_a_cell_with_bprop_is_its_own_body():
    x = Tensor(np.array([3.0], np.float32))
    # d/dx [self(x) * x] = bprop's 10 * x + self(x) = 30 + 6
    np.testing.assert_allclose(np.asarray(Scaled().loss(x)), [36.0])


class Cubed:
    """Every transform that decorates, on methods of one class: each binds ``self``."""

    def __init__(self, k):
        self.k = k

    @ms.grad
    def grad_of(self, x):
        return self.k * np.sum(x ** 3)

    @ms.value_and_grad
    def value_and_grad_of(self, x):
        return self.k * np.sum(x ** 3)

    @ms.jacrev
    def jacrev_of(self, x):
        return self.k * x ** 3

    @ms.jacfwd
    def jacfwd_of(self, x):
        return self.k * x ** 3

    @ms.hessian
    def hessian_of(self, x):
        return self.k * np.sum(x ** 3)

    def plain(self, x):
        return self.k * x ** 3


DECORATED = {
    "grad_of": lambda k: 3 * k * X ** 2,
    "value_and_grad_of": lambda k: (k * np.sum(X ** 3), 3 * k * X ** 2),
    "jacrev_of": lambda k: np.diag(3 * k * X ** 2),
    "jacfwd_of": lambda k: np.diag(3 * k * X ** 2),
    "hessian_of": lambda k: np.diag(6 * k * X),
}


def _freed(make_and_use):
    """Whether the instance ``make_and_use`` makes and returns is gone once dropped."""
    ref = weakref.ref(make_and_use())
    gc.collect()
    return ref() is None


@pytest.mark.parametrize("name", list(DECORATED))
def test_every_decorating_transform_binds_a_method_and_keeps_no_instance_alive(name):
    a, b = Cubed(2.0), Cubed(5.0)
    for obj in (a, b, a):
        got = getattr(obj, name)(X)
        want = DECORATED[name](obj.k)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w)
    assert getattr(a, name) is getattr(a, name)       # built once per instance
    # a temporary instance lives through the call; copies start without a's derivatives
    np.testing.assert_allclose(np.asarray(getattr(Cubed(7.0), name)(X)[-1]),
                               np.asarray(DECORATED[name](7.0)[-1]))
    c = copy.deepcopy(a)
    c.k = 4.0
    np.testing.assert_allclose(np.asarray(getattr(c, name)(X)[-1]),
                               np.asarray(DECORATED[name](4.0)[-1]))
    assert pickle.loads(pickle.dumps(a)).k == a.k

    def use():
        obj = Cubed(3.0)
        getattr(obj, name)(X)
        return obj
    assert _freed(use), f"{name} keeps the instance alive"


@pytest.mark.parametrize("transform", ["jvp", "jacfwd", "jacrev", "vjp", "hvp", "cell-jvp"])
def test_transforms_of_a_bound_method_or_cell_keep_no_instance_alive(transform):
    calls = {
        "jvp": lambda m: ms.jvp(m.plain, (X,), (Y,)),
        "jacfwd": lambda m: ms.jacfwd(m.plain)(X),
        "jacrev": lambda m: ms.jacrev(m.plain)(X),
        "vjp": lambda m: ms.vjp(m.plain, X)[1](Y),
        "hvp": lambda m: ms.hvp(_summed(m), X, Y),
        "cell-jvp": lambda m: ms.jvp(m, (Tensor(X.reshape(1, 3).astype(np.float32)),),
                                     (Tensor(Y.reshape(1, 3).astype(np.float32)),)),
    }

    def use():
        obj = nn.Dense(3, 2) if transform == "cell-jvp" else Cubed(3.0)
        calls[transform](obj)
        calls[transform](obj)        # the kept derivative found again, not rebuilt
        return obj
    assert _freed(use), f"{transform} keeps the instance alive"


class _Summed:
    def __init__(self, scaled):
        self.scaled = scaled

    def loss(self, x):
        return np.sum(self.scaled.plain(x))


def _summed(m):
    return _Summed(m).loss
