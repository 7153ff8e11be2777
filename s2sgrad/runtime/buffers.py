"""``rt.Buffers``: the arrays one generated function writes its large elementwise results
into, kept from one call to the next (``compiler/optimize/buffers.py`` writes the calls).

Why: a fresh numpy array over glibc's mmap threshold (128 KiB and up) is mapped from the
kernel when it is made and unmapped when it is freed, so every page of it faults on its
first touch, on every call: on GradBench's gmm and kmeans that was most of the time
(README, "GradBench").  Writing each such result into the array the same line made last
call (numpy's ``out=``) touches memory that is already mapped.

- ``BUFFERS = rt.Buffers()`` sits beside the generated function (one per generated
  module: one call plan);
- a call starts with ``kept = BUFFERS.take()``: a ``Kept`` (per operation, in the
  order the call runs them, the array it made last call and what it was made from); a
  call running while another holds the pool's ``Kept`` (another thread, a recursion)
  gets an empty one;
- ``kept.subtract(a, b)`` (any numpy ufunc by its name, the helpers ``einsum``,
  ``einsum_adjoints`` and ``extremum_adjoint`` of ``rt``, and ``kept.fused(kernel, a,
  b)`` of an ``rt.Fused``) is ``np.subtract(a, b, out=<that array>)`` when the operands
  have the types, shapes and dtypes (ints and strings: the values) they had
  when that array was made, so that the result has its shape and dtype; otherwise
  ``np.subtract(a, b)``, whose result (an array of ``KEEP_BYTES`` or more) is kept in
  its place.  The check is made at every call, so nothing depends on an earlier call
  but where the result is written.  With no exact ``np.ndarray`` among the operands, a
  ufunc that spells a Python operator runs as that operator (``a - b`` of two Python
  numbers stays a Python number, of two tuples an error as before);
- ``+ - * /`` of two float64 arrays over a broadcast (``(n, 1, d) - (1, k, d)``) run as
  one compiled loop, same bits (``runtime/broadcast.py``), into the same array;
- ``kept.fused_sum(kernel, a, b, axis=2, keepdims=False)`` of an ``rt.FusedSum`` is its
  compiled loop where that runs (nothing kept: the sum is small), else the chain's
  values made into a kept array (``FusedSum.values``) and summed: one operation;
- ``a, b = kept.columns(a, b)`` (written first, for the arguments that may be narrow
  matrices) lays each narrow matrix out by columns for this call (``runtime/columns.py``:
  numpy's passes then run down columns, not along rows of a few numbers), and
  ``kept.cross(a, b)`` is ``np.cross`` keeping that layout (``columns.cross``) and
  ``kept.contiguous(x)`` a copy of ``x`` only where it is contiguous in neither layout,
  ``kept.unreduce`` ``rt.unreduce`` with a spread over the columns written out by columns;
- the call ends with ``return BUFFERS.give(kept, result)``: an array of the result that
  is a kept array or a view of one is copied first, so nothing the caller holds is
  written by a later call, and, when ``kept.columns`` laid a matrix out by columns, a
  matrix of the result laid out by columns is copied C-ordered (``columns.as_rows``);
  then the ``Kept`` goes back to the pool.
"""
import operator

import numpy as np

from .broadcast import binary
from .columns import as_rows, columns, contiguous, cross, spread_columns
from .core import unreduce
from .core import extremum_adjoint_into
from .broadcast_matmul import matmul_into
from .einsum import einsum_adjoints, einsum_into
from .fused_sum import summed

__all__ = ["Buffers", "Kept"]

#: results smaller than this are left to numpy (glibc reuses small blocks: no faults)
KEEP_BYTES = 64 * 1024
#: the ufuncs generated code writes for Python operators, and those operators
OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
             np.true_divide: operator.truediv, np.power: operator.pow,
             np.matmul: operator.matmul, np.negative: operator.neg}
#: the ufuncs whose broadcasts run as one compiled loop (``runtime/broadcast.py``)
BROADCASTS = frozenset({np.add, np.subtract, np.multiply, np.true_divide})
_NUMBERS = (float, complex, np.generic)
_EXACT = (bool, int, str, type(None))


class Buffers:
    """The pool of one generated function's ``Kept`` arrays (module doc)."""

    def __init__(self):
        self.pool = []

    def take(self):
        """The ``Kept`` of the last call that ended (an empty one when none is free),
        at its first operation."""
        try:
            kept = self.pool.pop()
        except IndexError:
            kept = Kept()
        kept.at = 0
        kept.by_columns = False
        return kept

    def give(self, kept, result):
        """``result`` with every array that is (or views) one of ``kept``'s copied; puts
        ``kept`` back into the pool (one is kept: the arrays of one call)."""
        owned = {id(entry[1]) for entry in kept.arrays if entry is not None}
        if owned:
            result = _unshared(result, owned, kept)
        if kept.by_columns:
            result = as_rows(result)
        if not self.pool:
            self.pool.append(kept)
        return result

    def clear(self):
        """Drop the kept arrays (the memory goes back; the next call makes them again)."""
        self.pool.clear()


class Kept:
    """The arrays of one call in flight, one per operation in the order they run, as
    (key of the operands, array) or None (module doc).  ``kept.<ufunc>(*args)``."""

    def __init__(self):
        self.arrays = []
        self.at = 0
        self.by_columns = False         # whether ``columns`` laid a matrix out by columns

    def run(self, fn, args):
        """``fn(*args)``, into the array the operation at this place made last call when
        the operands are alike (module doc)."""
        at = self.at
        self.at = at + 1
        key = _key(args)
        if key is None:
            return OPERATORS.get(fn, fn)(*args)
        arrays = self.arrays
        entry = arrays[at] if at < len(arrays) else None
        out = entry[1] if entry is not None and entry[0] == key else None
        if fn in BROADCASTS and len(args) == 2:
            result = binary(fn, args[0], args[1], out)
            if result is not None:
                return result if out is not None else self.keep(at, key, result)
        if out is not None:
            return fn(*args, out=out)
        return self.keep(at, key, fn(*args))

    def keep(self, at, key, result):
        """``result``, kept as the array of the operation at ``at`` when it is large and
        owns its memory."""
        arrays = self.arrays
        if type(result) is np.ndarray and result.nbytes >= KEEP_BYTES and \
                result.base is None:
            if at >= len(arrays):
                arrays.extend([None] * (at + 1 - len(arrays)))
            arrays[at] = (key, result)
        return result

    def columns(self, *args):
        """The arguments with each narrow matrix laid out by columns for this call
        (``runtime/columns.py``), as a tuple."""
        laid = columns(*args)
        self.by_columns = self.by_columns or any(a is not b for a, b in zip(laid, args))
        return laid

    def unreduce(self, g, like, axis, keepdims):
        """``rt.unreduce(g, like, axis, keepdims)``; once this call laid a matrix out by
        columns, a spread of ``g`` over the columns of a narrow matrix is written out by
        columns into a kept array (``columns.spread_columns``): numpy's view of it, a
        stride of 0 along the columns, makes every pass it is an operand of run along
        rows, C-ordered (ba's ``drot + drot_pow2 * 2 * rot``: 0.74 ms against 0.03)."""
        spread = unreduce(g, like, axis, keepdims)
        if not self.by_columns or not spread_columns(spread):
            self.at += 1              # one place either way: the next ones stay theirs
            return spread
        return self.run(_columns_copy, (spread,))

    def cross(self, a, b):
        """``np.cross(a, b)`` laid out like ``a`` (``columns.cross``)."""
        return cross(a, b)

    def contiguous(self, x):
        """``x`` contiguous in either layout (``columns.contiguous``)."""
        return contiguous(x)

    def fused(self, kernel, *args):
        """``kernel(*args)`` of an ``rt.Fused`` (``runtime/fused.py``) into a kept array."""
        return self.run(kernel, args)

    def fused_sum(self, kernel, *args, axis, keepdims):
        """``kernel(*args, axis=axis, keepdims=keepdims)`` of an ``rt.FusedSum``
        (``runtime/fused_sum.py``): where numpy runs it, the chain's values are made into
        a kept array and summed (one operation either way)."""
        result = kernel.looped(args, axis, keepdims)
        if result is not None:
            self.at += 1
            return result
        return summed(self.run(kernel.values, args), axis, keepdims)

    def einsum_adjoints(self, g, operands):
        """``rt.einsum_adjoints(g, operands)`` with each operand's contraction written
        into a kept array (``kept.einsum``; one operation per array operand)."""
        return einsum_adjoints(g, operands, self.einsum)


def _columns_copy(x, out=None):
    """``x`` written into ``out`` (a new array laid out by columns when None)."""
    if out is None:
        out = np.empty(x.shape, x.dtype, order="F")
    out[...] = x
    return out


def _operation(fn, name):
    def operation(self, *args):
        return self.run(fn, args)
    operation.__name__ = operation.__qualname__ = name
    operation.__doc__ = f"``{operation.__name__}(*args)`` into a kept array (``Kept.run``)."
    return operation


def _writing_out(into):
    """``into(out, *args)`` (a helper of ``rt`` that writes into ``out``) as a function
    of ``*args`` with ``out=``, the way ``Kept.run`` calls a ufunc."""
    def fn(*args, out=None):
        return into(out, *args)
    return fn


for _name in dir(np):
    if isinstance(getattr(np, _name), np.ufunc) and not _name.startswith("_"):
        setattr(Kept, _name, _operation(getattr(np, _name), _name))

Kept.einsum = _operation(_writing_out(einsum_into), "einsum")
Kept.matmul = _operation(_writing_out(matmul_into), "matmul")    # (a broadcast stack folded)
Kept.extremum_adjoint = _operation(_writing_out(
    lambda out, g, x, ans, axis, keepdims: extremum_adjoint_into(g, x, ans, axis, keepdims,
                                                                 out)), "extremum_adjoint")
del _name


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
    return any(np.may_share_memory(array, entry[1]) for entry in kept.arrays
               if entry is not None)
