"""The tape: what a loop's adjoint needs from the forward sweep, and how it gets it.

Per loop: which variables are stored in the forward sweep and taken back at the
start of each reversed iteration (``level_assigned``; ``Tape``, ``push``, ``pop``,
``reserve``: typed arrays for scalars whose type ``tape_types`` knows, lists
otherwise), which cheap values are computed again instead (``recomputable``), in
what order a reversed iteration restores them (``restores``), which loop-carried
copies need no tape of their own (``carried_copies``), how the reversed loop walks
the range (``reversed_range``); and, for the whole function, the forward statements
the adjoint sweep or the output need (``without_dead_ops``) and which adjoints can
simply be others (``use_counts``).
"""
import copy
import operator
from dataclasses import dataclass

import gast
import numpy as np

from ... import primitives as prims
from ..analysis.activity import differentiable_operands
from ..front.literals import atom_node
from ..ir import (Const, If, ListAppend, Loop, Op, Seq, SetItem, Var, atom_vars, walk_ops,
                  walk_statements)
from ..syntax.nodes import Comment, assign, call, name_node


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
        last = gast.BinOp(left=atom_node(start), op=sign, right=moved)
        stop = gast.BinOp(left=atom_node(start), op=gast.Sub() if s > 0 else gast.Add(),
                          right=gast.Constant(value=mag, kind=None))
        return [last, stop, gast.Constant(value=-s, kind=None)]
    start_node, step_node = atom_node(start), atom_node(step)
    last = gast.BinOp(left=start_node, op=gast.Add(), right=gast.BinOp(
        left=gast.BinOp(left=n, op=gast.Sub(), right=one), op=gast.Mult(), right=step_node))
    stop = gast.BinOp(left=copy.deepcopy(start_node), op=gast.Sub(),
                      right=copy.deepcopy(step_node))
    return [last, stop, gast.UnaryOp(op=gast.USub(), operand=copy.deepcopy(step_node))]


def short_range(bounds):
    """``range(...)``'s arguments for (start, stop, step) atoms, the defaults left out."""
    start, stop, step = bounds
    if isinstance(step, Const) and step.value == 1:
        if isinstance(start, Const) and start.value == 0:
            return [stop]
        return [start, stop]
    return [start, stop, step]


@dataclass
class Tape:
    """Where the forward sweep stores one variable's values, last on top, for the reversed
    loop to take back.

    With ``dtype`` (source text such as ``np.float64``: a scalar of a known type stored
    by a range loop) it is a preallocated array ``name`` and a count ``top``; room for
    one value per iteration of ``loop`` is reserved before each run of it.  Without, a
    list (arrays, values of unknown type, while loops: Numba's own lists grow faster
    than an array checked for room on every store)."""
    name: str
    dtype: str | None = None
    top: str | None = None
    loop: object = None

    def declaration(self):
        """Source lines creating the empty tape at the top of the generated function."""
        if self.dtype is None:
            return [f"{self.name} = []"]
        return [f"{self.name} = np.empty(0, {self.dtype})", f"{self.top} = 0"]


def push(tape, value):
    """Statements storing ``value`` (a name or node) on ``tape``."""
    value = name_node(value) if isinstance(value, str) else value
    if tape.dtype is None:
        return [gast.Expr(value=gast.Call(
            func=gast.Attribute(value=name_node(tape.name), attr="append", ctx=gast.Load()),
            args=[value], keywords=[]))]
    return [assign(tape.top, call("rt", "push", [name_node(tape.name), name_node(tape.top),
                                                 value]))]


def pop(tape, target):
    """Statements taking the top value of ``tape`` back into ``target`` (a name or node)."""
    if tape.dtype is None:
        return [assign(target, gast.Call(
            func=gast.Attribute(value=name_node(tape.name), attr="pop", ctx=gast.Load()),
            args=[], keywords=[]))]
    return [gast.AugAssign(target=name_node(tape.top, gast.Store()), op=gast.Sub(),
                           value=gast.Constant(value=1, kind=None)),
            assign(target, gast.Subscript(value=name_node(tape.name),
                                          slice=name_node(tape.top), ctx=gast.Load()))]


def reserve(tape, count):
    """The statement making room on an array ``tape`` for ``count`` (a node) more values."""
    return assign(tape.name, call("rt", "reserve", [name_node(tape.name), name_node(tape.top),
                                                    count]))


def trip_count(bounds):
    """A node for the number of iterations of ``range(*bounds)`` (at most; a break may end
    it sooner)."""
    args = [atom_node(b) for b in short_range(bounds)]
    if len(args) == 1:
        return args[0]
    return call("rt", "trip_count", args)


def restores(statements, taped, recomputed):
    """The statements that restore, at the start of a reversed iteration, every variable the
    adjoint reads as the forward iteration left it, in forward order and mirroring its
    branches: a taped variable is popped, a recomputed one (``recomputed``: names) is
    computed again from what was restored before it."""
    out = []
    nested = nested_carried(statements)
    for k, stmt in enumerate(statements):
        if isinstance(stmt, Op) and stmt.expr is None:
            continue   # the link of a custom rule: its results were restored where computed
        if isinstance(stmt, Op):
            if len(stmt.targets) == 1 and stmt.targets[0] in recomputed:
                out.append(assign(stmt.targets[0], copy.deepcopy(stmt.expr)))
            else:
                for t in stmt.targets:
                    if t in taped and t not in nested:
                        out.extend(pop(taped[t], t))
        elif isinstance(stmt, If):
            body = restores(stmt.body, taped, recomputed)
            orelse = restores(stmt.orelse, taped, recomputed)
            if body or orelse:
                out.append(gast.If(test=atom_node(stmt.test), body=body or [gast.Pass()],
                                   orelse=orelse))
        elif isinstance(stmt, Loop):
            for v in loop_results(stmt, statements[k + 1:]):
                if v in taped:
                    out.extend(pop(taped[v], v))
    return out


#: primitives cheap enough to compute again in the adjoint loop instead of taping
CHEAP = {operator.add, operator.sub, operator.mul, operator.truediv, operator.neg,
         operator.pos, abs, np.absolute, prims.ASSIGN, prims.GETITEM}

#: comparisons: cheap, and a bool scalar when their operands are scalars
COMPARISONS = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
               operator.not_}


#: the most operations recomputed for one loop.  Recomputing a whole stencil point
#: (``lap = u[i-1, j] + ... - 4 * u[i, j]``: 14 operations with the index arithmetic) beats
#: taping it (a store in the forward sweep, which then no longer vectorises, and a load);
#: past the budget the values with the shortest chains are recomputed, the rest taped.
RECOMPUTE_LIMIT = 48

#: array primitives recomputed from arrays the loop does not change (and views of them)
ARRAY_CHEAP = {operator.add, operator.sub, operator.mul, operator.neg}
#: the most array operations (a pass each) recomputed for one loop
ARRAY_RECOMPUTE_LIMIT = 4


def recomputable(loop, int_vars, ndims, mutated, referenced):
    """Scalar arithmetic, comparisons and element reads of a loop's body (``i - 1``,
    ``u[i - 1] - 2.0 * u[i]``, ``abs(r) <= delta``, in branches too) that the adjoint loop
    computes again from the loop variable, the loop-carried values it restores and values
    the loop does not change, instead of taping them: a few flops cost less than a push
    and a pop.  Also a sum, difference or product of arrays the loop does not change (and
    of views of them, numbers), at most ``ARRAY_RECOMPUTE_LIMIT`` of them: GradBench
    kmeans' ``points - centroids[j]`` per centroid was a 10,000 x 8 tape entry each, where
    a pass over ``points`` (the same array every iteration, in cache) makes it again.
    Transcendental results (tanh, exp) are taped.  Gives the set of names
    recomputed (every op assigning such a name at this level is recomputed): within
    ``RECOMPUTE_LIMIT`` operations, integers first, then the values whose chains of
    operations to recompute are shortest."""
    assigned = set(assigned_targets(loop.body))
    available = set(loop.carried) | ({loop.target} if loop.kind == "range" else set())
    carried = set(loop.carried) | nested_carried(loop.body)   # several values per iteration
    ops = {}
    for stmt in level_ops(loop.body):
        for t in stmt.targets:
            ops.setdefault(t, []).append(stmt)
    cheap = {t: defs for t, defs in ops.items() if t not in carried and all(
        _cheap_scalar(op, int_vars, ndims, mutated) for op in defs)}
    arrays = _invariant_array_ops(ops, assigned | set(mutated), carried, cheap, int_vars,
                                  ndims)
    cheap.update(arrays)
    # the values of this level the adjoint reads anyway: taped, unless recomputed
    kept = {v for v in ops if v in referenced and v not in carried}
    changed = True   # operands: available, recomputed themselves, unchanged by the loop,
    while changed:   # or restored anyway (``t20 = 0.1 * (p - y[i])`` from a taped p)
        changed = False
        for target in list(cheap):
            if not all(v in available or v in cheap or v not in assigned or v in kept
                       for op in cheap[target] for v in op.operand_vars()):
                del cheap[target]
                changed = True

    def chain(v, keep):
        """v and the cheap values it is computed from, less those in ``keep``."""
        out, todo = set(), [v]
        while todo:
            u = todo.pop()
            if u in out or u in keep:
                continue
            out.add(u)
            todo.extend(w for op in cheap[u] for w in op.operand_vars() if w in cheap)
        return out

    keep = set()
    wanted = sorted((v for v in cheap if v in referenced),
                    key=lambda v: (v not in int_vars, len(chain(v, set())), v))
    for v in wanted:
        more = chain(v, keep)
        if len(keep) + len(more) <= RECOMPUTE_LIMIT or all(u in int_vars for u in more):
            keep |= more
    return keep


def _invariant_array_ops(ops, assigned, carried, cheap, int_vars, ndims):
    """The array values among ``ops`` (target -> its ops) made by one ``ARRAY_CHEAP`` op
    from numbers, arrays not ``assigned`` (nor written in place) and ``cheap`` views of them, at
    most ``ARRAY_RECOMPUTE_LIMIT``, first made first (target -> its ops)."""
    def number(v):
        return v in int_vars or ndims.get(v) == 0

    out = {}
    for target, defs in ops.items():
        if len(out) >= ARRAY_RECOMPUTE_LIMIT:
            break
        op = defs[0]
        if target in carried or target in cheap or number(target) or len(defs) != 1 or \
                not (isinstance(op, Op) and op.expr is not None and len(op.targets) == 1
                     and op.primitive in ARRAY_CHEAP and not op.kwargs):
            continue
        operands = op.operand_vars()
        if operands and all(number(v) or v not in assigned or (
                v in cheap and cheap[v][0].primitive == prims.GETITEM and
                all(w not in assigned or number(w) for w in cheap[v][0].operand_vars()))
                for v in operands) and any(not number(v) for v in operands):
            out[target] = defs
    return out


def _cheap_scalar(op, int_vars, ndims, mutated):
    """True for a single-target op that costs a few flops: scalar arithmetic, a
    comparison of scalars, an element or a view of an array the function never updates."""
    if not (isinstance(op, Op) and op.expr is not None and len(op.targets) == 1):
        return False
    target = op.targets[0]
    scalar = target in int_vars or ndims.get(target) == 0
    if op.primitive in COMPARISONS:
        return all(isinstance(a, Const) or (isinstance(a, Var) and (
            a.name in int_vars or ndims.get(a.name) == 0)) for a in op.args)
    if op.primitive is operator.pow:     # z ** 2, z ** 3: a multiplication or two
        exponent = op.args[1]
        return isinstance(exponent, Const) and type(exponent.value) is int and \
            0 <= exponent.value <= 4 and scalar
    if op.primitive not in CHEAP:
        return False
    if op.primitive == prims.GETITEM:   # an element, or a view (basic indexing): O(1)
        base = op.args[0]
        return isinstance(base, Var) and base.name not in mutated and op.basic_index and \
            (scalar or not op.list_base)
    return scalar


def level_ops(statements):
    """The Ops of one level of a loop body, in its branches too, not in nested loops."""
    for stmt in statements:
        if isinstance(stmt, Op):
            yield stmt
        elif isinstance(stmt, If):
            yield from level_ops(stmt.body)
            yield from level_ops(stmt.orelse)


#: runtime helpers that read only the shape (and type) of one argument: its position
#: (``split_like``'s is a tuple of parts: each part is read for its size alone)
SHAPE_ONLY = {"zeros_like": 0, "unbroadcast": 1, "unreduce": 1, "split_like": 1}


def shape_only_names(node):
    """The Name nodes that call ``node`` (``rt.unbroadcast(g, x)``, ``np.zeros_like(x)``,
    ``rt.split_like(g, (a, b), 0)``...) reads for their shapes only; [] for any other."""
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr in SHAPE_ONLY and len(node.args) > SHAPE_ONLY[node.func.attr]):
        return []
    arg = node.args[SHAPE_ONLY[node.func.attr]]
    if isinstance(arg, gast.Tuple) and node.func.attr == "split_like":
        return [a for a in arg.elts if isinstance(a, gast.Name)]
    return [arg] if isinstance(arg, gast.Name) else []


def value_reads(node, shape_fixed=None):
    """Names whose values ``node`` reads (not the ones it only assigns: ``x += e`` reads x).
    The shape-only reads of ``shape_only_names`` (``rt.zeros_like(x)``,
    ``rt.unbroadcast(g, x)``, ``rt.unreduce(g, x, ...)``, the parts of ``rt.split_like``)
    count as not read when ``shape_fixed`` is None (any shape will do) or holds x (a
    scalar, or an array of a constant shape: it never changes from one iteration to the
    next)."""
    shape_only = set()
    updated = set()
    for n in gast.walk(node):
        if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            updated.add(id(n.target))
        for arg in shape_only_names(n):
            if shape_fixed is None or arg.id in shape_fixed:
                shape_only.add(id(arg))
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and id(n) not in shape_only
            and (not isinstance(n.ctx, gast.Store) or id(n) in updated)}


def carried_copies(loop):
    """Loop-carried variables set at the end of the body by a plain copy of a value the
    body computed unconditionally (``h = h_1``): carried variable -> that value.  The value one
    iteration leaves in ``h_1`` is the value the next one starts ``h`` with, so the adjoint
    needs only one of them on the tape."""
    last = {}
    for stmt in loop.body:
        if isinstance(stmt, Op) and stmt.primitive == prims.ASSIGN and len(stmt.targets) == 1 \
                and stmt.targets[0] in loop.carried and isinstance(stmt.args[0], Var):
            last[stmt.targets[0]] = stmt.args[0].name
    top = {t for s in loop.body if isinstance(s, Op) for t in s.targets}
    return {h: v for h, v in last.items() if v in top and v not in loop.carried}


def nested_carried(statements):
    """Loop-carried variables of the loops directly in ``statements``: their values are
    taped when the loop ends, not when initialised."""
    return {h for s in statements if isinstance(s, Loop) for h in s.carried}


def level_assigned(statements):
    """Variables this level of a loop body assigns: its ops' targets (in branches too), and
    what the loops directly in it leave (``loop_results``).  A nested loop's own body is
    its business."""
    names = []
    nested = nested_carried(statements)
    for k, stmt in enumerate(statements):
        if isinstance(stmt, Op) and stmt.expr is not None:   # (not a custom rule's link)
            names.extend(t for t in stmt.targets if t not in nested)
        elif isinstance(stmt, If):
            names.extend(level_assigned(stmt.body) + level_assigned(stmt.orelse))
        elif isinstance(stmt, Loop):
            names.extend(loop_results(stmt, statements[k + 1:]))
    return names


def loop_results(loop, after):
    """The values loop ``loop`` leaves for the statements ``after`` it at its level: its
    counter, its loop-carried variables and, when one of them reads it, its range's index
    (its last value, which the reversed loop overwrites when it walks the range again) and
    any variable its body assigns (the last iteration's value, read after the loop: a name
    each iteration binds before reading it is the body's own, not carried, and the
    reversed loop leaves it at its first iteration's value)."""
    names = [loop.counter] + loop.carried
    read_after = set()
    for s in walk_statements(after):
        read_after |= statement_reads(s)
    if loop.kind == "range" and loop.target is not None and loop.target in read_after:
        names.append(loop.target)
    names.extend(v for v in dict.fromkeys(assigned_targets(loop.body))
                 if v in read_after and v not in names)
    return names


def assigned_targets(statements):
    """The variables the Ops of a structured list (and what it holds) assign, in order."""
    return [t for s in walk_ops(statements) if isinstance(s, Op) for t in s.targets]


def contributed(statements, active):
    """Active variables whose adjoints the statements' adjoint code may add to."""
    out = []
    for s in walk_ops(statements):
        if isinstance(s, (SetItem, ListAppend)):
            out.extend([s.target] + atom_vars(s.value))
        elif isinstance(s, Op):
            out.extend(differentiable_operands(s))
    return [v for v in dict.fromkeys(out) if v in active]


def walk_items(node):
    """The gast nodes of a generated statement (none for a Comment)."""
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
            if not any(t in needed for t in stmt.targets) and stmt.primitive != prims.EFFECT:
                continue
            needed.update(statement_reads(stmt))
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
        if isinstance(stmt, Op) and stmt.primitive == prims.ASSIGN:
            copies.append(stmt)
        else:
            live.update(statement_reads(stmt))
    changed = True
    while changed:
        changed = False
        for copy_op in copies:
            if copy_op.targets[0] in live and not live.issuperset(copy_op.operand_vars()):
                live.update(copy_op.operand_vars())
                changed = True
    _drop_copies(body, live, top=True)


def statement_reads(stmt):
    """The names one statement reads itself, not the ones it assigns: an Op its operands
    (and any other name its expression reads), an in-place update or append the array or
    list too, a branch its test, a loop its bounds, test and break flag (what their
    blocks read is those statements' own)."""
    if isinstance(stmt, Op):
        names = set(stmt.operand_vars())
        if stmt.expr is not None:
            names.update(n.id for n in gast.walk(stmt.expr) if isinstance(n, gast.Name))
        return names
    if isinstance(stmt, ListAppend):
        return {stmt.target, *atom_vars(stmt.value)}
    if isinstance(stmt, SetItem):
        return {stmt.target, *atom_vars(stmt.value), *atom_vars(stmt.index)}
    if isinstance(stmt, If):
        return set(atom_vars(stmt.test))
    names = set(atom_vars(Seq(tuple(stmt.bounds))) + atom_vars(stmt.test or Const(None)))
    names.update(atom_vars(stmt.break_flag) if stmt.break_flag is not None else ())
    return names


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
            stmt.carried[:] = [h for h in stmt.carried if h in read]
    return dropped


def _unread_copy(stmt, read):
    return isinstance(stmt, Op) and stmt.primitive == prims.ASSIGN and stmt.targets[0] not in read


def statement_names(stmt):
    """Every name a statement and the statements it holds read or assign."""
    names = set()
    for s in walk_statements([stmt]):
        names |= statement_reads(s)
        if isinstance(s, Op):
            names.update(s.targets)
    return names


def use_counts(lowered):
    """(variables that pass a gradient to exactly one place, variables assigned more than
    once: loop-carried, updated in place).  A single-use variable's adjoint can simply be
    the adjoint it copies."""
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
        h for loop in loops for h in loop.carried}
    return frozenset(v for v, n in uses.items() if n == 1), frozenset(rebound)
