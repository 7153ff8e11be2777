"""Elementwise array temporaries of the forward sweep written back into one expression.

The lowering gives every operation a name (``t4 = 2.0 * t3; t5 = t2 - t4``); for arrays
each name is an array made and a pass over it, where the user's line ``u[:-2] - 2.0 *
u[1:-1] + u[2:]`` is one expression that Numba compiles to one loop making one array.
``fused_forward(statements, reads, arrays)`` writes a temporary of a loop body that is
an elementwise expression (operators, numpy ufuncs, constant-slice views) back into the
one statement of its block that reads it, on the same user line, when nothing else reads
it (``reads``: how often each name is read in the whole generated function, adjoint sweep
and return included) and no statement in between assigns one of its operands or writes
into an array.  It runs on the module ``grad`` emits only, after every analysis of the sweeps.
"""
import copy

import gast

from ..syntax.nodes import Comment
from ..syntax.nodes import name_uses, substituted

#: numpy functions Numba fuses into one loop with the operators around them
UFUNCS = {"exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sqrt", "abs", "absolute",
          "negative", "square", "log1p", "expm1", "arctan", "arcsin", "arccos", "sign"}
OPERATORS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)


def read_counts(nodes):
    """Name -> how often the gast ``nodes`` (statements, comments skipped) read it."""
    return name_uses(nodes)[0]


def fused_forward(statements, reads, arrays, in_loop=False):
    """A copy of the forward sweep ``statements`` with single-use elementwise temporaries
    (names in ``arrays``, read once in all: ``reads``) of loop bodies (what Numba runs
    many times; loop-free code runs as numpy calls, one array each anyway) written into
    their reader."""
    out = []
    pending = {}      # name -> (position in out, its expression)
    line = None       # the user's line the statements at hand come from
    for item in statements:
        if isinstance(item, Comment):
            if item.origin is not None and item.origin != line:
                pending, line = {}, item.origin   # one user line's temporaries only
            out.append(item)
            continue
        if isinstance(item, (gast.For, gast.While, gast.If)):
            pending = {}
            item = copy.copy(item)
            inside = in_loop or not isinstance(item, gast.If)
            item.body = fused_forward(item.body, reads, arrays, inside)
            item.orelse = fused_forward(item.orelse, reads, arrays, inside)
            out.append(item)
            continue
        plain = in_loop and isinstance(item, gast.Assign) and len(item.targets) == 1
        if plain:
            used = [name for name in pending if _reads_name(item.value, name)]
            if used:
                item = copy.copy(item)
                item.value = substituted(item.value, {n: pending[n][1] for n in used})
                for name in used:
                    out[pending.pop(name)[0]] = None
        target = item.targets[0] if plain else None
        written = _assigned(item)
        # what this statement assigns or writes ends the temporaries that read it
        if _push(item):
            pass          # a tape's append writes nothing a temporary reads
        elif not plain or not isinstance(target, gast.Name):
            pending = {}
        else:
            pending = {n: v for n, v in pending.items()
                       if not (written & _names(v[1])) and n not in written}
        if plain and isinstance(target, gast.Name) and target.id in arrays and \
                reads.get(target.id) == 1 and _elementwise(item.value):
            pending[target.id] = (len(out), item.value)
        out.append(item)
    return [item for item in out if item is not None]


def _push(item):
    """``stack.append(value)``: a list tape's push."""
    return isinstance(item, gast.Expr) and isinstance(item.value, gast.Call) and \
        isinstance(item.value.func, gast.Attribute) and item.value.func.attr == "append" \
        and isinstance(item.value.func.value, gast.Name) and item.value.func.value.id.endswith(
            "_stack")


def _assigned(item):
    return {n.id for n in gast.walk(item) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Store)}


def _names(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _reads_name(node, name):
    return any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
               for n in gast.walk(node))


def _elementwise(node):
    """An expression of names, numbers, constant-slice views, operators and ufuncs."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.BinOp):
        return isinstance(node.op, OPERATORS) and _elementwise(node.left) and \
            _elementwise(node.right)
    if isinstance(node, gast.UnaryOp):
        return isinstance(node.op, gast.USub) and _elementwise(node.operand)
    if isinstance(node, gast.Subscript):
        return isinstance(node.value, gast.Name) and isinstance(node.slice, gast.Slice) and \
            all(part is None or isinstance(part, gast.Constant) or (
                isinstance(part, gast.UnaryOp) and isinstance(part.operand, gast.Constant))
                for part in (node.slice.lower, node.slice.upper, node.slice.step))
    if isinstance(node, gast.Call):
        func = node.func
        return (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                and func.value.id == "np" and func.attr in UFUNCS and not node.keywords
                and all(_elementwise(a) for a in node.args))
    return False
