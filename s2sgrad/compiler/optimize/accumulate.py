"""In-place accumulation of matrix products in the adjoint sweep of the code ``grad`` runs.

``dW += rt.matmul_left(g, W, x)`` (an owned adjoint array: an RNN's weights, summed
over time steps) makes the product as a new array and then adds it; for ``W @ x`` with
a vector ``x`` that product is an outer product, and making it costs more than adding
it.  ``products_in_place(statements)`` gives the statements with every such update
written ``rt.add_matmul_left(dW, g, W, x)`` (``add_matmul_right``, and ``add_dot_*`` for
``np.dot``, likewise), which adds in place.  It runs on the module ``grad`` emits only, after every analysis of the
sweeps: the split (vjp) and differentiable spellings read ``+=`` as the update it is.
"""
import copy

import gast

from ..syntax.nodes import call, name_node

#: product helpers and their in-place accumulating forms
IN_PLACE = {"matmul_left": "add_matmul_left", "matmul_right": "add_matmul_right",
            "dot_left": "add_dot_left", "dot_right": "add_dot_right"}


def products_in_place(statements):
    """A copy of ``statements`` (gast statements and comments) with ``d += rt.matmul_*(...)``
    written as the in-place ``rt.add_matmul_*(d, ...)``."""
    return [_rewritten(item) for item in statements]


def _rewritten(item):
    if isinstance(item, (gast.For, gast.While, gast.If)):
        item = copy.copy(item)
        item.body = products_in_place(item.body)
        item.orelse = products_in_place(item.orelse)
        return item
    if isinstance(item, gast.AugAssign) and isinstance(item.op, gast.Add) and \
            isinstance(item.target, gast.Name) and _product_call(item.value):
        value = item.value
        return gast.Expr(value=call("rt", IN_PLACE[value.func.attr],
                                    [name_node(item.target.id)] + list(value.args)))
    return item


def _product_call(node):
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr in IN_PLACE and isinstance(node.func.value, gast.Name)
            and node.func.value.id == "rt" and len(node.args) == 3 and not node.keywords)
