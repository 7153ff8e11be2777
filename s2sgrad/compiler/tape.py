"""The tape: what a loop's adjoint needs from the forward sweep, and how it gets it.

Per loop: which variables are pushed on per-variable stacks in the forward
sweep and popped at the start of each reversed iteration (``level_assigned``,
``pops``), which cheap scalar values are computed again instead
(``recomputable``), how the reversed loop walks the range (``reversed_range``);
and, for the whole function, the forward statements the adjoint sweep or the
output need (``without_dead_ops``) and which adjoints can simply be others
(``use_counts``).
"""
import copy
import operator

import gast

from .adjoints import Comment, assign, name_node
from .ir import (Const, If, ListAppend, Loop, Op, Seq, SetItem, Var, atom_vars, walk_ops,
                 walk_statements)
from .templates import atom_node_of


def reversed_range(bounds, counter):
    """range(...) arguments that give the first ``counter`` values of ``range(*bounds)``,
    last first."""
    start, _, step = bounds
    n = name_node(counter)
    one = gast.Constant(value=1, kind=None)
    minus_one = gast.UnaryOp(op=gast.USub(), operand=one)
    if isinstance(start, Const) and isinstance(step, Const) and step.value == 1:
        shift = start.value - 1          # range(start, start + n) backwards
        last = n if shift == 0 else gast.BinOp(
            left=n, op=gast.Add() if shift > 0 else gast.Sub(),
            right=gast.Constant(value=abs(shift), kind=None))
        stop = gast.Constant(value=shift, kind=None) if shift >= 0 else copy.deepcopy(minus_one)
        return [last, stop, copy.deepcopy(minus_one)]
    if isinstance(step, Const) and isinstance(step.value, int) and step.value != 0:
        # a constant step: ``start - 3 * (n - 1)``, ``start + 1``, ``3`` (no ``--3``)
        s = step.value
        sign, mag = (gast.Add(), s) if s > 0 else (gast.Sub(), -s)
        count = gast.BinOp(left=n, op=gast.Sub(), right=one)
        moved = count if mag == 1 else gast.BinOp(left=gast.Constant(value=mag, kind=None),
                                                   op=gast.Mult(), right=count)
        last = gast.BinOp(left=atom_node_of(start), op=sign, right=moved)
        stop = gast.BinOp(left=atom_node_of(start), op=gast.Sub() if s > 0 else gast.Add(),
                          right=gast.Constant(value=mag, kind=None))
        return [last, stop, gast.Constant(value=-s, kind=None)]
    start_node, step_node = atom_node_of(start), atom_node_of(step)
    last = gast.BinOp(left=start_node, op=gast.Add(), right=gast.BinOp(
        left=gast.BinOp(left=n, op=gast.Sub(), right=one), op=gast.Mult(), right=step_node))
    stop = gast.BinOp(left=copy.deepcopy(start_node), op=gast.Sub(),
                      right=copy.deepcopy(step_node))
    return [last, stop, gast.UnaryOp(op=gast.USub(), operand=copy.deepcopy(step_node))]


def short_range(bounds):
    start, stop, step = bounds
    if isinstance(step, Const) and step.value == 1:
        if isinstance(start, Const) and start.value == 0:
            return [stop]
        return [start, stop]
    return [start, stop, step]


def push(stack, value):
    value = name_node(value) if isinstance(value, str) else value
    return gast.Expr(value=gast.Call(func=gast.Attribute(value=name_node(stack), attr="append",
                                                         ctx=gast.Load()),
                                     args=[value], keywords=[]))


def pop(stack):
    return gast.Call(func=gast.Attribute(value=name_node(stack), attr="pop", ctx=gast.Load()),
                     args=[], keywords=[])


def pops(statements, taped):
    """The pops that restore, at the start of a reversed iteration, every taped variable as
    the forward iteration left it (mirroring its branches)."""
    out = []
    nested = nested_headers(statements)
    for stmt in statements:
        if isinstance(stmt, Op):
            out.extend(assign(t, pop(taped[t])) for t in stmt.targets
                       if t in taped and t not in nested)
        elif isinstance(stmt, If):
            body, orelse = pops(stmt.body, taped), pops(stmt.orelse, taped)
            if body or orelse:
                out.append(gast.If(test=atom_node_of(stmt.test, None), body=body or [gast.Pass()],
                                   orelse=orelse))
        elif isinstance(stmt, Loop):
            out.extend(assign(v, pop(taped[v])) for v in [stmt.counter] + stmt.headers
                       if v in taped)
    return out


#: primitives cheap enough to compute again in the adjoint loop instead of taping
CHEAP = {operator.add, operator.sub, operator.mul, operator.neg, operator.pos, "assign",
         "getitem"}


#: the most operations recomputed for one loop
RECOMPUTE_LIMIT = 12


def recomputable(loop, int_vars, ndims, mutated, referenced):
    """Scalar arithmetic and element reads at the top of a range loop's body (``i - 1``,
    ``u[i - 1] - 2.0 * u[i]``) that the adjoint loop computes again from the loop
    variable and the values it restores, instead of taping them: a few flops cost less
    than a push and a pop.  Transcendental results (tanh, exp) are taped.  Name -> Op, in
    forward order."""
    if loop.kind != "range":
        return {}
    assigned = set(assigned_targets(loop.body))
    available = {loop.target, *loop.headers}
    carried = set(loop.headers) | nested_headers(loop.body)   # several values per iteration
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


def value_reads(node):
    """Names whose values ``node`` reads (``rt.zeros_like(x)`` reads only x's shape)."""
    shape_only = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                and n.func.attr == "zeros_like":
            shape_only.update(id(a) for a in n.args)
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and id(n) not in shape_only}


def nested_headers(statements):
    """Loop-carried variables of the loops directly in ``statements``: their values are
    taped when the loop ends, not when initialised."""
    return {h for s in statements if isinstance(s, Loop) for h in s.headers}


def level_assigned(statements):
    """Variables this level of a loop body assigns: its ops' targets (in branches too), and
    the counters and loop-carried variables of the loops directly in it (their values when
    they end).  A nested loop's own body is its business."""
    names = []
    nested = nested_headers(statements)
    for stmt in statements:
        if isinstance(stmt, Op):
            names.extend(t for t in stmt.targets if t not in nested)
        elif isinstance(stmt, If):
            names.extend(level_assigned(stmt.body) + level_assigned(stmt.orelse))
        elif isinstance(stmt, Loop):
            names.extend([stmt.counter] + stmt.headers)
    return names


def assigned_targets(statements):
    return [t for s in walk_ops(statements) if isinstance(s, Op) for t in s.targets]


def contributed(statements, active):
    """Active variables whose adjoints the statements' adjoint code may add to."""
    out = []
    for s in walk_ops(statements):
        if isinstance(s, (SetItem, ListAppend)):
            out.extend([s.target] + atom_vars(s.value))
        elif isinstance(s, Op):
            from .activity import differentiable_operands
            out.extend(differentiable_operands(s))
    return [v for v in dict.fromkeys(out) if v in active]


def walk_items(node):
    if isinstance(node, Comment):
        return []
    return gast.walk(node)


def without_dead_ops(body, backward, output):
    """The top-level forward ops whose results the output, the adjoint sweep or a kept
    statement reads.  Inside branches and loops only merge copies nothing reads are
    dropped (they could read a variable a path never set)."""
    _drop_unread_copies(body, backward, output)
    needed = set(atom_vars(output))
    for stmt in backward:
        needed.update(n.id for n in walk_items(stmt) if isinstance(n, gast.Name))
    kept = []
    for stmt in reversed(body):
        if isinstance(stmt, Op):
            if not any(t in needed for t in stmt.targets) and stmt.primitive != "effect":
                continue
            needed.update(stmt.operand_vars())
            if stmt.expr is not None:
                needed.update(n.id for n in gast.walk(stmt.expr) if isinstance(n, gast.Name))
        else:
            needed.update(statement_names(stmt))
        kept.append(stmt)
    kept.reverse()
    return kept


def _drop_unread_copies(body, backward, output):
    """Drop ``assign`` copies whose value nothing uses (copies that only feed each other,
    like the loop-carried copies of a loop variable, count as unused)."""
    live = set(atom_vars(output))
    for stmt in backward:
        live.update(n.id for n in walk_items(stmt) if isinstance(n, gast.Name))
    copies = []
    for stmt in walk_statements(body):
        if isinstance(stmt, Op) and stmt.primitive == "assign":
            copies.append(stmt)
        else:
            live.update(_reads(stmt))
    changed = True
    while changed:
        changed = False
        for copy_op in copies:
            if copy_op.targets[0] in live and not live.issuperset(copy_op.operand_vars()):
                live.update(copy_op.operand_vars())
                changed = True
    _drop_copies(body, live, top=True)


def _reads(stmt):
    """The names one statement reads (not the ones it assigns)."""
    if isinstance(stmt, Op):
        names = set(stmt.operand_vars())
        if stmt.expr is not None:
            names.update(n.id for n in gast.walk(stmt.expr) if isinstance(n, gast.Name))
        return names
    if isinstance(stmt, If):
        return set(atom_vars(stmt.test))
    if isinstance(stmt, Loop):
        names = set(atom_vars(Seq(tuple(stmt.bounds))) + atom_vars(stmt.test or Const(None)))
        names.update(atom_vars(stmt.break_flag) if stmt.break_flag is not None else ())
        return names
    return statement_names(stmt)


def _drop_copies(statements, read, top):
    """Remove ``assign`` copies whose target nothing reads (merge copies, loop-carried
    copies of a variable no iteration reads), at every level."""
    kept = [s for s in statements if not _unread_copy(s, read)]
    dropped = len(kept) != len(statements)
    statements[:] = kept
    for stmt in statements:
        if isinstance(stmt, If):
            dropped |= _drop_copies(stmt.body, read, False)
            dropped |= _drop_copies(stmt.orelse, read, False)
        elif isinstance(stmt, Loop):
            dropped |= _drop_copies(stmt.body, read, False)
            stmt.headers[:] = [h for h in stmt.headers if h in read]
    return dropped


def _unread_copy(stmt, read):
    return isinstance(stmt, Op) and stmt.primitive == "assign" and stmt.targets[0] not in read


def statement_names(stmt):
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
            names.update(statement_names(s))
        return names
    if isinstance(stmt, Loop):
        names.update(atom_vars(Seq(tuple(stmt.bounds))) + atom_vars(stmt.test or Const(None)))
        if stmt.break_flag is not None:
            names.update(atom_vars(stmt.break_flag))
        for s in stmt.test_ops + stmt.body:
            names.update(statement_names(s))
        return names
    names.update(stmt.targets)
    names.update(stmt.operand_vars())
    if stmt.expr is not None:
        names.update(n.id for n in gast.walk(stmt.expr) if isinstance(n, gast.Name))
    return names


def use_counts(lowered):
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
    loops = [s for s in walk_statements(lowered.body) if isinstance(s, Loop)]
    rebound = {v for v, n in assigned.items() if n > 1} | {
        h for loop in loops for h in loop.headers}
    return frozenset(v for v, n in uses.items() if n == 1), frozenset(rebound)


