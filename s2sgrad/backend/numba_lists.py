"""Numba implementations of the list and tuple helpers in ``s2sgrad.runtime``: adjoints
of lists that a run-time loop extends with ``append``, and of tuple results
(``w, v = np.linalg.eigh(a)``), whose adjoint is a tuple updated functionally; and
``np.stack``, ``np.concatenate`` (Numba's take only tuples) and the builtin ``sum`` of
such a list (or a slice of one) of arrays.

A tuple's items may differ in type, so the tuple helpers are generated per length
(``items[0], items[1], ...``) and ``rt.item_added`` needs its index as a literal (the
generated code writes it as a constant).
"""
import numpy as np
from numba import types
from numba.extending import overload

from .. import runtime as rt


def tuple_impl(params, item, n):
    """A function of ``params`` returning the tuple ``(item(0), ..., item(n - 1))``, where
    ``item(k)`` is the source text of the k-th item."""
    items = "".join(item(k) + ", " for k in range(n))
    src = f"def impl({params}):\n    return ({items})\n"
    scope = {"rt": rt}
    exec(src, scope)  # noqa: S102 - a fixed template over an item count, no user input
    return scope["impl"]


@overload(rt.zeros_list)
def _zeros_list(items):
    if isinstance(items, types.List):
        def impl(items):
            return [rt.zeros_like(item) for item in items]
        return impl
    if isinstance(items, types.BaseTuple):
        return tuple_impl("items", lambda k: f"rt.zeros_like(items[{k}])", len(items))


@overload(rt.copy_list)
def _copy_list(items):
    if isinstance(items, types.List):
        def impl(items):
            return [item for item in items]
        return impl
    if isinstance(items, types.BaseTuple):   # updated functionally: nothing to copy
        return lambda items: items


@overload(rt.add_lists)
def _add_lists(a, b):
    if isinstance(a, types.List) and isinstance(b, types.List):
        def impl(a, b):
            return [a[i] + b[i] for i in range(len(a))]
        return impl
    if isinstance(a, types.BaseTuple) and isinstance(b, types.BaseTuple) and len(a) == len(b):
        return tuple_impl("a, b", lambda k: f"a[{k}] + b[{k}]", len(a))
    if isinstance(a, (types.Float, types.Integer)) and isinstance(b, types.BaseTuple):
        return lambda a, b: b     # a plain 0.0: the adjoint started where a had no value


@overload(rt.item_added, prefer_literal=True)
def _item_added(items, index, g):
    if isinstance(items, types.List):
        def in_place(items, index, g):
            items[index] = items[index] + g
            return items
        return in_place
    if isinstance(items, types.BaseTuple) and isinstance(index, types.IntegerLiteral):
        n = len(items)
        k = index.literal_value % n if n else 0
        return tuple_impl("items, index, g",
                           lambda j: f"items[{j}] + g" if j == k else f"items[{j}]", n)


@overload(np.stack, prefer_literal=True)
def _stack_list(arrays, axis=0):
    """``np.stack`` of a list of arrays (Numba stacks only tuples), along the first axis
    (a list built by ``append`` in a loop: a run-time length) or the last (the columns
    of a Jacobian, ``api/nested.py``).  Another ``axis`` is left to Numba (which refuses
    it: the code then runs as Python and says why)."""
    if not isinstance(arrays, types.List) or not isinstance(arrays.dtype, types.Array):
        return None
    value = axis.value if isinstance(axis, types.Omitted) else (
        axis.literal_value if isinstance(axis, types.IntegerLiteral) else axis)
    ndim = arrays.dtype.ndim
    if not isinstance(value, int) or value not in (0, -1 - ndim, -1, ndim):
        return None
    dtype = arrays.dtype.dtype
    last = value in (-1, ndim)

    def impl(arrays, axis=0):
        if len(arrays) == 0:
            raise ValueError("need at least one array to stack")
        shape = arrays[0].shape
        out = np.empty((len(arrays),) + shape, dtype)
        for k in range(len(arrays)):
            if arrays[k].shape != shape:
                raise ValueError("all input arrays must have the same shape")
            out[k] = arrays[k]
        if last:     # (n, *shape) -> (*shape, n)
            return np.ascontiguousarray(out.reshape((len(arrays), -1)).T).reshape(
                shape + (len(arrays),))
        return out
    return impl


@overload(np.concatenate, prefer_literal=True)
def _concatenate_list(arrays, axis=0):
    """``np.concatenate`` of a list of arrays along the first axis (a list built by
    ``append``, or a slice of one: Numba joins only tuples).  Another ``axis`` is left to
    Numba (which refuses it: the code then runs as Python and says why)."""
    value = axis.value if isinstance(axis, types.Omitted) else (
        axis.literal_value if isinstance(axis, types.IntegerLiteral) else axis)
    if not isinstance(arrays, types.List) or not isinstance(arrays.dtype, types.Array) or \
            not (isinstance(value, int) and value == 0):
        return None
    dtype = arrays.dtype.dtype

    def impl(arrays, axis=0):
        if len(arrays) == 0:
            raise ValueError("need at least one array to concatenate")
        rest = arrays[0].shape[1:]
        total = 0
        for k in range(len(arrays)):
            if arrays[k].shape[1:] != rest:
                raise ValueError("all the input array dimensions except for the "
                                 "concatenation axis must match exactly")
            total += arrays[k].shape[0]
        out = np.empty((total,) + rest, dtype)
        start = 0
        for k in range(len(arrays)):
            out[start:start + arrays[k].shape[0]] = arrays[k]
            start += arrays[k].shape[0]
        return out
    return impl


@overload(sum)
def _sum_list(items, start=0):
    """The builtin ``sum`` of a list of arrays (Numba has none): the item-by-item sum,
    from ``start``; an empty list is refused (Python's sum would give ``start``, a number,
    where the code expects an array)."""
    if not isinstance(items, types.List) or not isinstance(items.dtype, types.Array):
        return None

    def impl(items, start=0):
        if len(items) == 0:
            raise ValueError("sum() of an empty list of arrays")
        out = start + items[0]
        for k in range(1, len(items)):
            out = out + items[k]
        return out
    return impl
