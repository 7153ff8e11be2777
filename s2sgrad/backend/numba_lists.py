"""Numba implementations of the list helpers in ``s2sgrad.runtime`` (adjoints of lists
that a run-time loop extends with ``append``)."""
from numba import types
from numba.extending import overload

from .. import runtime as rt


@overload(rt.zeros_list)
def _zeros_list(items):
    if isinstance(items, types.List):
        def impl(items):
            return [rt.zeros_like(item) for item in items]
        return impl


@overload(rt.copy_list)
def _copy_list(items):
    if isinstance(items, types.List):
        def impl(items):
            return [item for item in items]
        return impl


@overload(rt.add_lists)
def _add_lists(a, b):
    if isinstance(a, types.List) and isinstance(b, types.List):
        def impl(a, b):
            return [a[i] + b[i] for i in range(len(a))]
        return impl
