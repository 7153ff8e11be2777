"""Functional ops (MindSpore's ``mindspore.ops``) on numpy.

Every function op is a raw numpy function wrapped by ``tensor_op``: it takes
Tensors (or ndarrays / numbers), gives Tensors, and keeps the raw function as
``op.raw`` for the differentiator. ``Dropout2D`` is a Primitive class.

Differences from MindSpore: ``ops.max`` / ``ops.min`` give the values only
(MindSpore gives ``(values, indices)``); ``amax``/``amin`` are the same ops.
Reductions accept ``axis``/``keepdims`` and MindSpore's ``dim``/``keepdim``/
``keep_dims``. ``vmap`` is ``s2sgrad.vmap``.
"""
from ._primitive import Primitive, tensor_op
from .array import (cat, concat, expand_dims, fill, ones, ones_like, reshape, select, squeeze,
                    stack, stop_gradient, transpose, where, zeros, zeros_like)
from .loss import binary_cross_entropy_with_logits, cross_entropy, mse_loss
from .math import (abs, add, cos, div, eq, exp, ge, gt, le, log, lt, matmul, maximum, minimum, mul,
                   ne, neg, pow, sin, sqrt, square, sub, tanh)
from .nn_func import log_softmax, relu, sigmoid, softmax
from .random import Dropout2D
from .reduce import amax, amin, argmax, argmin, max, mean, min, sum


def vmap(fn, in_axes=0, out_axes=0):
    """``mindspore.ops.vmap``: ``s2sgrad.vmap`` (the batched version of ``fn``)."""
    from ..api import vmap as batched      # the api imports ops: read when called
    return batched.vmap(fn, in_axes, out_axes)

__all__ = [
    "Primitive", "tensor_op",
    "fill", "ones", "zeros", "ones_like", "zeros_like", "reshape", "transpose",
    "concat", "cat", "stack", "squeeze", "expand_dims", "where", "select",
    "stop_gradient",
    "binary_cross_entropy_with_logits", "cross_entropy", "mse_loss",
    "add", "sub", "mul", "div", "neg", "pow", "square", "sqrt", "abs", "exp", "log",
    "sin", "cos", "tanh", "maximum", "minimum", "matmul",
    "gt", "ge", "lt", "le", "eq", "ne",
    "relu", "sigmoid", "softmax", "log_softmax",
    "Dropout2D",
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "vmap",
]
