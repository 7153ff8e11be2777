"""Matrix products of a scaled operand, scaled after the product where that is smaller.

``scaled_products(statements, keep)`` takes the straight-line statements of a loop-free
gradient or tangent function (gast statements and ``Comment``s) and ``keep`` (the names
it returns).  A single-use temporary that is one array times number constants (``dt4 =
-ddists``, ``dt3 = dt4 * 2``: the adjoint of ``2 * (points @ centroids.T)``), read as an
operand of a matrix product (``a @ dt3``, ``np.matmul(a, dt3)``), is written into
that product as ``rt.matmul_scaled(a, ddists, -2)``: the product ``a @ (ddists * -2)``
with the scaling done on the smallest of the two operands and the result, at run time
(``runtime/core.py``).  kmeans' gradient scaled its 10,000 x 100 adjoint to take an
8 x 100 product of it (0.6 ms of its 6 ms); now the 8 x 100 product is scaled.

Only number constants scale (a scalar variable could promote the product's dtype
differently), so the result has the dtype the written expression has; its numbers are
the same up to the rounding of one multiplication.  The definitions move by the
substitution engine's rules (``substitute.py``: nothing between the two statements
rebinds or writes what they read).  Loops and branches are left alone.
"""
import gast

from ..syntax.nodes import name_uses
from .substitute import substitute

#: numpy's functions of two operands that are ``@`` (``np.dot`` is not, on stacks)
_PRODUCTS = frozenset({"matmul"})


def scaled_products(statements, keep):
    """``statements`` with scaled single-use operands of products moved into the product
    as ``rt.matmul_scaled`` (module doc), as a new list."""
    for _ in range(8):              # a chain of scalings moves one link a round
        reads, stores = name_uses(statements)
        once = {name for name, n in reads.items()
                if n == 1 and stores.get(name) == 1 and name not in keep}
        moved = substitute(statements, _Scaled(once))
        if len(moved) == len(statements):      # each move deletes its definition
            return moved
        statements = moved
    return statements


def scaling(expr):
    """``(operand, factor)`` when ``expr`` is one operand times number constants
    (``-x``, ``x * 2``, ``2.0 * -x``), the operand a name; else None."""
    factor = 1
    while True:
        if isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.USub):
            factor, expr = -factor, expr.operand
        elif isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.Mult) and \
                _number(expr.right) is not None:
            factor, expr = factor * _number(expr.right), expr.left
        elif isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.Mult) and \
                _number(expr.left) is not None:
            factor, expr = factor * _number(expr.left), expr.right
        else:
            break
    if isinstance(expr, gast.Name) and factor != 1:
        return expr, factor
    return None


def _number(node):
    """The int or float constant ``node`` is (``2``, ``-0.5``), else None."""
    sign = 1
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        sign, node = -1, node.operand
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return sign * node.value
    return None


def product_operands(expr):
    """``[a, b]`` (the expression nodes) of ``a @ b``, ``np.matmul(a, b)`` or
    ``rt.matmul_scaled(a, b, s)``; else None."""
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.MatMult):
        return [expr.left, expr.right]
    if isinstance(expr, gast.Call) and not expr.keywords and \
            isinstance(expr.func, gast.Attribute) and isinstance(expr.func.value, gast.Name):
        module, attr = expr.func.value.id, expr.func.attr
        if (module == "np" and attr in _PRODUCTS and len(expr.args) == 2) or (
                module == "rt" and attr == "matmul_scaled" and len(expr.args) == 3):
            return expr.args[:2]
    return None


class _Scaled:
    """The substitution policy (``substitute.py``): a scaled temporary (``once``: read
    once, assigned once) into the product that reads it as an operand."""
    enters, in_loops = (), False

    def __init__(self, once):
        self.once = once

    def prepared(self, items):
        return items

    def candidate(self, name, value):
        return name in self.once and scaling(value) is not None

    def crosses(self, comment, line, alone):
        return True

    def reads_in(self, item, name):
        if not (isinstance(item, gast.Assign) and len(item.targets) == 1 and
                isinstance(item.targets[0], gast.Name)):
            return False
        operands = product_operands(item.value)
        return operands is not None and any(
            isinstance(a, gast.Name) and a.id == name for a in operands)

    def merged(self, reader, name, value, depth):
        operand, factor = scaling(value)
        a, b = product_operands(reader.value)
        scale = 1
        if isinstance(reader.value, gast.Call) and reader.value.func.attr == "matmul_scaled":
            scale = _number(reader.value.args[2])
        a, b = [operand if isinstance(x, gast.Name) and x.id == name else x for x in (a, b)]
        scale = scale * factor
        call = gast.parse(f"rt.matmul_scaled(a, b, {scale!r})").body[0].value
        call.args[:2] = [a, b]
        return gast.Assign(targets=reader.targets, value=call, type_comment=None)
