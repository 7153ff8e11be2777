"""The one place that builds syntax nodes (gast) for generated code.

``name_node("x")`` reads a name (``ctx=gast.Store()`` writes it), ``attribute("np",
"linalg", "inv")`` a dotted path, ``call("rt", "unbroadcast", [g, x])`` a call of a
module's function, ``assign("y", value)`` an assignment (``assign_targets`` of one
or several names), ``renamed(node, {"a": "b"})`` a copy with names replaced.
"""
import copy

import gast


def name_node(id_, ctx=None):
    """The Name ``id_`` (read, or ``ctx`` such as ``gast.Store()``)."""
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def attribute(base, *names):
    """``base.names[0].names[1]...`` read as an expression."""
    node = name_node(base)
    for n in names:
        node = gast.Attribute(value=node, attr=n, ctx=gast.Load())
    return node


def call(module, fn, args, keywords=()):
    """``module.fn(*args, **keywords)``; ``keywords`` is a sequence of (name, node)."""
    return gast.Call(func=attribute(module, fn), args=list(args),
                     keywords=[gast.keyword(arg=k, value=v) for k, v in keywords])


def assign(target, value):
    """``target = value``; ``target`` a name or a target node."""
    return gast.Assign(targets=[target if not isinstance(target, str)
                                else name_node(target, gast.Store())],
                       value=value, type_comment=None)


def assign_targets(targets, value):
    """``t = value`` for one target name, ``t1, t2 = value`` for several."""
    if len(targets) == 1:
        return assign(targets[0], value)
    return assign(gast.Tuple(elts=[name_node(t, gast.Store()) for t in targets],
                             ctx=gast.Store()), value)


def renamed(node, names):
    """A copy of ``node`` in which every Name whose id is a key of ``names`` reads the
    name it maps to instead."""
    node = copy.deepcopy(node)
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and n.id in names:
            n.id = names[n.id]
    return node


def substituted(node, values):
    """A copy of ``node`` in which every read of a name that is a key of ``values`` is a
    copy of the expression it maps to (a single-use temporary written into its reader:
    ``compiler/optimize/substitute.py``)."""
    return _Substitute(values).visit(copy.deepcopy(node))


class _Substitute(gast.NodeTransformer):
    def __init__(self, values):
        self.values = values

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.values:
            return copy.deepcopy(self.values[node.id])
        return node


def name_uses(items):
    """``(reads, stores)``: name -> how often the gast statements ``items`` read it
    (``x += e`` reads ``x`` too) and assign it; items that are not gast nodes (comments)
    are skipped."""
    reads, stores = {}, {}
    for item in items:
        if not isinstance(item, gast.AST):
            continue
        for node in gast.walk(item):
            if isinstance(node, gast.Name):
                counts = reads if isinstance(node.ctx, gast.Load) else stores
                counts[node.id] = counts.get(node.id, 0) + 1
            if isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
                reads[node.target.id] = reads.get(node.target.id, 0) + 1
    return reads, stores


class Comment:
    """A comment line in a generated statement list; ``origin``: the user's source line
    the statements after it come from (a location comment), None for another comment."""

    def __init__(self, text, origin=None):
        self.text = text
        self.origin = origin
