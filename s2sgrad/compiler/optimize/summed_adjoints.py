"""An einsum operand's adjoint that is summed over some of its axes, contracted summed;
one adjoint of two that is read, contracted alone.

``summed_adjoints(statements, simple, fresh)`` takes the straight-line statements of an
adjoint sweep (gast statements and ``Comment``s), ``simple(name)`` (True for an array known
float64 with no dimension that may be 1) and ``fresh(base)`` (a new name); it gives the
statements with ``rt.einsum_adjoints(g, (spec, a, b))`` (which contracts ``g`` once per
operand) written as one ``rt.einsum`` per adjoint read:

- read in place, ``rt.einsum_adjoints(g, (spec, a, b))[k]``: that operand's contraction
  only;
- read through a sum, ``rt.sum(<adjoint k>, axes, keepdims)``: the contraction with the
  summed letters left out of its result, ``g`` summed first over those the other operand
  has not (``"mij,ijk->mik"`` then a sum over ``m`` is ``"ij,ijk->ik"`` of
  ``rt.sum(g, 0, False)``: a pass over ``g`` and a small contraction instead of a large
  one and a pass over it);
- named, ``parts = rt.einsum_adjoints(...)`` read as ``parts[k]`` with one read summed:
  each adjoint read is made where ``parts`` was (``g`` may change after), as
  ``d_<operand>`` or ``d_<operand>_summed``.

GradBench gmm's centred points ``x[:, None, :] - mu[None, :, :]`` are contracted with
the factors; ``mu``'s adjoint is their adjoint summed over the points (0.27 ms of
contraction and a 0.06 ms sum, now a 0.06 ms sum and a 2,500-number contraction).

Where it applies: ``spec`` explicit with two terms, no ``...``, no letter twice in a
term, no letter in one term only; both operands ``simple`` (an axis of size 1 would be
summed back by ``einsum_adjoints``, which the contraction does not do); the sum's axes
and keepdims constants; ``parts`` read only by index.  Loops and branches are left alone.
"""
import copy

import gast

from ..syntax.nodes import Comment, name_node, name_uses

#: helpers of ``rt`` that write into their first argument
_WRITES_FIRST = frozenset({"add_into", "add_matmul_left", "add_matmul_right", "add_dot_left",
                           "add_dot_right", "copyto", "put", "place", "fill_diagonal"})
#: array methods that write into the array
_METHODS_WRITING = frozenset({"fill", "sort", "put", "itemset", "resize", "partition"})


def summed_adjoints(statements, simple, fresh, keep=()):
    """``statements`` with the summed einsum adjoints contracted summed (module doc);
    ``keep``: the names read after them (returned)."""
    inline = _Inline(simple)
    statements = [inline.visit(copy.deepcopy(s)) if not isinstance(s, Comment) and any(
        _inline_part(n, simple) is not None for n in gast.walk(s)) else s for s in statements]
    return _named(statements, simple, fresh, keep)


def _named(statements, simple, fresh, keep):
    """The named form: ``parts = rt.einsum_adjoints(...)`` read as ``parts[k]``."""
    out = []
    for index, item in enumerate(statements):
        after = _unaliased(item, statements[index + 1:], keep)
        plan = _plan(item, after, simple) if after is not None else None
        if plan is None:
            out.append(item)
            continue
        parts, g, spec, operands = plan
        head = []
        if not isinstance(g, gast.Name):       # read by every contraction: named once
            name = fresh("g")
            head.append(_assign(name, g))
            g = name_node(name)
        rewriter = _Rewriter(parts, g, spec, operands, fresh)
        rest = [rewriter.visit(copy.deepcopy(s)) if not isinstance(s, Comment) and
                any(True for _ in _loads(s, parts)) else s for s in after]
        out += head + rewriter.made + rest
        return _named(out, simple, fresh, keep)     # the next such call, if any
    return out


def _unaliased(item, after, keep):
    """``after`` with each ``v = parts[k]`` (``parts`` assigned by ``item``, ``v`` once and
    not in ``keep``) dropped and ``v`` read as ``parts[k]`` (the same array); None when
    ``parts`` is assigned again."""
    if not (isinstance(item, gast.Assign) and len(item.targets) == 1
            and isinstance(item.targets[0], gast.Name)):
        return None
    parts = item.targets[0].id
    stores = name_uses(after)[1]
    aliases = {}
    for statement in after:
        if isinstance(statement, gast.Assign) and len(statement.targets) == 1 and \
                isinstance(statement.targets[0], gast.Name) and \
                _index(statement.value, parts) is not None and \
                stores.get(statement.targets[0].id) == 1 and \
                statement.targets[0].id not in keep:
            aliases[statement.targets[0].id] = statement.value.slice.value
    if stores.get(parts):
        return None
    if not aliases:
        return after

    class Reads(gast.NodeTransformer):
        def visit_Name(self, node):
            if isinstance(node.ctx, gast.Load) and node.id in aliases:
                return gast.Subscript(value=name_node(parts), slice=gast.Constant(
                    aliases[node.id], None), ctx=gast.Load())
            return node

    return [s if isinstance(s, Comment) else Reads().visit(copy.deepcopy(s)) for s in after
            if not (isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)
                    and s.targets[0].id in aliases)]


def _written(statement):
    """The names ``statement`` writes into in place (``a[i] = v``, ``a += v``,
    ``rt.add_into(a, ...)``, ``out=a``)."""
    written = set()
    for node in gast.walk(statement):
        targets = []
        if isinstance(node, gast.AugAssign):
            targets = [node.target]
        elif isinstance(node, gast.Assign):
            targets = [t for t in node.targets if not isinstance(t, gast.Name)]
        elif isinstance(node, gast.Call):
            if isinstance(node.func, gast.Attribute) and node.func.attr in _WRITES_FIRST \
                    and node.args:
                targets = [node.args[0]]
            if isinstance(node.func, gast.Attribute) and node.func.attr in _METHODS_WRITING:
                targets.append(node.func.value)      # v.fill(0), v.sort()
            targets += [k.value for k in node.keywords if k.arg == "out"]
        for target in targets:
            while isinstance(target, (gast.Subscript, gast.Attribute, gast.Starred)):
                target = target.value
            written |= {n.id for n in gast.walk(target) if isinstance(n, gast.Name)}
    return written


def _plan(item, after, simple):
    """``(parts name, g, (terms, output), operand names)`` for a call this pass
    rewrites, else None."""
    if not (isinstance(item, gast.Assign) and len(item.targets) == 1
            and isinstance(item.targets[0], gast.Name)):
        return None
    found = _call_spec(item.value, simple)
    if found is None:
        return None
    call, terms, output, operands = found
    parts = item.targets[0].id
    summed = set()
    for statement in after:
        if isinstance(statement, Comment):
            continue
        for node in _loads(statement, parts):
            if node is None:
                return None             # read other than parts[k]
        summed |= {_sum_of(n, parts)[0] for n in _summed_reads(statement, parts)}
    if not summed or _written_into(after, parts, summed):
        return None
    return parts, call.args[0], (terms, output), operands


def _written_into(after, parts, summed):
    """True when a statement of ``after`` may write in place into ``parts`` or an array
    of ``parts[k]`` for ``k`` in ``summed`` (its sums are made where the adjoints were):
    through any name assigned from an expression that reads it, transitively."""
    sharing, grown = {parts}, True
    while grown:
        grown = False
        for statement in after:
            if isinstance(statement, gast.Assign) and len(statement.targets) == 1 and \
                    isinstance(statement.targets[0], gast.Name) and \
                    statement.targets[0].id not in sharing and _reads_any(
                        statement.value, parts, summed, sharing - {parts}):
                sharing.add(statement.targets[0].id)
                grown = True
    return any(_written(s) & sharing for s in after if not isinstance(s, Comment))


def _reads_any(node, parts, summed, names):
    return any(_index(n, parts) in summed or (isinstance(n, gast.Name) and n.id in names)
               for n in gast.walk(node))


def _parse(spec):
    """``([term a, term b], output)`` of a simple explicit spec, else None."""
    spec = spec.replace(" ", "")
    if "->" not in spec or "." in spec:
        return None
    inputs, output = spec.split("->")
    terms = inputs.split(",")
    if len(terms) != 2 or any(len(set(t)) != len(t) for t in terms + [output]):
        return None
    a, b = terms
    if (set(a) ^ set(b)) - set(output) or set(output) - set(a + b):
        return None
    return terms, output


def _is_rt(node, name):
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
        node.func.attr == name and isinstance(node.func.value, gast.Name) and \
        node.func.value.id == "rt"


def _index(node, parts):
    """k for ``parts[k]`` (a constant 1 or 2), else None."""
    if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
            node.value.id == parts and isinstance(node.slice, gast.Constant) and \
            node.slice.value in (1, 2) and type(node.slice.value) is int:
        return node.slice.value
    return None


def _loads(statement, parts):
    """Each read of ``parts`` in ``statement``: its ``parts[k]`` node, or None for a read of
    another form (a store counts as one)."""
    indexed = set()
    for node in gast.walk(statement):
        if _index(node, parts) is not None:
            indexed.add(id(node.value))
            yield node
    for node in gast.walk(statement):
        if isinstance(node, gast.Name) and node.id == parts and id(node) not in indexed:
            yield None


def _summed_reads(statement, parts):
    for node in gast.walk(statement):
        if _sum_of(node, parts) is not None:
            yield node


def _sum_of(node, parts):
    """``(k, axes, keepdims)`` for ``rt.sum(parts[k], axes, keepdims)`` with constant axes
    and keepdims, else None."""
    if not (_is_rt(node, "sum") and len(node.args) == 3 and not node.keywords):
        return None
    k = _index(node.args[0], parts)
    axes = _constant_axes(node.args[1], node.args[2])
    return None if k is None or axes is None else (k,) + axes


def _assign(name, value):
    return gast.Assign(targets=[name_node(name, gast.Store())], value=value, type_comment=None)


def _rt_call(name, args):
    return gast.Call(func=gast.Attribute(value=name_node("rt"), attr=name, ctx=gast.Load()),
                     args=args, keywords=[])


def contraction(terms, output, operands, g, k, summed=()):
    """The expression of operand k's adjoint (1 or 2) summed over its axes ``summed``: ``g``
    summed first over the letters the other operand has not."""
    target, other_term = terms[k - 1], terms[2 - k]
    other = operands[2 - k]
    letters = {target[a] for a in summed}
    pre = sorted(output.index(c) for c in letters if c not in other_term)
    if pre:
        axes = gast.Constant(pre[0], None) if len(pre) == 1 else \
            gast.Tuple([gast.Constant(a, None) for a in pre], gast.Load())
        g = _rt_call("sum", [g, axes, gast.Constant(False, None)])
        output = "".join(c for c in output if c not in letters or c in other_term)
    kept = "".join(c for c in target if c not in letters)
    spec = f"{output},{other_term}->{kept}"
    return _rt_call("einsum", [gast.Constant(spec, None), g, name_node(other)])


class _Inline(gast.NodeTransformer):
    """``rt.einsum_adjoints(g, (spec, a, b))[k]`` read in place (one adjoint of the two),
    summed or not: the one contraction."""

    def __init__(self, simple):
        self.simple = simple

    def visit_Call(self, node):
        found = _sum_of_inline(node, self.simple)
        if found is None:
            return self.generic_visit(node)
        (call, terms, output, operands, k), axes, keepdims = found
        rank = len(terms[k - 1])
        if not all(-rank <= a < rank for a in axes):
            return self.generic_visit(node)
        axes = tuple(sorted({a % rank for a in axes}))
        value = contraction(terms, output, operands, self.visit(call.args[0]), k, axes)
        return _kept_dims(value, axes, rank) if keepdims else value

    def visit_Subscript(self, node):
        found = _inline_part(node, self.simple)
        if found is None:
            return self.generic_visit(node)
        call, terms, output, operands, k = found
        return contraction(terms, output, operands, self.visit(call.args[0]), k)


def _inline_part(node, simple):
    """``(call, terms, output, operand names, k)`` for ``rt.einsum_adjoints(g, (spec, a,
    b))[k]`` of a simple spec and operands, else None."""
    if not (isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant)
            and type(node.slice.value) is int and node.slice.value in (1, 2)):
        return None
    parsed = _call_spec(node.value, simple)
    return None if parsed is None else parsed + (node.slice.value,)


def _call_spec(call, simple):
    """``(call, terms, output, operand names)`` for ``rt.einsum_adjoints(g, (spec, a, b))``
    of a simple spec and operands, else None."""
    if not (_is_rt(call, "einsum_adjoints") and len(call.args) == 2 and not call.keywords):
        return None
    operands = call.args[1]
    if not isinstance(operands, gast.Tuple) or len(operands.elts) != 3:
        return None
    spec, a, b = operands.elts
    if not (isinstance(spec, gast.Constant) and isinstance(spec.value, str)
            and all(isinstance(x, gast.Name) and simple(x.id) for x in (a, b))):
        return None
    parsed = _parse(spec.value)
    return None if parsed is None else (call, parsed[0], parsed[1], (a.id, b.id))


def _sum_of_inline(node, simple):
    """``(_inline_part's, axes, keepdims)`` for ``rt.sum(<an inline adjoint>, axes,
    keepdims)`` with constant axes and keepdims, else None."""
    if not (_is_rt(node, "sum") and len(node.args) == 3 and not node.keywords):
        return None
    part = _inline_part(node.args[0], simple)
    axes = _constant_axes(node.args[1], node.args[2])
    return None if part is None or axes is None else (part,) + axes


def _constant_axes(axes, keepdims):
    """``(axes tuple, keepdims)`` of constant arguments, else None."""
    if not isinstance(keepdims, gast.Constant) or type(keepdims.value) is not bool:
        return None
    if isinstance(axes, gast.Constant) and type(axes.value) is int:
        return (axes.value,), keepdims.value
    if isinstance(axes, gast.Tuple) and axes.elts and all(
            isinstance(e, gast.Constant) and type(e.value) is int for e in axes.elts):
        return tuple(e.value for e in axes.elts), keepdims.value
    return None


def _kept_dims(value, axes, rank):
    """``value[None, :, ...]``: the summed ``axes`` put back as size 1."""
    return gast.Subscript(value=value, slice=gast.Tuple(
        [gast.Constant(None, None) if a in axes else gast.Slice(None, None, None)
         for a in range(rank)], gast.Load()), ctx=gast.Load())


class _Rewriter(gast.NodeTransformer):
    """Replaces ``rt.sum(parts[k], ...)`` by the name of the summed contraction and
    ``parts[k]`` by the name of operand k's adjoint, each made once, in ``made``, where
    the adjoints were made."""

    def __init__(self, parts, g, spec, operands, fresh):
        self.parts, self.g, (self.terms, self.output) = parts, g, spec
        self.operands, self.fresh = operands, fresh
        self.made, self.names = [], {}

    def contraction(self, k, summed=()):
        return contraction(self.terms, self.output, self.operands, self.g, k, summed)

    def visit_Call(self, node):
        found = _sum_of(node, self.parts)
        if found is None:
            return self.generic_visit(node)
        k, axes, keepdims = found
        rank = len(self.terms[k - 1])
        axes = tuple(sorted({a % rank for a in axes})) if all(-rank <= a < rank for a in axes) \
            else None
        if axes is None:
            return self.generic_visit(node)
        key = (k, axes)        # computed where the adjoints were: g may change after
        if key not in self.names:
            self.names[key] = self.fresh(f"d_{self.operands[k - 1]}_summed")
            self.made.append(_assign(self.names[key], self.contraction(k, axes)))
        value = name_node(self.names[key])
        return _kept_dims(value, axes, rank) if keepdims else value

    def visit_Subscript(self, node):
        k = _index(node, self.parts)
        if k is None:
            return self.generic_visit(node)
        if k not in self.names:
            self.names[k] = self.fresh(f"d_{self.operands[k - 1]}")
            self.made.append(_assign(self.names[k], self.contraction(k)))
        return name_node(self.names[k])
