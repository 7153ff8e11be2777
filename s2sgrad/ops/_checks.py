"""Argument checks shared by several ops (run by tensor_op before the raw body)."""
import numbers

import numpy as np

REDUCTIONS = ("mean", "sum", "none")


def check_axis(op_name, axis):
    """Raise TypeError unless ``axis`` is None, an int or a tuple of ints."""
    if axis is None or isinstance(axis, numbers.Integral):
        return
    if isinstance(axis, tuple) and all(isinstance(a, numbers.Integral) for a in axis):
        return
    raise TypeError(f"{op_name}: axis must be None, an int or a tuple of ints, "
                    f"got {type(axis).__name__} {axis!r}")


def check_reduction(op_name, reduction):
    """Raise ValueError unless ``reduction`` is 'mean', 'sum' or 'none'."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op_name}: reduction must be 'mean', 'sum' or 'none', "
                         f"got {reduction!r}")


def check_broadcastable(op_name, arg_name, value, shape):
    """Raise ValueError unless ``value`` (None allowed) broadcasts to ``shape``."""
    if value is None:
        return
    try:
        result = np.broadcast_shapes(np.shape(value), shape)
    except ValueError:
        result = None
    if result != tuple(shape):
        raise ValueError(f"{op_name}: {arg_name} of shape {np.shape(value)} does not "
                         f"broadcast to the input shape {tuple(shape)}")
