"""Lowering statements (``StatementLowering``): assignments, returns, ``if`` on known
values, local ``def``s, ``xs.append(v)``, calls made for their effect, and binding
values to targets (names, tuples, ``x[i] = v``).  Run-time ``if`` goes to
``lower_branches``, ``for`` to ``lower_for``, ``while`` to ``lower_loops``."""
import copy
import inspect

import gast

from ... import primitives as prims
from ...errors import UserCodeError
from ..ir import Const, ListAppend, Seq, SetItem, Var
from ..syntax.nodes import name_node
from ..syntax.source import source_segment, unsupported
from .frontend import is_user_code
from .jumps import expand_loop_else, unused_name
from .lower_state import name_of
from .messages import statement_name


class StatementLowering:
    """Statements -> Ops in ``state.ops`` (a ``LoweringState``) and names in the frame.
    Reads ``types`` (``TypeInfo``: run-time lists), asks ``aliases``
    (``AliasTracking``) about writes and in-place updates, appends Ops with ``emitter``
    and writes operands with ``atoms``; the lowerers of what a statement holds are
    given to ``connect``."""

    def __init__(self, state, types, aliases, atoms, emitter):
        self.state = state
        self.types = types
        self.aliases = aliases
        self.atoms = atoms
        self.emitter = emitter
        self.expressions = self.calls = self.branches = self.loops = self.fors = None

    def connect(self, expressions, calls, branches, loops, fors):
        """The lowerers of what statements hold: ``expressions`` (``ExpressionLowering``),
        ``calls`` (``CallLowering``: local ``def``s), ``branches`` (``BranchLowering``:
        run-time ``if``), ``loops`` (``LoopLowering``: ``while``) and ``fors``
        (``ForLowering``: ``for``)."""
        self.expressions = expressions
        self.calls = calls
        self.branches = branches
        self.loops = loops
        self.fors = fors

    def lower_body(self, frame, statements):
        for stmt in statements:
            if frame.returned:
                raise unsupported(frame, stmt, "code after return",
                                  "remove the unreachable statements")
            self.lower_statement(frame, stmt)

    def lower_statement(self, frame, stmt):
        """Lower one statement; an error raised without a place (deep in a helper) gets
        this statement's file, line and text."""
        try:
            self._lower_statement(frame, stmt)
        except UserCodeError as exc:
            if exc.location is not None:
                raise
            raise type(exc)(exc.what, frame.location(stmt),
                            exc.construct or source_segment(stmt), exc.hint) from None

    def _lower_statement(self, frame, stmt):
        if isinstance(stmt, gast.Assign):
            hint = stmt.targets[0].id if (len(stmt.targets) == 1 and
                                          isinstance(stmt.targets[0], gast.Name)) else None
            value = self.expressions.lower_expr(frame, stmt.value, hint)
            for target in stmt.targets:
                self.bind(frame, target, value)
        elif isinstance(stmt, gast.AnnAssign) and stmt.value is not None:
            value = self.expressions.lower_expr(frame, stmt.value, name_of(stmt.target))
            self.bind(frame, stmt.target, value)
        elif isinstance(stmt, gast.AugAssign):
            if not isinstance(stmt.target, (gast.Name, gast.Subscript)):
                raise unsupported(frame, stmt, "augmented assignment to an attribute",
                                  "assign to a local variable")
            load = copy.deepcopy(stmt.target)
            for node in gast.walk(load):
                if hasattr(node, "ctx"):
                    node.ctx = gast.Load()
            binop = gast.BinOp(left=load, op=stmt.op, right=stmt.value)
            gast.copy_location(binop, stmt)
            gast.copy_location(load, stmt)
            if isinstance(stmt.target, gast.Name):
                # numpy updates an array in place (see aliasing.in_place_update)
                value = self.expressions.lower_expr(frame, binop, stmt.target.id)
                if self.aliases.in_place_update(frame, stmt, stmt.target.id):
                    whole = gast.Subscript(value=name_node(stmt.target.id),
                                           slice=gast.Slice(None, None, None), ctx=gast.Store())
                    self.bind(frame, gast.copy_location(whole, stmt), value)
                else:
                    self.bind(frame, stmt.target, value)
                return
            self.bind(frame, stmt.target,
                      self.expressions.lower_expr(frame, binop, name_of(stmt.target)))
        elif isinstance(stmt, gast.Return):
            if frame.word is not None and stmt.value is not None:
                self.state.words[stmt.value] = frame.word   # passed on: the result is named so
            frame.output = self.expressions.lower_expr(frame, stmt.value) \
                if stmt.value is not None else Const(None)
            self.state.words.pop(stmt.value, None)
            self.aliases.check_fresh(frame, stmt, [frame.output])
            frame.returned = True
        elif isinstance(stmt, gast.If):
            test = self.expressions.lower_expr(frame, stmt.test)
            if isinstance(test, Const):
                self.lower_body(frame, stmt.body if test.value else stmt.orelse)
            else:
                self.branches.lower_if(frame, stmt, test)
        elif isinstance(stmt, (gast.For, gast.While)) and stmt.orelse:
            taken = {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name)} | set(frame.env)
            self.lower_body(frame, expand_loop_else(stmt, unused_name("broke", taken)))
        elif isinstance(stmt, gast.For):
            self.fors.lower_for(frame, stmt)
        elif isinstance(stmt, gast.While):
            self.loops.lower_loop(frame, stmt, None)
        elif isinstance(stmt, gast.FunctionDef):
            frame.env[stmt.name] = self.calls.local_function(frame, stmt)
        elif isinstance(stmt, gast.Expr):
            if isinstance(stmt.value, gast.Constant):
                return  # a docstring or a bare constant
            if is_append(stmt.value):
                return self.lower_append(frame, stmt)
            if isinstance(stmt.value, (gast.Yield, gast.YieldFrom, gast.Await)):
                self.expressions.lower_expr(frame, stmt.value)   # refused, naming yield/await
            if self.lower_call_statement(frame, stmt):
                return
            if isinstance(stmt.value, gast.Call):
                raise unsupported(
                    frame, stmt, "a call whose result is not used (s2sgrad cannot follow what "
                    "a call changes in place)", "assign its result to a name, e.g. "
                    "y = np.sort(x) instead of x.sort(), or remove the line")
            raise unsupported(frame, stmt, "an expression whose value is not used",
                              "assign the value to a name, or remove the line")
        elif isinstance(stmt, (gast.Pass, gast.Assert)):
            return
        else:
            raise unsupported(frame, stmt, *statement_name(stmt))

    def bind(self, frame, target, value):
        """Assign the atom ``value`` to a target (a name or a tuple/list of targets)."""
        if isinstance(target, gast.Name):
            frame.env[target.id] = value
        elif isinstance(target, (gast.Tuple, gast.List)):
            n = len(target.elts)
            if any(isinstance(elt, gast.Starred) for elt in target.elts):
                raise unsupported(frame, target, "a starred assignment (a, *rest = ...)",
                                  "unpack into one name per item, or index the items")
            if isinstance(value, Seq):
                if len(value.items) != n:
                    raise unsupported(frame, target, f"unpacking {len(value.items)} values "
                                      f"into {n} names", f"unpack into {len(value.items)} "
                                      f"names, or index the items you need")
                items = value.items
            elif isinstance(value, Const) and isinstance(value.value, (tuple, list)):
                items = [Const(v) for v in value.value]
            else:
                items = [self.emitter.emit_getitem(frame, target, value, Const(i), name_of(elt))
                         for i, elt in enumerate(target.elts)]
            for elt, item in zip(target.elts, items):
                self.bind(frame, elt, item)
        elif isinstance(target, gast.Starred):
            raise unsupported(frame, target, "a starred assignment (a, *rest = ...)",
                              "unpack into one name per item, or index the items")
        elif isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            base = frame.env.get(target.value.id)
            if not isinstance(base, Var):
                raise unsupported(frame, target, "assignment into something that is not an "
                                  "array of this function", "make an array with "
                                  "np.zeros(...) or x.copy() and assign into it")
            self.aliases.check_write_target(frame, target, base.name, target.value.id)
            index_node, index = self.expressions.lower_index(frame, target.slice)
            self.aliases.check_fresh(frame, target, [value, index])
            self.aliases.record_write(base.name)
            self.state.ops.append(SetItem(base.name, index_node, index, value,
                                          frame.location(target)))
            self.state.cse.clear()
        elif self.expressions.is_row_then_item(frame, target):
            # a[i][j] = v with i an int: a[i] is a view of row i, so this is a[i, j] = v
            outer = target.slice.elts if isinstance(target.slice, gast.Tuple) else [target.slice]
            joined = gast.Subscript(value=target.value.value, slice=gast.Tuple(
                elts=[target.value.slice] + list(outer), ctx=gast.Load()), ctx=gast.Store())
            self.bind(frame, gast.copy_location(joined, target), value)
        else:
            hint = ("write one subscript: a[i, j] = v" if isinstance(target, gast.Subscript)
                    else "assign to a local array: a = x.copy(); a[i] = v")
            raise unsupported(
                frame, target, "assignment to an attribute or a nested subscript", hint)

    def lower_append(self, frame, stmt):
        """``xs.append(v)``: a tuple-like list grows while building; a list that a run-time
        loop extends becomes a real list (ListAppend)."""
        call = stmt.value
        name = call.func.value.id
        if len(call.args) != 1 or call.keywords:
            raise unsupported(frame, stmt, "append with other than one argument",
                              "append one value per call: xs.append(v)")
        value = self.expressions.lower_expr(frame, call.args[0])
        self.aliases.check_fresh(frame, stmt, [value])
        current = frame.env.get(name)
        if isinstance(current, Seq) and current.kind == "list":
            frame.env[name] = Seq(current.items + (value,), "list")
        elif isinstance(current, Var) and current.name in self.types.lists:
            self.state.ops.append(ListAppend(current.name, value, frame.location(stmt)))
            self.aliases.hold(current.name, [value])
            self.state.cse.clear()
        else:
            raise unsupported(frame, stmt, f"append to `{name}`, which is not a list made "
                              f"in this function", "start it with xs = [] in the function")

    def lower_call_statement(self, frame, stmt):
        """A call whose value is not used: ``print(...)`` runs as it is; a call to the user's
        own function is inlined for what it does (in-place updates).  True when handled."""
        call = stmt.value
        if not isinstance(call, gast.Call) or isinstance(call.func, gast.Attribute) and \
                not isinstance(self.expressions.lower_expr(frame, call.func.value), Const):
            return False
        func = self.expressions.lower_expr(frame, call.func)
        if not isinstance(func, Const):
            return False
        if func.value is print:
            args = tuple(self.expressions.splice(frame, call.args))
            kwargs = {k.arg: self.expressions.lower_expr(frame, k.value) for k in call.keywords}
            self.emitter.emit(frame, stmt, prims.EFFECT, args, kwargs, self.atoms.call_expr(
                name_node("print"),
                args, kwargs), "_")
            return True
        obj = func.value
        update = _runtime_update(obj, call)
        if update is not None:      # rt.add_into(dx[j], g) in generated code: dx[j] += g
            self.lower_statement(frame, gast.copy_location(update, stmt))
            return True
        fn = obj.__func__ if inspect.ismethod(obj) else obj
        if inspect.isfunction(fn) and is_user_code(fn) and not \
                getattr(obj, "__s2sgrad_op__", False):
            self.expressions.lower_expr(frame, call)
            return True
        return False


#: runtime helpers of generated code that add into their first argument in place, and
#: what they add (None: their second argument)
_RUNTIME_ADDS = {"add_into": None, "add_matmul_left": "matmul_left",
                 "add_matmul_right": "matmul_right", "add_dot_left": "dot_left",
                 "add_dot_right": "dot_right"}


def _runtime_update(obj, call):
    """``out += value`` for a call ``rt.add_into(out, value)`` (or ``rt.add_matmul_left(out,
    g, a, b)``: ``out += rt.matmul_left(g, a, b)``) of generated code lowered again (a
    gradient inlined into a function compiled by ``s2sgrad.jit``), where ``out`` is a name
    or a subscript of one; else None.  Lowering the helper's body instead would rebind
    its parameter: an update of a view (``dx[1::2]``) would be lost."""
    name = getattr(obj, "__name__", None)
    if (getattr(obj, "__module__", "") or "").split(".")[:2] != ["s2sgrad", "runtime"] or \
            name not in _RUNTIME_ADDS or call.keywords or not call.args or \
            not isinstance(call.func, gast.Attribute):
        return None
    out = call.args[0]
    if not (isinstance(out, gast.Name) or isinstance(out, gast.Subscript) and
            isinstance(out.value, gast.Name)):
        return None
    target = copy.deepcopy(out)
    target.ctx = gast.Store()
    adds = _RUNTIME_ADDS[name]
    if adds is None:
        if len(call.args) != 2:
            return None
        value = call.args[1]
    else:
        helper = gast.Attribute(value=copy.deepcopy(call.func.value), attr=adds,
                                ctx=gast.Load())
        value = gast.Call(func=helper, args=list(call.args[1:]), keywords=[])
    return gast.AugAssign(target=target, op=gast.Add(), value=value)


def is_append(call):
    """True for a call ``xs.append(v)`` on a name (a list the function extends)."""
    return (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and call.func.attr == "append" and isinstance(call.func.value, gast.Name))


def appended_names(statements):
    """The names of the lists ``statements`` append to (``xs.append(v)``), in order."""
    names = []
    for stmt in statements:
        for node in gast.walk(stmt):
            if is_append(node) and node.func.value.id not in names:
                names.append(node.func.value.id)
    return names
