"""Numba implementations of the Jacobian helpers (``s2sgrad/runtime/split.py``): the
contract is each helper's docstring there."""
import numpy as np
from numba import types
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from .. import runtime as rt


@overload(rt.jacobian_rows)
def _jacobian_rows(rows, like):
    if isinstance(like, types.Array) and isinstance(like.dtype, types.Float):
        return lambda rows, like: np.zeros((rows,) + like.shape, dtype=like.dtype)
    if isinstance(like, types.Array):
        return lambda rows, like: np.zeros((rows,) + like.shape)
    if isinstance(like, (types.Number, types.Boolean)):
        return lambda rows, like: np.zeros(rows)
    return None


@overload(rt.pack_tape)
def _pack_tape(items):
    item = getattr(items, "dtype", None)
    if not isinstance(items, (types.List, types.ListType)):
        return None
    if isinstance(item, types.Array):
        ndim, dtype = item.ndim, item.dtype

        def arrays(items):
            n = len(items)
            offsets = np.zeros(n + 1, dtype=np.int64)
            shapes = np.zeros((n, ndim), dtype=np.int64)
            for k in range(n):
                offsets[k + 1] = offsets[k] + items[k].size
                for d in range(ndim):
                    shapes[k, d] = items[k].shape[d]
            buffer = np.empty(offsets[n], dtype=dtype)
            for k in range(n):
                buffer[offsets[k]:offsets[k + 1]] = items[k].ravel()
            empty = to_fixed_tuple(np.zeros(ndim, dtype=np.int64), ndim)
            return buffer, offsets, shapes, np.empty(empty, dtype=dtype)
        return arrays
    if isinstance(item, types.Number) and not isinstance(item, types.Boolean):
        def numbers(items):
            n = len(items)
            buffer = np.empty(n, dtype=item)
            for k in range(n):
                buffer[k] = items[k]
            return buffer, np.arange(n + 1), np.zeros((n, 0), dtype=np.int64), \
                np.empty((), dtype=item)
        return numbers
    return lambda items: items


@overload(rt.tape_length)
def _tape_length(tape):
    if isinstance(tape, types.BaseTuple):
        return lambda tape: tape[1].shape[0] - 1
    return lambda tape: len(tape)


@overload(rt.tape_item)
def _tape_item(tape, k):
    if not isinstance(tape, types.BaseTuple):
        return lambda tape, k: tape[k]
    ndim = tape.types[3].ndim
    if ndim == 0:
        return lambda tape, k: tape[0][tape[1][k]]

    def item(tape, k):
        buffer, offsets, shapes, like = tape
        shape = to_fixed_tuple(shapes[k], ndim)
        return buffer[offsets[k]:offsets[k + 1]].reshape(shape)
    return item
