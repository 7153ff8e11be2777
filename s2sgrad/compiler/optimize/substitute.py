"""Single-use temporaries written into the one statement that reads them.

``inline_temporaries(forward, backward, invented, keep)`` takes the two sweeps of a
generated function (statement lists of gast nodes and ``Comment``), the names the
generator invented (temporaries and adjoints, never a name of the user's program) and
the names read outside the sweeps (the output, the returned gradients), and gives the
two sweeps with each invented name that is assigned once and read once, by a later
statement of the same list, replaced by the expression it was assigned:

    x_at_W1 = x @ W1                                x_at_W1_plus_b1 = x @ W1 + b1
    x_at_W1_plus_b1 = x_at_W1 + b1          ->

    dh2 = rt.matmul_left(dz, h2, W3)                dh1 = rt.matmul_left(dz, h2, W3) * (h1 >= 0.0)
    dh1 = dh2 * (h1 >= 0.0)                 ->

Besides reading closer to the user's source, this is what lets numpy reuse memory:
a result no variable holds (``x @ W1`` above) is updated in place by the next
operation of the expression (numpy's temporary elision, for arrays of 256 KiB and
more), where a named one costs a fresh array, which for large arrays means fresh
pages from the operating system on every call.  The MLP of ``benchmarks/bench_mlp.py``
spends about 5% of its gradient on the four arrays this saves.

An assignment moves only past statements that cannot change what it reads: plain
assignments to other names whose calls are known not to update their arguments
(``_Inliner.pure``); its own expression must be such too.  In the forward sweep it stays in its
source line's block (an error there names the user's line); in the adjoint sweep it may
move into the next line's block (the ReLU's mask multiplies the adjoint the matmul
above gave), but never takes a block's last statement.  A statement stays as it is when
the result would be longer than a line, or would hold more than two operations more
than it did (an expression itself the result of inlining: chains stop there).

Where an adjoint spread over a reduced array (``rt.unreduce``) meets an array of that
shape (after inlining, or in a rule's own expression), broadcasting does the spreading
(``_Broadcasting``): the adjoint
of ``np.sum(np.exp(z), axis=1, keepdims=True)`` times ``np.exp(z)`` is ``g * exp_z``.
"""

import gast

from ..syntax.nodes import Comment
from ..syntax.nodes import name_uses, substituted
from ..syntax.source import to_source
from ..syntax.source import INDENT, LINE_LIMIT

#: modules generated code calls pure functions of (numpy, math, the runtime helpers)
_PURE_MODULES = frozenset({"np", "math", "rt"})
#: runtime helpers that update an argument in place (found by tests/test_inline.py)
RUNTIME_WRITERS = frozenset({"add_at", "push", "item_added", "add_into", "add_matmul_left",
                             "add_matmul_right", "add_dot_left", "add_dot_right"})
#: numpy functions and methods that update an argument in place
_NUMPY_WRITERS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "at",
                            "put_along_axis", "shuffle", "seed", "fill", "sort", "resize",
                            "itemset", "setflags", "partition", "append", "extend", "pop",
                            "insert", "clear", "update"})
#: methods of arrays (and builtins) that give a new value and change nothing
_PURE_METHODS = frozenset({"astype", "reshape", "copy", "sum", "mean", "max", "min", "prod",
                           "transpose", "conj", "conjugate", "ravel", "flatten", "squeeze",
                           "dot", "item", "any", "all", "clip", "round", "cumsum", "cumprod",
                           "std", "var", "argmax", "argmin", "swapaxes", "real", "imag"})
_PURE_BUILTINS = frozenset({"float", "int", "bool", "complex", "len", "range", "slice", "abs",
                            "min", "max", "tuple", "round"})
#: the most operations (calls, operators, comparisons) inlining adds to a statement
OPERATIONS = 2
_OPERATION = (gast.Call, gast.BinOp, gast.UnaryOp, gast.Compare, gast.BoolOp)
_SIMPLE = (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)


def inline_temporaries(forward, backward, invented, keep=frozenset(), modules=(),
                       same_shape=None):
    """The two sweeps with single-use invented temporaries inlined (see the module doc).
    ``modules``: the names of other modules whose functions the code calls (scipy's
    ``special``...): pure, like numpy's.  ``same_shape(a, b)`` (optional): True when the
    variables named ``a`` and ``b`` are known to have the same shape."""
    loads, stores = name_uses(forward + backward)
    once = {name for name in invented
            if stores.get(name) == 1 and loads.get(name) == 1 and name not in keep}
    pure_modules = _PURE_MODULES | frozenset(modules)
    same_shape = same_shape or (lambda a, b: a == b)
    return (_Inliner(once, pure_modules, False, same_shape).block(forward, 1),
            _Inliner(once, pure_modules, True, same_shape).block(backward, 1))


class _Inliner:
    """Inlines the names in ``once`` within each statement list of one sweep;
    ``across_comments``: whether a definition may move into a later line's block."""

    def __init__(self, once, pure_modules, across_comments, same_shape):
        self.once, self.pure_modules = once, pure_modules
        self.across_comments = across_comments
        self.same_shape = same_shape

    def block(self, items, depth):
        """``items`` (at indentation ``depth``) with the definitions of names in ``once``
        moved into their readers; the blocks of an ``if`` too (a definition stays in its
        block).  Loop bodies stay as they are: ``compiler/optimize/fuse.py`` writes their
        elementwise temporaries back into one expression for Numba."""
        items = [_Broadcasting(self.same_shape).visit(item) if isinstance(item, _SIMPLE)
                 else item for item in items]
        for item in items:
            if isinstance(item, gast.If):   # (loop bodies are compiler/optimize/fuse.py's)
                item.body = self.block(item.body, depth + 1)
                item.orelse = self.block(item.orelse, depth + 1)
        k = 0
        while k < len(items):
            name = self._definition(items[k])
            j = self._reader(items, k, name) if name is not None else None
            merged = None if j is None else _Broadcasting(self.same_shape).visit(
                _replaced(items[j], name, items[k].value))
            if merged is None or not _fits(items[j], merged, depth):
                k += 1
                continue
            items[j] = merged
            del items[k]
        return items

    def _definition(self, item):
        """The name ``item`` assigns, when it is ``name = <pure expression>`` for a name
        in ``once``; else None."""
        if isinstance(item, gast.Assign) and len(item.targets) == 1 \
                and isinstance(item.targets[0], gast.Name) and item.targets[0].id in self.once \
                and self.pure(item.value):
            return item.targets[0].id
        return None

    def _reader(self, items, k, name):
        """The index of the statement after ``items[k]`` that reads ``name``, when the
        definition can move there unchanged in meaning (see the module doc); else None."""
        reads = {n.id for n in gast.walk(items[k].value) if isinstance(n, gast.Name)}
        alone = (k == 0 or isinstance(items[k - 1], Comment)) and (
            k + 1 == len(items) or isinstance(items[k + 1], Comment))
        for j in range(k + 1, len(items)):
            item = items[j]
            if isinstance(item, Comment):
                if not self.across_comments or alone:
                    return None
                continue
            if any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(item)):
                if not isinstance(item, _SIMPLE) or _nested_scope_reads(item, name):
                    return None
                return j
            if not (isinstance(item, gast.Assign) and self.pure(item.value)
                    and all(isinstance(t, gast.Name) and t.id not in reads
                            for t in item.targets)):
                return None
        return None

    def pure(self, expr):
        """True when evaluating ``expr`` changes nothing: every call in it is of a numpy,
        math, runtime (or ``modules``) function that updates no argument, a pure array
        method, or a pure builtin (a call of anything else may have effects, or read
        state that moves)."""
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
            return func.id in _PURE_BUILTINS
        path = []
        while isinstance(func, gast.Attribute):
            path.append(func.attr)
            func = func.value
        if not path:
            return False
        if isinstance(func, gast.Name) and func.id in self.pure_modules:
            return "random" not in path and path[0] not in _NUMPY_WRITERS and not (
                func.id == "rt" and path[0] in RUNTIME_WRITERS)
        return len(path) == 1 and path[0] in _PURE_METHODS


def _nested_scope_reads(item, name):
    """True when ``item`` reads ``name`` inside a lambda or a comprehension (evaluated
    later, or many times)."""
    scopes = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
    return any(isinstance(scope, scopes) and any(
        isinstance(n, gast.Name) and n.id == name for n in gast.walk(scope))
        for scope in gast.walk(item))


def _fits(reader, merged, depth):
    """True when ``merged`` (``reader`` with a definition inlined) still reads at a
    glance: at most ``OPERATIONS`` operations more than ``reader``, on one line."""
    if _operations(merged) - _operations(reader) > OPERATIONS:
        return False
    text = to_source(merged)
    return "\n" not in text and len(INDENT * depth) + len(text) <= LINE_LIMIT


def _operations(node):
    return sum(isinstance(n, _OPERATION) for n in gast.walk(node))


class _Broadcasting(gast.NodeTransformer):
    """``rt.unreduce(g, x, axis, True) * y`` -> ``g * y`` (also ``/``, either side, and
    through a number: ``rt.unreduce(...) * 2 * y``; and ``rt.unreduce(g, x, None,
    False)``, ``g`` then a scalar) where ``y`` has ``x``'s
    shape: numpy's broadcasting spreads ``g`` over ``x``'s shape as ``rt.unreduce``
    would, without the call.  ``y`` is ``x`` itself, a variable of the same shape
    (``same_shape``) or ``rt.extremum_mask(x, ...)``."""

    def __init__(self, same_shape):
        self.same_shape = same_shape

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, (gast.Mult, gast.Div)):
            return node
        for side, other in (("left", node.right), ("right", node.left)):
            spread = _unreduce_over(getattr(node, side))
            if spread is not None and self._shape_of(other, spread[1]):
                setattr(node, side, spread[0])
                break
        return node

    def _shape_of(self, other, like):
        """True when ``other`` has the shape of the variable ``like``: it is ``like``, a
        variable of its shape, ``rt.extremum_mask(like, ...)``, or arithmetic on such
        values and numbers with at least one of them (``1 - t * t``)."""
        if isinstance(other, gast.Name):
            return other.id == like or self.same_shape(other.id, like)
        if isinstance(other, gast.Call):
            return _is_rt(other.func, "extremum_mask") and bool(other.args) \
                and isinstance(other.args[0], gast.Name) and other.args[0].id == like
        if isinstance(other, gast.UnaryOp):
            return self._shape_of(other.operand, like)
        if isinstance(other, gast.BinOp) and not isinstance(other.op, gast.MatMult):
            parts = [p for p in (other.left, other.right) if _number(p) is None]
            return bool(parts) and all(self._shape_of(p, like) for p in parts)
        return False


def _unreduce_over(node):
    """(``g``, the name ``x``) for ``rt.unreduce(g, x, axis, True)`` or ``rt.unreduce(g,
    x, None, False)``; (``g * 2``, ``x``) for that times (or over) a number; else None."""
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)) \
            and _number(node.right) is not None:
        inner = _unreduce_over(node.left)
        return None if inner is None else (
            gast.BinOp(left=inner[0], op=node.op, right=node.right), inner[1])
    if not (isinstance(node, gast.Call) and _is_rt(node.func, "unreduce")
            and len(node.args) == 4 and not node.keywords
            and isinstance(node.args[1], gast.Name)):
        return None
    axis, keepdims = node.args[2], node.args[3]
    if not isinstance(keepdims, gast.Constant):
        return None
    if keepdims.value is True or (keepdims.value is False and isinstance(axis, gast.Constant)
                                  and axis.value is None):
        return node.args[0], node.args[1].id
    return None


def _number(node):
    value = node.value if isinstance(node, gast.Constant) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _is_rt(func, name):
    return isinstance(func, gast.Attribute) and func.attr == name \
        and isinstance(func.value, gast.Name) and func.value.id == "rt"


def _replaced(reader, name, value):
    """A copy of ``reader`` reading ``value`` where it read ``name`` (``a + -b`` written
    ``a - b``, ``a += -b * c`` written ``a -= b * c``: the same numbers)."""
    merged = substituted(reader, {name: value})
    if isinstance(merged, gast.AugAssign) and isinstance(merged.op, gast.Add):
        positive = _negated(merged.value)
        if positive is not None:
            merged.op, merged.value = gast.Sub(), positive
    for node in gast.walk(merged):
        if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
            positive = _negated(node.right)
            if positive is not None:
                node.op, node.right = gast.Sub(), positive
    return merged


def _negated(node):
    """``b`` for ``-b``, ``b * c`` for ``-b * c``; else None."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return node.operand
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        left = _negated(node.left)
        if left is not None and isinstance(node.left, gast.UnaryOp):
            return gast.BinOp(left=left, op=node.op, right=node.right)
    return None


#: numpy's functions of two arrays that an operator calls (``a + b`` is ``np.add(a, b)``)
_OPERATOR_OF = {"add": gast.Add, "subtract": gast.Sub, "multiply": gast.Mult,
                "divide": gast.Div, "true_divide": gast.Div, "matmul": gast.MatMult}


def as_operators(items, is_array):
    """``items`` (a sweep) with ``np.add(a, b)`` written ``a + b`` (also subtract,
    multiply, divide, matmul) where ``is_array(name)`` says an operand is an array: the
    same call (numpy's operators call these functions), and, for a result no variable
    holds, one numpy may update in place (``np.add(x @ w, b)`` allocates where
    ``x @ w + b`` does not).  Statements in blocks too."""
    return [_Operators(is_array).visit(item) if not isinstance(item, Comment) else item
            for item in items]


class _Operators(gast.NodeTransformer):
    def __init__(self, is_array):
        self.is_array = is_array

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                and func.value.id == "np" and func.attr in _OPERATOR_OF \
                and len(node.args) == 2 and not node.keywords \
                and not any(isinstance(a, gast.Starred) for a in node.args) \
                and any(isinstance(a, gast.Name) and self.is_array(a.id) for a in node.args):
            return gast.BinOp(left=node.args[0], op=_OPERATOR_OF[func.attr](),
                              right=node.args[1])
        return node
