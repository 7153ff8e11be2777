"""Random ops: the Dropout2D primitive."""
import numbers

import numpy as np

from ..tensor import Tensor, module_rng, unwrap
from ._primitive import Primitive, opaque

__all__ = ["Dropout2D"]


class Dropout2D(Primitive):
    """Channel dropout: ``Dropout2D(keep_prob=0.5)(x) -> (output, mask)``.

    ``x`` is 4-D (N, C, H, W). Each (n, c) channel is kept with probability
    ``keep_prob`` (draws from the RNG that ``set_seed`` seeds); ``mask`` is a
    Bool Tensor of x's shape, constant over each channel, and
    ``output = x * mask / keep_prob`` (all zeros when keep_prob is 0).
    """

    def __init__(self, keep_prob=0.5):
        if isinstance(keep_prob, bool) or not isinstance(keep_prob, numbers.Real):
            raise TypeError(f"Dropout2D: keep_prob must be a float, got "
                            f"{type(keep_prob).__name__} {keep_prob!r}")
        if not 0 <= keep_prob <= 1:
            raise ValueError(f"Dropout2D: keep_prob must be in [0, 1], got {keep_prob}")
        self.keep_prob = float(keep_prob)
        self._scale = 0.0 if keep_prob == 0 else 1.0 / keep_prob

    def construct(self, x):
        """What the differentiator reads: the mask is drawn at run time (no gradient), then
        ``x`` is scaled through it."""
        mask = self.make_mask(x.shape)
        return self.raw(x, mask), mask

    @opaque
    def make_mask(self, shape):
        """A Bool ndarray of the 4-D ``shape``, one random draw per (n, c) channel."""
        keep = module_rng().random_sample((shape[0], shape[1], 1, 1)) < self.keep_prob
        return np.broadcast_to(keep, shape).copy()

    def raw(self, x, mask):
        """Raw computation on ndarrays: x * mask / keep_prob (the mask is a constant)."""
        return x * mask * self._scale

    def __call__(self, x):
        data = np.asarray(unwrap(x))
        if data.ndim != 4:
            raise ValueError(f"Dropout2D: input must be 4-D (N, C, H, W), got shape "
                             f"{data.shape}")
        mask = self.make_mask(data.shape)
        return Tensor(self.raw(data, mask)), Tensor(mask)
