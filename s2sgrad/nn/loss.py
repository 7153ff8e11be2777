"""Loss cells; each keeps its options and calls the matching ``ops`` function."""
import numpy as np

from .. import ops
from ..ops._checks import check_reduction
from ..tensor import Tensor
from .cell import Cell


def _check_optional_tensor(value, arg_name):
    """Give ``value`` as a Tensor (an ndarray is wrapped), or None; TypeError otherwise."""
    if value is None or isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        return Tensor(value)
    raise TypeError(f"{arg_name} must be a Tensor or None, but got {type(value).__name__}")


class LossBase(Cell):
    """Base of the losses: validates and stores ``reduction``
    (``'mean'``, ``'sum'`` or ``'none'``; ValueError otherwise)."""

    def __init__(self, reduction="mean"):
        super().__init__()
        check_reduction(type(self).__name__, reduction)
        self.reduction = reduction


class BCEWithLogitsLoss(LossBase):
    """Binary cross entropy on logits: ``ops.binary_cross_entropy_with_logits``
    with the ``weight`` and ``pos_weight`` (Tensors or None) given here."""

    def __init__(self, reduction="mean", weight=None, pos_weight=None):
        super().__init__(reduction)
        self.weight = _check_optional_tensor(weight, "BCEWithLogitsLoss: weight")
        self.pos_weight = _check_optional_tensor(pos_weight, "BCEWithLogitsLoss: pos_weight")

    def construct(self, logits, labels):
        return ops.binary_cross_entropy_with_logits(
            logits, labels, self.weight, self.pos_weight, self.reduction)


class MSELoss(LossBase):
    """Mean squared error: ``ops.mse_loss(logits, labels, reduction)``."""

    def construct(self, logits, labels):
        return ops.mse_loss(logits, labels, self.reduction)


class CrossEntropyLoss(LossBase):
    """Cross entropy of 2-D logits against class indices or probabilities:
    ``ops.cross_entropy(logits, labels, reduction)``.

    MindSpore's ``weight``, ``ignore_index`` and ``label_smoothing`` are
    accepted only at their defaults (the op does not implement them).
    """

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if weight is not None:
            raise NotImplementedError("CrossEntropyLoss: weight is not supported; leave it None")
        if ignore_index != -100:
            raise NotImplementedError(f"CrossEntropyLoss: ignore_index={ignore_index!r} is "
                                      "not supported; leave it at -100")
        if label_smoothing != 0.0:
            raise NotImplementedError(f"CrossEntropyLoss: label_smoothing={label_smoothing!r} "
                                      "is not supported; leave it at 0.0")

    def construct(self, logits, labels):
        return ops.cross_entropy(logits, labels, self.reduction)
