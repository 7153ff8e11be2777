"""Activation layers (ReLU, Softmax, Sigmoid, Tanh) and ``get_activation``."""
from .. import ops
from .cell import Cell


class ReLU(Cell):
    """``max(x, 0)`` elementwise."""

    def construct(self, x):
        return ops.relu(x)


class Sigmoid(Cell):
    """``1 / (1 + exp(-x))`` elementwise."""

    def construct(self, x):
        return ops.sigmoid(x)


class Tanh(Cell):
    """``tanh(x)`` elementwise."""

    def construct(self, x):
        return ops.tanh(x)


class Softmax(Cell):
    """Softmax along ``axis`` (an int, default -1)."""

    def __init__(self, axis=-1):
        super().__init__()
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"Softmax axis must be int, but got {type(axis).__name__}")
        self.axis = axis

    def construct(self, x):
        return ops.softmax(x, self.axis)


_ACTIVATIONS = {"relu": ReLU, "softmax": Softmax, "sigmoid": Sigmoid, "tanh": Tanh}


def get_activation(name):
    """Give a new activation Cell for ``name`` (``'relu'``, ``'softmax'``,
    ``'sigmoid'``, ``'tanh'``; case-insensitive); ValueError for others."""
    if not isinstance(name, str):
        raise TypeError(f"activation name must be str, but got {type(name).__name__}")
    cls = _ACTIVATIONS.get(name.lower())
    if cls is None:
        raise ValueError(f"unknown activation '{name}'; expected one of "
                         f"{sorted(_ACTIVATIONS)} or a Cell")
    return cls()
