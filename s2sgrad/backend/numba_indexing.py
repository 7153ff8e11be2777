"""The Numba version of the indexing adjoint ``rt.add_at``.

``rt.add_at(target, index, g)`` is ``np.add.at``: ``target[index] += g`` with
repeated positions accumulated.  The generated code passes every index form
its ``x[index]`` reads can have: an int, a slice (bounds known at run time,
None, negative steps), an int array of any rank, a boolean mask, and a tuple
of ints, slices and 1-D int arrays (for 2-D and higher arrays).  Basic
indices (ints and slices) select each element at most once, so they add in
place; array indices loop over their entries.  The tuple forms with arrays
are written out per tuple shape (``_tuple_loop``) because each needs its own
index expression.
"""
import numpy as np
from numba import types
from numba.extending import overload

from .. import runtime as rt


def _is_scalar(t):
    return isinstance(t, (types.Number, types.Boolean))


def _is_int_array(t, ndim=None):
    return isinstance(t, types.Array) and isinstance(t.dtype, types.Integer) and \
        (ndim is None or t.ndim == ndim)


def _basic_item(t):
    return isinstance(t, (types.Integer, types.SliceType))


@overload(rt.add_at)
def _add_at(target, index, g):
    if not isinstance(target, types.Array):
        return None
    if _basic_item(index) or (isinstance(index, types.BaseTuple) and
                              all(_basic_item(t) for t in index.types)):
        def add_basic(target, index, g):
            target[index] += g
            return target
        return add_basic
    if _is_int_array(index):
        if _is_scalar(g):
            def add_array_scalar(target, index, g):
                for k in np.ndindex(index.shape):
                    target[index[k]] += g
                return target
            return add_array_scalar

        def add_array(target, index, g):
            for k in np.ndindex(index.shape):
                target[index[k]] += g[k]
            return target
        return add_array
    if isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean) and \
            index.ndim <= target.ndim:
        return _add_mask(g, index, target)
    if isinstance(index, types.BaseTuple) and all(
            _basic_item(t) or _is_int_array(t, 1) for t in index.types):
        return _tuple_loop(index.types, _is_scalar(g))
    return None


def _add_mask(g, index, target):
    """``target[mask] += g``: g holds the selected elements (rows) in C order."""
    if _is_scalar(g):
        def add_mask_scalar(target, index, g):
            for idx in np.ndindex(index.shape):
                if index[idx]:
                    target[idx] += g
            return target
        return add_mask_scalar
    if isinstance(g, types.Array) and g.ndim == target.ndim - index.ndim + 1:
        def add_mask(target, index, g):
            k = 0
            for idx in np.ndindex(index.shape):
                if index[idx]:
                    target[idx] += g[k]
                    k += 1
            return target
        return add_mask
    return None


_TUPLE_LOOPS = {}


def _tuple_loop(item_types, scalar_g):
    """An implementation of ``add_at`` for a tuple index with 1-D int arrays among ints
    and slices: one loop over the (broadcast) arrays' entries, adding ``g``'s matching
    part at each position.  As in numpy, the arrays (and ints) form one advanced axis
    of ``g``, where they stand if they are adjacent, else first."""
    kinds = tuple("array" if isinstance(t, types.Array) else
                  "slice" if isinstance(t, types.SliceType) else "int" for t in item_types)
    key = (kinds, scalar_g)
    if key not in _TUPLE_LOOPS:
        advanced = [i for i, k in enumerate(kinds) if k != "slice"]
        adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
        before = kinds[:advanced[0]].count("slice") if adjacent else 0
        arrays = [i for i, k in enumerate(kinds) if k == "array"]
        items = ", ".join(f"index[{i}][k if index[{i}].shape[0] != 1 else 0]"
                          if k == "array" else f"index[{i}]" for i, k in enumerate(kinds))
        part = "g" if scalar_g else "g[" + ":, " * before + "k]"
        lines = ["def impl(target, index, g):", "    n = 1"]
        for i in arrays:
            lines += [f"    m = index[{i}].shape[0]",
                      "    if m != 1:",
                      "        if n != 1 and m != n:",
                      "            raise IndexError('shape mismatch: indexing arrays could not "
                      "be broadcast together')",
                      "        n = m"]
        lines += ["    for k in range(n):", f"        target[{items}] += {part}",
                  "    return target"]
        scope = {"IndexError": IndexError}
        exec("\n".join(lines), scope)  # noqa: S102 - a fixed template, no user input
        _TUPLE_LOOPS[key] = scope["impl"]
    return _TUPLE_LOOPS[key]
