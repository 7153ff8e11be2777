"""Creating tensors, changing shapes, joining, selecting, and stop_gradient."""
import numpy as np

from ..dtype import dtype_to_numpy
from ._primitive import tensor_op

__all__ = ["fill", "ones", "zeros", "ones_like", "zeros_like", "reshape", "transpose",
           "concat", "cat", "stack", "squeeze", "expand_dims", "where", "select",
           "stop_gradient"]

_AXIS = {"dim": "axis"}


def _float32_default(dtype):
    """numpy dtype for ``dtype``; None means float32 (MindSpore's default)."""
    return np.float32 if dtype is None else dtype_to_numpy(dtype)


@tensor_op
def fill(type, shape, value):
    """A tensor of ``shape`` (int or tuple) with every element ``value``
    cast to ``type`` (a DType or numpy dtype)."""
    return np.full(shape, value, dtype=dtype_to_numpy(type))


@tensor_op
def ones(shape, dtype=None):
    """A tensor of ones; ``shape`` is an int or a tuple, ``dtype`` defaults to float32."""
    return np.ones(shape, dtype=_float32_default(dtype))


@tensor_op
def zeros(shape, dtype=None):
    """A tensor of zeros; ``shape`` is an int or a tuple, ``dtype`` defaults to float32."""
    return np.zeros(shape, dtype=_float32_default(dtype))


@tensor_op
def ones_like(input, dtype=None):
    """Ones of ``input``'s shape and dtype (or ``dtype`` if given)."""
    return np.ones_like(input, dtype=dtype_to_numpy(dtype))


@tensor_op
def zeros_like(input, dtype=None):
    """Zeros of ``input``'s shape and dtype (or ``dtype`` if given)."""
    return np.zeros_like(input, dtype=dtype_to_numpy(dtype))


@tensor_op
def reshape(input, shape):
    """``input``'s elements in ``shape`` (a tuple; one entry may be -1)."""
    return np.reshape(input, shape)


@tensor_op(aliases={"input_perm": "axes"})
def transpose(input, axes=None):
    """``input`` with its axes permuted by ``axes`` (None: reversed)."""
    return np.transpose(input, axes)


@tensor_op(aliases=_AXIS)
def concat(tensors, axis=0):
    """Join a tuple/list of tensors along the existing ``axis``."""
    return np.concatenate(tensors, axis=axis)


cat = concat


@tensor_op(aliases=_AXIS)
def stack(tensors, axis=0):
    """Join a tuple/list of same-shape tensors along a new ``axis``."""
    return np.stack(tensors, axis=axis)


@tensor_op(aliases=_AXIS)
def squeeze(input, axis=None):
    """``input`` without its size-1 dimensions (only ``axis`` if given)."""
    return np.squeeze(input, axis=axis)


@tensor_op(aliases=_AXIS)
def expand_dims(input, axis):
    """``input`` with a new size-1 dimension at ``axis``."""
    return np.expand_dims(input, axis)


@tensor_op(promote=True)
def where(condition, x, y):
    """Elementwise ``x`` where ``condition`` is True, else ``y`` (broadcasting)."""
    return np.where(condition, x, y)


@tensor_op(promote=True)
def select(cond, x, y):
    """Elementwise ``x`` where ``cond`` is True, else ``y``; ``y`` (or ``x``)
    may be a python number."""
    return np.where(cond, x, y)


@tensor_op
def stop_gradient(value):
    """The identity on a tensor or a tuple of tensors; the differentiator
    passes no gradient through it."""
    return value
