"""Elementwise arithmetic, math functions and comparisons.

Each op takes Tensors, ndarrays or python numbers, broadcasts like numpy
and gives a Tensor; comparisons give Bool Tensors.
"""
import numpy as np

from ._primitive import tensor_op

__all__ = ["add", "sub", "mul", "div", "neg", "pow", "square", "sqrt", "abs",
           "exp", "log", "sin", "cos", "tanh", "maximum", "minimum",
           "gt", "ge", "lt", "le", "eq", "ne", "matmul"]


@tensor_op(promote=True)
def add(input, other):
    """input + other."""
    return np.add(input, other)


@tensor_op(promote=True)
def sub(input, other):
    """input - other."""
    return np.subtract(input, other)


@tensor_op(promote=True)
def mul(input, other):
    """input * other."""
    return np.multiply(input, other)


@tensor_op(promote=True)
def div(input, other):
    """input / other (true division)."""
    return np.true_divide(input, other)


@tensor_op
def neg(input):
    """-input."""
    return np.negative(input)


@tensor_op(promote=True)
def pow(input, exponent):
    """input ** exponent."""
    return np.power(input, exponent)


@tensor_op
def square(input):
    """input * input."""
    return np.square(input)


@tensor_op
def sqrt(input):
    """Square root."""
    return np.sqrt(input)


@tensor_op
def abs(input):
    """Absolute value."""
    return np.abs(input)


@tensor_op
def exp(input):
    """e ** input."""
    return np.exp(input)


@tensor_op
def log(input):
    """Natural logarithm."""
    return np.log(input)


@tensor_op
def sin(input):
    """Sine."""
    return np.sin(input)


@tensor_op
def cos(input):
    """Cosine."""
    return np.cos(input)


@tensor_op
def tanh(input):
    """Hyperbolic tangent."""
    return np.tanh(input)


@tensor_op(promote=True)
def maximum(input, other):
    """Elementwise larger of input and other."""
    return np.maximum(input, other)


@tensor_op(promote=True)
def minimum(input, other):
    """Elementwise smaller of input and other."""
    return np.minimum(input, other)


@tensor_op
def gt(input, other):
    """input > other, a Bool Tensor."""
    return np.greater(input, other)


@tensor_op
def ge(input, other):
    """input >= other, a Bool Tensor."""
    return np.greater_equal(input, other)


@tensor_op
def lt(input, other):
    """input < other, a Bool Tensor."""
    return np.less(input, other)


@tensor_op
def le(input, other):
    """input <= other, a Bool Tensor."""
    return np.less_equal(input, other)


@tensor_op
def eq(input, other):
    """input == other, a Bool Tensor."""
    return np.equal(input, other)


@tensor_op
def ne(input, other):
    """input != other, a Bool Tensor."""
    return np.not_equal(input, other)


@tensor_op
def matmul(input, other):
    """Matrix product input @ other (numpy matmul rules: 1-D operands are
    vectors, leading dimensions broadcast)."""
    return np.matmul(input, other)
