"""One substitution engine: a single-use definition ``name = <expression>`` written into
the one statement that reads it; a policy says which definitions (``candidate``), where
(``enters``, ``in_loops``, ``crosses``, ``reads_in``) and how it is written (``merged``).

``substitute(items, policy, modules)`` takes a statement list (gast nodes and
``Comment``) and gives a new one; a definition moves to the first later statement of
its list that reads ``name`` where the engine's rules allow it (for both policies):

- its expression changes nothing: each call in it is of a numpy, math, runtime (or
  ``modules``: scipy's ``special``...) function that updates no argument (``out=``,
  ``np.copyto``, ``np.random``, the helpers of ``RUNTIME_WRITERS``), a pure array
  method or a pure builtin (``pure``);
- each statement it moves past assigns a value that changes nothing to names it does
  not read, or pushes onto a tape it does not read (``top = rt.push(tape, top, v)``,
  ``x_stack.append(v)``): nothing it reads is rebound or written in place;
- it stays in its statement list (never into or out of a branch or a loop body, never
  past a compound statement) and out of lambdas and comprehensions (evaluated later, or
  many times); which comments it may pass is the policy's (``crosses``).

``StraightLine`` (``inline_temporaries(forward, backward, invented, keep)``), outside
loops: an invented name (not the user's, nor one of ``keep``, read outside the sweeps)
assigned once and read once in the two sweeps: ``t = x @ W1; y = t + b1`` -> ``y = x @
W1 + b1``, where numpy updates the unnamed ``x @ W1`` in place.  In the forward sweep it
stays in its source line's block (an error there names the user's line); in the adjoint
sweep it may move into the next line's (the ReLU's mask multiplies the adjoint the
matmul above gave) unless it is its block's only statement.  A reader stays as it is
when the result would be longer than a line or hold more than ``OPERATIONS`` operations
more; the result is spelled as ``spelling.py`` says.

``LoopBody`` (``fused_forward(statements, reads, arrays)``), in the loop bodies of the
forward sweep (what Numba runs many times): an array (``arrays``) read once in the whole
function (``reads``: adjoint sweep and return included) assigned an elementwise
expression (operators, numpy ufuncs, constant-slice views), written into the value of
the single-target assignment that reads it on the same user line (no location comment
of another line between): ``u[:-2] - 2.0 * u[1:-1] + u[2:]`` is one loop and one array
under Numba, not one per operation.
"""
import copy

import gast

from ..syntax.nodes import Comment, name_uses, substituted
from ..syntax.source import INDENT, LINE_LIMIT, to_source
from .constants import written_in_place
from .spelling import Broadcasting, without_negations

#: modules generated code calls pure functions of (numpy, math, the runtime helpers)
_PURE_MODULES = frozenset({"np", "math", "rt"})
#: runtime helpers that update an argument in place (found by tests/test_inline.py)
RUNTIME_WRITERS = frozenset({"add_at", "push", "item_added", "add_into", "add_matmul_left",
                             "add_matmul_right", "add_dot_left", "add_dot_right",
                             "einsum_into", "extremum_adjoint_into", "matmul_into"})
#: numpy functions and methods that update an argument in place
NUMPY_WRITERS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "at",
                            "put_along_axis", "shuffle", "seed", "fill", "sort", "resize",
                            "itemset", "setflags", "partition", "append", "extend", "pop",
                            "insert", "clear", "update"})
#: methods of arrays (and builtins) that give a new value and change nothing
PURE_METHODS = frozenset({"astype", "reshape", "copy", "sum", "mean", "max", "min", "prod",
                           "transpose", "conj", "conjugate", "ravel", "flatten", "squeeze",
                           "dot", "item", "any", "all", "clip", "round", "cumsum", "cumprod",
                           "std", "var", "argmax", "argmin", "swapaxes", "real", "imag"})
PURE_BUILTINS = frozenset({"float", "int", "bool", "complex", "len", "range", "slice", "abs",
                            "min", "max", "tuple", "round"})
#: the most operations (calls, operators, comparisons) inlining adds to a statement
OPERATIONS = 2
_OPERATION = (gast.Call, gast.BinOp, gast.UnaryOp, gast.Compare, gast.BoolOp)
_SIMPLE = (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)
#: numpy functions Numba fuses into one loop with the operators around them
UFUNCS = {"exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sqrt", "abs", "absolute",
          "negative", "square", "log1p", "expm1", "arctan", "arcsin", "arccos", "sign"}
OPERATORS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)


def inline_temporaries(forward, backward, invented, keep=frozenset(), modules=(),
                       same_shape=None):
    """The two sweeps with single-use invented temporaries inlined (``StraightLine``).
    ``modules``: the modules the code calls besides np, math and rt (scipy's ``special``...);
    ``same_shape(a, b)`` (optional): True when variables ``a`` and ``b`` have one shape."""
    loads, stores = name_uses(forward + backward)
    once = {name for name in invented
            if stores.get(name) == 1 and loads.get(name) == 1 and name not in keep}
    same_shape = same_shape or (lambda a, b: a == b)
    written = written_in_place(forward + backward)
    return (substitute(forward, StraightLine(once, same_shape, False, written), modules),
            substitute(backward, StraightLine(once, same_shape, True, written), modules))


def fused_forward(statements, reads, arrays, modules=()):
    """A copy of the forward sweep ``statements`` with single-use elementwise temporaries
    of loop bodies written into their reader (``LoopBody``)."""
    return substitute(statements, LoopBody(reads, arrays), modules)


def substitute(items, policy, modules=()):
    """``items`` with the definitions ``policy`` picks written into their reader where
    the engine's rules allow it (see the module doc), as a new list."""
    return _Engine(policy, _PURE_MODULES | frozenset(modules)).block(items, 1, False)


class _Engine:
    """Substitutes in the statement lists ``policy`` enters; ``pure_modules``: as ``pure``."""

    def __init__(self, policy, pure_modules):
        self.policy, self.pure_modules = policy, pure_modules

    def block(self, items, depth, in_loop):
        """``items`` (at indentation ``depth``, in a loop or not) with definitions moved
        into their readers, in the blocks of the compound statements the policy enters too."""
        items = [self._entered(item, depth, in_loop) for item in self.policy.prepared(items)]
        if in_loop != self.policy.in_loops:
            return items
        k, line = 0, None     # line: the user's line the statements at hand come from
        while k < len(items):
            item = items[k]
            if isinstance(item, Comment):
                line = item.origin if item.origin is not None else line
                k += 1
                continue
            name = self._definition(item)
            j = self._reader(items, k, name, line) if name is not None else None
            merged = None if j is None else self.policy.merged(items[j], name, item.value,
                                                                depth)
            if merged is None:
                k += 1
                continue
            items[j] = merged
            del items[k]
        return items

    def _entered(self, item, depth, in_loop):
        if not isinstance(item, self.policy.enters):
            return item
        item = copy.copy(item)
        inside = in_loop or not isinstance(item, gast.If)
        item.body = self.block(item.body, depth + 1, inside)
        item.orelse = self.block(item.orelse, depth + 1, inside)
        return item

    def _definition(self, item):
        """The name ``item`` assigns, when it is ``name = <pure expression>`` and the
        policy picks it; else None."""
        if isinstance(item, gast.Assign) and len(item.targets) == 1 \
                and isinstance(item.targets[0], gast.Name) and self.pure(item.value) \
                and self.policy.candidate(item.targets[0].id, item.value):
            return item.targets[0].id
        return None

    def _reader(self, items, k, name, line):
        """The index of the statement after ``items[k]`` that reads ``name``, when the
        definition can move there unchanged in meaning (see the module doc); else None."""
        reads = {n.id for n in gast.walk(items[k].value) if isinstance(n, gast.Name)}
        alone = (k == 0 or isinstance(items[k - 1], Comment)) and (
            k + 1 == len(items) or isinstance(items[k + 1], Comment))
        for j in range(k + 1, len(items)):
            item = items[j]
            if isinstance(item, Comment):
                if not self.policy.crosses(item, line, alone):
                    return None
                continue
            if any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(item)):
                if not self.policy.reads_in(item, name) or _nested_scope_reads(item, name):
                    return None
                return j
            if not self._passable(item, reads):
                return None
        return None

    def _passable(self, item, reads):
        """True when moving an expression reading the names ``reads`` past ``item``
        keeps its value: ``item`` rebinds none of them and writes nothing in place but a
        tape the expression does not read."""
        tape = _tape_pushed(item)
        if tape in reads or not (isinstance(item, gast.Expr) and tape is not None) and not (
                isinstance(item, gast.Assign) and all(isinstance(t, gast.Name)
                                                      and t.id not in reads for t in item.targets)):
            return False
        return self.pure(item.value) if tape is None else all(
            self.pure(a) for a in item.value.args)

    def pure(self, expr):
        """True when evaluating ``expr`` changes nothing (see the module doc: a call of
        anything else may have effects, or read state that moves)."""
        for node in gast.walk(expr):
            if isinstance(node, (gast.Lambda, gast.Yield, gast.YieldFrom, gast.Await,
                                 gast.NamedExpr)):
                return False
            if isinstance(node, gast.Call) and not self._pure_call(node):
                return False
        return True

    def _pure_call(self, node):
        if any(k.arg == "out" for k in node.keywords):
            return False
        func = node.func
        if isinstance(func, gast.Name):
            return func.id in PURE_BUILTINS
        path = []
        while isinstance(func, gast.Attribute):
            path.append(func.attr)
            func = func.value
        if not path:
            return False
        if isinstance(func, gast.Name) and func.id in self.pure_modules:
            return "random" not in path and path[0] not in NUMPY_WRITERS and not (
                func.id == "rt" and path[0] in RUNTIME_WRITERS)
        return len(path) == 1 and path[0] in PURE_METHODS


def _tape_pushed(item):
    """The tape ``top = rt.push(tape, top, v)`` or ``x_stack.append(v)`` writes; else None."""
    call = item.value if isinstance(item, (gast.Assign, gast.Expr)) else None
    func = call.func if isinstance(call, gast.Call) else None
    if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)):
        return None
    if isinstance(item, gast.Assign) and func.value.id == "rt" and func.attr == "push":
        tape = call.args[0] if call.args else None
        return tape.id if isinstance(tape, gast.Name) else None
    if isinstance(item, gast.Expr) and func.attr == "append" \
            and func.value.id.endswith("_stack"):
        return func.value.id
    return None


def _nested_scope_reads(item, name):
    """True when ``item`` reads ``name`` inside a lambda or a comprehension (evaluated
    later, or many times)."""
    scopes = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
    return any(isinstance(scope, scopes) and any(
        isinstance(n, gast.Name) and n.id == name for n in gast.walk(scope))
        for scope in gast.walk(item))


class StraightLine:
    """``inline_temporaries``' policy: the names in ``once``, in straight-line code and
    ``if`` blocks; ``across_lines``: whether a definition may move into a later line's
    block (the adjoint sweep); ``same_shape`` and ``written`` as ``spelling.Broadcasting``
    takes them."""
    enters, in_loops = (gast.If,), False

    def __init__(self, once, same_shape, across_lines, written=frozenset()):
        self.once, self.across_lines = once, across_lines
        self.broadcasting = Broadcasting(same_shape, written)

    def prepared(self, items):
        return [self.broadcasting.visit(item) if isinstance(item, _SIMPLE) else item
                for item in items]

    def candidate(self, name, value):
        return name in self.once

    def crosses(self, comment, line, alone):
        return self.across_lines and not alone

    def reads_in(self, item, name):
        return isinstance(item, _SIMPLE)

    def merged(self, reader, name, value, depth):
        """``reader`` with ``value`` for ``name``, when it still reads at a glance: at
        most ``OPERATIONS`` operations more than ``reader``, on one line; else None."""
        merged = self.broadcasting.visit(without_negations(substituted(reader, {name: value})))
        added = sum(isinstance(n, _OPERATION) for n in gast.walk(merged)) - sum(
            isinstance(n, _OPERATION) for n in gast.walk(reader))
        text = to_source(merged) if added <= OPERATIONS else "\n"
        return merged if "\n" not in text and len(INDENT * depth + text) <= LINE_LIMIT else None


class LoopBody:
    """``fused_forward``'s policy: in loop bodies, the names of ``arrays`` read once in
    all (``reads``: name -> count) assigned an elementwise expression, written into the
    single-target assignment that reads them, on the same user line."""
    enters, in_loops = (gast.For, gast.While, gast.If), True

    def __init__(self, reads, arrays):
        self.reads, self.arrays = reads, arrays

    def prepared(self, items):
        return items

    def candidate(self, name, value):
        return name in self.arrays and self.reads.get(name) == 1 and _elementwise(value)

    def crosses(self, comment, line, alone):
        return comment.origin is None or comment.origin == line

    def reads_in(self, item, name):
        return isinstance(item, gast.Assign) and len(item.targets) == 1 and any(
            isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
            for n in gast.walk(item.value))

    def merged(self, reader, name, value, depth):
        return substituted(reader, {name: value})


def _elementwise(node):
    """An expression of names, numbers, constant-slice views, operators and ufuncs."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.BinOp):
        return isinstance(node.op, OPERATORS) and _elementwise(node.left) and \
            _elementwise(node.right)
    if isinstance(node, gast.UnaryOp):
        return isinstance(node.op, gast.USub) and _elementwise(node.operand)
    if isinstance(node, gast.Subscript):
        return isinstance(node.value, gast.Name) and isinstance(node.slice, gast.Slice) and \
            all(part is None or isinstance(part, gast.Constant) or (
                isinstance(part, gast.UnaryOp) and isinstance(part.operand, gast.Constant))
                for part in (node.slice.lower, node.slice.upper, node.slice.step))
    if isinstance(node, gast.Call):
        func = node.func
        return (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                and func.value.id == "np" and func.attr in UFUNCS and not node.keywords
                and all(_elementwise(a) for a in node.args))
    return False
