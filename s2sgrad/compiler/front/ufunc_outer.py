"""``np.<ufunc>.outer(a, b)`` as the ufunc of broadcast operands.

``canonical_outer(calls, frame, node, prim, args, kwargs)`` takes a call the lowerer is
about to emit and gives ``(prim, args, kwargs)`` to emit instead.  ``np.power.outer(t,
np.arange(m))`` (a held-out spelling of GradBench's llsq) is ``np.power(t[:, None],
np.arange(m))``: numpy defines ``ufunc.outer(a, b)`` as the ufunc of ``a`` with
``b.ndim`` new axes after its own and ``b``.  The bound method has no rule, so the call
was an opaque value handed to the generated function as a parameter: never
differentiated, never fused, never hoisted with what it is computed from (llsq's
powers, 295x the plain spelling).  Here, where ``b``'s rank is known while building
(``a``'s too, else the index is written ``a[..., None]``), ``a`` is indexed with those new
axes (a statement of its own, a view) and the ufunc is called on it and ``b``: its rule,
its adjoint, its Numba spelling.  A number ``a`` or ``b`` (rank 0) needs no new axes.
Calls with keywords (``out=``, ``dtype=``) or of unknown ranks are left as they are.
"""
import gast
import numpy as np

from ... import primitives as prims
from ..ir import Const


def canonical_outer(calls, frame, node, prim, args, kwargs):
    """(prim, args, kwargs) of the call to emit for ``prim(*args, **kwargs)`` (module doc)."""
    ufunc = getattr(prim, "__self__", None)
    if not isinstance(ufunc, np.ufunc) or getattr(prim, "__name__", None) != "outer" or \
            kwargs or len(args) != 2 or ufunc.nin != 2:
        return prim, args, kwargs
    a, b = args
    rank_a, rank_b = (_rank(calls, x) for x in args)
    if rank_b is None:
        return prim, args, kwargs
    if rank_a == 0 or rank_b == 0:
        return ufunc, args, kwargs
    if isinstance(a, Const):
        a = calls.atoms.const_or_free(a.value, "const")
        if isinstance(a, Const):
            return prim, args, kwargs
    index = ((slice(None),) * rank_a if rank_a is not None else (Ellipsis,)) + (None,) * rank_b
    expr = gast.Subscript(value=calls.atoms.atom_node(a), slice=gast.Tuple(
        elts=[_index_node(i) for i in index], ctx=gast.Load()), ctx=gast.Load())
    expanded = calls.emitter.emit(frame, node, prims.GETITEM, (a, Const(index)), {}, expr,
                                  None)
    if rank_a is not None and calls.types.ndim_of(expanded) is None:
        calls.types.ndims[expanded.name] = rank_a + rank_b
    return ufunc, (expanded, b), kwargs


def _rank(calls, atom):
    """The rank of ``atom`` known while building, or None."""
    if isinstance(atom, Const):
        return np.ndim(atom.value) if isinstance(atom.value, (int, float, np.ndarray)) \
            else None
    return calls.types.ndim_of(atom)


def _index_node(item):
    if item is Ellipsis:
        return gast.Constant(value=Ellipsis, kind=None)
    if item is None:
        return gast.Constant(value=None, kind=None)
    return gast.Slice(lower=None, upper=None, step=None)
