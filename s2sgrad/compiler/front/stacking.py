"""``np.hstack`` / ``np.vstack`` / ``np.concatenate`` of known ranks in one spelling.

``canonical_join(calls, frame, node, prim, args, kwargs)`` takes a call the lowerer is
about to emit and gives ``(prim, args, kwargs)`` to emit instead.  Users join arrays in
several spellings that compute the same thing (GradBench's ode right-hand side as
``np.concatenate((np.ones(1), y[:-1]))``, ``np.hstack(([1.0], y[:-1]))``,
``np.concatenate(([1.0], y[:-1]))``); only the first compiled with Numba, so the other
two ran the whole loop as numpy (6.6x slower).  Here, where every item's rank is known
while building:

- ``np.hstack(items)`` is ``np.concatenate(items)`` of 1-D items and
  ``np.concatenate(items, axis=1)`` of items of rank 2 or more;
- ``np.vstack(items)`` is ``np.concatenate(items)`` of items of rank 2 or more;
- an item that is a list or tuple of numbers becomes an array first, a statement of its
  own (what numpy does with it): ``np.ones(k)`` / ``np.zeros(k)`` for ``[1.0]`` /
  ``[0.0, 0.0]`` (the fused loops of ``optimize/loops.py`` read those by index),
  ``np.array(item)`` otherwise;

so that one rule, one adjoint and one Numba spelling serve them all.  Calls whose items'
ranks are not all known (or mixed, or 0-d) are left as they are.
"""
import numpy as np

from ..ir import Const, Seq
from . import literals


def canonical_join(calls, frame, node, prim, args, kwargs):
    """(prim, args, kwargs) of the join to emit for ``prim(*args, **kwargs)`` (module doc)."""
    if prim not in (np.hstack, np.vstack, np.concatenate) or len(args) != 1 or \
            not isinstance(args[0], Seq) or not args[0].items:
        return prim, args, kwargs
    if prim is not np.concatenate and kwargs:
        return prim, args, kwargs
    ranks = {1 if _numbers(item) else
             None if isinstance(item, Seq) else calls.types.ndim_of(item)
             for item in args[0].items}
    if len(ranks) != 1 or None in ranks or 0 in ranks:
        return prim, args, kwargs
    rank = ranks.pop()
    if prim is np.vstack and rank == 1:     # rows stacked: left as it is
        return prim, args, kwargs
    joined = Seq(tuple(_as_array(calls, frame, node, item) for item in args[0].items),
                 "tuple")
    if prim is np.hstack and rank >= 2:
        return np.concatenate, (joined,), {"axis": Const(1)}
    return np.concatenate, (joined,), kwargs


def _numbers(item):
    """True for a non-empty list or tuple of plain numbers (``[1.0]``)."""
    return isinstance(item, Seq) and bool(item.items) and all(
        isinstance(a, Const) and isinstance(a.value, (int, float)) and
        not isinstance(a.value, bool) for a in item.items)


def _as_array(calls, frame, node, item):
    """``item``, or ``np.array(item)`` emitted for a list/tuple of numbers."""
    if not isinstance(item, Seq):
        return item
    values = [a.value for a in item.items]
    make, operands = np.array, (Seq(item.items, "list"),)
    if all(type(v) is float for v in values) and len(set(values)) == 1 and \
            values[0] in (0.0, 1.0):    # np.ones(k): what the fused loops read by index
        make, operands = (np.ones if values[0] else np.zeros), (Const(len(values)),)
    expr = calls.atoms.call_expr(literals.reference_node(make, calls.atoms), operands, {})
    out = calls.emitter.emit(frame, node, make, operands, {}, expr, None)
    if calls.types.ndim_of(out) is None:
        calls.types.ndims[out.name] = 1
    return out
