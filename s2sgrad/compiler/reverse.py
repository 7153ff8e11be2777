"""The reverse transform: straight-line SSA ops -> forward statements + adjoint statements.

``reverse(lowered, wrt, seeds)`` takes the LoweredFunction, the Var names to
differentiate and the output Var names that get a sensitivity of ones, and
gives a ``Reversed``: the adjoint blocks (one per differentiated source
line, in reverse order, each a list of gast statements) and, for each name
in ``wrt``, the name of its adjoint (None when no gradient reaches it).

Each active op's adjoint is its rule template with operands substituted:
``d[x] = e`` becomes ``dx = e`` for the first contribution and
``dx = dx + e`` after it; a template temporary gets a fresh name; a
contribution to an inactive operand is dropped with everything only it used.
"""
import copy

import gast

from ..errors import MissingRuleError
from .activity import active_names
from .ir import Const, Seq, Var, atom_vars


class Block:
    """The adjoint statements of one source line."""

    def __init__(self, origin):
        self.origin = origin
        self.statements = []


class Reversed:
    def __init__(self, blocks, grads, adjoint_names, active):
        self.blocks = blocks
        self.grads = grads
        self.adjoint_names = adjoint_names
        self.active = active


def _name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


class _Adjoints:
    """Adjoint variable names, and which of them hold a value yet."""

    def __init__(self, names):
        self.names = names
        self.of = {}
        self.defined = set()
        self.owned = set()   # adjoints that are fresh arrays the generated code may update in place

    def name(self, var):
        if var not in self.of:
            self.of[var] = self.names.adjoint(var)
        return self.of[var]

    def accumulate(self, var, expr, out):
        """Append ``dvar = expr`` (first contribution) or ``dvar = dvar + expr``."""
        target = self.name(var)
        if var in self.defined:
            expr = gast.BinOp(left=_name(target), op=gast.Add(), right=expr)
            self.owned.add(var)
        else:
            self.defined.add(var)
            self.owned.discard(var)
        out.append(gast.Assign(targets=[_name(target, gast.Store())], value=expr,
                               type_comment=None))


def reverse(lowered, wrt, seeds, names):
    active = active_names(lowered, wrt, seeds)
    adj = _Adjoints(names)
    blocks = []
    seed_block = Block(None)
    for s in seeds:
        if s in active:
            adj.accumulate(s, gast.Call(func=gast.Attribute(value=_name("rt"), attr="ones_like",
                                                            ctx=gast.Load()),
                                        args=[_name(s)], keywords=[]), seed_block.statements)
    if seed_block.statements:
        blocks.append(seed_block)
    for op in reversed(lowered.body):
        if not any(t in active and t in adj.defined for t in op.targets):
            continue
        block = Block(op.origin)
        if op.custom is not None:
            op.custom.adjoint(op, adj, active, names, block.statements)
        elif op.primitive == "getitem" and isinstance(op.args[0], Var):
            _getitem_adjoint(op, adj, active, block.statements)
        else:
            if op.rule is None:
                raise _missing_rule(op)
            if not op.rule.differentiable:
                continue  # carries no gradient (comparisons, shapes, a custom rule's forward)
            _instantiate(op, adj, active, names, block.statements)
        if blocks and blocks[-1].origin == op.origin:
            blocks[-1].statements.extend(block.statements)
        elif block.statements:
            blocks.append(block)
    grads = [adj.of.get(w) if w in adj.defined else None for w in wrt]
    return Reversed(blocks, grads, adj.of, active)


def _missing_rule(op):
    from ..rules.registry import _display_name
    name = op.primitive if isinstance(op.primitive, str) else _display_name(op.primitive)
    return MissingRuleError(
        f"no derivative rule for {name}, and a differentiated value flows through it",
        op.origin, name,
        "register one with @s2sgrad.custom_vjp on a wrapper function, or "
        "s2sgrad.rules.vjp(<function>) with a template (see s2sgrad/rules/numpy_rules.py); "
        "or wrap the value in ops.stop_gradient if no gradient should flow")


def _getitem_adjoint(op, adj, active, out):
    """``dx[index] += dy`` (basic indexing) or ``rt.add_at(dx, index, dy)`` (array indices)."""
    base = op.args[0].name
    if base not in active:
        return
    g = _name(adj.name(op.targets[0]))
    index_node = copy.deepcopy(op.expr.slice)
    basic = not atom_vars(op.args[1])
    if base not in adj.defined:
        out.append(gast.Assign(targets=[_name(adj.name(base), gast.Store())],
                               value=_call("np", "zeros_like", [_name(base)]), type_comment=None))
        adj.defined.add(base)
        adj.owned.add(base)
    elif base not in adj.owned:
        out.append(gast.Assign(targets=[_name(adj.name(base), gast.Store())],
                               value=_call("np", "copy", [_name(adj.name(base))]),
                               type_comment=None))
        adj.owned.add(base)
    if basic:
        target = gast.Subscript(value=_name(adj.name(base)), slice=index_node, ctx=gast.Store())
        out.append(gast.AugAssign(target=target, op=gast.Add(), value=g))
    else:
        out.append(gast.Expr(value=_call("rt", "add_at", [_name(adj.name(base)),
                                                          _index_expression(index_node), g])))


def _index_expression(node):
    """An index as a value: slices become slice(...) calls."""
    if isinstance(node, gast.Slice):
        parts = [p if p is not None else gast.Constant(value=None, kind=None)
                 for p in (node.lower, node.upper, node.step)]
        return gast.Call(func=_name("slice"), args=parts, keywords=[])
    if isinstance(node, gast.Tuple):
        return gast.Tuple(elts=[_index_expression(e) for e in node.elts], ctx=gast.Load())
    return node


def _call(module, fn, args):
    return gast.Call(func=gast.Attribute(value=_name(module), attr=fn, ctx=gast.Load()),
                     args=args, keywords=[])


def _instantiate(op, adj, active, names, out):
    """Append the rule template of ``op`` with its operands substituted."""
    rule = op.rule
    bound = rule.bind(op.args, op.kwargs)
    bindings = {rule.result: Var(op.targets[0])}
    for pname, value in bound.items():
        if isinstance(value, tuple):      # *args of the template
            value = Seq(tuple(value))
        elif not isinstance(value, (Var, Const, Seq)):
            value = Const(value)          # a default of the template
        bindings[pname] = value
    locals_ = {}
    statements = []
    for stmt in rule.statements:
        (tgt,) = stmt.targets
        if _is_adjoint(tgt):
            atom = bindings[tgt.slice.id]
            if not any(v in active for v in atom_vars(atom)):
                continue
            statements.append(("adjoint", atom, stmt.value))
        else:
            statements.append(("local", tgt.id, stmt.value))
    # keep only the template temporaries that a kept adjoint statement needs
    needed = set()
    for kind, key, value in reversed(statements):
        if kind == "adjoint" or key in needed:
            needed.update(n.id for n in gast.walk(value) if isinstance(n, gast.Name))
    for kind, key, value in statements:
        if kind == "local":
            if key not in needed:
                continue
            locals_[key] = names.fresh(key)
            expr = _substitute(value, bindings, locals_, adj)
            out.append(gast.Assign(targets=[_name(locals_[key], gast.Store())], value=expr,
                                   type_comment=None))
            continue
        expr = _substitute(value, bindings, locals_, adj)
        if isinstance(key, Var):
            adj.accumulate(key.name, expr, out)
        elif isinstance(key, Seq):
            parts = names.fresh("d_parts")
            out.append(gast.Assign(targets=[_name(parts, gast.Store())], value=expr,
                                   type_comment=None))
            for i, item in enumerate(key.items):
                if isinstance(item, Var) and item.name in active:
                    adj.accumulate(item.name, gast.Subscript(
                        value=_name(parts), slice=gast.Constant(value=i, kind=None),
                        ctx=gast.Load()), out)


def _is_adjoint(node):
    return (isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name)
            and node.value.id == "d" and isinstance(node.slice, gast.Name))


class _Substituter(gast.NodeTransformer):
    def __init__(self, bindings, locals_, adj):
        self.bindings = bindings
        self.locals = locals_
        self.adj = adj

    def visit_Subscript(self, node):
        if _is_adjoint(node):
            atom = self.bindings[node.slice.id]
            return _name(self.adj.name(atom.name))
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.locals:
            return _name(self.locals[node.id])
        if node.id in self.bindings:
            from .literals import literal_node
            atom = self.bindings[node.id]
            return _atom_node(atom, literal_node)
        return node


def _atom_node(atom, literal_node):
    if isinstance(atom, Var):
        return _name(atom.name)
    if isinstance(atom, Seq):
        return gast.Tuple(elts=[_atom_node(a, literal_node) for a in atom.items], ctx=gast.Load())
    return literal_node(atom.value)


def _substitute(expr, bindings, locals_, adj):
    return _Substituter(bindings, locals_, adj).visit(copy.deepcopy(expr))
