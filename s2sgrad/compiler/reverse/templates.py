"""Rule templates instantiated at one operation: the adjoint statements of a primitive.

``instantiate(op, adj, active, names, out, ndims, shapes)`` substitutes the
operation's operands into its rule's ``d[x] = ...`` template, drops what an
inactive operand would need, folds constant arithmetic and drops
``rt.unbroadcast`` to an operand of the result's shape (``compiler/analysis/shapes.py``); the
adjoints of a product of matrices are written ``g @ b.T`` and ``a.T @ g``.  Indexing (``x[i]``) has its own adjoint:
``dx[i] += g`` for basic indices, ``rt.add_at`` for index arrays.
"""
import copy
import inspect

import gast

from ...errors import MissingRuleError
from ...rules.registry import display_name, is_adjoint_subscript
from ..analysis.shapes import Dim
from ..front.literals import atom_node
from ..ir import Const, Seq, Var, atom_vars
from ..syntax.imports import reference
from ..syntax.nodes import call, name_node


def missing_rule(op):
    """The MissingRuleError for an active ``op`` whose primitive has no rule that covers
    the call (naming the user's line and how to give it one)."""
    name = op.primitive if isinstance(op.primitive, str) else display_name(op.primitive)
    detail = op.bind_error
    return MissingRuleError(
        f"no derivative rule for {name}" + (f" called this way ({detail})" if detail else "")
        + ", and a differentiated value flows through it",
        op.origin, name,
        "register one with @s2sgrad.custom_vjp on a wrapper function, or "
        "s2sgrad.rules.vjp(<function>) with a template (see s2sgrad/rules/numpy_rules.py); "
        "or wrap the value in ops.stop_gradient if no gradient should flow")


def getitem_adjoint(op, adj, active, out, ndims=None):
    """``dx[index] += dy`` (basic indexing of an element), ``rt.add_into(dx[index], dy)``
    (basic indexing of a view: ``ndims`` says the read has rank 1 or more; in place, where
    ``dx[j] += dy`` makes Numba write the row back through its general setitem) or
    ``rt.add_at(dx, index, dy)`` (array indices).  ``dx`` is written in place: zeros if
    it holds nothing yet, as it is if the generated code owns it or made it by arithmetic
    (``Adjoints.writable``), else a copy first."""
    base = op.args[0].name
    if base not in active:
        return
    g = name_node(adj.name(op.targets[0]))
    index_node = copy.deepcopy(op.expr.slice)
    basic = op.basic_index
    if base not in adj.defined:
        out.append(gast.Assign(targets=[name_node(adj.name(base), gast.Store())],
                               value=call("np", "zeros_like", [name_node(base)]), type_comment=None))
        adj.defined.add(base)
        adj.owned.add(base)
    elif (ndims or {}).get(base, 0) > 0:
        adj.writable(base, out)   # as it is where no other name holds it, else a copy
    elif base not in adj.owned:
        adj.own(base, out)        # a numpy scalar from arithmetic takes no item writes
    if basic and (ndims or {}).get(op.targets[0], 0) > 0:
        view = gast.Subscript(value=name_node(adj.name(base)), slice=index_node, ctx=gast.Load())
        out.append(gast.Expr(value=call("rt", "add_into", [view, g])))
    elif basic:
        target = gast.Subscript(value=name_node(adj.name(base)), slice=index_node, ctx=gast.Store())
        out.append(gast.AugAssign(target=target, op=gast.Add(), value=g))
    else:
        out.append(gast.Expr(value=call("rt", "add_at", [name_node(adj.name(base)),
                                                          index_expression(index_node), g])))


def index_expression(node):
    """An index as a value: slices become slice(...) calls."""
    if isinstance(node, gast.Slice):
        parts = [p if p is not None else gast.Constant(value=None, kind=None)
                 for p in (node.lower, node.upper, node.step)]
        return gast.Call(func=name_node("slice"), args=parts, keywords=[])
    if isinstance(node, gast.Tuple):
        return gast.Tuple(elts=[index_expression(e) for e in node.elts], ctx=gast.Load())
    return node


def instantiate(op, adj, active, names, out, ndims=None, shapes=None,
                captured=None):
    """Append the rule template of ``op`` with its operands substituted.

    Where an operand ``x`` is known to have the shape of the result (``ndims``: ranks,
    ``shapes``: symbolic shapes; both scalars, or provably equal shapes), the template's
    ``rt.unbroadcast(e, x)`` is just ``e``: in an elementwise rule ``e`` has the shape of
    the result, so nothing was broadcast.  ``captured`` (``literals.Captured``): how
    constants with no literal form are read."""
    rule = op.rule
    bound = rule.bind(op.args, op.kwargs)
    bindings = {rule.result: Var(op.targets[0])}
    for pname, value in bound.items():
        if rule.signature.parameters[pname].kind is inspect.Parameter.VAR_POSITIONAL:
            value = Seq(tuple(value))     # *args of the template
        elif not isinstance(value, (Var, Const, Seq)):
            value = Const(value)          # a default of the template
        bindings[pname] = value
    for pname in sorted(rule.refused):
        if any(v in active for v in atom_vars(bindings[pname])):
            name = display_name(op.primitive)
            raise MissingRuleError(
                f"no derivative rule for {name} with respect to its argument `{pname}` (the "
                "rule knows the other arguments' derivatives only), and a differentiated "
                "value flows into it", op.origin, name,
                f"keep `{pname}` constant, or wrap it in ops.stop_gradient if no gradient "
                "should flow through it")
    locals_ = {}
    statements = []
    for stmt in rule.statements:
        (tgt,) = stmt.targets
        if is_adjoint_subscript(tgt):
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
            expr = _substitute(value, bindings, locals_, adj, rule.globals, names, captured)
            locals_[key] = names.temp(expr)   # named from what it holds, not the template
            out.append(gast.Assign(targets=[name_node(locals_[key], gast.Store())], value=expr,
                                   type_comment=None))
            continue
        expr = _Fold().visit(_substitute(value, bindings, locals_, adj, rule.globals, names,
                                         captured))
        if ndims is not None:
            # (an accumulation dW += rt.matmul_*(...) stays, for compiler/optimize/accumulate.py)
            accumulating = isinstance(key, Var) and key.name in adj.defined
            expr = _NoOpUnbroadcast(op.targets[0], ndims, shapes, accumulating).visit(expr)
        if isinstance(key, Var):
            adj.accumulate(key.name, expr, out)
        elif isinstance(key, Seq):
            parts = names.fresh("d_parts")
            out.append(gast.Assign(targets=[name_node(parts, gast.Store())], value=expr,
                                   type_comment=None))
            _accumulate_items(adj, active, name_node(parts), key, out)


def _accumulate_items(adj, active, parts, seq, out):
    """Add ``parts[i]`` to the adjoint of each active item of ``seq``, ``parts[i][j]`` to
    the items of a nested tuple or list (``np.array([[x, y], [z, w]])``), at any depth."""
    for i, item in enumerate(seq.items):
        if not any(v in active for v in atom_vars(item)):
            continue
        part = gast.Subscript(value=copy.deepcopy(parts), slice=gast.Constant(value=i, kind=None),
                              ctx=gast.Load())
        if isinstance(item, Var):
            adj.accumulate(item.name, part, out)
        else:
            _accumulate_items(adj, active, part, item, out)


class _Fold(gast.NodeTransformer):
    """Arithmetic on constants a template produced: ``2 - 1`` -> ``1``, ``x ** 1`` -> ``x``,
    ``x * 1`` -> ``x``."""

    OPS = {gast.Add: lambda a, b: a + b, gast.Sub: lambda a, b: a - b,
           gast.Mult: lambda a, b: a * b, gast.Pow: lambda a, b: a ** b}

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = node.left, node.right
        lv, rv = _number(left), _number(right)
        if lv is not None and rv is not None and type(node.op) in self.OPS:
            return gast.Constant(value=self.OPS[type(node.op)](lv, rv), kind=None)
        if isinstance(node.op, gast.Pow) and rv == 1:
            return left
        if isinstance(node.op, gast.Mult) and rv == 1:
            return left
        if isinstance(node.op, gast.Mult) and lv == 1:
            return right
        return node


def fold_constants(node):
    """``node`` with the constant arithmetic a template produced folded (``_Fold``)."""
    return _Fold().visit(node)


def _number(node):
    if isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return node.value
    return None


class _NoOpUnbroadcast(gast.NodeTransformer):
    """``rt.unbroadcast(e, x)`` -> ``e`` when ``x`` has the shape of the result ``ans``;
    ``rt.sum(e, axis, keepdims)`` when the shapes tell the axes it sums (``_summed``);
    ``rt.matmul_left(g, a, b)`` -> ``g @ b.T`` and ``rt.matmul_right(g, a, b)`` ->
    ``a.T @ g`` when ``a`` and ``b`` are matrices (rank 2 known while building) and the
    adjoint is not added to one that holds a value (``accumulating``: that update is
    ``rt.add_matmul_*``, ``compiler/optimize/accumulate.py``)."""

    def __init__(self, ans, ndims, shapes, accumulating=False):
        self.ans, self.ndims, self.shapes = ans, ndims, shapes
        self.accumulating = accumulating

    def _shape(self, name):
        if self.ndims.get(name) == 0:
            return ()
        return self.shapes.of.get(name) if self.shapes is not None else None

    def _same(self, a, b):
        if a == () and b == ():
            return True
        if self.shapes is None or a is None:
            return False
        # broadcast to the result's rank, an operand none of whose dimensions may be 1
        # keeps its shape
        rank = len(b) if b is not None else self.ndims.get(self.ans)
        return self.shapes.same(a, b) or (rank == len(a) and self.shapes.no_unit_dims(a))

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                and func.value.id == "rt"):
            return node
        if func.attr == "unbroadcast" and isinstance(node.args[1], gast.Name):
            if self._same(self._shape(node.args[1].id), self._shape(self.ans)):
                return node.args[0]
            return self._summed(node) or node
        if func.attr in ("matmul_left", "matmul_right") and len(node.args) == 3 \
                and not self.accumulating \
                and all(isinstance(a, gast.Name) and self.ndims.get(a.id) == 2
                        for a in node.args[1:]):
            # matrices: ``g @ b.T`` has a's shape and ``a.T @ g`` b's, nothing to sum
            g, a, b = node.args
            if func.attr == "matmul_left":
                return gast.BinOp(left=g, op=gast.MatMult(), right=_transposed(b))
            return gast.BinOp(left=_transposed(a), op=gast.MatMult(), right=g)
        return node


    def _summed(self, node):
        """``rt.unbroadcast(e, x)`` as ``rt.sum(e, axis, keepdims)`` over the axes it would
        sum, where the shapes tell them: the leading axes ``x`` lacks (``keepdims``
        False), or the axes where ``x`` has 1 and the result not (``keepdims`` True); None
        where they cannot be told, or where an adjoint may not have its variable's shape
        (``ShapeTable.adjoints_shaped``)."""
        if self.shapes is None or not self.shapes.adjoints_shaped:
            return None
        x, result = self._shape(node.args[1].id), self._shape(self.ans)
        if not x or result is None or len(x) > len(result):
            return None
        lead = len(result) - len(x)
        kept = []
        for k, (a, b) in enumerate(zip(x, result[lead:])):
            a, b = self.shapes.find(a), self.shapes.find(b)
            if self.shapes.same((a,), (b,)):
                continue
            if isinstance(a, Dim) or a != 1 or not (
                    b.not_one if isinstance(b, Dim) else b != 1):
                return None         # not known which of the two is 1
            kept.append(lead + k)
        if (lead and kept) or not (lead or kept):
            return None
        axes = list(range(lead)) or kept
        axis = gast.Constant(value=axes[0], kind=None) if len(axes) == 1 else gast.Tuple(
            elts=[gast.Constant(value=a, kind=None) for a in axes], ctx=gast.Load())
        return call("rt", "sum", [node.args[0], axis,
                                  gast.Constant(value=bool(kept), kind=None)])


def _transposed(name):
    return gast.Attribute(value=name, attr="T", ctx=gast.Load())


class _Substituter(gast.NodeTransformer):
    def __init__(self, bindings, locals_, adj, globals_=None, names=None, captured=None):
        self.bindings = bindings
        self.captured = captured
        self.locals = locals_
        self.adj = adj
        self.globals = globals_ or {}
        self.names = names

    def visit_Subscript(self, node):
        if is_adjoint_subscript(node):
            atom = self.bindings[node.slice.id]
            return name_node(self.adj.name(atom.name))
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.locals:
            return name_node(self.locals[node.id])
        if node.id in self.bindings:
            return atom_node(_lists_as_tuples(self.bindings[node.id]), self.captured)
        if node.id in self.globals:   # a module or function of the rule's module: imported
            return reference(self.globals[node.id], self.names)
        return node


def _lists_as_tuples(atom):
    """A rule's operand as its template reads it: a list of values (``np.select([...],
    ...)``) is passed on as a tuple, which compiled helpers take (slices stay slices)."""
    if isinstance(atom, Seq):
        items = tuple(_lists_as_tuples(a) for a in atom.items)
        return Seq(items, "tuple" if atom.kind == "list" else atom.kind)
    return atom


def _substitute(expr, bindings, locals_, adj, globals_=None, names=None, captured=None):
    return _Substituter(bindings, locals_, adj, globals_, names,
                        captured).visit(copy.deepcopy(expr))
