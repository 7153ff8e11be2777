"""Loss functions: binary_cross_entropy_with_logits, cross_entropy, mse_loss.

``reduction`` is 'mean' (average over all elements), 'sum' or 'none'
(elementwise losses); anything else is a ValueError.
"""
import numpy as np

from ._checks import check_broadcastable, check_reduction
from ._primitive import tensor_op
from .nn_func import log_softmax

__all__ = ["binary_cross_entropy_with_logits", "cross_entropy", "mse_loss"]


def _reduce(loss, reduction):
    """Raw helper: the mean, the sum, or (for 'none') the losses unchanged."""
    if reduction == "mean":
        out = np.mean(loss)
    elif reduction == "sum":
        out = np.sum(loss)
    else:
        out = loss
    return out


def _check_bce(input, target, weight=None, pos_weight=None, reduction="mean"):
    name = "binary_cross_entropy_with_logits"
    check_reduction(name, reduction)
    if np.shape(input) != np.shape(target):
        raise ValueError(f"{name}: input shape {np.shape(input)} and target shape "
                         f"{np.shape(target)} must be equal")
    check_broadcastable(name, "weight", weight, np.shape(input))
    check_broadcastable(name, "pos_weight", pos_weight, np.shape(input))


@tensor_op(check=_check_bce)
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction="mean"):
    """Binary cross entropy of logits ``input`` against targets in [0, 1].

    L = -weight * (pos_weight * target * log(sigmoid(input))
                   + (1 - target) * log(1 - sigmoid(input))),
    ``weight`` and ``pos_weight`` broadcast (None: 1). Computed with
    softplus(x) = max(x, 0) + log1p(exp(-|x|)), which never overflows.
    """
    softplus = np.maximum(input, 0) + np.log1p(np.exp(-np.abs(input)))
    if pos_weight is None:
        loss = softplus - target * input
    else:
        loss = (1 + (pos_weight - 1) * target) * softplus - pos_weight * target * input
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _check_ce(input, target, reduction="mean"):
    name = "cross_entropy"
    check_reduction(name, reduction)
    if np.ndim(input) != 2:
        raise ValueError(f"{name}: input must be 2-D logits (batch, classes), "
                         f"got shape {np.shape(input)}")
    if np.issubdtype(np.asarray(target).dtype, np.integer):
        if np.shape(target) != np.shape(input)[:1]:
            raise ValueError(f"{name}: class-index target must have shape "
                             f"{np.shape(input)[:1]}, got {np.shape(target)}")
        n_classes = np.shape(input)[1]
        if np.size(target) and (np.min(target) < 0 or np.max(target) >= n_classes):
            raise ValueError(f"{name}: class indices must be in [0, {n_classes}), "
                             f"got values from {np.min(target)} to {np.max(target)}")
    elif np.shape(target) != np.shape(input):
        raise ValueError(f"{name}: probability target must have the input shape "
                         f"{np.shape(input)}, got {np.shape(target)}")


@tensor_op(check=_check_ce)
def cross_entropy(input, target, reduction="mean"):
    """Cross entropy of 2-D logits ``input`` (batch, classes) against
    ``target``: int class indices of shape (batch,), or class probabilities
    of the input's shape. Per-sample loss -sum(p * log_softmax(input))."""
    log_probs = log_softmax.raw(input, 1)
    if np.issubdtype(target.dtype, np.integer):
        probs = np.eye(input.shape[1], dtype=log_probs.dtype)[target]
    else:
        probs = target
    loss = -np.sum(probs * log_probs, axis=1)
    return _reduce(loss, reduction)


def _check_mse(input, target, reduction="mean"):
    check_reduction("mse_loss", reduction)


@tensor_op(check=_check_mse)
def mse_loss(input, target, reduction="mean"):
    """Squared error (input - target) ** 2 (broadcasting), reduced."""
    diff = input - target
    return _reduce(diff * diff, reduction)
