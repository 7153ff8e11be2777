"""Elementwise results written into arrays the generated function keeps between calls.

``kept_results(statements, keep, scalar)`` takes the straight-line sweeps of a loop-free
gradient or tangent function run as numpy (gast statements and comments), ``keep`` (the
names the function returns: never written into a kept array) and ``scalar(name)``
(whether ``name`` is known to be a number, not an array).  It gives the statements with
every elementwise operation that may make an array (``a - b``, ``-a``, ``a @ b``,
``np.exp(a)``: any numpy ufunc called with positional arguments, and the helpers that
take ``out=``: ``rt.extremum_adjoint``, ``rt.einsum``) written ``kept(k, np.subtract,
a, b)``, one slot ``k`` per operation, and the number of slots (0: nothing changed).

``rt.Kept`` (``runtime/buffers.py``) runs ``np.subtract(a, b, out=...)`` into the array
slot ``k`` made last call when the operands have the same types, shapes and dtypes,
else as written: large results stop being fresh arrays whose pages fault on every call
(gmm's gradient: 24 ms -> 6 ms).  Nothing here depends on the sizes of the first call:
the check is made at every call.  Values of operations that are arguments of other
calls are kept too (``rt.sum(dt3 * xcentered, 0, False)``: the product is a
temporary), each in its own slot: one call writes each slot once (straight-line code),
and what the function returns is copied if it shares a kept array (``Buffers.give``).
"""
import gast
import numpy as np

from ..syntax.nodes import Comment, name_node

#: Python operators and the ufuncs they are
BINARY = {gast.Add: "add", gast.Sub: "subtract", gast.Mult: "multiply",
          gast.Div: "true_divide", gast.Pow: "power", gast.MatMult: "matmul"}
#: numpy ufuncs with an operator spelling: left as called (``np.add(a, b)`` of two lists
#: is not ``a + b``, which is what ``rt.Kept`` runs for operands that are not arrays)
OPERATOR_UFUNCS = frozenset(BINARY.values()) | {"negative"}
#: helpers of ``rt`` that write into an ``out=`` array
RT_OUT = frozenset({"extremum_adjoint", "einsum"})


def kept_results(statements, keep, scalar, kept):
    """``(statements, slots)``: see the module doc; ``kept``: the name of the call's
    ``rt.Kept``.  Straight-line code only: with a loop or a branch the statements come
    back unchanged, with 0 slots."""
    if any(isinstance(item, (gast.For, gast.While, gast.If, gast.Try, gast.With))
           for item in statements):
        return statements, 0
    writer = _Writer(scalar, kept)
    out = []
    for item in statements:
        if isinstance(item, Comment) or _returned(item, keep):
            out.append(item)
        else:
            out.append(writer.visit(item))
    return out, writer.slots


def _returned(item, keep):
    """Whether ``item`` assigns one of the returned names (it is then left as written:
    a kept array would be copied at the return)."""
    return isinstance(item, gast.Assign) and any(
        isinstance(t, gast.Name) and t.id in keep for t in item.targets)


class _Writer(gast.NodeTransformer):
    """Writes each operation that may make an array as a ``kept(k, ...)`` call."""

    def __init__(self, scalar, kept):
        self.scalar, self.kept, self.slots = scalar, kept, 0
        self.numbers = set()        # names assigned a value made of numbers only

    def visit_Assign(self, node):
        # a target is written, not read: only the value is rewritten
        node.value = self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            if self._array(node.value):
                self.numbers.discard(node.targets[0].id)
            else:
                self.numbers.add(node.targets[0].id)
        return node

    def visit_AugAssign(self, node):
        node.value = self.visit(node.value)       # ``a += b`` writes in place already
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        ufunc = BINARY.get(type(node.op))
        if ufunc is None or not (self._array(node.left) or self._array(node.right)):
            return node
        return self._kept(gast.Attribute(name_node("np"), ufunc, gast.Load()),
                          [node.left, node.right])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, gast.USub) or not self._array(node.operand):
            return node
        return self._kept(gast.Attribute(name_node("np"), "negative", gast.Load()),
                          [node.operand])

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if node.keywords or any(isinstance(a, gast.Starred) for a in node.args) or \
                not isinstance(func, gast.Attribute) or not isinstance(func.value, gast.Name):
            return node
        module, attr = func.value.id, func.attr
        if module == "np" and attr not in OPERATOR_UFUNCS and _is_ufunc(attr) and \
                any(self._array(a) for a in node.args):
            return self._kept(func, node.args)
        if module == "rt" and attr in RT_OUT:
            return self._kept(func, node.args)
        return node

    def _array(self, node):
        """Whether ``node`` may be an array (``rt.Kept`` checks exactly at run time)."""
        if isinstance(node, gast.Constant):
            return False
        if isinstance(node, gast.Name):
            return node.id not in self.numbers and not self.scalar(node.id)
        if isinstance(node, gast.BinOp):
            return self._array(node.left) or self._array(node.right)
        if isinstance(node, gast.UnaryOp):
            return self._array(node.operand)
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                isinstance(node.func.value, gast.Name) and node.func.value.id == "math":
            return False
        return True

    def _kept(self, func, args):
        self.slots += 1
        return gast.Call(name_node(self.kept),
                         [gast.Constant(self.slots - 1, None), func] + list(args), [])


def _is_ufunc(name):
    return isinstance(getattr(np, name, None), np.ufunc)
