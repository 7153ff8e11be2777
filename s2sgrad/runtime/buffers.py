"""``rt.Buffers``: the arrays one generated function writes its large elementwise results
into, kept from one call to the next (``compiler/optimize/buffers.py`` writes the calls).

Why: a fresh numpy array over glibc's mmap threshold (128 KiB and up) is mapped from the
kernel when it is made and unmapped when it is freed, so every page of it faults on its
first touch, on every call: on GradBench's gmm and kmeans that was most of the time
(README, "GradBench").  Writing each such result into the array the same line made last
call (numpy's ``out=``) touches memory that is already mapped.

- ``BUFFERS = rt.Buffers()`` sits beside the generated function (one per generated
  module: one call plan);
- a call starts with ``kept = BUFFERS.take()``: a ``Kept`` (slot -> the array that slot's
  line made last time, and what it was made from); a call running while another holds
  the pool's ``Kept`` (another thread, a recursion) gets an empty one;
- ``kept(slot, np.subtract, a, b)`` is ``np.subtract(a, b, out=<the slot's array>)``
  when the operands have the types, shapes and dtypes (and the ints and strings the
  values) they had when that array was made, so that the result has its shape and dtype;
  otherwise ``np.subtract(a, b)``, whose result (if an array of ``KEEP_BYTES`` or more)
  becomes the slot's array.  With no exact ``np.ndarray`` among the operands, an
  operator's ufunc runs as the Python operator it was written as (``a - b`` of two
  Python numbers stays a Python number, of two lists an error as before);
- the call ends with ``return BUFFERS.give(kept, result)``: an array of the result that
  is a kept array or a view of one is copied first, so nothing the caller holds is
  written by a later call; then the ``Kept`` goes back to the pool.
"""
import operator

import numpy as np

__all__ = ["Buffers", "Kept"]

#: results smaller than this are left to numpy (glibc reuses small blocks: no faults)
KEEP_BYTES = 64 * 1024
#: the ufuncs generated code writes for Python operators, and those operators
OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
             np.true_divide: operator.truediv, np.power: operator.pow,
             np.matmul: operator.matmul, np.negative: operator.neg}
_NUMBERS = (float, complex, np.generic)
_EXACT = (bool, int, str, type(None))


class Buffers:
    """The pool of one generated function's ``Kept`` arrays (module doc)."""

    def __init__(self):
        self.pool = []

    def take(self):
        """The ``Kept`` of the last call that ended (an empty one when none is free)."""
        try:
            return self.pool.pop()
        except IndexError:
            return Kept()

    def give(self, kept, result):
        """``result`` with every array that is (or views) one of ``kept``'s copied; puts
        ``kept`` back into the pool (one is kept: the arrays of one call)."""
        owned = {id(array) for _, array in kept.slots.values()}
        if owned:
            result = _unshared(result, owned, kept)
        if not self.pool:
            self.pool.append(kept)
        return result

    def clear(self):
        """Drop the kept arrays (the memory goes back; the next call makes them again)."""
        self.pool.clear()


class Kept:
    """Slot -> (key of the operands, array) of one call in flight (module doc)."""

    def __init__(self):
        self.slots = {}

    def __call__(self, slot, fn, *args):
        key = _key(args)
        if key is None:
            return OPERATORS.get(fn, fn)(*args)
        entry = self.slots.get(slot)
        if entry is not None and entry[0] == key:
            return fn(*args, out=entry[1])
        result = fn(*args)
        if type(result) is np.ndarray and result.nbytes >= KEEP_BYTES and \
                result.base is None:
            self.slots[slot] = (key, result)
        return result


def _key(args):
    """What decides the result's shape and dtype, hashable; None when an operand is not
    an exact ndarray, a number, an int, a string or a tuple of them, or none is an
    ndarray (the call is then left as written)."""
    parts, arrays = [], False
    for arg in args:
        kind = type(arg)
        if kind is np.ndarray:
            parts.append((arg.shape, arg.dtype))
            arrays = True
        elif kind in _EXACT:
            parts.append((kind, arg))
        elif isinstance(arg, _NUMBERS):
            parts.append(kind)
        elif kind is tuple and all(type(a) in _EXACT for a in arg):
            parts.append((kind, arg))
        else:
            return None
    return tuple(parts) if arrays else None


def _unshared(value, owned, kept):
    """``value`` (an array, or tuples/lists/dicts of them) with the arrays that share
    memory with ``kept``'s copied."""
    if isinstance(value, np.ndarray):
        return value.copy() if _shares(value, owned, kept) else value
    if isinstance(value, (tuple, list)):
        items = [_unshared(item, owned, kept) for item in value]
        if type(value) in (tuple, list):
            return type(value)(items)
        return value._make(items) if hasattr(value, "_make") else type(value)(items)
    if isinstance(value, dict):
        return {k: _unshared(v, owned, kept) for k, v in value.items()}
    return value


def _shares(array, owned, kept):
    base = array
    while isinstance(base, np.ndarray):
        if id(base) in owned:
            return True
        if base.base is None:
            return False
        base = base.base
    # a view through something that is not an array: compare the memory itself
    return any(np.may_share_memory(array, kept_array) for _, kept_array in kept.slots.values())
