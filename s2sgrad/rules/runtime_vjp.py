"""Reverse-mode rules of the adjoint helpers that gradient code calls most (``rt.*``), so
that a gradient's generated code can itself be differentiated in reverse mode: what a
gradient object called inside a differentiated function is inlined as
(``compiler/front/derivative_calls.py``).  A gradient whose code calls a helper with no
rule here (nor in ``no_gradient.TABLE``) is not inlined; it runs through its custom
rule instead (``api/inside.py``).

- ``rt.unbroadcast(g, like)`` sums ``g`` to ``like``'s shape: its adjoint spreads the
  incoming adjoint back over ``g``'s shape (summed again where ``g`` was smaller);
- ``rt.unreduce(g, like, axis, keepdims)`` spreads ``g`` over ``like``'s shape: its
  adjoint is the sum over the reduced axes, in ``g``'s shape;
- ``rt.sum`` and ``rt.mean`` (numpy's, with the options as plain arguments) have
  ``np.sum``'s and ``np.mean``'s rules;
- ``rt.copy_value`` (a copy an in-place update overwrites; forward mode writes it in the
  tangent code of a gradient: an ``hvp`` called inside) passes its adjoint through;
- ``rt.broadcast_like(t, like)`` (a tangent spread to a result's shape, in forward-mode
  code: a ``jacfwd`` or ``jvp`` inlined into a differentiated function) sums its adjoint
  back to ``t``'s shape (``like`` gives only a shape).

``tests/test_nested_inline.py`` checks both against central differences.
"""
from .. import runtime as rt
from .registry import d, vjp


@vjp(rt.unbroadcast)
def _(ans, g, like):
    d[g] = rt.unbroadcast(rt.broadcast_like(d[ans], g), g)


@vjp(rt.unreduce)
def _(ans, g, like, axis, keepdims):
    d[g] = rt.unbroadcast(rt.sum(d[ans], axis, keepdims), g)


@vjp(rt.sum)
def _(ans, x, axis, keepdims):
    d[x] = rt.unreduce(d[ans], x, axis, keepdims)


@vjp(rt.mean)
def _(ans, x, axis, keepdims):
    d[x] = rt.unreduce(d[ans], x, axis, keepdims) / rt.reduction_count(x, axis)


@vjp(rt.copy_value)
def _(ans, value):
    d[value] = d[ans]


@vjp(rt.broadcast_like)
def _(ans, t, like):
    d[t] = rt.unbroadcast(d[ans], t)
