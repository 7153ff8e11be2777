"""Lowering ``for`` (``ForLowering``): what the loop walks decides how it runs.

- over a tuple or list known while building (or a dict's keys): unrolled, the body
  lowered once per item;
- over ``range(...)``, ``reversed(range(...))``, an array's rows (or ``reversed(x)``),
  a list the function extends, or ``enumerate``/``zip`` of those: a run-time loop
  over a range (``lower_loops.RangeSpec``) that reads the rows at each step;
- over what has no rows at run time (a number, ``map(...)``, a set...): refused,
  naming the loop.
"""
import builtins
import inspect
import operator

import gast
import numpy as np

from ... import primitives as prims
from ..ir import Const, DictAtom, Seq, Var
from ..syntax.nodes import name_node
from ..syntax.source import unsupported
from .lower_loops import RangeSpec, row_value
from .recursion import MAX_DEPTH


#: a loop over a tuple or list of numbers read from outside is unrolled up to this
#: length; a longer one runs over the numbers as an array
UNROLLED_NUMBERS = 32

class ForLowering:
    """``for`` -> an unrolled body or a run-time ``Loop`` (built by ``loops``, a
    ``LoopLowering``).  Reads ``state`` (``LoweringState``: names, paths, producers)
    and ``types`` (``TypeInfo``), appends Ops (lengths, bounds, rows) with ``emitter``,
    captures with ``atoms``; the iterable and an unrolled body are lowered by the
    lowerers given to ``connect``."""

    def __init__(self, state, types, atoms, emitter, loops):
        self.state = state
        self.types = types
        self.atoms = atoms
        self.emitter = emitter
        self.loops = loops
        self.expressions = self.statements = None

    def connect(self, expressions, statements):
        """The lowerers of the iterable (``ExpressionLowering``) and of an unrolled body
        (``StatementLowering``)."""
        self.expressions = expressions
        self.statements = statements

    def lower_for(self, frame, stmt):
        call = stmt.iter if isinstance(stmt.iter, gast.Call) else None
        func = self.expressions.lower_expr(frame, call.func) if call is not None and \
            isinstance(call.func, gast.Name) else None   # range, enumerate, zip
        if isinstance(func, Const) and func.value is reversed:
            return self.lower_reversed_for(frame, stmt, call)
        if isinstance(func, Const) and _unloopable(func.value) is not None:
            raise unsupported(frame, stmt, *_unloopable(func.value))
        if not (isinstance(func, Const) and func.value in (range, enumerate, zip)):
            func = None
            iterable = self.expressions.lower_expr(frame, stmt.iter)
            if isinstance(iterable, DictAtom):   # a dict known while building: its keys
                iterable = Seq(tuple(k for k, _ in iterable.pairs))
            if isinstance(iterable, Const) and isinstance(iterable.value, (list, tuple)) \
                    and len(iterable.value) > UNROLLED_NUMBERS and \
                    all(isinstance(v, (int, float)) for v in iterable.value):
                # a long list of numbers read from outside: a loop over it as an array
                iterable = Var(self.atoms.capture(np.asarray(iterable.value, dtype=float),
                                                  self.state.paths.get(id(iterable.value))))
            if isinstance(iterable, Seq) or (
                    isinstance(iterable, Const) and isinstance(iterable.value, (list, tuple))):
                return self.lower_unrolled_for(frame, stmt, iterable)
        if isinstance(func, Const) and func.value is range:
            bounds = self.range_bounds(frame, call.args)
            steps = self.recursive_steps(stmt, bounds)
            if steps is not None:
                return self.lower_unrolled_for(frame, stmt, Seq(tuple(map(Const, steps))))
            return self.loops.lower_loop(frame, stmt, RangeSpec(tuple(bounds), stmt.target))
        if isinstance(func, Const) and func.value in (enumerate, zip):
            seqs = []
            pattern = self.row_pattern(frame, stmt, call, seqs)
            if seqs and all(isinstance(q, Seq) for q in seqs):
                # over tuples/lists known while building (a tuple argument): unrolled
                n = min(len(q.items) for q in seqs)
                def shift(i, start):
                    return self.emitter.int_arith(frame, stmt, operator.add, i, start)
                items = [row_value(pattern, Const(i), [q.items[i] for q in seqs], shift)
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
            length = self.emitter.emit(frame, stmt, min, (length, other), {}, self.atoms.call_expr(
                name_node("min"),
                (length, other), {}), "n")
        index = name_node(self.state.names.available("i"), gast.Store())
        return self.loops.lower_loop(frame, stmt, RangeSpec((Const(0), length, Const(1)), index,
                                                            (rows, seqs)))

    def row_pattern(self, frame, stmt, call, seqs):
        """The shape of what ``enumerate(...)``/``zip(...)`` (nested: ``enumerate(zip(x,
        y))``) give at each step, over the sequences it appends to ``seqs``: ("seq", k)
        for the k-th sequence's row, ("enumerate", p), ("zip", (p, ...))."""
        func = self.expressions.lower_expr(frame, call.func) \
            if isinstance(call.func, gast.Name) else None
        kind = func.value if isinstance(func, Const) else None
        start = Const(0)
        if kind is enumerate:
            try:
                bound = inspect.signature(lambda iterable, start=0: None).bind(
                    *call.args, **{k.arg: k.value for k in call.keywords})
            except TypeError:
                raise unsupported(frame, stmt, "enumerate(...) with other than a sequence "
                                  "and a start", "call enumerate(x) or enumerate(x, start)"
                                       ) from None
            if "start" in bound.arguments:
                start = self.expressions.lower_expr(frame, bound.arguments["start"])
                if not (isinstance(start, Var) and start.name in self.types.int_vars) and not (
                        isinstance(start, Const) and isinstance(start.value, int)):
                    raise unsupported(frame, stmt, "enumerate(...) with a start that is "
                                      "not an integer", "give enumerate an int start")
            call = gast.Call(func=call.func, args=[bound.arguments["iterable"]], keywords=[])
        if kind is zip and call.keywords:
            raise unsupported(frame, stmt, "zip(...) with keyword arguments",
                              "call zip with the sequences only")
        parts = []
        for arg in call.args:
            inner = arg if isinstance(arg, gast.Call) and isinstance(arg.func, gast.Name) \
                else None
            inner_func = self.expressions.lower_expr(frame, inner.func) \
                if inner is not None else None
            if isinstance(inner_func, Const) and inner_func.value in (enumerate, zip):
                parts.append(self.row_pattern(frame, stmt, inner, seqs))
            elif isinstance(inner_func, Const) and inner_func.value is reversed and \
                    len(inner.args) == 1 and not inner.keywords:
                seqs.append(self.reversed_rows(frame, stmt, inner.args[0]))
                parts.append(("seq", len(seqs) - 1))
            else:
                seqs.append(self.expressions.lower_expr(frame, arg))
                parts.append(("seq", len(seqs) - 1))
        return ("enumerate", parts[0], start) if kind is enumerate else ("zip", tuple(parts))

    def reversed_rows(self, frame, stmt, node):
        """``reversed(x)`` inside enumerate/zip: a tuple's items last first, the view
        ``x[::-1]`` of an array (its rows last first), or the list ``xs[::-1]`` of a
        run-time list (a slice of a list is a list: see ``Emitter.list_slice``)."""
        seq = self.expressions.lower_expr(frame, node)
        if isinstance(seq, Seq):
            return Seq(tuple(reversed(seq.items)), seq.kind)
        if isinstance(seq, Const) and isinstance(seq.value, (list, tuple)):
            return Const(tuple(reversed(seq.value)))
        self.check_loopable(frame, stmt, seq)
        return self.emitter.emit_getitem(frame, stmt, seq, Const(slice(None, None, -1)), None)

    def check_loopable(self, frame, stmt, seq):
        """Refuse, naming the loop, a run-time ``for`` over what is not an array (or a list
        the function extends): a number, an iterator a call made (map, sorted, a
        generator...), an object.  Never a crash inside the generated code."""
        what, hint = None, None
        if not isinstance(seq, Var):
            what = "a `for` loop over this iterable"
        elif seq.name not in self.types.lists:
            producer = self.state.producers.get(seq.name)
            if self.types.ndims.get(seq.name) == 0 or seq.name in self.types.int_vars:
                what = "a `for` loop over a number (it has no rows)"
            elif isinstance(producer, str) and producer in _UNLOOPABLE_ATTRIBUTES:
                what = f"a `for` loop over {_UNLOOPABLE_ATTRIBUTES[producer]}"
            elif producer is not None and not isinstance(producer, str) and (
                    _unloopable(producer) is not None or _is_builtin(producer)):
                what, hint = _unloopable(producer) or (
                    f"a `for` loop over the result of {getattr(producer, '__name__', producer)}"
                    f"(...)", None)
        if what is not None:
            raise unsupported(frame, stmt, what, hint or (
                "loop over range(...), reversed(range(...)), an array's rows (or "
                "reversed(x)), a tuple or list, or enumerate(...) or zip(...) of those"))

    def lower_reversed_for(self, frame, stmt, call):
        """``for i in reversed(range(a, b, s))`` (a constant step): the range walked from its
        last value down, ``range(last, a - 1, -s)``; ``for row in reversed(x)`` over an
        array (or a list the function extends): its rows from the last; over a tuple or
        list known while building: unrolled, last item first."""
        if len(call.args) != 1 or call.keywords:
            raise unsupported(frame, stmt, "reversed(...) with other than one argument",
                              "pass reversed one sequence: reversed(range(n)) or "
                              "reversed(x)")
        inner = call.args[0]

        def arith(op, a, b):
            return self.emitter.int_arith(frame, stmt, op, a, b)
        inner_func = self.expressions.lower_expr(frame, inner.func) if isinstance(
            inner, gast.Call) and isinstance(inner.func, gast.Name) else None
        if isinstance(inner_func, Const) and inner_func.value is range:
            bounds = self.range_bounds(frame, inner.args)
            if len(bounds) != 3 or inner.keywords:
                raise unsupported(frame, stmt, "range(...) with other than 1 to 3 "
                                  "arguments", "call range(stop), range(start, stop) or "
                                  "range(start, stop, step)")
            start, stop, step = bounds
            if not (isinstance(step, Const) and isinstance(step.value, int)
                    and not isinstance(step.value, bool) and step.value != 0):
                raise unsupported(
                    frame, stmt, "reversed(range(...)) with a step known only at run time",
                    "give the range a constant step, or write the reversed range yourself: "
                    "range(last, start - 1, -step)")
            s = step.value
            if abs(s) == 1:   # the last value is stop - 1 (stop + 1 going down)
                last = arith(operator.sub if s > 0 else operator.add, stop, Const(1))
                end = arith(operator.sub if s > 0 else operator.add, start, Const(1))
                return self.loops.lower_loop(frame, stmt, RangeSpec((last, end, Const(-s)),
                                                                    stmt.target))
            # the last value of the range: start + ((stop - start -+ 1) // s) * s
            span = arith(operator.sub, stop, start)
            span = arith(operator.sub if s > 0 else operator.add, span, Const(1))
            count = arith(operator.floordiv, span, Const(s))
            last = arith(operator.add, start, arith(operator.mul, count, Const(s)))
            end = arith(operator.sub if s > 0 else operator.add, start, Const(1))
            return self.loops.lower_loop(frame, stmt, RangeSpec((last, end, Const(-s)),
                                                                stmt.target))
        iterable = self.expressions.lower_expr(frame, inner)
        if isinstance(iterable, Seq):
            return self.lower_unrolled_for(frame, stmt, Seq(tuple(reversed(iterable.items))))
        if isinstance(iterable, Const) and isinstance(iterable.value, (list, tuple)):
            return self.lower_unrolled_for(frame, stmt, Const(tuple(reversed(iterable.value))))
        self.check_loopable(frame, stmt, iterable)
        last = arith(operator.sub, self.length(frame, stmt, iterable), Const(1))
        index = name_node(self.state.names.available("i"), gast.Store())
        return self.loops.lower_loop(frame, stmt, RangeSpec((last, Const(-1), Const(-1)), index,
                                                            (("seq", 0), [iterable])))

    def length(self, frame, node, seq):
        """An op giving the number of rows of an array (or items of a run-time list)."""
        if seq.name in self.types.lists:
            result = self.emitter.emit(frame, node, len, (seq,), {}, self.atoms.call_expr(
                name_node("len"),
                (seq,), {}), "n")
        else:
            result = self.emitter.emit(frame, node, prims.SHAPE, (seq,), {}, gast.Subscript(
                value=gast.Attribute(value=self.atoms.atom_node(seq), attr="shape",
                                     ctx=gast.Load()),
                slice=gast.Constant(value=0, kind=None), ctx=gast.Load()), "n")
        self.types.int_vars.add(result.name)
        self.types.ndims[result.name] = 0
        return result

    def lower_unrolled_for(self, frame, stmt, iterable):
        if isinstance(iterable, Seq):
            items = list(iterable.items)
        else:
            items = [self.atoms.const_or_free(v, self.state.paths.get(id(v), "item"))
                     for v in iterable.value]
        for node in gast.walk(stmt):
            if isinstance(node, (gast.Break, gast.Continue)):
                raise unsupported(frame, node, "break/continue in a loop over a tuple or "
                                  "list known while building (it is unrolled)",
                                  "put the rest of the body under an if instead")
        for item in items:
            self.statements.bind(frame, stmt.target, item)
            self.statements.lower_body(frame, stmt.body)

    def recursive_steps(self, stmt, bounds):
        """The indices of a ``for`` over a constant range to unroll, or None: in a build
        specialised on shapes (``ShapeTable.exact``), a loop of at most ``MAX_DEPTH``
        steps whose body calls a function being inlined (a determinant's sum over the
        minors), so that each call's argument has a shape known as numbers."""
        if not self.types.shapes.exact or not all(
                isinstance(b, Const) and type(b.value) is int for b in bounds):
            return None
        steps = range(*(b.value for b in bounds))
        names = self.state.stack.names()
        calls = any(isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and
                    n.func.id in names for n in gast.walk(stmt))
        jumps = any(isinstance(n, (gast.Break, gast.Continue)) for n in gast.walk(stmt))
        return list(steps) if calls and not jumps and len(steps) <= MAX_DEPTH else None

    def range_bounds(self, frame, args):
        """The atoms of ``range(*args)`` as [start, stop, step] (defaults filled in; more
        than three arguments are left for the caller to refuse)."""
        bounds = [self.expressions.lower_expr(frame, a) for a in args]
        if len(bounds) == 1:
            bounds = [Const(0)] + bounds
        if len(bounds) == 2:
            bounds = bounds + [Const(1)]
        return bounds


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

