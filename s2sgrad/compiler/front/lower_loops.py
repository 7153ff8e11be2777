"""Lowering of run-time control flow, mixed into the Lowerer.

Takes gast ``if``/``for``/``while`` statements, ``xs.append(v)`` and calls
made for their effect; gives the structured IR (``If``, ``Loop``,
``ListAppend``) with SSA inside: branches end with ``assign`` copies that
merge what each side set, loops keep their loop-carried values in fresh
variables (``Loop.carried``), assigned before the loop and at the end of each iteration.
"""
import builtins
import inspect
import operator
from dataclasses import dataclass

import gast
import numpy as np

from ... import primitives as prims
from ...rules import lookup
from ..analysis.aliasing import own_code
from ..ir import (Const, DictAtom, If, ListAppend, Loop, Op, Seq, SetItem, Var, atom_vars,
                  walk_ops, walk_statements)
from ..syntax.nodes import name_node
from . import literals
from .frontend import is_user_code
from .jumps import assigned_names, remove_loop_jumps


@dataclass(frozen=True)
class RangeSpec:
    """A ``for`` loop run at run time as ``for <target> in range(*bounds)``.

    ``bounds``: the (start, stop, step) atoms; ``target``: the node the loop's index is
    named from (the user's loop variable, or a fresh index when rows are read);
    ``rows``: None, or (pattern, sequences) whose rows are read at each iteration start
    and bound to the user's target (the pattern: see ``row_pattern``)."""
    bounds: tuple
    target: object
    rows: tuple | None = None


class FlowLowering:
    """Control-flow lowering; see the module doc.  Mixed into ``Lowerer``."""

    def lower_call_statement(self, frame, stmt):
        """A call whose value is not used: ``print(...)`` runs as it is; a call to the user's
        own function is inlined for what it does (in-place updates).  True when handled."""
        call = stmt.value
        if not isinstance(call, gast.Call) or isinstance(call.func, gast.Attribute) and \
                not isinstance(self.lower_expr(frame, call.func.value), Const):
            return False
        func = self.lower_expr(frame, call.func)
        if not isinstance(func, Const):
            return False
        if func.value is print:
            args = tuple(self.splice(frame, call.args))
            kwargs = {k.arg: self.lower_expr(frame, k.value) for k in call.keywords}
            self.emit(frame, stmt, prims.EFFECT, args, kwargs, self.call_expr(
                name_node("print"),
                args, kwargs), "_")
            return True
        obj = func.value
        fn = obj.__func__ if inspect.ismethod(obj) else obj
        if inspect.isfunction(fn) and is_user_code(fn) and not \
                getattr(obj, "__s2sgrad_op__", False):
            self.lower_expr(frame, call)
            return True
        return False

    def lower_append(self, frame, stmt):
        """``xs.append(v)``: a tuple-like list grows while building; a list that a run-time
        loop extends becomes a real list (ListAppend)."""
        call = stmt.value
        name = call.func.value.id
        if len(call.args) != 1 or call.keywords:
            raise self.unsupported(frame, stmt, "append with other than one argument",
                                   "append one value per call: xs.append(v)")
        value = self.lower_expr(frame, call.args[0])
        self.check_fresh(frame, stmt, [value])
        current = frame.env.get(name)
        if isinstance(current, Seq) and current.kind == "list":
            frame.env[name] = Seq(current.items + (value,), "list")
        elif isinstance(current, Var) and current.name in self.lists:
            self.ops.append(ListAppend(current.name, value, frame.location(stmt)))
            self.hold(current.name, [value])
            self.cse.clear()
        else:
            raise self.unsupported(frame, stmt, f"append to `{name}`, which is not a list made "
                                   f"in this function", "start it with xs = [] in the function")

    def materialise_lists(self, frame, statements, location):
        """Lists that a run-time loop appends to: made real lists before the loop."""
        for name in _appended_names(statements):
            current = frame.env.get(name)
            if isinstance(current, Seq) and current.kind == "list":
                var = self.names.variable(name)
                self.ops.append(Op((var,), prims.LIST, tuple(current.items), {},
                                   gast.List(elts=[self.atom_node(a) for a in current.items],
                                             ctx=gast.Load()), location, lookup(prims.LIST)))
                self.lists.add(var)
                self.hold(var, current.items)
                frame.env[name] = Var(var)

    def lower_if(self, frame, stmt, test):
        """A branch on a run-time value: both sides lowered, variables merged by assignments
        at the end of each side (the branches' 'phi' copies)."""
        before = dict(frame.env)
        sides = []
        stale_before, stale_after = set(self.stale_views), set()
        for statements in (stmt.body, stmt.orelse):
            frame.env = dict(before)
            frame.output, frame.returned = None, False
            self.stale_views = set(stale_before)   # one side does not run after the other
            ops = self.collect(lambda: self.lower_body(frame, statements))
            sides.append((ops, frame.env, frame.output if frame.returned else None))
            stale_after |= self.stale_views
        self.stale_views = stale_after
        (body, env_body, out_body), (orelse, env_else, out_else) = sides
        frame.env = dict(before)
        location = frame.location(stmt)
        for name in dict.fromkeys(list(env_body) + list(env_else)):
            a, b = env_body.get(name), env_else.get(name)
            if a == b:
                frame.env[name] = a
            else:
                frame.env[name] = self.merge(frame, stmt, name, a, b, body, orelse, location)
        if (out_body is None) != (out_else is None):
            raise self.unsupported(frame, stmt, "a branch that returns while the other falls "
                                   "through", "return from both branches, or from neither")
        if out_body is not None:
            frame.output = self.merge(frame, stmt, "result", out_body, out_else, body, orelse,
                                      location)
            frame.returned = True
        else:
            frame.output, frame.returned = None, False
        self.ops.append(If(test, body, orelse, location))
        self.cse.clear()

    def merge(self, frame, stmt, name, a, b, body, orelse, location):
        """The atom that holds ``a`` after ``body`` and ``b`` after ``orelse``."""
        if a is None or b is None:
            # set on one path only: on the other, Python has no value for it either
            return a if b is None else b
        if isinstance(a, DictAtom) or isinstance(b, DictAtom):
            if a is b:
                return a
            raise self.unsupported(frame, stmt, f"`{name}` is a dict that differs between the "
                                   f"two branches", "make the dict before the if and set only "
                                   "its values' variables in the branches")
        if isinstance(a, Seq) or isinstance(b, Seq):
            if not (isinstance(a, Seq) and isinstance(b, Seq) and len(a.items) == len(b.items)):
                raise self.unsupported(frame, stmt, f"`{name}` is a tuple of different lengths "
                                       f"in the two branches", "give it the same structure")
            return Seq(tuple(self.merge(frame, stmt, name, x, y, body, orelse, location)
                             for x, y in zip(a.items, b.items)), a.kind)
        if a == b:
            return a
        for atom in (a, b):
            if isinstance(atom, Const) and not literals.is_literal(atom.value) \
                    and atom.value is not None:
                raise self.unsupported(frame, stmt, f"`{name}` names different objects in the "
                                       f"two branches", "branch on values, not on functions")
        merged = self.names.variable(name if name.isidentifier() else "v")
        if a is not None and b is not None and self.ndim_of(a) is not None \
                and self.ndim_of(a) == self.ndim_of(b):
            self.ndims[merged] = self.ndim_of(a)
        if a is not None and b is not None and self.shapes.same(self.shape_of(a),
                                                                self.shape_of(b)):
            self.shapes.of[merged] = self.shape_of(a)
        for atom, ops in ((a, body), (b, orelse)):
            if atom is not None:
                ops.append(self.assign_op(merged, atom, location))
        return Var(merged)

    def assign_op(self, target, atom, location):
        """``target = atom``: a copy that passes the gradient through."""
        if self.ndim_of(atom) is not None and target not in self.ndims:
            self.ndims[target] = self.ndim_of(atom)
        if isinstance(atom, Var) and atom.name in self.dtypes and target not in self.dtypes:
            self.dtypes[target] = self.dtypes[atom.name]
        self.record_alias(target, atom)   # the same array in generated code
        return Op((target,), prims.ASSIGN, (atom,), {}, self.atom_node(atom), location,
                  lookup(prims.ASSIGN))

    def collect(self, lower):
        """Run ``lower`` with a fresh op list (and no values to reuse from outside it: a
        branch or a loop body); returns the ops it appended."""
        saved, self.ops = self.ops, []
        saved_cse, self.cse = self.cse, {}
        self.nesting += 1
        try:
            lower()
            return self.ops
        finally:
            self.ops, self.cse = saved, saved_cse
            self.nesting -= 1

    def lower_for(self, frame, stmt):
        call = stmt.iter if isinstance(stmt.iter, gast.Call) else None
        func = self.lower_expr(frame, call.func) if call is not None and \
            isinstance(call.func, gast.Name) else None   # range, enumerate, zip
        if isinstance(func, Const) and func.value is reversed:
            return self.lower_reversed_for(frame, stmt, call)
        if isinstance(func, Const) and _unloopable(func.value) is not None:
            raise self.unsupported(frame, stmt, *_unloopable(func.value))
        if not (isinstance(func, Const) and func.value in (range, enumerate, zip)):
            func = None
            iterable = self.lower_expr(frame, stmt.iter)
            if isinstance(iterable, DictAtom):   # a dict known while building: its keys
                iterable = Seq(tuple(k for k, _ in iterable.pairs))
            if isinstance(iterable, Seq) or (
                    isinstance(iterable, Const) and isinstance(iterable.value, (list, tuple))
                    and not all(isinstance(v, (int, float)) for v in iterable.value)):
                return self.lower_unrolled_for(frame, stmt, iterable)
        if isinstance(func, Const) and func.value is range:
            bounds = self.range_bounds(frame, call.args)
            return self.lower_loop(frame, stmt, RangeSpec(tuple(bounds), stmt.target))
        if isinstance(func, Const) and func.value in (enumerate, zip):
            seqs = []
            pattern = self.row_pattern(frame, stmt, call, seqs)
            if seqs and all(isinstance(q, Seq) for q in seqs):
                # over tuples/lists known while building (a tuple argument): unrolled
                n = min(len(q.items) for q in seqs)
                items = [_row_value(pattern, Const(i), [q.items[i] for q in seqs],
                                    lambda i, start: self.int_arith(frame, stmt, operator.add,
                                                                    i, start))
                         for i in range(n)]
                return self.lower_unrolled_for(frame, stmt, Seq(tuple(items)))
            rows = pattern
        else:
            seqs, rows = [iterable], ("seq", 0)
        for q in seqs:
            self.check_loopable(frame, stmt, q)
        lengths = [self.length(frame, stmt, q) for q in seqs]
        length = lengths[0]
        for other in lengths[1:]:
            length = self.emit(frame, stmt, min, (length, other), {}, self.call_expr(
                name_node("min"),
                (length, other), {}), "n")
        index = name_node(self.names.available("i"), gast.Store())
        return self.lower_loop(frame, stmt, RangeSpec((Const(0), length, Const(1)), index,
                                                      (rows, seqs)))

    def row_pattern(self, frame, stmt, call, seqs):
        """The shape of what ``enumerate(...)``/``zip(...)`` (nested: ``enumerate(zip(x,
        y))``) give at each step, over the sequences it appends to ``seqs``: ("seq", k)
        for the k-th sequence's row, ("enumerate", p), ("zip", (p, ...))."""
        func = self.lower_expr(frame, call.func) if isinstance(call.func, gast.Name) else None
        kind = func.value if isinstance(func, Const) else None
        start = Const(0)
        if kind is enumerate:
            try:
                bound = inspect.signature(lambda iterable, start=0: None).bind(
                    *call.args, **{k.arg: k.value for k in call.keywords})
            except TypeError:
                raise self.unsupported(frame, stmt, "enumerate(...) with other than a sequence "
                                       "and a start", "call enumerate(x) or enumerate(x, start)"
                                       ) from None
            if "start" in bound.arguments:
                start = self.lower_expr(frame, bound.arguments["start"])
                if not (isinstance(start, Var) and start.name in self.int_vars) and not (
                        isinstance(start, Const) and isinstance(start.value, int)):
                    raise self.unsupported(frame, stmt, "enumerate(...) with a start that is "
                                           "not an integer", "give enumerate an int start")
            call = gast.Call(func=call.func, args=[bound.arguments["iterable"]], keywords=[])
        if kind is zip and call.keywords:
            raise self.unsupported(frame, stmt, "zip(...) with keyword arguments",
                                   "call zip with the sequences only")
        parts = []
        for arg in call.args:
            inner = arg if isinstance(arg, gast.Call) and isinstance(arg.func, gast.Name) \
                else None
            inner_func = self.lower_expr(frame, inner.func) if inner is not None else None
            if isinstance(inner_func, Const) and inner_func.value in (enumerate, zip):
                parts.append(self.row_pattern(frame, stmt, inner, seqs))
            elif isinstance(inner_func, Const) and inner_func.value is reversed and \
                    len(inner.args) == 1 and not inner.keywords:
                seqs.append(self.reversed_rows(frame, stmt, inner.args[0]))
                parts.append(("seq", len(seqs) - 1))
            else:
                seqs.append(self.lower_expr(frame, arg))
                parts.append(("seq", len(seqs) - 1))
        return ("enumerate", parts[0], start) if kind is enumerate else ("zip", tuple(parts))

    def reversed_rows(self, frame, stmt, node):
        """``reversed(x)`` inside enumerate/zip: a tuple's items last first, or the view
        ``x[::-1]`` of an array (its rows last first)."""
        seq = self.lower_expr(frame, node)
        if isinstance(seq, Seq):
            return Seq(tuple(reversed(seq.items)), seq.kind)
        if isinstance(seq, Const) and isinstance(seq.value, (list, tuple)):
            return Const(tuple(reversed(seq.value)))
        self.check_loopable(frame, stmt, seq)
        if seq.name in self.lists:
            raise self.unsupported(frame, stmt, "reversed(...) of a list built at run time "
                                   "inside enumerate(...) or zip(...)", "loop over "
                                   "reversed(xs) alone, or stack the list first: "
                                   "reversed(np.stack(xs))")
        return self.emit_getitem(frame, stmt, seq, Const(slice(None, None, -1)), None)

    def check_loopable(self, frame, stmt, seq):
        """Refuse, naming the loop, a run-time ``for`` over what is not an array (or a list
        the function extends): a number, an iterator a call made (map, sorted, a
        generator...), an object.  Never a crash inside the generated code."""
        what, hint = None, None
        if not isinstance(seq, Var):
            what = "a `for` loop over this iterable"
        elif seq.name not in self.lists:
            producer = self.producers.get(seq.name)
            if self.ndims.get(seq.name) == 0 or seq.name in self.int_vars:
                what = "a `for` loop over a number (it has no rows)"
            elif isinstance(producer, str) and producer in _UNLOOPABLE_ATTRIBUTES:
                what = f"a `for` loop over {_UNLOOPABLE_ATTRIBUTES[producer]}"
            elif producer is not None and not isinstance(producer, str) and (
                    _unloopable(producer) is not None or _is_builtin(producer)):
                what, hint = _unloopable(producer) or (
                    f"a `for` loop over the result of {getattr(producer, '__name__', producer)}"
                    f"(...)", None)
        if what is not None:
            raise self.unsupported(frame, stmt, what, hint or (
                "loop over range(...), reversed(range(...)), an array's rows (or "
                "reversed(x)), a tuple or list, or enumerate(...) or zip(...) of those"))

    def lower_reversed_for(self, frame, stmt, call):
        """``for i in reversed(range(a, b, s))`` (a constant step): the range walked from its
        last value down, ``range(last, a - 1, -s)``; ``for row in reversed(x)`` over an
        array (or a list the function extends): its rows from the last; over a tuple or
        list known while building: unrolled, last item first."""
        if len(call.args) != 1 or call.keywords:
            raise self.unsupported(frame, stmt, "reversed(...) with other than one argument",
                                   "pass reversed one sequence: reversed(range(n)) or "
                                   "reversed(x)")
        inner = call.args[0]
        inner_func = self.lower_expr(frame, inner.func) if isinstance(inner, gast.Call) and \
            isinstance(inner.func, gast.Name) else None
        if isinstance(inner_func, Const) and inner_func.value is range:
            bounds = self.range_bounds(frame, inner.args)
            if len(bounds) != 3 or inner.keywords:
                raise self.unsupported(frame, stmt, "range(...) with other than 1 to 3 "
                                       "arguments", "call range(stop), range(start, stop) or "
                                       "range(start, stop, step)")
            start, stop, step = bounds
            if not (isinstance(step, Const) and isinstance(step.value, int)
                    and not isinstance(step.value, bool) and step.value != 0):
                raise self.unsupported(
                    frame, stmt, "reversed(range(...)) with a step known only at run time",
                    "give the range a constant step, or write the reversed range yourself: "
                    "range(last, start - 1, -step)")
            s = step.value
            if abs(s) == 1:   # the last value is stop - 1 (stop + 1 going down)
                last = self.int_arith(frame, stmt, operator.sub if s > 0 else operator.add,
                                      stop, Const(1))
                end = self.int_arith(frame, stmt, operator.sub if s > 0 else operator.add,
                                     start, Const(1))
                return self.lower_loop(frame, stmt, RangeSpec((last, end, Const(-s)),
                                                              stmt.target))
            # the last value of the range: start + ((stop - start -+ 1) // s) * s
            span = self.int_arith(frame, stmt, operator.sub, stop, start)
            span = self.int_arith(frame, stmt, operator.sub if s > 0 else operator.add, span,
                                  Const(1))
            count = self.int_arith(frame, stmt, operator.floordiv, span, Const(s))
            last = self.int_arith(frame, stmt, operator.add, start, self.int_arith(
                frame, stmt, operator.mul, count, Const(s)))
            end = self.int_arith(frame, stmt, operator.sub if s > 0 else operator.add, start,
                                 Const(1))
            return self.lower_loop(frame, stmt, RangeSpec((last, end, Const(-s)), stmt.target))
        iterable = self.lower_expr(frame, inner)
        if isinstance(iterable, Seq):
            return self.lower_unrolled_for(frame, stmt, Seq(tuple(reversed(iterable.items))))
        if isinstance(iterable, Const) and isinstance(iterable.value, (list, tuple)):
            return self.lower_unrolled_for(frame, stmt, Const(tuple(reversed(iterable.value))))
        self.check_loopable(frame, stmt, iterable)
        last = self.int_arith(frame, stmt, operator.sub, self.length(frame, stmt, iterable),
                              Const(1))
        index = name_node(self.names.available("i"), gast.Store())
        return self.lower_loop(frame, stmt, RangeSpec((last, Const(-1), Const(-1)), index,
                                                      (("seq", 0), [iterable])))

    def int_arith(self, frame, node, op, a, b):
        """``a <op> b`` on integers (loop bounds): folded when both are constants, else an
        Op whose result is known to be an int."""
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(op(a.value, b.value))
        if op is operator.add and isinstance(b, Const) and b.value == 0:
            return a
        if op is operator.mul and isinstance(b, Const) and b.value == 1:
            return a
        if op is operator.floordiv and isinstance(b, Const) and b.value == 1:
            return a
        binop = {operator.add: gast.Add, operator.sub: gast.Sub, operator.mul: gast.Mult,
                 operator.floordiv: gast.FloorDiv}[op]()
        result = self.emit(frame, node, op, (a, b), {}, gast.BinOp(
            left=self.atom_node(a), op=binop, right=self.atom_node(b)), None)
        self.int_vars.add(result.name)
        self.ndims[result.name] = 0
        return result

    def length(self, frame, node, seq):
        """An op giving the number of rows of an array (or items of a run-time list)."""
        if seq.name in self.lists:
            result = self.emit(frame, node, len, (seq,), {}, self.call_expr(
                name_node("len"),
                (seq,), {}), "n")
        else:
            result = self.emit(frame, node, prims.SHAPE, (seq,), {}, gast.Subscript(
                value=gast.Attribute(value=self.atom_node(seq), attr="shape", ctx=gast.Load()),
                slice=gast.Constant(value=0, kind=None), ctx=gast.Load()), "n")
        self.int_vars.add(result.name)
        self.ndims[result.name] = 0
        return result

    def lower_unrolled_for(self, frame, stmt, iterable):
        if isinstance(iterable, Seq):
            items = list(iterable.items)
        else:
            items = [self.const_or_free(v, self.paths.get(id(v), "item")) for v in iterable.value]
        for node in gast.walk(stmt):
            if isinstance(node, (gast.Break, gast.Continue)):
                raise self.unsupported(frame, node, "break/continue in a loop over a tuple or "
                                       "list known while building (it is unrolled)",
                                       "put the rest of the body under an if instead")
        for item in items:
            self.bind(frame, stmt.target, item)
            self.lower_body(frame, stmt.body)

    def range_bounds(self, frame, args):
        """The atoms of ``range(*args)`` as [start, stop, step] (defaults filled in; more
        than three arguments are left for the caller to refuse)."""
        bounds = [self.lower_expr(frame, a) for a in args]
        if len(bounds) == 1:
            bounds = [Const(0)] + bounds
        if len(bounds) == 2:
            bounds = bounds + [Const(1)]
        return bounds

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
        carried = [n for n in assigned if n in frame.env and n != flag
                   and isinstance(frame.env[n], (Var, Const, Seq))]
        carried_atoms = []      # (name, atom of its carried variables) per loop-carried name
        carried_vars = []
        for name in carried:
            atom = self.carry(frame.env[name], name, location, carried_vars)
            frame.env[name] = atom
            carried_atoms.append((name, atom))
        counter = self.names.fresh("n_iter")
        target = None
        bounds = ()
        rows = None
        if spec is not None:
            bounds, rows = spec.bounds, spec.rows
            target = self.names.variable(spec.target.id if isinstance(spec.target, gast.Name)
                                         else "i")
            self.int_vars.add(target)
            self.ndims[target] = 0
        entry = dict(frame.env)

        def lower_test():
            test_result.append(self.lower_expr(frame, stmt.test))

        def lower_body():
            if spec is not None:
                index = Var(target)
                if rows is not None:
                    pattern, seqs = rows
                    items = [self.emit_getitem(frame, stmt, q, index, None) for q in seqs]
                    self.bind(frame, stmt.target, _row_value(
                        pattern, index, items, lambda i, start: self.int_arith(
                            frame, stmt, operator.add, i, start)))
                else:
                    self.bind(frame, stmt.target, index)
            self.lower_body(frame, body_src)
            if frame.returned:
                raise self.unsupported(frame, stmt, "return inside a loop",
                                       "set a variable and break, then return after the loop")
            for name, atom in carried_atoms:
                self.carry_to_next_iteration(frame, stmt, name, frame.env.get(name), atom, location)

        while True:   # lowered again when a loop-carried variable turns out to change rank
            frame.env = dict(entry)
            self.assume_carried_shapes(carried_vars)
            test_result = []
            test_ops = self.collect(lower_test) if spec is None else []
            test = test_result[0] if test_result else None
            before = dict(frame.env)
            stale_before = set(self.stale_views)
            try:
                body = self.collect(lower_body)
                break
            except (_RankChanged, _ShapeChanged) as changed:
                self.forget_carried_assumptions(changed)
                self.stale_views = stale_before
        self.check_loop_reads(frame, stmt, body + test_ops, carried_vars, stale_before)
        after = frame.env
        break_flag = after.get(flag) if flag_used else None
        frame.env = dict(before)
        for name in assigned:
            if name in after and name != flag and name not in dict(carried_atoms):
                frame.env[name] = after[name]          # a body variable read after the loop
        for name, atom in carried_atoms:
            frame.env[name] = atom
        self.cse.clear()
        self.ops.append(Loop("while" if spec is None else "range", target, bounds, test_ops,
                             test, body, carried_vars, counter, break_flag, location))

    def loop_body_source(self, frame, stmt, location):
        """(the break flag's name, whether the body breaks, the body's statements with
        ``break``/``continue`` made flags): lists the body appends to are made run-time
        lists and views of arrays it writes into marked stale first."""
        flag = self.names.fresh("stop")
        flag_used = _contains_break(stmt.body)
        body_src = remove_loop_jumps(stmt.body, flag)
        if flag_used:
            init = gast.Assign(targets=[name_node(flag, gast.Store())],
                               value=gast.Constant(value=False, kind=None), type_comment=None)
            body_src = [gast.copy_location(init, stmt)] + body_src
        self.materialise_lists(frame, body_src, location)
        for name in _subscript_targets(body_src):
            if isinstance(frame.env.get(name), Var):
                self.mark_written(frame.env[name].name)
        return flag, flag_used, body_src

    def check_loop_reads(self, frame, stmt, body, carried, stale_before):
        """Refuse a loop whose body reads a value from before the iteration that the body
        later updates in place behind its name: the next iteration reads it changed (not in
        s2sgrad's own gradient code: ``aliasing.own_code``)."""
        if own_code(frame):
            return
        made = {t for s in walk_ops(body) if isinstance(s, Op) for t in s.targets}
        made -= set(carried)
        changed = self.stale_views - stale_before
        for read in _reads(body):
            if read in changed and read not in made:
                raise self.unsupported(
                    frame, stmt, f"a loop that reads {self.shown(frame, read)} and then, "
                    f"later in its body, updates the memory it shares with another array in "
                    f"place (the next iteration would read it changed)", "take a copy "
                    "(.copy()) before the loop, or update the array itself (y[i] = ...) "
                    "instead of a view or an alias of it")

    def carry(self, atom, name, location, carried_vars):
        """Fresh loop-carried variables for ``atom`` (each item of a tuple), initialised
        before the loop; returns the atom made of them."""
        if isinstance(atom, Seq):
            return Seq(tuple(self.carry(a, name, location, carried_vars) for a in atom.items),
                       atom.kind)
        if isinstance(atom, Const) and not literals.is_literal(atom.value):
            return atom       # a function or module: not a value the loop changes
        carried = self.names.variable(name)
        self.ops.append(self.assign_op(carried, atom, location))
        self.entry_shapes[carried] = self.shape_of(atom)
        carried_vars.append(carried)
        return Var(carried)

    def forget_carried_assumptions(self, changed):
        """A loop-carried variable changed rank (``_RankChanged``) or shape
        (``_ShapeChanged``) in the body: lowered again, nothing is assumed of it."""
        if isinstance(changed, _RankChanged):
            self.ndims.pop(changed.name, None)
            self.made_ranks[changed.name] = None
        if getattr(changed, "varies", False):
            self.varying_shapes.add(changed.name)     # sizes that may change: assumed still
        else:
            self.unassumed_shapes.add(changed.name)

    def assume_carried_shapes(self, carried_vars):
        """Give each loop-carried variable the shape it is assumed to keep (ShapeTable.
        assumed): checked at the end of the body (carry_to_next_iteration)."""
        for name in carried_vars:
            assumed = None if name in self.unassumed_shapes else self.shapes.assumed(
                name, self.entry_shapes.get(name), name in self.varying_shapes)
            if assumed is None:
                self.shapes.of.pop(name, None)
            else:
                self.shapes.of[name] = assumed

    def carry_to_next_iteration(self, frame, stmt, name, value, carried, location):
        """At the end of an iteration: copy ``value`` into the loop-carried ``carried``."""
        if isinstance(carried, Seq):
            if not (isinstance(value, Seq) and len(value.items) == len(carried.items)):
                raise self.unsupported(frame, stmt, f"`{name}` changes structure inside the "
                                       f"loop", "keep tuples the same length in every iteration")
            for v, h in zip(value.items, carried.items):
                self.carry_to_next_iteration(frame, stmt, name, v, h, location)
        elif isinstance(carried, Var) and value != carried:
            if isinstance(value, Seq):
                raise self.unsupported(frame, stmt, f"`{name}` becomes a tuple inside the loop",
                                       "keep its structure the same in every iteration")
            if carried.name in self.ndims and self.ndim_of(value) != self.ndims[carried.name]:
                raise _RankChanged(carried.name)
            if self.made_ranks.get(carried.name) is not None and \
                    self.rank_for_views(value) != self.made_ranks[carried.name]:
                raise _RankChanged(carried.name)    # the body may have taken views for copies
            assumed = self.shapes.of.get(carried.name)
            if assumed is not None and not self.shapes.covers(assumed, self.shape_of(value)):
                raise _ShapeChanged(carried.name)
            if assumed is not None and carried.name not in self.varying_shapes and \
                    not self.shapes.same(assumed, self.shape_of(value)):
                raise _ShapeChanged(carried.name, varies=True)
            self.ops.append(self.assign_op(carried.name, value, location))



class _RankChanged(Exception):
    """A loop-carried variable's rank differs between iterations: lower the loop again
    without assuming it."""

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


def _subscript_targets(statements):
    names = []
    for stmt in statements:
        for node in gast.walk(stmt):
            if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store) \
                    and isinstance(node.value, gast.Name):
                names.append(node.value.id)
    return names


#: iterables a run-time ``for`` cannot walk: what the loop is, and what to write instead
_UNLOOPABLE = {
    map: ("a `for` loop over map(...)",
          "loop over the sequence itself and call the function in the body: "
          "for v in x: y = f(v)"),
    filter: ("a `for` loop over filter(...)",
             "loop over the sequence and skip items with `if ...: continue` (or use np.where "
             "on arrays)"),
    sorted: ("a `for` loop over sorted(...)",
             "loop over np.sort(x) (an array), or over range(n) with indices from "
             "np.argsort(x)"),
    iter: ("a `for` loop over iter(...)", "loop over the sequence itself"),
    set: ("a `for` loop over a set (its order is not fixed)",
          "loop over a tuple or list, or over an array's rows"),
    frozenset: ("a `for` loop over a frozenset (its order is not fixed)",
                "loop over a tuple or list, or over an array's rows"),
    dict: ("a `for` loop over dict(...)", "loop over the dict's .items() or a tuple of keys"),
    np.nditer: ("a `for` loop over np.nditer(...)",
                "loop over range(x.size) and read x.flat[i], or over the array's rows"),
    np.ndenumerate: ("a `for` loop over np.ndenumerate(...)",
                     "loop over range(...) for each axis and index x[i, j]"),
    np.ndindex: ("a `for` loop over np.ndindex(...)",
                 "loop over range(...) for each axis (nested loops)"),
}


#: array attributes and methods whose result a run-time ``for`` cannot walk as rows
_UNLOOPABLE_ATTRIBUTES = {prims.attribute("flat"): "x.flat (an iterator)",
                          prims.method("tolist"): "x.tolist() (a Python list made at run time)",
                          prims.method("item"): "x.item() (a number)",
                          prims.method("__iter__"): "iter(x)"}


def _row_value(pattern, index, items, shift=None):
    """The loop target's value at one step of ``pattern`` (see ``row_pattern``): the
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
        return Seq((count, _row_value(pattern[1], index, items, shift)))
    return Seq(tuple(_row_value(p, index, items, shift) for p in pattern[1]))


def _unloopable(func):
    """(what, hint) when ``func``'s result cannot be walked by a run-time loop, else None."""
    try:
        return _UNLOOPABLE.get(func)
    except TypeError:   # unhashable
        return None


def _is_builtin(func):
    """True for a Python builtin function or type (they make iterators, not arrays)."""
    name = getattr(func, "__name__", None)
    return isinstance(name, str) and getattr(builtins, name, None) is func


def unused_name(name, taken):
    """``name``, or ``name_1``, ``name_2``... whichever the function does not use."""
    candidate, i = name, 0
    while candidate in taken:
        i += 1
        candidate = f"{name}_{i}"
    return candidate


def is_append(call):
    """True for a call ``xs.append(v)`` on a name (a list the function extends)."""
    return (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and call.func.attr == "append" and isinstance(call.func.value, gast.Name))


def _appended_names(statements):
    names = []
    for stmt in statements:
        for node in gast.walk(stmt):
            if is_append(node) and node.func.value.id not in names:
                names.append(node.func.value.id)
    return names


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
