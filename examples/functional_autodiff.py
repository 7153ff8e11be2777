"""The functional-autodiff tutorial, run on s2sgrad.

function, grad with positions (2, 3), function_with_logits, stop_gradient,
has_aux, and the same network as a Cell with value_and_grad over its
trainable parameters.  With seed 42 every gradient row is
[0.326189, 0.0158915, 0.0421645] (the tutorial's numbers), except the
gradient of loss + sum(z), whose rows are [1.32619, 1.01589, 1.04216].

Run: python examples/functional_autodiff.py [--show]   (--show prints the generated code)
"""
import sys

import numpy as np

import s2sgrad as mindspore
from s2sgrad import nn, ops, Tensor, Parameter

np.random.seed(42)
x = ops.ones(5, mindspore.float32)  # input tensor
y = ops.zeros(3, mindspore.float32)  # expected output
w = Parameter(Tensor(np.random.randn(5, 3), mindspore.float32), name='w')  # weight
b = Parameter(Tensor(np.random.randn(3,), mindspore.float32), name='b')  # bias


def function(x, y, w, b):
    z = ops.matmul(x, w) + b
    loss = ops.binary_cross_entropy_with_logits(z, y, ops.ones_like(z), ops.ones_like(z))
    return loss


def function_with_logits(x, y, w, b):
    z = ops.matmul(x, w) + b
    loss = ops.binary_cross_entropy_with_logits(z, y, ops.ones_like(z), ops.ones_like(z))
    return loss, z


def function_stop_gradient(x, y, w, b):
    z = ops.matmul(x, w) + b
    loss = ops.binary_cross_entropy_with_logits(z, y, ops.ones_like(z), ops.ones_like(z))
    return loss, ops.stop_gradient(z)


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = w
        self.b = b

    def construct(self, x):
        z = ops.matmul(x, self.w) + self.b
        return z


model = Network()
loss_fn = nn.BCEWithLogitsLoss()


def forward_fn(x, y):
    z = model(x)
    loss = loss_fn(z, y)
    return loss


def main(show=False):
    loss = function(x, y, w, b)
    print(f"loss = function(x, y, w, b): {loss}")

    grad_fn = mindspore.grad(function, (2, 3))
    grads = grad_fn(x, y, w, b)
    print("\n(dw, db) = grad(function, (2, 3))(x, y, w, b):")
    print(grads)
    if show:
        print(f"\ngenerated code of grad(function, (2, 3)) ({grad_fn.path}):")
        print(grad_fn.source)

    grad_fn = mindspore.grad(function_with_logits, (2, 3))
    grads = grad_fn(x, y, w, b)
    print("\n(dw, db) of function_with_logits, which returns (loss, z): the gradient of "
          "loss + sum(z):")
    print(grads)

    grad_fn = mindspore.grad(function_stop_gradient, (2, 3))
    grads = grad_fn(x, y, w, b)
    print("\n(dw, db) of function_stop_gradient, which returns (loss, stop_gradient(z)): "
          "the gradient of loss alone:")
    print(grads)

    grad_fn = mindspore.grad(function_with_logits, (2, 3), has_aux=True)
    grads, (z,) = grad_fn(x, y, w, b)
    print("\n(dw, db), (z,) = grad(function_with_logits, (2, 3), has_aux=True)(...): the "
          "gradient of loss alone, and z as auxiliary output:")
    print(grads)
    print(f"z = {z}")

    grad_fn = mindspore.value_and_grad(forward_fn, None, weights=model.trainable_params())
    loss, grads = grad_fn(x, y)
    print("\nloss, (dw, db) = value_and_grad(forward_fn, None, "
          "weights=model.trainable_params())(x, y), the Network Cell's parameters:")
    print(f"loss = {loss}")
    print(grads)
    if show:
        print(f"\ngenerated code of value_and_grad(forward_fn, ...) ({grad_fn.path}):")
        print(grad_fn.source)
    print(f"\nthe gradient code ran as: {grad_fn.backend}")


if __name__ == "__main__":
    main(show="--show" in sys.argv)
