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
