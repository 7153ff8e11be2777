"""Functions and a Cell whose derivative objects tests/test_pickling.py pickles: a module of
their own, so that pickle takes them by reference and a fresh process imports them."""
import numpy as np

import s2sgrad
from s2sgrad import nn


def heat(kappa, u0, data):
    """An explicit heat-equation stencil (a loop Numba compiles), fitted to ``data``."""
    u = u0
    for _ in range(12):
        lap = np.zeros_like(u)
        lap[1:-1] = u[:-2] - 2.0 * u[1:-1] + u[2:]
        u = u + 0.2 * kappa * lap
    return np.sum((u - data) ** 2)


def smooth(x, y):
    """A loop-free scalar function of two vectors (every mode applies)."""
    return np.sum(np.sin(x) * y) + np.sum(x ** 3) * np.sum(y)


def vector(x, y):
    """A vector-valued function (Jacobians and products)."""
    return np.sin(x) * y + x ** 2


class Fit(nn.Cell):
    """A Dense layer and a squared loss: its weights' gradients are taken by value."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2, weight_init="normal", bias_init="zeros")

    def construct(self, x, y):
        return ((self.dense(x) - y) ** 2).sum()


def derivatives():
    """{name: (derivative object, how it is called, its arguments)}: one object of every
    kind of ``s2sgrad.api``, each of a function or Cell of this module."""
    from s2sgrad.api.forward import forward_function
    from s2sgrad.api.higher import hvp_function
    from s2sgrad.api.split import split_function

    rng = np.random.default_rng(21)
    u0, data = np.sin(np.linspace(0, 3, 9)), np.zeros(9)
    x, y = rng.normal(size=4), rng.normal(size=4)
    net = Fit()
    xs, ys = rng.normal(size=(5, 3)).astype(np.float32), np.zeros((5, 2), np.float32)
    return {
        "grad": (s2sgrad.grad(heat), "call", (0.7, u0, data)),
        "value_and_grad": (s2sgrad.value_and_grad(smooth, (0, 1)), "call", (x, y)),
        "cell weights": (s2sgrad.grad(net, None, net.trainable_params()), "call", (xs, ys)),
        "vjp": (split_function(vector, 2, None, False), "vjp", (x, y)),
        "jacrev": (s2sgrad.jacrev(vector, (0, 1)), "call", (x, y)),
        "jvp": (forward_function(vector, (0, 1), False, False), "jvp", (x, y)),
        "jacfwd": (s2sgrad.jacfwd(vector), "call", (x, y)),
        "hvp": (hvp_function(smooth, 2), "hvp", (x, y)),
        "hessian": (s2sgrad.hessian(smooth), "call", (x, y)),
        "grad of grad": (s2sgrad.grad(s2sgrad.grad(smooth), 1), "call", (x, y)),
        "jvp of grad": (forward_function(s2sgrad.grad(smooth), (0, 1), False, False), "jvp",
                        (x, y)),
        "bound method": (Model(y[:3]).loss, "call", (x[:3],)),
    }


def run(obj, how, args):
    """Call derivative ``obj`` as ``how`` says on ``args``: its result, as plain arrays."""
    if how == "vjp":
        out, vjp_fn = obj.vjp(args)
        result = (out, vjp_fn(np.ones_like(out)))
    elif how == "jvp":
        result = obj.jvp_call(args, tuple(np.ones_like(a) for a in args))
    elif how == "hvp":
        result = obj.tangents_of_gradient(args, [np.ones_like(a) for a in args])
    else:
        result = obj(*args)
    return _plain(result)


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return np.asarray(value)


class Model:
    """A method whose gradient is defined on the class: ``Model(...).loss`` is the
    gradient bound to the instance (its function is found under the gradient's name)."""

    def __init__(self, scale):
        self.scale = scale

    @s2sgrad.grad
    def loss(self, x):
        return np.sum(np.sin(x) * self.scale) + np.sum(x ** 2)
