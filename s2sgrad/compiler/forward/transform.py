"""The forward-mode transform: the lowered IR -> primal statements with tangents interleaved.

``tangent_sweep(lowered, wrt, seeds, names)`` takes the LoweredFunction (as
``Lowerer.lower`` gives it), the Var names differentiated (``wrt``, whose
tangents are inputs), the output Var names whose tangents are wanted
(``seeds``) and the function's name allocator; it gives a ``TangentSweep``:
the statements (gast and ``Comment``) that compute every primal value and,
right after each, its tangent, through the same branches and loops.

Naming: the tangent of variable ``x`` is ``x_dot`` (made unique by the name
allocator: never a name of the user's source), beside the reverse mode's
adjoint ``dx``.  Only *active* variables (those that depend on a ``wrt``
value through differentiable operations and reach a seed) get a tangent;
any other value's tangent is a symbolic zero and has no code.  An active
variable assigned from inactive operands only (a loop-carried ``s = 0.0``,
the other branch of an ``if``) gets ``rt.zeros_like``.

Each operation's tangent comes from its JVP rule (``rules/jvp_registry.py``):
a template's terms with the operands' tangents substituted (terms of zero
tangents dropped), a linear primitive's own call on the tangents, or one
term per operand of a multilinear one.  Indexing, ``a = b`` and list
literals are linear in their operands; ``x[i] = v`` writes ``v_dot`` into
``x_dot``; ``xs.append(v)`` appends ``v_dot``.  An array updated in place
gets a tangent of its own where the rule's tangent could share another's
memory (``np.copy``).  A call with a VJP rule but no JVP rule, or a custom
backward (``custom_vjp``, ``Cell.bprop``), reached by an active value is
refused with ``MissingRuleError`` naming the user's line.
"""
import copy

import gast

from ... import primitives as prims
from ...errors import MissingRuleError
from ...rules.jvp_registry import is_tangent_subscript, jvp_lookup, tangents_read
from ...rules.registry import display_name
from ..analysis.activity import active_names, differentiable_operands
from ..analysis.complex_values import check_real_values
from ..front.literals import atom_node
from ..ir import Const, If, ListAppend, Loop, Op, Seq, SetItem, Var, atom_vars
from ..reverse.tape import short_range, without_dead_ops
from ..reverse.templates import fold_constants
from ..syntax.imports import reference
from ..syntax.nodes import Comment, assign, call, name_node
from ..syntax.source import location_comment

#: primitives whose tangent is the operation itself on the operands' tangents
_LINEAR_SYNTAX = (prims.ASSIGN, prims.LIST, prims.GETITEM)


class TangentSweep:
    """The statements of a forward-mode function and its tangents' names.

    ``statements``: gast statements and Comments; ``tangents``: Var name -> tangent
    name for every active variable; ``active``: the active Var names.
    """

    def __init__(self, statements, tangents, active):
        self.statements = statements
        self.tangents = tangents
        self.active = active


def tangent_operands(op):
    """The Var names through which ``op``'s result can vary with its operands in forward
    mode (those a JVP rule gives a term, and those a VJP rule differentiates: reaching one
    a JVP rule lacks is an error, never a silent zero)."""
    if op.custom is not None or op.primitive in _LINEAR_SYNTAX:
        return differentiable_operands(op)
    if op.rule is not None and not op.rule.differentiable:
        return []
    rule = jvp_lookup(op.primitive)
    if rule is None:
        return differentiable_operands(op)
    try:
        bound = rule.bind(op.args, op.kwargs)
    except TypeError:
        return op.operand_vars()
    params = set(rule.tangent_params)
    if op.rule is not None:
        params |= set(op.rule.diff_params) | set(op.rule.refused)
    params |= {p for p in bound if rule.gives_no_tangent_to(p)}     # refused when reached
    return [n for p, atom in bound.items() if p in params for n in atom_vars(_as_atom(atom))]


def _as_atom(value):
    if isinstance(value, tuple):
        return Seq(tuple(value))
    return value if isinstance(value, (Var, Const, Seq)) else Const(value)


def tangent_sweep(lowered, wrt, seeds, names, tangent_names=None, make=None):
    """The forward-mode statements of ``lowered`` (module doc).  ``tangent_names``:
    Var name -> the name its tangent must have (the tangent inputs of ``wrt``);
    ``make(lowered, active, names)``: the builder of the statements (``Tangents``, or
    ``batched.BatchedTangents`` for tangents carrying a batch of directions)."""
    check_real_values(lowered, wrt, seeds, tangent_operands)   # real values only
    active = active_names(lowered, wrt, seeds, tangent_operands)
    sweep = (make or Tangents)(lowered, active, names)
    sweep.of.update(tangent_names or {})
    for w in wrt:
        if w in active:
            sweep.name(w)
    # what nothing reads is not computed (as in reverse mode): a loop-carried copy of a
    # loop variable a loop that never ran left unbound would otherwise be read
    statements = sweep.block(without_dead_ops(lowered.body, [], lowered.output))
    return TangentSweep(statements, sweep.of, active)


class Tangents:
    """Builds the interleaved primal and tangent statements (see module doc)."""

    def __init__(self, lowered, active, names):
        self.lowered = lowered
        self.active = active
        self.names = names
        self.ndims = lowered.ndims
        self.mutated = lowered.mutated
        self.lists = lowered.lists
        self.of = {}
        self.merged = set()   # ids of calls made with their tangents (``_merged_calls``)

    def name(self, var):
        """The tangent name of ``var`` (``var_dot``, made unique)."""
        if var not in self.of:
            self.of[var] = self.names.fresh(var + "_dot")
        return self.of[var]

    # ------------------------------------------------------------ statements

    def block(self, statements):
        out = []
        last = None
        self.merged |= _merged_calls(statements, self.active)
        for stmt in statements:
            if isinstance(stmt, Op) and stmt.custom is None and id(stmt) in self.merged:
                continue    # its value comes with its tangent, at the link after it
            if isinstance(stmt, (Op, SetItem, ListAppend)) and stmt.origin != last:
                out.append(Comment(location_comment(stmt.origin)[2:], stmt.origin))
                last = stmt.origin
            if isinstance(stmt, Op):
                out.extend(self.op(stmt))
            elif isinstance(stmt, SetItem):
                out.extend(self.setitem(stmt))
            elif isinstance(stmt, ListAppend):
                out.extend(self.list_append(stmt))
            elif isinstance(stmt, If):
                last = None
                out.append(gast.If(test=atom_node(stmt.test),
                                   body=self.block(stmt.body) or [gast.Pass()],
                                   orelse=self.block(stmt.orelse)))
            else:
                last = None
                out.extend(self.loop(stmt))
        return out

    def loop(self, stmt):
        out = [Comment(location_comment(stmt.origin)[2:], stmt.origin)]
        body = self.block(stmt.body)
        if stmt.break_flag is not None:
            body.append(gast.If(test=atom_node(stmt.break_flag), body=[gast.Break()],
                                orelse=[]))
        if stmt.kind == "range":
            out.append(gast.For(target=name_node(stmt.target, gast.Store()),
                                iter=gast.Call(func=name_node("range"),
                                               args=[atom_node(b) for b in
                                                     short_range(stmt.bounds)], keywords=[]),
                                body=body or [gast.Pass()], orelse=[], type_comment=None))
        else:
            check = self.block(stmt.test_ops) + [gast.If(
                test=gast.UnaryOp(op=gast.Not(), operand=atom_node(stmt.test)),
                body=[gast.Break()], orelse=[])]
            out.append(gast.While(test=gast.Constant(value=True, kind=None),
                                  body=[s for s in check if not isinstance(s, Comment)] + body,
                                  orelse=[]))
        return out

    def op(self, op):
        live = [t for t in op.targets if t in self.active]
        if op.expr is None:       # the link of a custom backward: nothing runs here
            if live and (op.custom is None or op.custom.tangent is None):
                raise _custom_without_forward(op)
            return self.custom_tangent(op, id(op) in self.merged) if live else []
        target = (gast.Tuple(elts=[name_node(t, gast.Store()) for t in op.targets],
                             ctx=gast.Store()) if len(op.targets) > 1 else op.targets[0])
        out = [assign(target, op.expr)]
        if not live:
            return out
        if op.custom is not None:
            raise _custom_without_forward(op)
        expr = self.tangent_of(op, out)
        if len(op.targets) > 1:
            if expr is None:
                for t in op.targets:
                    out.append(assign(self.name(t), self.zeros(t)))
            else:
                out.append(assign(gast.Tuple(elts=[name_node(self.name(t), gast.Store())
                                                   for t in op.targets], ctx=gast.Store()),
                                  expr))
            return out
        t = op.targets[0]
        if expr is None and op.primitive == prims.ASSIGN and isinstance(op.args[0], Const) \
                and _number(gast.Constant(value=op.args[0].value, kind=None)):
            expr = gast.Constant(value=0.0, kind=None)   # s = 0.0: s_dot = 0.0
        elif expr is None:
            expr = self.zeros(t)
        elif t in self.mutated and op.primitive != prims.ASSIGN and _may_share(expr):
            expr = call("np", "copy", [expr])   # x_dot is updated in place below
        out.append(assign(self.name(t), expr))
        return out

    def setitem(self, stmt):
        target = gast.Subscript(value=name_node(stmt.target),
                                slice=copy.deepcopy(stmt.index_node), ctx=gast.Store())
        out = [assign(target, atom_node(stmt.value))]
        if stmt.target in self.active:
            value = stmt.value
            tangent = (name_node(self.of[value.name]) if isinstance(value, Var)
                       and value.name in self.active else gast.Constant(value=0.0, kind=None))
            out.append(assign(gast.Subscript(value=name_node(self.name(stmt.target)),
                                             slice=copy.deepcopy(stmt.index_node),
                                             ctx=gast.Store()), tangent))
        return out

    def custom_tangent(self, op, with_value=False):
        """The tangents of a custom rule's results from the rule's ``tangent`` callable
        (a derivative object called inside: its JVP), given the inputs and their
        tangents; ``with_value``: the result and its tangent from the rule's
        ``value_and_tangent`` (the forward's call left out: ``_merged_calls``)."""
        inputs = list(op.custom.inputs)
        expr = gast.Call(func=copy.deepcopy(op.custom.value_and_tangent if with_value
                                            else op.custom.tangent),
                         args=[atom_node(a) for a in inputs] +
                         [self.tangent_node(a) for a in inputs], keywords=[])
        if with_value:
            t = op.targets[0]
            return [assign(gast.Tuple(elts=[name_node(t, gast.Store()),
                                            name_node(self.name(t), gast.Store())],
                                      ctx=gast.Store()), expr)]
        if len(op.targets) == 1:
            return [assign(self.name(op.targets[0]), expr)]
        return [assign(gast.Tuple(elts=[name_node(self.name(t), gast.Store())
                                        for t in op.targets], ctx=gast.Store()), expr)]

    def list_append(self, stmt):
        def append(xs, value):
            return gast.Expr(value=gast.Call(func=gast.Attribute(
                value=name_node(xs), attr="append", ctx=gast.Load()), args=[value], keywords=[]))
        out = [append(stmt.target, atom_node(stmt.value))]
        if stmt.target in self.active:
            out.append(append(self.name(stmt.target), self.tangent_node(stmt.value)))
        return out

    # ------------------------------------------------------------ tangents of values

    def zeros(self, var):
        """A materialised zero tangent of ``var``."""
        return call("rt", "zeros_list" if var in self.lists else "zeros_like",
                    [name_node(var)])

    def is_active(self, atom):
        return any(v in self.active for v in atom_vars(atom))

    def tangent_node(self, atom):
        """The tangent of an atom as an expression (zeros where it is inactive)."""
        if isinstance(atom, Var):
            return name_node(self.of[atom.name]) if atom.name in self.active else \
                self.zeros(atom.name)
        if isinstance(atom, Seq):
            elts = [self.tangent_node(a) for a in atom.items]
            return (gast.List(elts=elts, ctx=gast.Load()) if atom.kind == "list"
                    else gast.Tuple(elts=elts, ctx=gast.Load()))
        return gast.Constant(value=0.0, kind=None)

    def tangent_of(self, op, out):
        """The expression of ``op``'s result's tangent (None: a zero), appending the
        template temporaries it needs to ``out``."""
        if op.primitive in _LINEAR_SYNTAX:
            if op.primitive == prims.GETITEM and isinstance(op.expr, gast.Subscript):
                base = [v for v in atom_vars(op.args[0])]
                if not any(v in self.active for v in base):
                    return None
                expr = copy.deepcopy(op.expr)
                expr.value = self._replace_all(expr.value, set(base))
                return expr
            return self._linear(op, set(op.operand_vars()))
        if op.rule is not None and not op.rule.differentiable:
            return None
        rule = jvp_lookup(op.primitive)
        if rule is None:
            raise missing_jvp_rule(op)
        try:
            bound = rule.bind(op.args, op.kwargs)
        except TypeError as exc:
            raise missing_jvp_rule(op, f"the call does not fit the rule's signature: {exc}")
        bindings = {p: _as_atom(v) for p, v in bound.items()}
        for p, atom in bindings.items():
            if p not in rule.tangent_params and self.is_active(atom) and (
                    rule.gives_no_tangent_to(p) or op.rule is not None
                    and (p in op.rule.diff_params or p in op.rule.refused)):
                raise missing_jvp_rule(op, f"its JVP rule gives no tangent for the "
                                           f"argument `{p}`")
        diff_vars = {v for p in rule.tangent_params if p in bindings
                     for v in atom_vars(bindings[p])}
        if rule.kind == "linear":
            return self._linear(op, diff_vars, rule)
        if rule.kind == "multilinear":
            return self._multilinear(op, diff_vars)
        return self._template(op, rule, bindings, out)

    def _replace_all(self, node, variables):
        """``node`` with each Name of ``variables`` replaced by its tangent (zeros for an
        inactive one), and the numbers of a tuple or list that holds one of them, at any
        depth, by 0.0 (``np.array([[1.0, 0.5], [c, s]])``: the constant row's tangent is
        ``[0.0, 0.0]``)."""
        def visit(n):
            if isinstance(n, gast.Name) and n.id in variables and isinstance(n.ctx, gast.Load):
                return self.tangent_node(Var(n.id))
            if isinstance(n, (gast.Tuple, gast.List)) and _holds(n, variables):
                return self._operand_tangent(n, variables)
            return _children_mapped(n, visit)
        return visit(copy.deepcopy(node))

    def _operand_tangent(self, node, variables):
        """The tangent of an operand as written in a call, in a differentiable position:
        a variable's tangent, a tuple or list item by item, and a zero for a constant
        (``np.linspace(a, 3.4, 5)``'s stop, ``np.select``'s ``default=7.0``)."""
        if isinstance(node, gast.Name) and node.id in variables:
            return self.tangent_node(Var(node.id))
        if isinstance(node, (gast.Tuple, gast.List)):
            return type(node)(elts=[self._operand_tangent(e, variables) for e in node.elts],
                              ctx=gast.Load())
        if _holds(node, variables):
            return self._replace_all(node, variables)
        if isinstance(node, gast.Name):      # a constant passed in (a list of arrays)
            return call("rt", "zeros_like", [node])
        if isinstance(node, gast.Constant) and (node.value is None or isinstance(node.value, str)):
            return node
        if isinstance(node, gast.Call) and len(node.args) == 1 and _number(node.args[0]):
            return gast.Call(func=node.func, args=[gast.Constant(value=0.0, kind=None)],
                             keywords=[])          # np.float32(1.0) -> np.float32(0.0)
        return gast.Constant(value=0.0, kind=None)

    def _linear(self, op, variables, rule=None):
        """The call itself on the tangents: each argument in a position of the rule's
        differentiable parameters replaced by its tangent (constants by zeros), the others
        (axes, sizes, indices) as written.  Without a rule, or where the call's syntax
        cannot be bound to the rule's signature, every name of ``variables``."""
        if not any(v in self.active for v in variables):
            return None
        expr = copy.deepcopy(op.expr)
        slots = _differentiable_slots(expr, rule, set(op.operand_vars())) if rule else None
        if slots is None:
            return self._replace_all(expr, variables)
        for owner, field, index in slots:
            node = getattr(owner, field) if index is None else getattr(owner, field)[index]
            new = self._operand_tangent(node, variables)
            if index is None:
                setattr(owner, field, new)
            else:
                getattr(owner, field)[index] = new
        return expr

    def _multilinear(self, op, variables):
        """One term per occurrence of an active operand in the call, that occurrence
        replaced by its tangent."""
        count = sum(1 for n in gast.walk(op.expr) if isinstance(n, gast.Name)
                    and n.id in variables and n.id in self.active)
        terms = []
        for k in range(count):
            seen = [0]

            def visit(n):
                if isinstance(n, gast.Name) and n.id in variables and n.id in self.active:
                    seen[0] += 1
                    if seen[0] - 1 == k:
                        return name_node(self.of[n.id])
                    return n
                return _children_mapped(n, visit)
            terms.append(visit(copy.deepcopy(op.expr)))
        return sum_terms(terms)

    def _template(self, op, rule, bindings, out):
        bindings = dict(bindings)
        bindings[rule.result] = Var(op.targets[0])
        kept, effects = [], []
        for item in rule.statements:
            if item[0] in ("term", "effect") and any(
                    self.is_active(bindings[p]) for p in tangents_read(item[1]) if p in bindings):
                (kept if item[0] == "term" else effects).append(item[1])
        if not kept and not effects:
            return None
        needed = set()
        for expr in kept + effects:
            needed.update(n.id for n in gast.walk(expr) if isinstance(n, gast.Name))
        for item in reversed(rule.statements):
            if item[0] == "local" and item[1] in needed:
                needed.update(n.id for n in gast.walk(item[2]) if isinstance(n, gast.Name))
        locals_ = {}
        for item in rule.statements:
            if item[0] == "local" and item[1] in needed:
                value = self._substitute(item[2], bindings, locals_, rule)
                locals_[item[1]] = self.names.temp(value)   # named from what it holds
                out.append(assign(locals_[item[1]], value))
        # the broadcast of a lone operand's tangent is needed only where terms are missing
        # (all of them together have the result's shape) and never for a scalar result
        drop_broadcast = self.ndims.get(op.targets[0]) == 0 or all(
            self.is_active(bindings[p]) or self._scalar(bindings[p])
            for p in rule.tangent_params if p in bindings)
        for expr in effects:
            out.append(gast.Expr(value=self._substitute(expr, bindings, locals_, rule)))
        if not kept:
            return None
        terms = []
        for expr in kept:
            node = fold_constants(self._substitute(expr, bindings, locals_, rule))
            if drop_broadcast:
                node = _DropBroadcast().visit(node)
            terms.append(node)
        return sum_terms(terms)

    def _scalar(self, atom):
        """True for a number known while building, or a variable known to be one."""
        if isinstance(atom, Const):
            return atom.value is None or _number(gast.Constant(value=atom.value, kind=None))
        return isinstance(atom, Var) and self.ndims.get(atom.name) == 0

    def _substitute(self, expr, bindings, locals_, rule):
        sweep = self

        class Substitute(gast.NodeTransformer):
            """The template's ``t[p]`` as p's tangent, its operands and locals as bound."""

            def visit_Subscript(self, node):
                if is_tangent_subscript(node):
                    return sweep.tangent_node(bindings[node.slice.id])
                return self.generic_visit(node)

            def visit_Name(self, node):
                if node.id in locals_:
                    return name_node(locals_[node.id])
                if node.id in bindings:
                    return atom_node(bindings[node.id])
                if node.id in rule.globals:
                    return reference(rule.globals[node.id], sweep.names)
                return node
        return Substitute().visit(copy.deepcopy(expr))


def is_broadcast_like(node):
    """True for a call ``rt.broadcast_like(...)`` (a gast Call)."""
    func = node.func
    return (isinstance(func, gast.Attribute) and func.attr == "broadcast_like"
            and isinstance(func.value, gast.Name) and func.value.id == "rt")


class _DropBroadcast(gast.NodeTransformer):
    """``rt.broadcast_like(e, ans)`` -> ``e``."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if is_broadcast_like(node):
            return node.args[0]
        return node


def sum_terms(terms):
    """``t1 + t2 - t3`` (a term ``-e`` after the first is subtracted)."""
    total = terms[0]
    for term in terms[1:]:
        if isinstance(term, gast.UnaryOp) and isinstance(term.op, gast.USub):
            total = gast.BinOp(left=total, op=gast.Sub(), right=term.operand)
        else:
            total = gast.BinOp(left=total, op=gast.Add(), right=term)
    return total


def _children_mapped(node, visit):
    """``node`` with each child node replaced by ``visit(child)`` (in place); ``node``."""
    for field, value in gast.iter_fields(node):
        if isinstance(value, list):
            setattr(node, field, [visit(v) if isinstance(v, gast.AST) else v for v in value])
        elif isinstance(value, gast.AST):
            setattr(node, field, visit(value))
    return node


def _holds(node, variables):
    """True when ``node`` reads a Name of ``variables``."""
    return any(isinstance(n, gast.Name) and n.id in variables for n in gast.walk(node))


def _differentiable_slots(call, rule, operands):
    """Where the arguments of ``call`` (a gast Call as the forward code writes it) bound to
    ``rule``'s differentiable parameters are: (owner node, field, index or None) each.
    None when the call cannot be bound: starred arguments, not a call, or arguments that do
    not fit the signature.  A method call on an operand (``x.sum(axis=1)``) binds its
    receiver first."""
    if not isinstance(call, gast.Call) or any(isinstance(a, gast.Starred) for a in call.args) \
            or any(k.arg is None for k in call.keywords):
        return None
    slots = [(call, "args", i) for i in range(len(call.args))]
    if isinstance(call.func, gast.Attribute) and isinstance(call.func.value, gast.Name) and \
            call.func.value.id in operands:
        slots.insert(0, (call.func, "value", None))
    keywords = {k.arg: (k, "value", None) for k in call.keywords}
    try:
        bound = rule.signature.bind(*range(len(slots)), **keywords)
    except TypeError:
        return None
    out = []
    for param, value in bound.arguments.items():
        if param not in rule.tangent_params:
            continue
        kind = rule.signature.parameters[param].kind
        values = value if kind == kind.VAR_POSITIONAL else \
            value.values() if kind == kind.VAR_KEYWORD else [value]
        out += [slots[v] if isinstance(v, int) else v for v in values]
    return out


def _number(node):
    return isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) and \
        not isinstance(node.value, bool)


def _may_share(expr):
    """True when a tangent expression may be another tangent's array itself (a name, a
    call that can return its argument): an array updated in place must not share it."""
    return isinstance(expr, (gast.Name, gast.Call, gast.Subscript))


def missing_jvp_rule(op, detail=None):
    """The MissingRuleError for ``op``, reached by a tangent, whose primitive has no forward
    rule (``detail``: why, when the rule does not cover this form of the call)."""
    name = op.primitive if isinstance(op.primitive, str) else display_name(op.primitive)
    detail = detail or op.bind_error
    return MissingRuleError(
        f"no forward-mode (JVP) rule for {name}" + (f" ({detail})" if detail else "")
        + ", and a differentiated value flows through it",
        op.origin, name,
        "use reverse mode for this function (s2sgrad.grad / value_and_grad), or register "
        "a forward rule with s2sgrad.rules.jvp_registry.jvp_rule(<function>) (see "
        "s2sgrad/rules/jvp_rules.py); or wrap the value in ops.stop_gradient if no "
        "derivative should flow")


def _merged_calls(statements, active):
    """The ids of each call whose value forward mode takes from its custom rule's
    ``value_and_tangent`` and of the link after it: a forward of one Op right before its
    link, of one result whose tangent is wanted (``jvp(lambda x: gradient(x, p))``: one
    forward-over-reverse pass gives the gradient and its tangent; the call would compute
    the gradient again)."""
    merged = set()
    for call_op, link in zip(statements, statements[1:]):
        if isinstance(link, Op) and link.expr is None and link.custom is not None and \
                link.custom.value_and_tangent is not None and len(link.targets) == 1 and \
                link.targets[0] in active and isinstance(call_op, Op) and \
                call_op.custom is None and call_op.expr is not None and \
                tuple(call_op.targets) == tuple(link.targets):
            merged.update((id(call_op), id(link)))
    return merged


def _custom_without_forward(op):
    name = op.custom.name if op.custom is not None else display_name(op.primitive)
    return MissingRuleError(
        f"{name} has a custom backward (custom_vjp or a Cell's bprop) but no forward-mode "
        "rule, and a differentiated value flows through it", op.origin, name,
        "use reverse mode for this function (s2sgrad.grad / value_and_grad), or call the "
        "function without its custom backward in the code you differentiate with "
        "jvp / jacfwd")
