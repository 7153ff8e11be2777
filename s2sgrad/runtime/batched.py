"""The helpers of batched forward-mode code (``compiler/forward/batched.py``), as ``rt.<name>``.

A batched tangent holds a batch of directions first: ``(width,) + value.shape``.  These
run as numpy only: batched Jacobian code always runs as numpy (``api/forward.py``), so
none has a Numba implementation.
"""
import numpy as np

__all__ = ["basis_batch", "sweep_width", "zeros_batch", "broadcast_batch", "array_batch"]

#: the most numbers one batched tangent of the widest input holds (a sweep's memory):
#: 2**21 float64 numbers, 16 MiB
BATCH_NUMBERS = 2 ** 21


def sweep_width(total, *inputs):
    """How many directions one sweep carries: all ``total`` of them, unless a batch of
    the largest input's size would hold over ``BATCH_NUMBERS`` numbers."""
    largest = max([int(np.size(x)) for x in inputs] + [1])
    return max(1, min(total, BATCH_NUMBERS // largest))


def basis_batch(x, start, width):
    """Directions ``start`` to ``start + width`` of the basis of the inputs, as tangents of
    ``x`` (whose own directions are numbered from 0): ``(width,) + x.shape`` zeros with a
    1 at row ``k``, flat position ``start + k``, where that is inside ``x``."""
    dtype = np.result_type(x, np.float32) if isinstance(x, np.ndarray) else np.float64
    size = int(np.size(x))
    out = np.zeros((width, size), dtype=dtype)
    rows = np.arange(max(0, -start), min(width, size - start))
    out[rows, rows + start] = 1.0
    return out.reshape((width,) + np.shape(x))


def zeros_batch(value, width):
    """The zero tangent of ``value`` along ``width`` directions (a list: one per item)."""
    if isinstance(value, list):
        return [zeros_batch(item, width) for item in value]
    dtype = value.dtype if isinstance(value, np.ndarray) and value.dtype.kind in "fc" \
        else np.float64
    return np.zeros((width,) + np.shape(value), dtype=dtype)


def broadcast_batch(t, like):
    """A batched tangent of an operand that a primitive broadcast, in the shape of the
    result ``like`` after the directions (``t`` itself where it has it)."""
    shape = np.shape(t)[:1] + np.shape(like)
    if np.shape(t) == shape:
        return t
    return np.broadcast_to(t, shape).copy()


def array_batch(items, width):
    """``np.array(items)``'s batched tangent: ``items`` (nested lists or tuples of batched
    tangents and numbers, a number's tangent being 0.0) stacked after the directions."""
    if isinstance(items, (list, tuple)):
        return np.stack([array_batch(item, width) for item in items], axis=1) if items \
            else np.zeros((width, 0))
    if np.ndim(items) == 0 and not isinstance(items, np.ndarray):
        return np.full(width, float(items))
    return np.asarray(items)
