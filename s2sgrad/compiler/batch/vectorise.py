"""The vectorised form of vmap: loop-free array code batched by a leading axis.

Takes the user's function (parsed with gast), which parameters are mapped and every
parameter's per-example rank; gives the lines of a function computing all examples at
once, or raises ``NotVectorisable`` naming the first construct without a batching rule
(the caller then writes the loop form).  Every value is known as (text, batched, rank):
batched values carry the mapped axis first, ranks are per example.  The rules, like
JAX's batching rules:

- elementwise (operators, comparisons, numpy ufuncs, ``np.where``, ``np.clip``): a batched operand
  of lower rank than the result gets unit axes after the batch axis (``x[:, None]``),
  an unbatched one broadcasts as it is;
- reductions (``np.sum``, ``mean``, ``max``, ``min``, ``prod``, ``var``, ``std``):
  ``axis`` shifted past the batch axis, ``axis=None`` becomes the example's axes;
- ``@``, ``np.matmul`` and ``np.dot`` (ranks up to 2): ``a @ b`` where numpy's stacking
  batches it, ``np.einsum`` for a batched vector on the right or two batched vectors;
- ``np.array([a, b, ...])`` and ``np.stack`` of a list of items of one rank: stacked
  past the batch axis;
- ``.T``: the example's axes swapped (``np.swapaxes(x, 1, 2)``);
- indexing by numbers, slices, ``None``, ``...`` and integer arrays, ``x.shape[k]`` and
  ``len(x)`` (``batch/indexing.py``: an example's index becomes an index past the batch
  axis).

A Python int or float read from outside (a global, a closure value) is written as its
value, and the form is built again when the name is rebound.  Statements: an
assignment to a name, or of a tuple of expressions to as many names
(``c, s = np.cos(t), np.sin(t)``, kept one line: every value read before any is
assigned), and the final return.  Anything else (a loop, a branch, a mask, a call of
another function, an attribute) is not vectorised.
"""
import builtins
import copy
import inspect
import math

import numpy as np

import gast

from ..syntax.source import to_source as unparse
from . import indexing
from .indexing import INTS, NotVectorisable, is_int

REDUCTIONS = {np.sum: "sum", np.mean: "mean", np.max: "max", np.min: "min", np.prod: "prod",
              np.var: "var", np.std: "std", np.amax: "max", np.amin: "min"}
ELEMENTWISE = {np.where: "where", np.clip: "clip"}
MATMUL = {np.matmul: "matmul", np.dot: "dot"}
_BINOPS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**",
           gast.FloorDiv: "//", gast.Mod: "%"}
_COMPARE = {gast.Lt: "<", gast.LtE: "<=", gast.Gt: ">", gast.GtE: ">=", gast.Eq: "==",
            gast.NotEq: "!="}


def vectorise(fdef, namespace, ranks, mapped, comment, ints=(), helper=None):
    """The lines of the batched body of ``fdef`` (a gast FunctionDef), its names read
    from ``namespace`` (its globals and closure), ``ranks`` and ``mapped`` per parameter
    name, ``comment(node)`` the comment naming a statement's source line, ``ints`` the
    parameters holding integers (which may index), ``helper(fn)``: a user function it
    calls as (its FunctionDef, its namespace, its comment function), or None where it is
    not one to inline.  Gives (lines, [(text, batched, rank)] per returned value, whether
    a tuple is returned, the helper functions inlined)."""
    env = {name: (name, name in mapped, rank) for name, rank in ranks.items()}
    env[INTS] = set(ints)
    env[HELPERS] = helpers = Helpers(helper)
    returned = _statements(_body(fdef), env, namespace, comment)
    if returned is None:
        raise NotVectorisable("no return at the end")
    return (helpers.lines, *returned, helpers.inlined)


#: env's key for the helper functions' inliner (``Helpers``)
HELPERS = object()
#: the deepest chain of helpers inlined (one calling another...)
HELPER_DEPTH = 8


class Helpers:
    """How a call of a user function is read (``helper``), the ones inlined so far, and a
    count that names each inlining's locals apart."""

    def __init__(self, helper):
        self.helper, self.inlined, self.count, self.depth = helper, [], 0, 0
        self.lines = []         # the lines written so far (a helper's go where it is called)


def _body(fdef):
    body = fdef.body
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        body = body[1:]                       # the docstring
    return body


def _statements(body, env, namespace, comment):
    """Appends the lines of ``body`` (assignments, then a return) to the lines written so
    far (``Helpers.lines``); gives the return's ([(text, batched, rank)], whether a
    tuple), or None without a return."""
    lines, returned = env[HELPERS].lines, None
    for stmt in body:
        if returned is not None:
            raise NotVectorisable("a statement after return")
        assigned = _assigned(stmt)
        if assigned is not None:        # x = v, or c, s = a, b: one line, as written
            targets, nodes = assigned
            values = [_expr(v, env, namespace) for v in nodes]
            int_items = [is_int(v, env, namespace) for v in nodes]
            lines.append(comment(stmt))
            lines.append(f"{', '.join(targets)} = {', '.join(bare(v[0]) for v in values)}")
            ints = env[INTS]
            for target, value, int_item in zip(targets, values, int_items):
                env[target] = (target, value[1], value[2])
                (ints.add if int_item else ints.discard)(target)
        elif isinstance(stmt, gast.Return) and stmt.value is not None:
            tuple_ = isinstance(stmt.value, gast.Tuple)
            items = stmt.value.elts if tuple_ else [stmt.value]
            values = [_expr(item, env, namespace) for item in items]
            lines.append(comment(stmt))
            returned = values, tuple_
        else:
            raise NotVectorisable(f"the statement {unparse(stmt).strip()!r}")
    return returned


def _assigned(stmt):
    """(the names, the value nodes) of ``x = v`` or of a tuple of expressions assigned to
    as many distinct names (``c, s = np.cos(t), np.sin(t)``: every value read before any
    is assigned); None for any other statement."""
    if not isinstance(stmt, gast.Assign) or len(stmt.targets) != 1:
        return None
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, gast.Name):
        return [target.id], [value]
    if isinstance(target, (gast.Tuple, gast.List)) and \
            isinstance(value, (gast.Tuple, gast.List)) and \
            len(target.elts) == len(value.elts) and \
            all(isinstance(t, gast.Name) for t in target.elts) and \
            len({t.id for t in target.elts}) == len(target.elts):
        return [t.id for t in target.elts], list(value.elts)
    return None


def _inlined(fn, node, env, namespace, args):
    """A call of the user function ``fn`` (module doc) with ``args`` (the arguments'
    (text, batched, rank)): its body's lines appended, its locals renamed apart
    (``<name>_<k>_<local>``), its parameters bound to the arguments; gives its returned
    value (text, batched, rank)."""
    helpers = env[HELPERS]
    found = helpers.helper(fn) if helpers.helper is not None else None
    what = unparse(node.func).strip()
    if found is None:
        raise NotVectorisable(f"the call {what}(...)")
    fdef, inner_namespace, comment = found
    params = [a.id for a in fdef.args.args]
    if node.keywords or fdef.args.vararg or fdef.args.kwonlyargs or fdef.args.kwarg or \
            fdef.args.defaults or len(node.args) != len(params) or \
            any(isinstance(n, (gast.For, gast.While, gast.FunctionDef, gast.Lambda))
                for stmt in fdef.body for n in gast.walk(stmt)) or \
            helpers.depth >= HELPER_DEPTH:
        raise NotVectorisable(f"the call {what}(...) (a helper with loops, defaults, "
                              f"keywords or nested functions)")
    arg_ints = [is_int(a, env, namespace) for a in node.args]
    helpers.count += 1
    prefix = f"{fdef.name}_{helpers.count}_"
    local = set(params) | {n.id for n in gast.walk(fdef) if isinstance(n, gast.Name)
                           and isinstance(n.ctx, gast.Store)}
    renamed = _renamed(fdef, local, prefix)
    inner = {INTS: set(), HELPERS: helpers}
    for param, value, int_arg in zip(params, args, arg_ints):
        name = prefix + param
        if value[0].isidentifier():
            inner[name] = value               # a name: read as it is
        else:
            helpers.lines.append(f"{name} = {bare(value[0])}")
            inner[name] = (name, value[1], value[2])
        if int_arg:
            inner[INTS].add(name)
    helpers.depth += 1
    try:
        returned = _statements(_body(renamed), inner, inner_namespace, comment)
    finally:
        helpers.depth -= 1
    if returned is None or returned[1]:
        raise NotVectorisable(f"the call {what}(...) (a helper returning a tuple or nothing)")
    helpers.inlined.append(fn)
    return returned[0][0]


def _renamed(fdef, local, prefix):
    """A copy of ``fdef`` whose names in ``local`` (its parameters among them) are
    prefixed."""
    fdef = copy.deepcopy(fdef)
    for n in gast.walk(fdef):
        if isinstance(n, gast.Name) and n.id in local:
            n.id = prefix + n.id
    return fdef


def _expr(node, env, namespace):
    """(text, batched, rank) of expression ``node``."""
    if isinstance(node, gast.Name):
        if node.id in env:
            return env[node.id]
        value = namespace.get(node.id)
        if type(value) is int or type(value) is float and math.isfinite(value):
            # a number read from outside, written as it is now (the vmap builds again
            # once the name is rebound: pipeline_vmap's reads)
            return (repr(value) if value >= 0 else f"({value!r})"), False, 0
        raise NotVectorisable(f"the name {node.id!r} read from outside")
    if isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool):
        return repr(node.value), False, 0
    if isinstance(node, gast.BinOp) and type(node.op) in _BINOPS:
        left, right = _expr(node.left, env, namespace), _expr(node.right, env, namespace)
        return _elementwise(f"({{}} {_BINOPS[type(node.op)]} {{}})", [left, right])
    if isinstance(node, gast.BinOp) and isinstance(node.op, gast.MatMult):
        return _matmul(_expr(node.left, env, namespace), _expr(node.right, env, namespace))
    if isinstance(node, gast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        left = _expr(node.left, env, namespace)
        right = _expr(node.comparators[0], env, namespace)
        return _elementwise(f"({{}} {_COMPARE[type(node.ops[0])]} {{}})", [left, right])
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        text, batched, rank = _expr(node.operand, env, namespace)
        return f"({'-' if isinstance(node.op, gast.USub) else '+'}{text})", batched, rank
    if isinstance(node, gast.Attribute) and node.attr == "T":
        return _transpose(_expr(node.value, env, namespace))
    if isinstance(node, gast.Subscript):
        return indexing.size(node, lambda n: _expr(n, env, namespace)) or \
            indexing.subscript(node, env, namespace, lambda n: _expr(n, env, namespace),
                               _padded)
    if isinstance(node, gast.Call):
        return _call(node, env, namespace)
    raise NotVectorisable(f"the expression {unparse(node).strip()!r}")


def bare(text):
    """``text`` without the parentheses around all of it."""
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1]
    return text


def _balanced(text):
    depth = 0
    for ch in text:
        depth += (ch in "([{") - (ch in ")]}")
        if depth < 0:
            return False
    return depth == 0


def _resolve(node, namespace):
    """The object a called name or dotted name (``np.exp``) refers to, or None."""
    if isinstance(node, gast.Name):
        return namespace.get(node.id, getattr(builtins, node.id, None))
    if isinstance(node, gast.Attribute):
        owner = _resolve(node.value, namespace)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def _call(node, env, namespace):
    fn = _resolve(node.func, namespace)
    what = unparse(node.func).strip()
    if fn is None or any(isinstance(a, gast.Starred) for a in node.args):
        raise NotVectorisable(f"the call {what}(...)")
    if fn in (np.array, np.stack) and node.args and \
            isinstance(node.args[0], (gast.List, gast.Tuple)):
        return _stacked(fn, node, env, namespace)
    args = [_expr(a, env, namespace) for a in node.args]
    keywords = {k.arg: k.value for k in node.keywords}
    if isinstance(fn, np.ufunc) and not keywords and len(args) == fn.nin:
        name = getattr(np, fn.__name__, None) is fn and fn.__name__
        if not name:
            raise NotVectorisable(f"the call {what}(...)")
        return _elementwise(f"np.{name}(" + ", ".join(["{}"] * len(args)) + ")", args)
    if fn in ELEMENTWISE and not keywords and len(args) == 3:
        return _elementwise(f"np.{ELEMENTWISE[fn]}({{}}, {{}}, {{}})", args)
    if fn in MATMUL and not keywords and len(args) == 2:
        if fn is np.dot and max(a[2] for a in args) > 2:
            raise NotVectorisable("np.dot of arrays of rank over 2")
        return _matmul(*args)
    if fn in REDUCTIONS and len(args) == 2 and "axis" not in keywords:
        keywords["axis"] = node.args[1]            # np.sum(x, 1)
        args = args[:1]
    if fn in REDUCTIONS and len(args) == 1:
        return _reduce(REDUCTIONS[fn], args[0], keywords)
    if fn is np.linalg.norm and len(args) == 1 and not keywords and args[0][2] == 1:
        text, batched, _ = args[0]                 # a vector's norm: over its own axis
        if not batched:
            return f"np.linalg.norm({bare(text)})", False, 0
        # (numpy's own sum for an axis; spelled with the operations forward mode batches)
        return f"np.sqrt(np.sum({text} ** 2, axis=-1))", True, 0
    if fn is np.cross and len(args) == 2 and not keywords and all(a[2] == 1 for a in args):
        return _elementwise("np.cross({}, {})", args)     # vectors: along the last axis
    if fn is len and len(args) == 1 and not keywords:
        return indexing.length(node.args[0], lambda n: _expr(n, env, namespace))
    if fn is np.arange and not keywords and not any(a[1] or a[2] for a in args):
        return f"np.arange({', '.join(bare(a[0]) for a in args)})", False, 1
    if inspect.isfunction(fn):
        return _inlined(fn, node, env, namespace, args)     # a user function: its body
    raise NotVectorisable(f"the call {what}(...)")


def _stacked(fn, node, env, namespace):
    """``np.array([a, b, ...])`` or ``np.stack([a, b, ...], axis=k)`` of items of one rank
    (an example's vector made of its components): stacked past the batch axis, an item
    not batched broadcast to the others first (times ``np.ones_like`` of one that is)."""
    items = [_expr(e, env, namespace) for e in node.args[0].elts]
    keywords = {k.arg: k.value for k in node.keywords}
    axis = keywords.pop("axis", node.args[1] if len(node.args) > 1 else None)
    if fn is np.array and (axis is not None or len(node.args) > 1) or keywords or \
            len(node.args) > 2 or not items:
        raise NotVectorisable(f"the call {unparse(node).strip()!r}")
    if axis is None:
        axis = 0
    elif isinstance(axis, gast.Constant) and type(axis.value) is int:
        axis = axis.value
    elif isinstance(axis, gast.UnaryOp) and isinstance(axis.op, gast.USub) and \
            isinstance(axis.operand, gast.Constant) and type(axis.operand.value) is int:
        axis = -axis.operand.value
    else:
        raise NotVectorisable(f"the axis of {unparse(node).strip()!r}")
    rank = items[0][2]
    if any(i[2] != rank for i in items) or not -rank - 1 <= axis <= rank:
        raise NotVectorisable(f"the call {unparse(node).strip()!r} (items of several ranks)")
    texts = ", ".join(bare(i[0]) for i in items)
    if not any(i[1] for i in items):
        if fn is np.array:
            return f"np.array([{texts}])", False, rank + 1
        return f"np.stack([{texts}], axis={axis})", False, rank + 1
    # an item not batched times ones of a batched one's shape: the same numbers, in the
    # operations every derivative form batches
    ref = min((bare(i[0]) for i in items if i[1]), key=len)
    texts = ", ".join(bare(i[0]) if i[1] else f"{i[0]} * np.ones_like({ref})" for i in items)
    return f"np.stack([{texts}], axis={axis + 1 if axis >= 0 else axis})", True, rank + 1


def _padded(value, rank):
    """A batched value's text with unit axes after the batch axis up to ``rank``."""
    text, batched, own = value
    if not batched or own == rank:
        return text
    return f"{text}[:{', None' * (rank - own)}]"


def _elementwise(template, args):
    rank = max(a[2] for a in args)
    batched = any(a[1] for a in args)
    texts = [_padded(a, rank) for a in args]
    if not template.startswith("("):               # a call: its arguments need no parentheses
        texts = [bare(t) for t in texts]
    return template.format(*texts), batched, rank


def _matmul(a, b):
    (ta, ba, ra), (tb, bb, rb) = a, b
    if ra == 0 or rb == 0:
        raise NotVectorisable("a matrix product of a number")
    rank = ra + rb - 2 if ra <= 2 and rb <= 2 else max(ra, rb)
    if not bb or (ba and ra >= 2 and rb >= 2) or (not ba and rb >= 2):
        return f"({ta} @ {tb})", ba or bb, rank
    if not ba:                       # a unbatched, b a batched vector: (b @ a.T)
        return (f"({tb} @ {ta}.T)" if ra == 2 else f"({tb} @ {ta})"), True, rank
    spec = {(1, 1): "ni,ni->n", (2, 1): "nij,nj->ni", (1, 2): "ni,nij->nj"}.get((ra, rb))
    if spec is None:
        raise NotVectorisable("a matrix product of batched arrays of rank over 2")
    return f"np.einsum({spec!r}, {ta}, {tb})", True, rank


def _transpose(value):
    text, batched, rank = value
    if not batched:
        return f"{text}.T", False, rank
    if rank <= 1:
        return text, True, rank
    if rank == 2:
        return f"np.swapaxes({text}, 1, 2)", True, rank
    return f"np.transpose({text}, {(0, *range(rank, 0, -1))})", True, rank


def _reduce(name, value, keywords):
    text, batched, rank = value
    extra = ""
    for key, node in keywords.items():
        if key == "axis" or not isinstance(node, gast.Constant):
            continue
        if key not in ("keepdims", "ddof"):
            raise NotVectorisable(f"np.{name}(..., {key}=...)")
        extra += f", {key}={node.value!r}"
    axis = keywords.get("axis")
    keep = "keepdims=True" in extra
    if axis is None or isinstance(axis, gast.Constant) and axis.value is None:
        axes = tuple(range(rank))
    else:
        try:
            given = gast.literal_eval(axis)
        except ValueError:
            raise NotVectorisable(f"np.{name} with an axis computed at run time") from None
        axes = given if isinstance(given, tuple) else (given,)
        if not all(isinstance(a, int) and -rank <= a < rank for a in axes):
            raise NotVectorisable(f"np.{name} with axis={given!r}")
    out_rank = rank if keep else rank - len(axes)
    if not batched:
        axis_text = "" if axis is None else f", axis={axes!r}"
        return f"np.{name}({bare(text)}{axis_text}{extra})", False, out_rank
    shifted = tuple(a + 1 if a >= 0 else a for a in axes)
    return f"np.{name}({bare(text)}, axis={shifted!r}{extra})", True, out_rank
