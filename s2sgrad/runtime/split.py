"""The helpers generated ``vjp`` and ``jacrev`` code calls, as ``rt.<name>``.

Plain numpy here; ``s2sgrad.backend.numba_split`` gives each a Numba implementation
of the same contract.  ``s2sgrad.runtime`` re-exports them.

A list tape crosses from the forward function to the backward one *packed*
(``pack_tape``): its arrays' data in one buffer, with each item's offset and shape, so
that compiled code hands over four arrays instead of converting a list of arrays item
by item (Numba's lists do).  A tape of numbers is packed the same way (items of rank 0);
any other tape (tuples) is handed over as the list itself.
"""
import numpy as np

__all__ = ["jacobian_rows", "pack_tape", "tape_length", "tape_item"]


def jacobian_rows(rows, like):
    """Zeros for ``rows`` gradients of the input ``like``: shape ``(rows,) + like.shape``,
    ``like``'s dtype when it is a floating-point array, float64 otherwise."""
    if isinstance(like, np.ndarray) and like.dtype.kind == "f":
        return np.zeros((rows,) + like.shape, dtype=like.dtype)
    return np.zeros((rows,) + np.shape(like))


def pack_tape(items):
    """``(buffer, offsets, shapes, like)`` of a list of arrays of one dtype and rank (or
    of numbers): every item's data, flattened, one after the other in ``buffer``; item
    ``k`` at ``buffer[offsets[k]:offsets[k + 1]]`` with shape ``shapes[k]``; ``like``:
    an empty array of the items' rank and dtype.  Any other list is given back as it is.
    An empty list packs as numbers (the backward reads none of it)."""
    if not all(isinstance(v, np.ndarray) for v in items) and \
            not all(isinstance(v, (float, int, np.number)) and not isinstance(v, bool)
                    for v in items):
        return items
    arrays = [np.asarray(v) for v in items]
    dtype = np.result_type(*arrays) if arrays else np.dtype(np.float64)
    ndim = arrays[0].ndim if arrays else 0
    if any(a.ndim != ndim for a in arrays):
        return items
    sizes = np.array([a.size for a in arrays], dtype=np.int64)
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    buffer = np.empty(int(offsets[-1]), dtype=dtype)
    for k, a in enumerate(arrays):
        buffer[offsets[k]:offsets[k + 1]] = a.ravel()
    shapes = np.array([a.shape for a in arrays], dtype=np.int64).reshape(len(arrays), ndim)
    return buffer, offsets, shapes, np.empty((0,) * ndim, dtype=dtype)


def tape_length(tape):
    """How many items a (packed or plain) tape holds."""
    if isinstance(tape, tuple):
        return tape[1].shape[0] - 1
    return len(tape)


def tape_item(tape, k):
    """Item ``k`` of a (packed or plain) tape: for a packed one, a view of its data in the
    buffer (a number for a tape of numbers)."""
    if not isinstance(tape, tuple):
        return tape[k]
    buffer, offsets, shapes, like = tape
    if like.ndim == 0:
        return buffer[offsets[k]]
    return buffer[offsets[k]:offsets[k + 1]].reshape(tuple(shapes[k]))
