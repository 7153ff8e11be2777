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
import operator

import gast

from ..errors import MissingRuleError
from .activity import active_names
from .emit import location_comment
from .ir import Const, If, ListAppend, Loop, Op, Seq, SetItem, Var, atom_vars, walk_ops


class Comment:
    """A comment line in a generated statement list."""

    def __init__(self, text):
        self.text = text


def _name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def _assign(target, value):
    return gast.Assign(targets=[target if not isinstance(target, str)
                                else _name(target, gast.Store())],
                       value=value, type_comment=None)


class _Adjoints:
    """Adjoint variable names, and which of them hold a value yet."""

    def __init__(self, names, lists=frozenset(), single_use=frozenset(), rebound=frozenset()):
        self.names = names
        self.lists = lists   # variables that are lists: their adjoints are lists too
        self.single_use = single_use   # variables with one use that can pass a gradient
        self.rebound = rebound         # variables whose adjoint is reassigned (loop-carried)
        self.maybe_unbound = frozenset()   # variables some paths never assign
        self.of = {}
        self.defined = set()
        self.owned = set()   # adjoints that are fresh arrays the generated code may update in place

    def name(self, var):
        if var not in self.of:
            self.of[var] = self.names.adjoint(var)
        return self.of[var]

    def accumulate(self, var, expr, out):
        """Append ``dvar = expr`` (first contribution), ``dvar += expr`` (an accumulator
        this code owns) or ``dvar = dvar + expr``."""
        if isinstance(expr, gast.Name) and var not in self.defined and var not in self.of \
                and var in self.single_use and var not in self.lists:
            source = [other for other, name in self.of.items() if name == expr.id]
            if source and not any(other in self.rebound for other in source):
                # dvar would only copy dsource: read dsource itself
                self.of[var] = expr.id
                self.defined.add(var)
                for other in source + [var]:
                    self.owned.discard(other)
                return
        target = self.name(var)
        if isinstance(expr, gast.Name):   # dvar now shares another adjoint's array
            for other, name in self.of.items():
                if name == expr.id:
                    self.owned.discard(other)
        if var in self.lists and var in self.defined:
            out.append(_assign(target, _call("rt", "add_lists", [_name(target), expr])))
            self.owned.add(var)
            return
        if var in self.defined and var in self.owned:
            out.append(gast.AugAssign(target=_name(target, gast.Store()), op=gast.Add(),
                                      value=expr))
            return
        if var in self.defined:
            expr = gast.BinOp(left=_name(target), op=gast.Add(), right=expr)
            self.owned.add(var)
        else:
            self.defined.add(var)
            self.owned.discard(var)
        out.append(_assign(target, expr))

    def zero(self, var, out):
        """Append ``dvar = rt.zeros_like(var)``: an accumulator that starts at zero."""
        self.defined.add(var)
        if var in self.maybe_unbound:
            # var may hold no value here: a plain 0.0 adds to anything
            out.append(_assign(self.name(var), gast.Constant(value=0.0, kind=None)))
            self.owned.discard(var)
            return
        maker = "zeros_list" if var in self.lists else "zeros_like"
        out.append(_assign(self.name(var), _call("rt", maker, [_name(var)])))
        self.owned.add(var)


class Sweeps:
    """The two sweeps of a generated function, as statement lists (gast nodes, Comments).

    ``stacks``: the tape stacks to create before the forward sweep;
    ``grads``: for each differentiated name, its adjoint's name (None: no gradient).
    """

    def __init__(self, forward, backward, stacks, grads, active):
        self.forward = forward
        self.backward = backward
        self.stacks = stacks
        self.grads = grads
        self.active = active


def reverse(lowered, wrt, seeds, names):
    """Both sweeps of ``lowered``: see the module doc and ``_Reverser``."""
    active = active_names(lowered, wrt, seeds)
    ndims = getattr(lowered, "ndims", {})
    state = names.snapshot()
    rev, backward = _backward(lowered, wrt, seeds, active, names, ndims, frozenset())
    unneeded = rev.unneeded_restores(backward)
    if unneeded:   # build again without saving what no adjoint reads
        names.restore(state)
        rev, backward = _backward(lowered, wrt, seeds, active, names, ndims, unneeded)
    body = _without_dead_ops(lowered.body, backward, lowered.output)
    forward = rev.forward(body, None)
    grads = [rev.adj.of.get(w) if w in rev.adj.defined else None for w in wrt]
    return Sweeps(forward, backward, rev.stacks, grads, active)


def _use_counts(lowered):
    """(variables that pass a gradient to exactly one place, variables assigned more than
    once: loop-carried, updated in place).  A single-use variable's adjoint can simply be
    the adjoint it copies."""
    from .activity import differentiable_operands
    uses, assigned = {}, {}
    for stmt in walk_ops(lowered.body):
        if isinstance(stmt, (SetItem, ListAppend)):
            sources = atom_vars(stmt.value)
            assigned[stmt.target] = assigned.get(stmt.target, 0) + 2
        else:
            sources = differentiable_operands(stmt)
            for t in stmt.targets:
                assigned[t] = assigned.get(t, 0) + 1
        for v in sources:
            uses[v] = uses.get(v, 0) + 1
    loops = [s for s in _walk_statements(lowered.body) if isinstance(s, Loop)]
    rebound = {v for v, n in assigned.items() if n > 1} | {
        h for loop in loops for h in loop.headers}
    return frozenset(v for v, n in uses.items() if n == 1), frozenset(rebound)


def _walk_statements(statements):
    for stmt in statements:
        yield stmt
        if isinstance(stmt, If):
            yield from _walk_statements(stmt.body)
            yield from _walk_statements(stmt.orelse)
        elif isinstance(stmt, Loop):
            yield from _walk_statements(stmt.body)


def _backward(lowered, wrt, seeds, active, names, ndims, skip_restores):
    single_use, rebound = _use_counts(lowered)
    rev = _Reverser(active, names, ndims, skip_restores, getattr(lowered, "int_vars", set()),
                    getattr(lowered, "mutated", set()), getattr(lowered, "lists", set()),
                    single_use - set(wrt), rebound, getattr(lowered, "maybe_unbound", set()))
    backward = []
    for s in seeds:
        if s in active:
            rev.adj.accumulate(s, _call("rt", "ones_like", [_name(s)]), backward)
    if backward:
        backward.insert(0, Comment("sensitivity of the output"))
    backward.extend(rev.block(lowered.body, None))
    return rev, backward


class _Reverser:
    """Builds the adjoint sweep statement by statement, in reverse, and then the forward
    sweep with the tape pushes the adjoint sweep needs.

    Values that loops overwrite are kept on per-variable stacks: a loop's
    body is in SSA form within one iteration, so the adjoint of an iteration
    only needs each of its variables as that iteration left it.  The forward
    sweep pushes, right after its assignment, every variable of the body that
    the body's adjoint reads (a loop-carried variable: its value on entering
    the iteration; a nested loop's variables: their values when it ends); the
    adjoint loop pops them all at the start of each reversed iteration.
    """

    def __init__(self, active, names, ndims, skip_restores, int_vars=frozenset(),
                 mutated=frozenset(), lists=frozenset(), single_use=frozenset(),
                 rebound=frozenset(), maybe_unbound=frozenset()):
        self.active = active
        self.mutated = mutated
        self.int_vars = int_vars
        self.names = names
        self.ndims = ndims
        self.skip_restores = skip_restores   # arrays whose in-place updates need no undo
        self.restores = {}        # id(restore statement) -> array name
        self.exports = frozenset()  # loop variables whose adjoint came from after the loop
        self.adj = _Adjoints(names, lists, single_use, rebound)
        self.adj.maybe_unbound = maybe_unbound
        self.stacks = []          # stack names to create at the top of the function
        self.taped = {}           # id(Loop) -> {variable: stack name}
        self.entering = {}        # id(Loop) -> {header variable: stack name}
        self.saves = {}           # id(SetItem) -> (stack or variable name, in_loop)

    # ------------------------------------------------------------ adjoint sweep

    def block(self, statements, loop):
        out = []
        last = None
        for stmt in reversed(statements):
            if isinstance(stmt, Op):
                items = self.op(stmt, loop)
            elif isinstance(stmt, SetItem):
                items = self.setitem(stmt, loop)
            elif isinstance(stmt, ListAppend):
                items = self.list_append(stmt)
            elif isinstance(stmt, If):
                items = self.branch(stmt, loop)
            else:
                items = self.loop(stmt, loop)
            if not items:
                continue
            if stmt.origin != last or isinstance(stmt, (If, Loop)):
                out.append(Comment("grad of: " + location_comment(stmt.origin)[2:]))
                last = stmt.origin if isinstance(stmt, (Op, SetItem, ListAppend)) else None
            out.extend(items)
        return out

    def op(self, op, loop):
        if not any(t in self.active and t in self.adj.defined for t in op.targets):
            return []
        out = []
        if op.custom is not None:
            op.custom.adjoint(op, self.adj, self.active, self.names, out)
        elif op.primitive == "getitem" and getattr(op, "list_base", False):
            self._list_item_adjoint(op, out)
        elif op.primitive == "getitem" and isinstance(op.args[0], Var):
            _getitem_adjoint(op, self.adj, self.active, out)
        else:
            if op.rule is None:
                raise _missing_rule(op)
            if not op.rule.differentiable:
                return []  # carries no gradient (comparisons, shapes, a custom rule's forward)
            _instantiate(op, self.adj, self.active, self.names, out, self.ndims)
        if loop is not None and op.targets[0] in loop.headers:
            # the end of an iteration overwrote a loop-carried variable: its adjoint restarts
            self.adj.zero(op.targets[0], out)
        elif op.targets[0] in self.exports:
            # a loop variable read after the loop: only its last iteration had that gradient
            self.adj.zero(op.targets[0], out)
        return out

    def _list_item_adjoint(self, op, out):
        """``dxs[i] = dxs[i] + d(xs[i])``: the adjoint of a list is a list of adjoints."""
        base = op.args[0].name
        if base not in self.active:
            return
        dbase = self.adj.name(base)
        if base not in self.adj.defined:
            out.append(_assign(dbase, _call("rt", "zeros_list", [_name(base)])))
            self.adj.defined.add(base)
        elif base not in self.adj.owned:
            out.append(_assign(dbase, _call("rt", "copy_list", [_name(dbase)])))
        self.adj.owned.add(base)
        item = gast.Subscript(value=_name(dbase), slice=copy.deepcopy(op.expr.slice),
                              ctx=gast.Load())
        target = copy.deepcopy(item)
        target.ctx = gast.Store()
        out.append(_assign(target, gast.BinOp(left=item, op=gast.Add(),
                                              right=_name(self.adj.name(op.targets[0])))))

    def list_append(self, stmt):
        """The adjoint of ``xs.append(v)``: the last adjoint of the list is v's; the list
        itself shrinks back (when an adjoint reads it)."""
        out = []
        xs = stmt.target
        if xs in self.active and xs in self.adj.defined:
            dxs = self.adj.name(xs)
            if xs not in self.adj.owned:
                out.append(_assign(dxs, _call("rt", "copy_list", [_name(dxs)])))
                self.adj.owned.add(xs)
            popped = gast.Call(func=gast.Attribute(value=_name(dxs), attr="pop", ctx=gast.Load()),
                               args=[], keywords=[])
            value = stmt.value
            if isinstance(value, Var) and value.name in self.active:
                self.adj.accumulate(value.name, popped, out)
            else:
                out.append(gast.Expr(value=popped))
        if xs not in self.skip_restores:
            restore = gast.Expr(value=gast.Call(func=gast.Attribute(
                value=_name(xs), attr="pop", ctx=gast.Load()), args=[], keywords=[]))
            self.restores[id(restore)] = xs
            out.append(restore)
        return out

    def setitem(self, stmt, loop):
        out = []
        x = stmt.target
        dx_index = gast.Subscript(value=_name(self.adj.name(x)),
                                  slice=copy.deepcopy(stmt.index_node), ctx=gast.Load())
        if x in self.active and x in self.adj.defined:
            if x not in self.adj.owned:
                out.append(_assign(self.adj.name(x), _call("np", "copy", [_name(self.adj.name(x))])))
                self.adj.owned.add(x)
            value = stmt.value
            if isinstance(value, Var) and value.name in self.active:
                if self._scalar_element(stmt) and self.ndims.get(value.name) == 0:
                    contribution = dx_index
                elif not _basic_setitem(stmt, self.int_vars):
                    # an index array may name a position twice: the last write wins
                    contribution = _call("rt", "unbroadcast", [
                        _call("rt", "written_adjoint", [_name(self.adj.name(x)),
                                                        _index_expression(copy.deepcopy(
                                                            stmt.index_node))]),
                        _name(value.name)])
                else:   # a copy: the slice of dx is zeroed next
                    contribution = _call("rt", "unbroadcast", [
                        _call("rt", "copy_value", [dx_index]), _name(value.name)])
                self.adj.accumulate(value.name, contribution, out)
            target = copy.deepcopy(dx_index)
            target.ctx = gast.Store()
            out.append(_assign(target, gast.Constant(value=0, kind=None)))
        if x in self.skip_restores:
            return out
        saved = self.names.fresh(x + ("_saved" if loop is not None else "_old"))
        self.saves[id(stmt)] = (saved, loop is not None)
        if loop is not None:
            self.stacks.append(saved)
            old = gast.Call(func=gast.Attribute(value=_name(saved), attr="pop", ctx=gast.Load()),
                            args=[], keywords=[])
        else:
            old = _name(saved)
        restore = _assign(gast.Subscript(value=_name(x), slice=copy.deepcopy(stmt.index_node),
                                         ctx=gast.Store()), old)
        self.restores[id(restore)] = x
        out.append(restore)
        return out

    def _scalar_element(self, stmt):
        """True when ``stmt`` writes one element: as many integer indices as the rank."""
        index = stmt.index
        items = index.items if isinstance(index, Seq) and index.kind == "index" else (index,)
        ints = all((isinstance(i, Const) and isinstance(i.value, int)
                    and not isinstance(i.value, bool)) or
                   (isinstance(i, Var) and i.name in self.int_vars) for i in items)
        return ints and self.ndims.get(stmt.target) == len(items)

    def unneeded_restores(self, backward):
        """Arrays updated in place whose values no adjoint statement reads: their updates
        need not be undone (nor their old values saved)."""
        read = set()

        def visit(items):
            for item in items:
                if isinstance(item, Comment) or id(item) in self.restores:
                    continue
                if isinstance(item, (gast.If, gast.For, gast.While)):
                    read.update(n.id for n in gast.walk(item.test if isinstance(item, (gast.If, gast.While)) else item.iter)
                                if isinstance(n, gast.Name))
                    visit(item.body)
                    visit(getattr(item, "orelse", []))
                else:
                    read.update(_value_reads(item))
        visit(backward)
        return frozenset(x for x in self.restores.values() if x not in read)

    def branch(self, stmt, loop):
        out = []
        inside = set(_assigned(stmt.body) + _assigned(stmt.orelse))
        for v in _contributed([stmt], self.active):
            if v not in inside and v not in self.adj.defined:
                self.adj.zero(v, out)
        defined, owned = set(self.adj.defined), set(self.adj.owned)
        body = self.block(stmt.body, loop)
        owned_body = set(self.adj.owned)
        self.adj.defined, self.adj.owned = set(defined), set(owned)
        orelse = self.block(stmt.orelse, loop)
        self.adj.defined = defined
        self.adj.owned = owned & owned_body & self.adj.owned
        if not any(not isinstance(s, Comment) for s in body + orelse):
            return out
        out.append(gast.If(test=_atom_node(stmt.test, None), body=body or [gast.Pass()],
                           orelse=orelse))
        return out

    def loop(self, stmt, parent):
        out = []
        inside = set(_assigned(stmt.body)) | set(_assigned(stmt.test_ops))
        for v in _contributed([stmt], self.active):
            if (v not in inside or v in stmt.headers) and v not in self.adj.defined:
                self.adj.zero(v, out)
            elif v in self.adj.lists and v in self.adj.defined and v not in self.adj.owned:
                # popped and updated inside the loop: a list of our own, once
                out.append(_assign(self.adj.name(v), _call("rt", "copy_list",
                                                           [_name(self.adj.name(v))])))
                self.adj.owned.add(v)
        defined, owned = set(self.adj.defined), set(self.adj.owned)
        saved_exports = self.exports
        self.exports = saved_exports | {v for v in inside if v in defined
                                        and v not in stmt.headers}
        body = self.block(stmt.body, stmt)
        self.exports = saved_exports
        self.adj.defined = defined
        self.adj.owned = owned & self.adj.owned
        if not any(not isinstance(s, Comment) for s in body):
            return out
        referenced = {n.id for s in body for n in _walk(s) if isinstance(n, gast.Name)}
        entering = {h: self._stack(h) for h in stmt.headers if h in referenced}
        recomputed = _recomputable(stmt, self.int_vars, self.ndims, self.mutated, referenced)
        taped = {v: self._stack(v) for v in _level_assigned(stmt.body)
                 if v in referenced and v not in stmt.headers and v not in recomputed}
        self.entering[id(stmt)] = entering
        self.taped[id(stmt)] = taped
        prologue = _pops(stmt.body, taped) + [
            _assign(h, _pop(s)) for h, s in entering.items()] + [
            _assign(op.targets[0], copy.deepcopy(op.expr)) for op in recomputed.values()]
        if stmt.kind == "range" and stmt.target in referenced:
            # the range's values again, last first: nothing to tape
            target, bounds = stmt.target, _reversed_range(stmt.bounds, stmt.counter)
        else:
            target, bounds = "_", [_name(stmt.counter)]
        out.append(gast.For(target=_name(target, gast.Store()),
                            iter=gast.Call(func=_name("range"), args=bounds, keywords=[]),
                            body=prologue + body, orelse=[], type_comment=None))
        return out

    def _stack(self, var):
        name = self.names.fresh(var + "_stack")
        self.stacks.append(name)
        return name

    # ------------------------------------------------------------ forward sweep

    def forward(self, statements, loop):
        out = []
        last = None
        taped = self.taped.get(id(loop), {}) if loop is not None else {}
        nested = _nested_headers(statements)
        for stmt in statements:
            if isinstance(stmt, (Op, SetItem, ListAppend)) and stmt.origin != last:
                out.append(Comment(location_comment(stmt.origin)[2:]))
                last = stmt.origin
            if isinstance(stmt, Op):
                if stmt.expr is None:
                    continue  # the link of a custom rule: nothing to run
                out.append(_assign(gast.Tuple(elts=[_name(t, gast.Store()) for t in stmt.targets],
                                              ctx=gast.Store()) if len(stmt.targets) > 1
                                   else stmt.targets[0], stmt.expr))
                out.extend(_push(s, t) for t, s in taped.items()
                           if t in stmt.targets and t not in nested)
            elif isinstance(stmt, SetItem):
                out.extend(self._forward_setitem(stmt))
            elif isinstance(stmt, ListAppend):
                out.append(gast.Expr(value=gast.Call(
                    func=gast.Attribute(value=_name(stmt.target), attr="append", ctx=gast.Load()),
                    args=[_atom_node(stmt.value)], keywords=[])))
            elif isinstance(stmt, If):
                last = None
                out.append(gast.If(test=_atom_node(stmt.test, None),
                                   body=self.forward(stmt.body, loop) or [gast.Pass()],
                                   orelse=self.forward(stmt.orelse, loop)))
            else:
                last = None
                out.extend(self._forward_loop(stmt))
                out.extend(_push(taped[v], v) for v in [stmt.counter] + stmt.headers
                           if v in taped)
        return out

    def _forward_setitem(self, stmt):
        out = []
        saved, in_loop = self.saves.get(id(stmt), (None, False))
        if saved is not None:
            current = gast.Subscript(value=_name(stmt.target),
                                     slice=copy.deepcopy(stmt.index_node), ctx=gast.Load())
            value = _call("rt", "copy_value", [current])
            out.append(_push(saved, value) if in_loop else _assign(saved, value))
        target = gast.Subscript(value=_name(stmt.target), slice=copy.deepcopy(stmt.index_node),
                                ctx=gast.Store())
        out.append(_assign(target, _atom_node(stmt.value, None)))
        return out

    def _forward_loop(self, stmt):
        out = [Comment(location_comment(stmt.origin)[2:]),
               _assign(stmt.counter, gast.Constant(value=0, kind=None))]
        body = [gast.AugAssign(target=_name(stmt.counter, gast.Store()), op=gast.Add(),
                               value=gast.Constant(value=1, kind=None))]
        body += [_push(s, h) for h, s in self.entering.get(id(stmt), {}).items()]
        body += self.forward(stmt.body, stmt)
        if stmt.break_flag is not None:
            body.append(gast.If(test=_atom_node(stmt.break_flag, None), body=[gast.Break()],
                                orelse=[]))
        if stmt.kind == "range":
            out.append(gast.For(target=_name(stmt.target, gast.Store()),
                                iter=gast.Call(func=_name("range"),
                                               args=[_atom_node(b, None) for b in
                                                     _short_range(stmt.bounds)], keywords=[]),
                                body=body, orelse=[], type_comment=None))
        else:
            check = self.forward(stmt.test_ops, None) + [gast.If(
                test=gast.UnaryOp(op=gast.Not(), operand=_atom_node(stmt.test, None)),
                body=[gast.Break()], orelse=[])]
            out.append(gast.While(test=gast.Constant(value=True, kind=None),
                                  body=[s for s in check if not isinstance(s, Comment)] + body,
                                  orelse=[]))
        return out


def _reversed_range(bounds, counter):
    """range(...) arguments that give the first ``counter`` values of ``range(*bounds)``,
    last first."""
    start, _, step = bounds
    n = _name(counter)
    one = gast.Constant(value=1, kind=None)
    minus_one = gast.UnaryOp(op=gast.USub(), operand=one)
    if isinstance(start, Const) and isinstance(step, Const) and step.value == 1:
        shift = start.value - 1          # range(start, start + n) backwards
        last = n if shift == 0 else gast.BinOp(
            left=n, op=gast.Add() if shift > 0 else gast.Sub(),
            right=gast.Constant(value=abs(shift), kind=None))
        stop = gast.Constant(value=shift, kind=None) if shift >= 0 else copy.deepcopy(minus_one)
        return [last, stop, copy.deepcopy(minus_one)]
    start_node, step_node = _atom_node(start), _atom_node(step)
    last = gast.BinOp(left=start_node, op=gast.Add(), right=gast.BinOp(
        left=gast.BinOp(left=n, op=gast.Sub(), right=one), op=gast.Mult(), right=step_node))
    stop = gast.BinOp(left=copy.deepcopy(start_node), op=gast.Sub(),
                      right=copy.deepcopy(step_node))
    return [last, stop, gast.UnaryOp(op=gast.USub(), operand=copy.deepcopy(step_node))]


def _short_range(bounds):
    start, stop, step = bounds
    if isinstance(step, Const) and step.value == 1:
        if isinstance(start, Const) and start.value == 0:
            return [stop]
        return [start, stop]
    return [start, stop, step]


def _push(stack, value):
    value = _name(value) if isinstance(value, str) else value
    return gast.Expr(value=gast.Call(func=gast.Attribute(value=_name(stack), attr="append",
                                                         ctx=gast.Load()),
                                     args=[value], keywords=[]))


def _pop(stack):
    return gast.Call(func=gast.Attribute(value=_name(stack), attr="pop", ctx=gast.Load()),
                     args=[], keywords=[])


def _pops(statements, taped):
    """The pops that restore, at the start of a reversed iteration, every taped variable as
    the forward iteration left it (mirroring its branches)."""
    out = []
    nested = _nested_headers(statements)
    for stmt in statements:
        if isinstance(stmt, Op):
            out.extend(_assign(t, _pop(taped[t])) for t in stmt.targets
                       if t in taped and t not in nested)
        elif isinstance(stmt, If):
            body, orelse = _pops(stmt.body, taped), _pops(stmt.orelse, taped)
            if body or orelse:
                out.append(gast.If(test=_atom_node(stmt.test, None), body=body or [gast.Pass()],
                                   orelse=orelse))
        elif isinstance(stmt, Loop):
            out.extend(_assign(v, _pop(taped[v])) for v in [stmt.counter] + stmt.headers
                       if v in taped)
    return out


#: primitives cheap enough to compute again in the adjoint loop instead of taping
CHEAP = {operator.add, operator.sub, operator.mul, operator.neg, operator.pos, "assign",
         "getitem"}
#: the most operations recomputed for one loop
RECOMPUTE_LIMIT = 12


def _recomputable(loop, int_vars, ndims, mutated, referenced):
    """Scalar arithmetic and element reads at the top of a range loop's body (``i - 1``,
    ``u[i - 1] - 2.0 * u[i]``) that the adjoint loop computes again from the loop
    variable and the values it restores, instead of taping them: a few flops cost less
    than a push and a pop.  Transcendental results (tanh, exp) are taped.  Name -> Op, in
    forward order."""
    if loop.kind != "range":
        return {}
    assigned = set(_assigned(loop.body))
    available = {loop.target, *loop.headers}
    carried = set(loop.headers) | _nested_headers(loop.body)   # several values per iteration
    cheap = {}
    for stmt in loop.body:
        if not (isinstance(stmt, Op) and stmt.expr is not None and stmt.primitive in CHEAP
                and len(stmt.targets) == 1 and stmt.targets[0] not in carried):
            continue
        target = stmt.targets[0]
        scalar = target in int_vars or ndims.get(target) == 0
        if stmt.primitive == "getitem":
            base = stmt.args[0]
            scalar = scalar and isinstance(base, Var) and base.name not in mutated and \
                getattr(stmt, "basic_index", False)
        if scalar and all(v in available or v in cheap or v not in assigned
                          for v in stmt.operand_vars()):
            cheap[target] = stmt
    needed = [v for v in cheap if v in referenced]
    keep = set()
    while needed:
        v = needed.pop()
        if v in keep:
            continue
        keep.add(v)
        needed.extend(u for u in cheap[v].operand_vars() if u in cheap)
    if len(keep) > RECOMPUTE_LIMIT:
        keep = {v for v in keep if v in int_vars}
        keep |= {u for v in list(keep) for u in cheap[v].operand_vars() if u in cheap}
    return {v: op for v, op in cheap.items() if v in keep}


def _value_reads(node):
    """Names whose values ``node`` reads (``rt.zeros_like(x)`` reads only x's shape)."""
    shape_only = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                and n.func.attr == "zeros_like":
            shape_only.update(id(a) for a in n.args)
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and id(n) not in shape_only}


def _nested_headers(statements):
    """Loop-carried variables of the loops directly in ``statements``: their values are
    taped when the loop ends, not when initialised."""
    return {h for s in statements if isinstance(s, Loop) for h in s.headers}


def _level_assigned(statements):
    """Variables this level of a loop body assigns: its ops' targets (in branches too), and
    the counters and loop-carried variables of the loops directly in it (their values when
    they end).  A nested loop's own body is its business."""
    names = []
    nested = _nested_headers(statements)
    for stmt in statements:
        if isinstance(stmt, Op):
            names.extend(t for t in stmt.targets if t not in nested)
        elif isinstance(stmt, If):
            names.extend(_level_assigned(stmt.body) + _level_assigned(stmt.orelse))
        elif isinstance(stmt, Loop):
            names.extend([stmt.counter] + stmt.headers)
    return names


def _assigned(statements):
    return [t for s in walk_ops(statements) if isinstance(s, Op) for t in s.targets]


def _contributed(statements, active):
    """Active variables whose adjoints the statements' adjoint code may add to."""
    out = []
    for s in walk_ops(statements):
        if isinstance(s, (SetItem, ListAppend)):
            out.extend([s.target] + atom_vars(s.value))
        elif isinstance(s, Op):
            from .activity import differentiable_operands
            out.extend(differentiable_operands(s))
    return [v for v in dict.fromkeys(out) if v in active]


def _walk(node):
    if isinstance(node, Comment):
        return []
    return gast.walk(node)


def _without_dead_ops(body, backward, output):
    """The top-level forward ops whose results the output, the adjoint sweep or a kept
    statement reads (statements inside branches and loops are all kept)."""
    needed = set(atom_vars(output))
    for stmt in backward:
        needed.update(n.id for n in _walk(stmt) if isinstance(n, gast.Name))
    kept = []
    for stmt in reversed(body):
        if isinstance(stmt, Op):
            if not any(t in needed for t in stmt.targets) and stmt.primitive != "effect":
                continue
            needed.update(stmt.operand_vars())
            if stmt.expr is not None:
                needed.update(n.id for n in gast.walk(stmt.expr) if isinstance(n, gast.Name))
        else:
            needed.update(_statement_names(stmt))
        kept.append(stmt)
    kept.reverse()
    return kept


def _statement_names(stmt):
    names = set()
    if isinstance(stmt, ListAppend):
        return {stmt.target, *atom_vars(stmt.value)}
    if isinstance(stmt, SetItem):
        names.add(stmt.target)
        names.update(atom_vars(stmt.value) + atom_vars(stmt.index))
        return names
    if isinstance(stmt, If):
        names.update(atom_vars(stmt.test))
        for s in stmt.body + stmt.orelse:
            names.update(_statement_names(s))
        return names
    if isinstance(stmt, Loop):
        names.update(atom_vars(Seq(tuple(stmt.bounds))) + atom_vars(stmt.test or Const(None)))
        if stmt.break_flag is not None:
            names.update(atom_vars(stmt.break_flag))
        for s in stmt.test_ops + stmt.body:
            names.update(_statement_names(s))
        return names
    names.update(stmt.targets)
    names.update(stmt.operand_vars())
    if stmt.expr is not None:
        names.update(n.id for n in gast.walk(stmt.expr) if isinstance(n, gast.Name))
    return names


def _missing_rule(op):
    from ..rules.registry import _display_name
    name = op.primitive if isinstance(op.primitive, str) else _display_name(op.primitive)
    detail = getattr(op, "bind_error", None)
    return MissingRuleError(
        f"no derivative rule for {name}" + (f" called this way ({detail})" if detail else "")
        + ", and a differentiated value flows through it",
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
    basic = getattr(op, "basic_index", False)
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


def _basic_setitem(stmt, int_vars):
    from .lower import _basic_index
    return _basic_index(stmt.index, int_vars)


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


def _instantiate(op, adj, active, names, out, ndims=None):
    """Append the rule template of ``op`` with its operands substituted.

    Where the result and an operand are both known to be scalars, the
    template's ``rt.unbroadcast(e, x)`` is just ``e``."""
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
        expr = _Fold().visit(_substitute(value, bindings, locals_, adj))
        if ndims and ndims.get(op.targets[0]) == 0:
            expr = _ScalarUnbroadcast(ndims).visit(expr)
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


def _number(node):
    if isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return node.value
    return None


class _ScalarUnbroadcast(gast.NodeTransformer):
    """``rt.unbroadcast(e, x)`` -> ``e`` when ``x`` is a known scalar (nothing was broadcast)."""

    def __init__(self, ndims):
        self.ndims = ndims

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, gast.Attribute) and func.attr == "unbroadcast"
                and isinstance(func.value, gast.Name) and func.value.id == "rt"
                and isinstance(node.args[1], gast.Name)
                and self.ndims.get(node.args[1].id) == 0):
            return node.args[0]
        return node


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


def _atom_node(atom, literal_node=None):
    if literal_node is None:
        from .literals import literal_node
    if isinstance(atom, Var):
        return _name(atom.name)
    if isinstance(atom, Seq):
        return gast.Tuple(elts=[_atom_node(a, literal_node) for a in atom.items], ctx=gast.Load())
    return literal_node(atom.value)


def _substitute(expr, bindings, locals_, adj):
    return _Substituter(bindings, locals_, adj).visit(copy.deepcopy(expr))
