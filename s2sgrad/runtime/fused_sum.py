"""``rt.FusedSum``: ``rt.sum(<elementwise chain>, axis, keepdims)`` run as one loop
compiled by Numba, the chain's values summed as they are made, never written out
(``compiler/optimize/kernels.py`` finds these sums, ``compiler/emit/kernels.py`` writes
their loops).

The generated module holds, per such sum, a plain Python function of explicit loops over
3-D operands (``loops(out, a, b, ...)``: ``out[i, k]`` is the sum over ``j`` of the chain
at ``(i, j, k)``, an operand of length 1 along an axis read at index 0 there) and the
chain as a numpy expression; ``_x_fused = rt.FusedSum(loops, numpy, operations)`` sits
beside it.  A call ``_x_fused(a, b, axis=2, keepdims=False)`` runs

- the loops (compiled as ``rt.Fused``'s are: once, in the compile thread, disk-cached at
  Numba's default optimisation), when every array operand is an exact float64
  ``np.ndarray``, the others Python or numpy numbers, ``axis`` is one int, the passes
  saved (the chain's operations, ``fused.BROADCAST_PASSES`` per operand of two axes or
  more broadcast, and as many again for a sum of rows of at most ``SHORT_ROWS``, which
  numpy runs one short loop per row and ``rt.sum`` as a BLAS product with ones: gmm's
  ``np.sum(Lxcentered ** 2, axis=2)``, 25,000 rows of 10, took 0.21 ms of ``** 2`` and
  ``rt.sum`` in the gradient, 0.12 as one loop) times the broadcast size reach
  ``fused.FUSE_NUMBERS`` (and the size ``fused.FUSE_NUMBERS / fused.LEAST_SHARE``), and the axes
  before ``axis`` merge into one and those after it into another (on each group every
  operand is whole or of length 1);
- ``rt.sum(numpy(a, b), axis, keepdims)`` otherwise (what the code without the kernel
  runs); ``kept.fused_sum(_x_fused, a, b, axis=2, keepdims=False)`` writes the chain's
  last operation into a kept array there (``into``, ``runtime/buffers.py``).

Every call decides afresh, so no result depends on an earlier call's arguments.  The
loops add one ``j`` after the other: numpy's order for a sum over any axis but the last
(the same bits as ``np.sum``) and for rows under 8 numbers; a longer row numpy adds in
eight partial sums (pairwise), and the fallback ``rt.sum`` sums short rows of many by a
BLAS product with ones, so there the ways agree to rounding (a few ulps of the sum's
terms), not bit for bit.  One accumulator per row measured as fast as numpy's eight
(rows of 10: 0.081 against 0.079 ms for 25,000 of them) at half the compile (0.39 s).
"""
import math

import numpy as np

from . import fused
from .core import SHORT_ROWS, normalise_axes, summed_over

__all__ = ["FusedSum"]

class FusedSum(fused.Fused):
    """One sum of an elementwise chain (module doc): ``loops``, ``numpy`` (the chain as
    numpy operators) and ``operations`` (how many the chain holds: the passes saved)."""

    def __init__(self, loops, numpy, operations, into=None):
        argcount = loops.__code__.co_argcount
        super().__init__(loops, numpy, operations, (2,) + (3,) * (argcount - 1))
        self.saved = max(1, operations)
        self.into = into

    def __call__(self, *args, axis, keepdims):
        result = self.looped(args, axis, keepdims)
        if result is None:
            return summed(self.numpy(*args), axis, keepdims)
        return result

    def looped(self, args, axis, keepdims):
        """The sum by the compiled loops, or None where they do not run (module doc)."""
        plan = _plan(args, axis, self.saved) if fused.allowed() else None
        if plan is not None and self.compiled is None:
            self.start()
        if plan is None or self.compiled is None:
            return None
        shape, axis, (rows, _, columns), operands = plan
        out = np.empty((rows, columns))
        self.compiled(out, *operands)
        if keepdims:
            return out.reshape(shape[:axis] + (1,) + shape[axis + 1:])
        return out.reshape(shape[:axis] + shape[axis + 1:])

    def values(self, *args, out=None):
        """The chain's values as numpy makes them, its last operation written into
        ``out`` (``kept.fused_sum``: a kept array, no fresh pages) where given."""
        if out is None or self.into is None:
            return self.numpy(*args)
        return self.into(out, *args)


def summed(x, axis, keepdims):
    """``rt.sum(x, axis, keepdims)``."""
    if axis is not None and type(x) is np.ndarray:
        return summed_over(x, normalise_axes(axis, x.ndim), keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims)


def _plan(args, axis, saved):
    """``(shape, axis, (rows, length, columns), operands in 3-D)`` when the loops run
    (module doc), else None."""
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, (bool, np.bool_)):
        return None
    shape = fused.float64_broadcast(args)
    if shape is None or not -len(shape) <= axis < len(shape):
        return None
    axis = int(axis) % len(shape)
    size = math.prod(shape)
    args = [fused.collapsed(arg) for arg in args]
    spread = fused.spread_passes(args, shape)
    if axis == len(shape) - 1 or math.prod(shape[axis + 1:]) == 1:
        spread += fused.BROADCAST_PASSES * (shape[axis] <= SHORT_ROWS)
    if size == 0 or size * (saved + spread) < fused.FUSE_NUMBERS or \
            size * fused.LEAST_SHARE < fused.FUSE_NUMBERS:
        return None
    operands = []
    for arg in args:
        if type(arg) is not np.ndarray:
            operands.append(np.full((1, 1, 1), float(arg)))
            continue
        dims = (1,) * (len(shape) - arg.ndim) + arg.shape
        parts = (_group(shape[:axis], dims[:axis]), 1 if dims[axis] == 1 else shape[axis],
                 _group(shape[axis + 1:], dims[axis + 1:]))
        if None in parts:
            return None
        operands.append(fused.c_operand(arg, parts))
    grid = (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]))
    return shape, axis, grid, operands


def _group(shape, dims):
    """The length of an operand of ``dims`` over the broadcast axes ``shape`` merged into
    one: their product where it is whole on every axis longer than 1, 1 where it is 1
    on all of them, None where it is mixed."""
    whole = {d != 1 for n, d in zip(shape, dims) if n != 1}
    if len(whole) > 1:
        return None
    return math.prod(shape) if whole == {True} else 1
