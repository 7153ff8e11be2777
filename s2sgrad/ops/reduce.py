"""Reductions over axes: sum, mean, amax/amin (alias max/min), argmax/argmin.

Axis arguments are None (all elements), an int or a tuple of ints. The
MindSpore spellings ``dim`` (for axis) and ``keepdim`` / ``keep_dims`` (for
keepdims) are accepted as keywords.
"""
import numpy as np

from ._checks import check_axis
from ._primitive import tensor_op

__all__ = ["sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin"]

AXIS_ALIASES = {"dim": "axis", "keepdim": "keepdims", "keep_dims": "keepdims"}


def _check_reduce(input, axis=None, keepdims=False):
    check_axis("reduction", axis)


@tensor_op(check=_check_reduce, aliases=AXIS_ALIASES)
def sum(input, axis=None, keepdims=False):
    """Sum of ``input`` over ``axis`` (None: all elements)."""
    return np.sum(input, axis=axis, keepdims=keepdims)


@tensor_op(check=_check_reduce, aliases=AXIS_ALIASES)
def mean(input, axis=None, keepdims=False):
    """Mean of ``input`` over ``axis`` (None: all elements)."""
    return np.mean(input, axis=axis, keepdims=keepdims)


@tensor_op(check=_check_reduce, aliases=AXIS_ALIASES)
def amax(input, axis=None, keepdims=False):
    """Largest values of ``input`` over ``axis`` (None: all elements)."""
    return np.max(input, axis=axis, keepdims=keepdims)


@tensor_op(check=_check_reduce, aliases=AXIS_ALIASES)
def amin(input, axis=None, keepdims=False):
    """Smallest values of ``input`` over ``axis`` (None: all elements)."""
    return np.min(input, axis=axis, keepdims=keepdims)


# Unlike MindSpore's ops.max/ops.min, which give (values, indices), these give
# the values only; use argmax/argmin for the indices.
max = amax
min = amin


def _check_arg(input, axis=None, keepdims=False):
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise TypeError(f"argmax/argmin: axis must be None or an int, got {axis!r}")


@tensor_op(check=_check_arg, aliases=AXIS_ALIASES)
def argmax(input, axis=None, keepdims=False):
    """Index (Int64) of the largest value along ``axis`` (None: flattened)."""
    return np.argmax(input, axis=axis, keepdims=keepdims).astype(np.int64)


@tensor_op(check=_check_arg, aliases=AXIS_ALIASES)
def argmin(input, axis=None, keepdims=False):
    """Index (Int64) of the smallest value along ``axis`` (None: flattened)."""
    return np.argmin(input, axis=axis, keepdims=keepdims).astype(np.int64)
