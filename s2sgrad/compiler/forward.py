"""How a primitive call is written in the forward sweep, where numpy's own spelling is not
what Numba compiles.

``forward_expression(prim, args, kwargs, atom_node)`` gives the gast
expression to emit for a call of ``prim`` on atoms, or None to keep the
plain call (``np.exp(x)``, ``x.sum(axis=0)``).  Each entry of ``REWRITES``
takes (args, kwargs, atom_node) and returns an expression or None (None:
this call is fine as it is).  The rewritten forms compute the same values
as numpy, so the Python backend runs them too.
"""
import gast
import numpy as np


def _rt(name, nodes):
    return gast.Call(func=gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(),
                                                         annotation=None, type_comment=None),
                                         attr=name, ctx=gast.Load()),
                     args=nodes, keywords=[])


def _matmul(args, kwargs, atom_node):
    """``np.matmul(a, b)`` -> ``a @ b`` (Numba has the operator, not the function)."""
    if len(args) == 2 and not kwargs:
        return gast.BinOp(left=atom_node(args[0]), op=gast.MatMult(), right=atom_node(args[1]))
    return None


REWRITES = {
    np.matmul: _matmul,
}


def forward_expression(prim, args, kwargs, atom_node):
    """The expression for ``prim(*args, **kwargs)`` in generated code, or None for the
    ordinary call."""
    rewrite = REWRITES.get(prim) if not isinstance(prim, str) else None
    try:
        return rewrite(args, kwargs, atom_node) if rewrite is not None else None
    except TypeError:   # an unhashable or odd primitive: keep the ordinary call
        return None
