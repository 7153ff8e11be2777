"""Basic layers: ``Dense`` (fully connected) and ``Flatten``."""
import math

import numpy as np

from .. import ops
from ..ops import tensor_op
from ..tensor import Parameter
from .activation import get_activation
from .cell import Cell
from .initializer import initial_value


def _check_int(value, arg_name, minimum=None):
    """Give ``value`` if it is an int (not a bool) >= ``minimum``; TypeError or
    ValueError naming ``arg_name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{arg_name} must be int, but got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{arg_name} must be >= {minimum}, but got {value}")
    return value


def _check_bool(value, arg_name):
    """Give ``value`` if it is a bool; TypeError naming ``arg_name`` otherwise."""
    if not isinstance(value, bool):
        raise TypeError(f"{arg_name} must be bool, but got {type(value).__name__}")
    return value


class Dense(Cell):
    """Fully connected layer: ``activation(x @ weight.T + bias)``.

    Args:
        in_channels, out_channels: positive ints; ``weight`` has shape
            ``(out_channels, in_channels)``, ``bias`` ``(out_channels,)``.
        weight_init, bias_init: see ``initializer.initial_value``; the default
            (None) is uniform in +-1/sqrt(in_channels).
        has_bias: bool.
        activation: None, a name (``'relu'``, ``'softmax'``, ``'sigmoid'``,
            ``'tanh'``) or a Cell, applied to the output.

    Inputs with more than 2 dims are flattened to ``(-1, in_channels)`` and the
    result reshaped back to ``(*x.shape[:-1], out_channels)``.
    """

    def __init__(self, in_channels, out_channels, weight_init=None, bias_init=None,
                 has_bias=True, activation=None):
        super().__init__()
        self.in_channels = _check_int(in_channels, "in_channels", minimum=1)
        self.out_channels = _check_int(out_channels, "out_channels", minimum=1)
        self.has_bias = _check_bool(has_bias, "has_bias")
        bound = 1.0 / math.sqrt(in_channels)
        self.weight = Parameter(initial_value(
            weight_init, (out_channels, in_channels), bound, "weight_init"), name="weight")
        self.bias = None
        if has_bias:
            self.bias = Parameter(initial_value(
                bias_init, (out_channels,), bound, "bias_init"), name="bias")
        if isinstance(activation, str):
            activation = get_activation(activation)
        if activation is not None and not isinstance(activation, Cell):
            raise TypeError(f"activation must be None, a str or a Cell, but got "
                            f"{type(activation).__name__}")
        self.activation = activation

    def extend_repr(self):
        text = f"input_channels={self.in_channels}, output_channels={self.out_channels}"
        if self.has_bias:
            text += f", has_bias={self.has_bias}"
        if self.activation is not None:
            text += f", activation={self.activation!r}"
        return text

    def construct(self, x):
        out_shape = x.shape[:-1] + (self.out_channels,)
        x = ops.reshape(x, (-1, self.in_channels))
        x = ops.matmul(x, ops.transpose(self.weight, (1, 0)))
        if self.has_bias:
            x = ops.add(x, self.bias)
        if self.activation is not None:
            x = self.activation(x)
        return ops.reshape(x, out_shape)


def _check_flatten(input, start_dim=1, end_dim=-1):
    """Raise ValueError unless ``input`` has 2+ dims and ``start_dim`` ..
    ``end_dim`` name a non-empty range of its dims."""
    ndim = np.ndim(input)
    if ndim < 2:
        raise ValueError(f"Flatten: input must have at least 2 dims, but got shape "
                         f"{np.shape(input)}")
    for arg_name, dim in (("start_dim", start_dim), ("end_dim", end_dim)):
        if not -ndim <= dim < ndim:
            raise ValueError(f"Flatten: {arg_name}={dim} is out of range for a {ndim}-D input")
    if start_dim % ndim > end_dim % ndim:
        raise ValueError(f"Flatten: start_dim={start_dim} comes after end_dim={end_dim} "
                         f"for a {ndim}-D input")


@tensor_op(check=_check_flatten)
def flatten(input, start_dim=1, end_dim=-1):
    """``input`` with dims ``start_dim`` .. ``end_dim`` (inclusive) merged into one."""
    return np.reshape(input, input.shape[:start_dim] + (-1,) + input.shape[end_dim:][1:])


class Flatten(Cell):
    """Flatten dims ``start_dim`` .. ``end_dim`` (inclusive, negative allowed)
    into one; an input of fewer than 2 dims is a ValueError."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = _check_int(start_dim, "start_dim")
        self.end_dim = _check_int(end_dim, "end_dim")

    def construct(self, x):
        return flatten(x, self.start_dim, self.end_dim)
