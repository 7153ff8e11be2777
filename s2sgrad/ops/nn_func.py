"""Activation functions: relu, sigmoid, softmax, log_softmax (numerically stable)."""
import numpy as np

from ._primitive import tensor_op

__all__ = ["relu", "sigmoid", "softmax", "log_softmax"]

_AXIS = {"dim": "axis"}


@tensor_op
def relu(input):
    """max(input, 0) elementwise."""
    return np.maximum(input, 0)


@tensor_op
def sigmoid(input):
    """1 / (1 + exp(-input)), computed from exp(-|input|) so it never overflows."""
    e = np.exp(-np.abs(input))
    return np.where(input >= 0, 1 / (1 + e), e / (1 + e))


@tensor_op(aliases=_AXIS)
def softmax(input, axis=-1):
    """exp(input) normalised to sum 1 along ``axis`` (the max is subtracted first)."""
    e = np.exp(input - np.max(input, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@tensor_op(aliases=_AXIS)
def log_softmax(input, axis=-1):
    """log(softmax(input)) along ``axis``, via a shifted log-sum-exp."""
    shifted = input - np.max(input, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
