"""Matrix products of a scaled operand, scaled after the product where that is smaller.

``scaled_products(statements, keep)`` takes the straight-line statements of a loop-free
gradient or tangent function (gast statements and ``Comment``s) and ``keep`` (the names
it returns).  A single-use temporary that is one array times number constants (``dt4 =
-ddists``, ``dt3 = dt4 * 2``: the adjoint of ``2 * (points @ centroids.T)``), read as an
operand of a matrix product (``a @ dt3``, ``np.matmul(a, dt3)``), is written into
that product as ``rt.matmul_scaled(a, ddists, -2)`` (and ``a @ (g * -2)`` written in
one statement likewise): the product ``a @ (ddists * -2)`` with the scaling done on
the smallest of the two operands and the result, at run time (``s2sgrad/runtime``'s
``matmul_scaled``).  kmeans' gradient scaled its 10,000 x 100 adjoint to take an
8 x 100 product of it (0.6 ms of its 6 ms); now the 8 x 100 product is scaled.

Only number constants scale (a scalar variable could promote the product's dtype
differently), so the result has the dtype the written expression has; its numbers are
the same up to the rounding of one multiplication.  The definitions move by the
substitution engine's rules (``substitute.py``: nothing between the two statements
rebinds or writes what they read).  Loops and branches are left alone.
"""
import copy

import gast

from ..syntax.nodes import Comment, name_uses
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
        if not any(_assigns_one_name(item) and item.targets[0].id in once and
                   scaling(item.value) is not None for item in statements):
            break                   # (the engine's walk costs more than this look)
        moved = substitute(statements, _Scaled(once))
        if len(moved) == len(statements):      # each move deletes its definition
            break
        statements = moved
    return [_Nested().visit(copy.deepcopy(item)) if isinstance(item, _SIMPLE) and any(
        isinstance(n, gast.MatMult) for n in gast.walk(item)) else item
        for item in statements]


_SIMPLE = (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)


class _Nested(gast.NodeTransformer):
    """``a @ (g * -2)`` written in one statement: ``rt.matmul_scaled(a, g, -2)``."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, gast.MatMult):
            return node
        for k, operand in enumerate((node.left, node.right)):
            scaled = scaling(operand)
            if scaled is not None:
                call = gast.parse(f"rt.matmul_scaled(a, b, {scaled[1]!r})").body[0].value
                call.args[:2] = [scaled[0], node.right] if k == 0 else [node.left, scaled[0]]
                return call
        return node


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


def product_operands(expr, helpers=("matmul_scaled",)):
    """``[a, b]`` (the expression nodes) of ``a @ b``, ``np.matmul(a, b)`` or
    ``rt.h(a, b, ...)`` for ``h`` in ``helpers``; else None."""
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.MatMult):
        return [expr.left, expr.right]
    if isinstance(expr, gast.Call) and not expr.keywords and len(expr.args) >= 2 and \
            isinstance(expr.func, gast.Attribute) and isinstance(expr.func.value, gast.Name):
        module, attr = expr.func.value.id, expr.func.attr
        if (module == "np" and attr in _PRODUCTS and len(expr.args) == 2) or (
                module == "rt" and attr in helpers):
            return expr.args[:2]
    return None


def _assigns_one_name(item):
    return isinstance(item, gast.Assign) and len(item.targets) == 1 and \
        isinstance(item.targets[0], gast.Name)


class IntoReader:
    """What the substitution policies here share (``substitute.py``): the single-use
    names ``once``, moved across comments, in the blocks ``in_loops`` says."""
    enters, in_loops = (), False

    def __init__(self, once, in_loops=False):
        self.once, self.in_loops = once, in_loops

    def prepared(self, items):
        return items

    def crosses(self, comment, line, alone):
        return True


class _Scaled(IntoReader):
    """The substitution policy of ``scaled_products``: a scaled temporary into the
    product that reads it as an operand."""

    def candidate(self, name, value):
        return name in self.once and scaling(value) is not None

    def reads_in(self, item, name):
        operands = product_operands(item.value) if _assigns_one_name(item) else None
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


# ------------------------------------------------- a slice of a product's last axis

def sliced_products(statements, keep):
    """``statements`` with ``p = a @ b; s = p[:, :3]`` written ``s = rt.matmul_sliced(a,
    b, np.s_[:, :3])`` where ``p`` is read only there (``SlicedProducts``)."""
    return merged_into_readers(statements, keep, SlicedProducts)


def merged_into_readers(statements, keep, policy):
    """``statements`` run through ``substitute`` with ``policy(once, in_loops)`` (an
    ``IntoReader``), ``once`` the names stored once and read once (not in ``keep``),
    outside loops then inside, comments left with no statement dropped."""
    reads, stores = name_uses(statements)
    once = {name for name, n in reads.items()
            if n == 1 and stores.get(name) == 1 and name not in keep}
    before = orphan_comments(statements)
    for in_loops in (False, True):      # the engine takes one kind of block a run
        statements = substitute(statements, policy(once, in_loops))
    return without_orphan_comments(statements, before)


def orphan_comments(items, found=None):
    """The ids of the location comments of ``items`` (nested blocks too) that head no
    statement: the next item is another location comment, or there is none."""
    found = set() if found is None else found
    for k, item in enumerate(items):
        if isinstance(item, Comment) and item.origin is not None and (
                k + 1 == len(items) or (isinstance(items[k + 1], Comment) and
                                        items[k + 1].origin is not None)):
            found.add(id(item))
        for field in ("body", "orelse"):
            if isinstance(getattr(item, field, None), list):
                orphan_comments(getattr(item, field), found)
    return found


def without_orphan_comments(items, before):
    """``items`` without the location comments a move left heading nothing (a user
    line whose product now runs in the line that reads it)."""
    now = orphan_comments(items) - before
    out = []
    for item in items:
        if id(item) in now:
            continue
        if isinstance(item, (gast.For, gast.While, gast.If)):
            item = copy.copy(item)
            item.body = without_orphan_comments(item.body, before)
            item.orelse = without_orphan_comments(item.orelse, before)
        out.append(item)
    return out


class SlicedProducts(IntoReader):
    """The substitution policy of ``sliced_products``: a product (``a @ b``,
    ``np.matmul(a, b)``, ``rt.matmul_batch(a, b)``) read once, by a subscript of basic
    slices that may take columns only (``[:, :3]``, ``[:, :, 1:]``), is computed by
    ``rt.matmul_sliced`` (``rt.matmul_batch_sliced``), which makes only those columns
    where the index turns out to slice the product's last axis alone: ``(a @ b)[..., j]
    == a @ b[..., j]`` for a ``b`` of two dimensions or more.  ht's ``(base_positions @
    transform.T)[:, :3]`` and its tangent's ``rt.matmul_batch(base_positions,
    t_dot)[:, :, :3]``: a quarter of the products not made (the ranks are known only
    when it runs: ``transform`` is an item of a list)."""
    enters = (gast.For, gast.While, gast.If)

    def candidate(self, name, value):
        return name in self.once and _product(value) is not None

    def reads_in(self, item, name):
        value = item.value if _assigns_one_name(item) else None
        return isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) \
            and value.value.id == name and _columns(value.slice)

    def merged(self, reader, name, value, depth):
        batched = isinstance(value, gast.Call) and value.func.attr == "matmul_batch"
        helper = "matmul_batch_sliced" if batched else "matmul_sliced"
        call = gast.parse(f"rt.{helper}(a, b, np.s_[i])").body[0].value
        call.args[:2] = _product(value)
        call.args[2].slice = reader.value.slice
        return gast.Assign(targets=reader.targets, value=call, type_comment=None)


def _product(expr):
    """``[a, b]`` of ``a @ b``, ``np.matmul(a, b)`` or ``rt.matmul_batch(a, b)``, else None."""
    return product_operands(expr, ("matmul_batch",)) if not isinstance(expr, gast.Call) or \
        len(expr.args) == 2 else None


def _columns(index):
    """True for a tuple of basic slices, ``:`` but the last (``[:, :3]``, ``[:, :, 1:]``)."""
    items = index.elts if isinstance(index, gast.Tuple) else []
    if len(items) < 2 or not all(isinstance(i, gast.Slice) for i in items):
        return False
    if any(i.lower is not None or i.upper is not None or i.step is not None
           for i in items[:-1]):
        return False
    last = items[-1]
    return last.step is None and (last.lower is not None or last.upper is not None) and all(
        b is None or isinstance(b, (gast.Constant, gast.Name)) or (
            isinstance(b, gast.UnaryOp) and isinstance(b.operand, gast.Constant))
        for b in (last.lower, last.upper))
