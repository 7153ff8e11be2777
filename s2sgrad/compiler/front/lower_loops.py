"""Lowering a loop that runs at run time (``LoopLowering``): ``while``, and the
``for`` loops ``lower_for`` reduces to a range (``RangeSpec``) -> a ``Loop`` statement.

The body's ``break``/``continue`` become a flag (``jumps.py``); lists it appends to
become run-time lists first.  Each variable the body changes is loop-carried: a
fresh variable assigned before the loop and at the end of each iteration
(``Loop.carried``).  Its rank and shape are assumed to stay what they are on entry,
and a Python int on entry (``j = 1``) to stay one (``j += 1``: a counter of a while
loop, whose ``x[j]`` is then a view of known shape, as a range loop's index is); when
the body breaks an assumption the loop is lowered again without it.  A body
that reads a value it later updates in place behind its name is refused.
"""
import operator
from dataclasses import dataclass

import gast

from ... import primitives as prims
from ...rules import lookup
from ..analysis.aliasing import own_code
from ..ir import (Const, If, ListAppend, Loop, Op, Seq, SetItem, Var, atom_vars, walk_ops,
                  walk_statements)
from ..syntax.nodes import name_node
from ..syntax.source import unsupported
from . import literals
from .jumps import assigned_names, remove_loop_jumps
from .lower_statements import appended_names


@dataclass(frozen=True)
class RangeSpec:
    """A ``for`` loop run at run time as ``for <target> in range(*bounds)``.

    ``bounds``: the (start, stop, step) atoms; ``target``: the node the loop's index is
    named from (the user's loop variable, or a fresh index when rows are read);
    ``rows``: None, or (pattern, sequences) whose rows are read at each iteration start
    and bound to the user's target (the pattern: see ``ForLowering.row_pattern``)."""
    bounds: tuple
    target: object
    rows: tuple | None = None


class LoopLowering:
    """Run-time loops -> ``Loop``.  Writes ``state.ops`` (a ``LoweringState``: each body
    into its own list), what is known of loop-carried variables into ``types``
    (``TypeInfo``) and ``aliases`` (``AliasTracking``: ranks, stale values); appends
    Ops with ``emitter``.  Owns what it assumes of loop-carried variables across the
    loops of one lowering.  The test and the body are lowered by the lowerers given to
    ``connect``."""

    def __init__(self, state, types, aliases, atoms, emitter):
        self.state = state
        self.types = types
        self.aliases = aliases
        self.atoms = atoms
        self.emitter = emitter
        self.entry_shapes = {}  # loop-carried Var name -> the shape it enters the loop with
        self.unassumed_shapes = set()  # loop-carried Var names whose shape changes in the loop
        self.varying_shapes = set()  # loop-carried Var names whose sizes may change in the loop
        self.entry_ints = set()     # loop-carried Var names that enter the loop as ints
        self.not_ints = set()       # ... and do not stay ints in the body
        self.expressions = self.statements = None

    def connect(self, expressions, statements):
        """The lowerers of a while loop's test (``ExpressionLowering``) and of the body
        (``StatementLowering``)."""
        self.expressions = expressions
        self.statements = statements

    def lower_loop(self, frame, stmt, spec):
        """A loop that runs at run time (``for`` over a range or array rows, ``while``).

        ``spec`` is None for a while loop, else a ``RangeSpec``.
        """
        location = frame.location(stmt)
        flag, flag_used, body_src = self.loop_body_source(frame, stmt, location)
        assigned = assigned_names(body_src)
        if spec is not None:
            assigned = [n for n in assigned_names([gast.Assign(targets=[spec.target],
                                                               value=None)])
                        if n not in assigned] + assigned
        carried = self.carried_names(frame, assigned, flag, spec, body_src)
        carried_atoms = []      # (name, atom of its carried variables) per loop-carried name
        carried_vars = []
        for name in carried:
            atom = self.carry(frame.env[name], name, location, carried_vars)
            frame.env[name] = atom
            carried_atoms.append((name, atom))
        counter = self.state.names.fresh("n_iter")
        target = None
        bounds = ()
        rows = None
        if spec is not None:
            bounds, rows = spec.bounds, spec.rows
            target = self.state.names.variable(spec.target.id if isinstance(spec.target, gast.Name)
                                               else "i")
            self.types.int_vars.add(target)
            self.types.ndims[target] = 0
        entry = dict(frame.env)

        def lower_test():
            test_result.append(self.expressions.lower_expr(frame, stmt.test))

        def lower_body():
            if spec is not None:
                index = Var(target)
                if rows is not None:
                    pattern, seqs = rows
                    items = [self.emitter.emit_getitem(frame, stmt, q, index, None) for q in seqs]
                    self.statements.bind(frame, stmt.target, row_value(
                        pattern, index, items, lambda i, start: self.emitter.int_arith(
                            frame, stmt, operator.add, i, start)))
                else:
                    self.statements.bind(frame, stmt.target, index)
            self.statements.lower_body(frame, body_src)
            if frame.returned:
                raise unsupported(frame, stmt, "return inside a loop",
                                  "set a variable and break, then return after the loop")
            for name, atom in carried_atoms:
                self.carry_to_next_iteration(frame, stmt, name, frame.env.get(name), atom, location)

        while True:   # lowered again when a loop-carried variable turns out to change rank
            frame.env = dict(entry)
            self.assume_carried_shapes(carried_vars)
            test_result = []
            test_ops = self.state.collect(lower_test) if spec is None else []
            test = test_result[0] if test_result else None
            before = dict(frame.env)
            stale_before = set(self.aliases.stale_views)
            try:
                body = self.state.collect(lower_body)
                break
            except (_RankChanged, _ShapeChanged, _IntChanged) as changed:
                self.forget_carried_assumptions(changed)
                self.aliases.stale_views = stale_before
        self.check_loop_reads(frame, stmt, body + test_ops, carried_vars, stale_before)
        break_flag = frame.env.get(flag) if flag_used else None
        self.variables_after(frame, before, assigned, flag, carried_atoms, bounds
                             if spec is not None else None)
        self.state.cse.clear()
        self.state.ops.append(Loop("while" if spec is None else "range", target, bounds, test_ops,
                                   test, body, carried_vars, counter, break_flag, location))

    def loop_body_source(self, frame, stmt, location):
        """(the break flag's name, whether the body breaks, the body's statements with
        ``break``/``continue`` made flags): lists the body appends to are made run-time
        lists and views of arrays it writes into marked stale first."""
        flag = self.state.names.fresh("stop")
        flag_used = _contains_break(stmt.body)
        body_src = remove_loop_jumps(stmt.body, flag)
        if flag_used:
            init = gast.Assign(targets=[name_node(flag, gast.Store())],
                               value=gast.Constant(value=False, kind=None), type_comment=None)
            body_src = [gast.copy_location(init, stmt)] + body_src
        self.materialise_lists(frame, body_src, location)
        for name in _subscript_targets(body_src):
            if isinstance(frame.env.get(name), Var):
                self.aliases.mark_written(frame.env[name].name)
        return flag, flag_used, body_src

    def check_loop_reads(self, frame, stmt, body, carried, stale_before):
        """Refuse a loop whose body reads a value from before the iteration that the body
        later updates in place behind its name: the next iteration reads it changed (not in
        s2sgrad's own gradient code: ``aliasing.own_code``)."""
        if own_code(frame):
            return
        made = {t for s in walk_ops(body) if isinstance(s, Op) for t in s.targets}
        made -= set(carried)
        changed = self.aliases.stale_views - stale_before
        for read in _reads(body):
            if read in changed and read not in made:
                raise unsupported(
                    frame, stmt, f"a loop that reads {self.aliases.shown(frame, read)} and then, "
                    f"later in its body, updates the memory it shares with another array in "
                    f"place (the next iteration would read it changed)", "take a copy "
                    "(.copy()) before the loop, or update the array itself (y[i] = ...) "
                    "instead of a view or an alias of it")

    def variables_after(self, frame, before, assigned, flag, carried_atoms, bounds):
        """``frame``'s variables after the loop: those ``before`` it, the loop-carried ones,
        and those only the body binds (``assigned``: its last iteration's, which may be
        unbound when the loop runs zero times; ``bounds``: a range's, else None)."""
        after = frame.env
        frame.env = dict(before)
        runs = bounds is not None and all(isinstance(b, Const) for b in bounds) and \
            len(range(*(b.value for b in bounds))) > 0
        for name in assigned:
            if name in after and name != flag and name not in dict(carried_atoms):
                frame.env[name] = after[name]          # a body variable read after the loop
                if not runs:
                    self.state.unbound.update(atom_vars(after[name]))
        for name, atom in carried_atoms:
            frame.env[name] = atom

    def carried_names(self, frame, assigned, flag, spec, body_src):
        """The names the loop carries from one iteration to the next: those ``assigned``
        in the body that have a value before it.  A name that may be unbound there (bound
        by a loop that may have run zero times) and that each iteration binds before
        reading is not carried but the body's own, as if new: copying its value on entry
        would raise UnboundLocalError where Python reads nothing."""
        def maybe_unbound(atom):
            return any(v in self.state.unbound for v in atom_vars(atom))
        return [n for n in assigned if n in frame.env and n != flag
                and isinstance(frame.env[n], (Var, Const, Seq))
                and not (maybe_unbound(frame.env[n]) and (
                    spec is not None and n in _target_names(spec.target)
                    or _bound_before_read(body_src, n)))]

    def carry(self, atom, name, location, carried_vars):
        """Fresh loop-carried variables for ``atom`` (each item of a tuple), initialised
        before the loop; returns the atom made of them."""
        if isinstance(atom, Seq):
            return Seq(tuple(self.carry(a, name, location, carried_vars) for a in atom.items),
                       atom.kind)
        if isinstance(atom, Const) and not literals.is_literal(atom.value):
            return atom       # a function or module: not a value the loop changes
        carried = self.state.names.variable(name)
        if atom == Const(None) or isinstance(atom, Var) and atom.name in self.types.maybe_none:
            self.types.maybe_none.add(carried)     # (None before the loop, a value after)
        self.state.ops.append(self.emitter.assign_op(carried, atom, location))
        self.entry_shapes[carried] = self.types.shape_of(atom)
        if self.types.is_int(atom):
            self.entry_ints.add(carried)
        carried_vars.append(carried)
        return Var(carried)

    def forget_carried_assumptions(self, changed):
        """A loop-carried variable changed rank (``_RankChanged``) or shape
        (``_ShapeChanged``) in the body: lowered again, nothing is assumed of it."""
        if isinstance(changed, _IntChanged):
            self.not_ints.add(changed.name)
            self.types.int_vars.discard(changed.name)
            self.types.ndims.pop(changed.name, None)
            return
        if isinstance(changed, _RankChanged):
            self.types.ndims.pop(changed.name, None)
            self.aliases.made_ranks[changed.name] = None
        if getattr(changed, "varies", False):
            self.varying_shapes.add(changed.name)     # sizes that may change: assumed still
        else:
            self.unassumed_shapes.add(changed.name)

    def assume_carried_shapes(self, carried_vars):
        """Give each loop-carried variable the shape it is assumed to keep (ShapeTable.
        assumed): checked at the end of the body (carry_to_next_iteration)."""
        for name in carried_vars:
            if name in self.entry_ints and name not in self.not_ints:
                self.types.int_vars.add(name)
                self.types.ndims[name] = 0
            assumed = None if name in self.unassumed_shapes else self.types.shapes.assumed(
                name, self.entry_shapes.get(name), name in self.varying_shapes)
            if assumed is None:
                self.types.shapes.of.pop(name, None)
            else:
                self.types.shapes.of[name] = assumed

    def carry_to_next_iteration(self, frame, stmt, name, value, carried, location):
        """At the end of an iteration: copy ``value`` into the loop-carried ``carried``."""
        if isinstance(carried, Seq):
            if not (isinstance(value, Seq) and len(value.items) == len(carried.items)):
                raise unsupported(frame, stmt, f"`{name}` changes structure inside the "
                                  f"loop", "keep tuples the same length in every iteration")
            for v, h in zip(value.items, carried.items):
                self.carry_to_next_iteration(frame, stmt, name, v, h, location)
        elif isinstance(carried, Var) and value != carried:
            if isinstance(value, Seq):
                raise unsupported(frame, stmt, f"`{name}` becomes a tuple inside the loop",
                                  "keep its structure the same in every iteration")
            if carried.name in self.types.int_vars and not self.types.is_int(value):
                raise _IntChanged(carried.name)
            if carried.name in self.types.ndims and \
                    self.types.ndim_of(value) != self.types.ndims[carried.name]:
                raise _RankChanged(carried.name)
            if self.aliases.made_ranks.get(carried.name) is not None and \
                    self.aliases.rank_for_views(value) != self.aliases.made_ranks[carried.name]:
                raise _RankChanged(carried.name)    # the body may have taken views for copies
            assumed = self.types.shapes.of.get(carried.name)
            if assumed is not None and not self.types.shapes.covers(assumed,
                                                                    self.types.shape_of(value)):
                raise _ShapeChanged(carried.name)
            if assumed is not None and carried.name not in self.varying_shapes and \
                    not self.types.shapes.same(assumed, self.types.shape_of(value)):
                raise _ShapeChanged(carried.name, varies=True)
            self.state.ops.append(self.emitter.assign_op(carried.name, value, location))

    def materialise_lists(self, frame, statements, location):
        """Lists that a run-time loop appends to: made real lists before the loop."""
        for name in appended_names(statements):
            current = frame.env.get(name)
            if isinstance(current, Seq) and current.kind == "list":
                var = self.state.names.variable(name)
                expr = gast.List(elts=[self.atoms.atom_node(a) for a in current.items],
                                 ctx=gast.Load())
                self.state.ops.append(Op((var,), prims.LIST, tuple(current.items), {}, expr,
                                         location, lookup(prims.LIST)))
                self.types.lists.add(var)
                self.aliases.hold(var, current.items)
                frame.env[name] = Var(var)


class _RankChanged(Exception):
    """A loop-carried variable's rank differs between iterations: lower the loop again
    without assuming it."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


class _IntChanged(Exception):
    """A loop-carried variable that entered the loop as an int is not one at the end of
    the body (``j = j / 2``): lower the loop again without assuming it an int."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


class _ShapeChanged(Exception):
    """A loop-carried variable does not keep the shape assumed for it: lower the loop
    again without the assumption (``varies``: with the weaker one, sizes that may change)."""

    def __init__(self, name, varies=False):
        super().__init__(name)
        self.name = name
        self.varies = varies


def _reads(statements):
    """The Var names the statements read (operands, written values and indexes, tests)."""
    for stmt in walk_statements(statements):
        if isinstance(stmt, Op):
            yield from stmt.operand_vars()
        elif isinstance(stmt, SetItem):
            yield from atom_vars(stmt.value)
            yield from atom_vars(stmt.index)
        elif isinstance(stmt, ListAppend):
            yield from atom_vars(stmt.value)
        elif isinstance(stmt, If):
            yield from atom_vars(stmt.test)
        elif isinstance(stmt, Loop):
            yield from (n for b in stmt.bounds for n in atom_vars(b))
            yield from atom_vars(stmt.test) if stmt.test is not None else ()


def _target_names(target):
    """The names a ``for`` target binds."""
    return {n.id for n in gast.walk(target) if isinstance(n, gast.Name)}


def _bound_before_read(statements, name):
    """True when the statements (a loop body) bind ``name`` by a plain assignment before
    anything in them reads it (read first, or touched in a nested block: False)."""
    for stmt in statements:
        reads = any(isinstance(n, gast.Name) and n.id == name and
                    not isinstance(n.ctx, gast.Store) for n in gast.walk(stmt))
        if isinstance(stmt, gast.Assign) and not reads and any(
                isinstance(t, gast.Name) and t.id == name for t in stmt.targets):
            return True
        if reads or name in _target_names(stmt) and not isinstance(stmt, gast.Assign):
            return False
    return False


def _subscript_targets(statements):
    names = []
    for stmt in statements:
        for node in gast.walk(stmt):
            if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store) \
                    and isinstance(node.value, gast.Name):
                names.append(node.value.id)
    return names


def row_value(pattern, index, items, shift=None):
    """The loop target's value at one step of ``pattern`` (see ``ForLowering.row_pattern``): the
    sequences' rows ``items`` and the step's ``index`` put together.  ``shift(index,
    start)`` gives the count enumerate(x, start) yields (index + start)."""
    kind = pattern[0]
    if kind == "seq":
        return items[pattern[1]]
    if kind == "enumerate":
        start = pattern[2]
        if isinstance(index, Const) and isinstance(start, Const):
            count = Const(index.value + start.value)
        elif isinstance(start, Const) and start.value == 0:
            count = index
        else:
            count = shift(index, start)
        return Seq((count, row_value(pattern[1], index, items, shift)))
    return Seq(tuple(row_value(p, index, items, shift) for p in pattern[1]))


def _contains_break(statements):
    for stmt in statements:
        stack = [stmt]
        while stack:
            node = stack.pop()
            if isinstance(node, gast.Break):
                return True
            if not isinstance(node, (gast.For, gast.While)):
                stack.extend(gast.iter_child_nodes(node))
    return False
