"""Lowering statements: assignments, returns, ``if`` on known values, local ``def``s,
and binding values to targets (names, tuples, ``x[i] = v``).  Run-time ``if``,
``for`` and ``while`` go to ``lower_flow``."""
import copy

import gast

from ...errors import UserCodeError
from ..ir import Const, Seq, SetItem, Var
from ..syntax.nodes import name_node
from .jumps import expand_loop_else, lift_loop_returns, remove_early_returns
from .lower_flow import is_append, unused_name
from .lower_state import LoweringState, name_of, return_names, source_segment
from .messages import statement_name


class StatementLowering(LoweringState):
    """Statements -> Ops in ``self.ops`` and names in the frame (a LoweringState mixin)."""

    def function_body(self, frame, parsed):
        """A function's statements with early returns made structured (see jumps.py)."""
        taken = {n.id for n in gast.walk(parsed.node) if isinstance(n, gast.Name)}
        return remove_early_returns(lift_loop_returns(parsed.node.body, *return_names(taken)))

    def lower_body(self, frame, statements):
        for stmt in statements:
            if frame.returned:
                raise self.unsupported(frame, stmt, "code after return",
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
                            exc.construct or source_segment(frame, stmt), exc.hint) from None

    def _lower_statement(self, frame, stmt):
        if isinstance(stmt, gast.Assign):
            hint = stmt.targets[0].id if (len(stmt.targets) == 1 and
                                          isinstance(stmt.targets[0], gast.Name)) else None
            value = self.lower_expr(frame, stmt.value, hint)
            for target in stmt.targets:
                self.bind(frame, target, value)
        elif isinstance(stmt, gast.AnnAssign) and stmt.value is not None:
            self.bind(frame, stmt.target, self.lower_expr(frame, stmt.value, name_of(stmt.target)))
        elif isinstance(stmt, gast.AugAssign):
            if not isinstance(stmt.target, (gast.Name, gast.Subscript)):
                raise self.unsupported(frame, stmt, "augmented assignment to an attribute",
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
                value = self.lower_expr(frame, binop, stmt.target.id)
                if self.in_place_update(frame, stmt, stmt.target.id):
                    whole = gast.Subscript(value=name_node(stmt.target.id),
                                           slice=gast.Slice(None, None, None), ctx=gast.Store())
                    self.bind(frame, gast.copy_location(whole, stmt), value)
                else:
                    self.bind(frame, stmt.target, value)
                return
            self.bind(frame, stmt.target, self.lower_expr(frame, binop, name_of(stmt.target)))
        elif isinstance(stmt, gast.Return):
            if frame.word is not None and stmt.value is not None:
                self.words[stmt.value] = frame.word   # passed on: the result is known so
            frame.output = self.lower_expr(frame, stmt.value) if stmt.value is not None else Const(None)
            self.words.pop(stmt.value, None)
            self.check_fresh(frame, stmt, [frame.output])
            frame.returned = True
        elif isinstance(stmt, gast.If):
            test = self.lower_expr(frame, stmt.test)
            if isinstance(test, Const):
                self.lower_body(frame, stmt.body if test.value else stmt.orelse)
            else:
                self.lower_if(frame, stmt, test)
        elif isinstance(stmt, (gast.For, gast.While)) and stmt.orelse:
            taken = {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name)} | set(frame.env)
            self.lower_body(frame, expand_loop_else(stmt, unused_name("broke", taken)))
        elif isinstance(stmt, gast.For):
            self.lower_for(frame, stmt)
        elif isinstance(stmt, gast.While):
            self.lower_loop(frame, stmt, None)
        elif isinstance(stmt, gast.FunctionDef):
            frame.env[stmt.name] = self.local_function(frame, stmt)
        elif isinstance(stmt, gast.Expr):
            if isinstance(stmt.value, gast.Constant):
                return  # a docstring or a bare constant
            if is_append(stmt.value):
                return self.lower_append(frame, stmt)
            if isinstance(stmt.value, (gast.Yield, gast.YieldFrom, gast.Await)):
                self.lower_expr(frame, stmt.value)   # refused, naming yield/await
            if self.lower_call_statement(frame, stmt):
                return
            if isinstance(stmt.value, gast.Call):
                raise self.unsupported(
                    frame, stmt, "a call whose result is not used (s2sgrad cannot follow what "
                    "a call changes in place)", "assign its result to a name, e.g. "
                    "y = np.sort(x) instead of x.sort(), or remove the line")
            raise self.unsupported(frame, stmt, "an expression whose value is not used",
                                   "assign the value to a name, or remove the line")
        elif isinstance(stmt, (gast.Pass, gast.Assert)):
            return
        else:
            raise self.unsupported(frame, stmt, *statement_name(stmt))

    def bind(self, frame, target, value):
        """Assign the atom ``value`` to a target (a name or a tuple/list of targets)."""
        if isinstance(target, gast.Name):
            frame.env[target.id] = value
        elif isinstance(target, (gast.Tuple, gast.List)):
            n = len(target.elts)
            if any(isinstance(elt, gast.Starred) for elt in target.elts):
                raise self.unsupported(frame, target, "a starred assignment (a, *rest = ...)",
                                       "unpack into one name per item, or index the items")
            if isinstance(value, Seq):
                if len(value.items) != n:
                    raise self.unsupported(frame, target, f"unpacking {len(value.items)} values "
                                           f"into {n} names", f"unpack into {len(value.items)} "
                                           f"names, or index the items you need")
                items = value.items
            elif isinstance(value, Const) and isinstance(value.value, (tuple, list)):
                items = [Const(v) for v in value.value]
            else:
                items = [self.emit_getitem(frame, target, value, Const(i), name_of(elt))
                         for i, elt in enumerate(target.elts)]
            for elt, item in zip(target.elts, items):
                self.bind(frame, elt, item)
        elif isinstance(target, gast.Starred):
            raise self.unsupported(frame, target, "a starred assignment (a, *rest = ...)",
                                   "unpack into one name per item, or index the items")
        elif isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            base = frame.env.get(target.value.id)
            if not isinstance(base, Var):
                raise self.unsupported(frame, target, "assignment into something that is not an "
                                       "array of this function", "make an array with "
                                       "np.zeros(...) or x.copy() and assign into it")
            self.check_write_target(frame, target, base.name, target.value.id)
            index_node, index = self.lower_index(frame, target.slice)
            self.check_fresh(frame, target, [value, index])
            shared = self.mark_written(base.name)
            # what shares its memory (a view, the array a branch or loop copied it from) is
            # updated too: its old values are restored for adjoints that read them
            self.mutated.update(shared | {base.name})
            self.shared_at_write[base.name] = self.shared_at_write.get(base.name,
                                                                       frozenset()) | shared
            self.ops.append(SetItem(base.name, index_node, index, value, frame.location(target)))
            self.cse.clear()
        elif self.is_row_then_item(frame, target):
            # a[i][j] = v with i an int: a[i] is a view of row i, so this is a[i, j] = v
            outer = target.slice.elts if isinstance(target.slice, gast.Tuple) else [target.slice]
            joined = gast.Subscript(value=target.value.value, slice=gast.Tuple(
                elts=[target.value.slice] + list(outer), ctx=gast.Load()), ctx=gast.Store())
            self.bind(frame, gast.copy_location(joined, target), value)
        else:
            hint = ("write one subscript: a[i, j] = v" if isinstance(target, gast.Subscript)
                    else "assign to a local array: a = x.copy(); a[i] = v")
            raise self.unsupported(
                frame, target, "assignment to an attribute or a nested subscript", hint)

    def is_row_then_item(self, frame, target):
        """True for ``a[i][j]`` (``a`` an array, not a list, ``i`` an int and not a slice:
        ``a[i]`` is then a view of row i, and ``a[i][j]`` is ``a[i, j]``), read or written."""
        if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Subscript)
                and isinstance(target.value.value, gast.Name)):
            return False
        base = frame.env.get(target.value.value.id)
        if not isinstance(base, Var) or base.name in self.lists or not self.ndim_of(base):
            return False
        inner = target.value.slice
        if not _plain_index(inner):
            return False
        return self.is_int(self.lower_expr(frame, inner))


def _plain_index(node):
    """True for an index made of names, constants and arithmetic on them (``i``, ``i - 1``):
    cheap to lower twice (the second time finds the first's values)."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.BinOp):
        return _plain_index(node.left) and _plain_index(node.right)
    if isinstance(node, gast.UnaryOp):
        return _plain_index(node.operand)
    return False
