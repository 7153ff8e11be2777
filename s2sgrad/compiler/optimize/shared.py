"""A value computed again by the same expression, read from the name that holds it.

``shared_values(statements, keep)`` takes generated statements (gast statements and
``Comment``s, with loops and branches) and ``keep`` (the names read after them: the
outputs, the gradients returned).  Where ``m = np.cos(theta)`` (a numpy function of
``PURE_UFUNCS`` or an operator ``+ - * / ** @`` of names and numbers) is followed by the
same expression, it reads ``m`` (nested expressions of them too: ``-t_dot * s``): a
rule's recomputation of a value the forward sweep has (``cos(theta)`` in the adjoint
of ``sin(theta)``, ba's rotation: two passes of 31,843 cosines and sines a gradient),
and the repeats of the user's own code (``ht``'s
``np.sin(tx)`` twice in one rotation matrix, and their tangents' ``np.cos(tx)``).

When it is the same value:

- ``m`` and every name the expression reads are assigned once in the whole function
  (the parameters: never), so within one run of the statements in between no name
  means another value; the definition is seen only by statements after it in its own
  block and the blocks nested there (never after its loop or branch);
- none of them is written in place anywhere (``x += ...``, ``x[i] = ...``, ``out=``, the
  runtime's and numpy's writers, a call of anything else), nor through a name that may
  share its memory (assigned from an expression that reads it and is not an operator
  or a numpy function giving a new array: a view, a runtime helper that may give its
  argument back), nor returned (``keep``); a parameter shares memory with any other;
- a whole right-hand side is replaced only where the name assigned is itself never
  written nor returned (it then shares ``m``'s array), or where it is written into an
  array (``x[i] = m``: copied); a part of one, only as an operand of an operator or of
  a numpy function (a new array is made of it).
"""
import gast

from ..syntax.nodes import Comment, name_uses
from .substitute import NUMPY_WRITERS, PURE_BUILTINS, PURE_METHODS, RUNTIME_WRITERS

#: numpy functions that give a new array computed from their operands alone
PURE_UFUNCS = frozenset("""
    sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh exp exp2 expm1
    log log2 log10 log1p sqrt cbrt square abs absolute fabs sign reciprocal negative
    floor ceil trunc rint arctan2 hypot power maximum minimum fmax fmin add subtract
    multiply true_divide divide logaddexp""".split())
_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow, gast.MatMult)
#: the expressions a key may be made of
_KEYED = (gast.BinOp, gast.UnaryOp, gast.Call)
_FRESH_PARENTS = (gast.BinOp, gast.UnaryOp, gast.Compare)


def shared_values(statements, keep=frozenset(), sequences=frozenset()):
    """``statements`` with repeated pure expressions read from the name of their first
    value where that is the same value (module doc), as a new list.  ``sequences``: the
    names that may hold lists or tuples (``a + b`` of them holds their items; of arrays
    and numbers it is a new value)."""
    reads, stores = name_uses(statements)
    sequences = _sequences(statements, set(sequences))
    unsafe = _shared_with_writes(statements, keep, stores, sequences)

    def stable(name):
        return stores.get(name, 0) <= 1 and name not in unsafe
    return _Block(stable, unsafe).rewritten(statements, {})


def may_be_written(statements, keep=frozenset(), sequences=frozenset()):
    """The names of ``statements`` that are written in place, returned (``keep``) or may
    share memory with one that is (module doc)."""
    stores = name_uses(statements)[1]
    return _shared_with_writes(statements, keep, stores, _sequences(statements,
                                                                    set(sequences)))


def _key(expr, stable):
    """The key of a pure expression of stable names and numbers (module doc), or None."""
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, _ARITHMETIC):
        operands = [expr.left, expr.right]
    elif isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.USub):
        operands = [expr.operand]
    elif _ufunc_call(expr):
        operands = expr.args
    else:
        return None
    for a in operands:
        if isinstance(a, gast.Name):
            if not stable(a.id):
                return None
        elif not (isinstance(a, gast.Constant) and type(a.value) in (int, float)) and \
                _key(a, stable) is None:
            return None
    return gast.dump(expr)


def _ufunc_call(expr):
    return isinstance(expr, gast.Call) and not expr.keywords and expr.args and \
        isinstance(expr.func, gast.Attribute) and isinstance(expr.func.value, gast.Name) \
        and expr.func.value.id == "np" and expr.func.attr in PURE_UFUNCS and \
        not any(isinstance(a, gast.Starred) for a in expr.args)


class _Block:
    """Rewrites statement lists, a table (expression key -> name) per block."""

    def __init__(self, stable, unsafe):
        self.stable, self.unsafe = stable, unsafe

    def rewritten(self, items, table):
        out = []
        for item in items:
            if isinstance(item, Comment) or not isinstance(item, gast.AST):
                out.append(item)
            elif isinstance(item, (gast.For, gast.While, gast.If)):
                item = _shallow(item)
                item.body = self.rewritten(item.body, dict(table))
                item.orelse = self.rewritten(item.orelse, dict(table))
                out.append(item)
            else:
                out.append(self.statement(item, table))
        return out

    def statement(self, item, table):
        if not table and not isinstance(item, gast.Assign):
            return item
        target = item.targets[0] if isinstance(item, gast.Assign) and \
            len(item.targets) == 1 else None
        named = isinstance(target, gast.Name)
        if isinstance(item, (gast.Assign, gast.AugAssign, gast.Expr, gast.Return)) and \
                item.value is not None and table:
            whole = (named and target.id not in self.unsafe) or isinstance(
                target, gast.Subscript)          # x[i] = value: copied into x
            item = _shallow(item)
            item.value = _Replace(table, whole).top(item.value)
        if named and self.stable(target.id):
            key = _key(item.value, self.stable)
            if key is not None:
                table.setdefault(key, target.id)
        return item


class _Replace:
    """Replaces the expressions of ``table`` by their names, innermost first: the whole
    expression when ``whole``, else only operands of operators and numpy functions."""

    def __init__(self, table, whole):
        self.table, self.whole = table, whole

    def top(self, node):
        node = self.visit(node)
        return self._named(node) if self.whole else node

    def visit(self, node):
        if isinstance(node, (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp,
                             gast.GeneratorExp)):
            return node
        fresh = isinstance(node, _FRESH_PARENTS) or _ufunc_call(node)
        for field, value in gast.iter_fields(node):
            if isinstance(value, list):
                setattr(node, field, [self._child(v, fresh) for v in value])
            elif isinstance(value, gast.AST):
                setattr(node, field, self._child(value, fresh))
        return node

    def _child(self, child, fresh):
        if not isinstance(child, gast.AST):
            return child
        child = self.visit(child)
        return self._named(child) if fresh else child

    def _named(self, node):
        name = self.table.get(gast.dump(node)) if isinstance(node, _KEYED) and (
            not isinstance(node, gast.Call) or _ufunc_call(node)) else None
        return node if name is None else gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                                   type_comment=None)


def _shallow(node):
    copied = type(node)()
    for field, value in gast.iter_fields(node):
        setattr(copied, field, list(value) if isinstance(value, list) else value)
    for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        if hasattr(node, attr):
            setattr(copied, attr, getattr(node, attr))
    return copied


# ------------------------------------------------- which names may be written in place

def _shared_with_writes(statements, keep, stores, sequences):
    """The names written in place, returned (``keep``), or sharing memory with one that
    is: the components of the may-share relation (module doc) holding such a name."""
    parent = {}

    def find(n):
        parent.setdefault(n, n)
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    def union(a, b):
        parent[find(a)] = find(b)

    written = set(keep)
    external = None
    for item in statements:
        if not isinstance(item, gast.AST):
            continue
        for node in gast.walk(item):
            if isinstance(node, gast.Name) and stores.get(node.id, 0) == 0:
                if external is None:      # parameters and free values: one memory
                    external = node.id
                union(node.id, external)
            _writes(node, written, sequences)
            _shares(node, union, sequences)
    bad = {find(n) for n in written}
    return {n for n in list(parent) if find(n) in bad} | written


def _base(node):
    while isinstance(node, (gast.Subscript, gast.Attribute, gast.Starred)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _targets(node):
    if isinstance(node, (gast.Tuple, gast.List)):
        return [t for e in node.elts for t in _targets(e)]
    return [node]


def _writes(node, written, sequences):
    """Add to ``written`` the names ``node`` (one AST node) writes in place."""
    if isinstance(node, gast.AugAssign):
        written.add(_base(node.target))
    elif isinstance(node, (gast.Assign, gast.AnnAssign)):
        for target in (node.targets if isinstance(node, gast.Assign) else [node.target]):
            for t in _targets(target):
                if not isinstance(t, gast.Name):
                    written.add(_base(t))
    elif isinstance(node, gast.Call):
        outs = [k.value for k in node.keywords if k.arg == "out"]
        writer = _writer(node)
        if writer == "unknown":     # the arguments, and the object of a method
            outs += list(node.args) + [k.value for k in node.keywords]
            outs += [node.func.value] if isinstance(node.func, gast.Attribute) else []
        elif writer is not None:
            outs += [node.args[0], node.args[-1]] if node.args else []
        for out in outs:
            for e in (out.elts if isinstance(out, gast.Tuple) else [out]):
                written.update(_may_share(e, sequences))
    written.discard(None)


def _writer(node):
    """None for a call that writes into none of its arguments (but ``out=``); "unknown"
    for one that may write into any; else the name of a writer of its first (or last:
    ``rt.*_into``) argument."""
    func = node.func
    if isinstance(func, gast.Name):
        return None if func.id in PURE_BUILTINS else "unknown"
    path = []
    while isinstance(func, gast.Attribute):
        path.append(func.attr)
        func = func.value
    if not isinstance(func, gast.Name):
        return "unknown"
    if func.id in ("np", "math", "rt"):
        if "random" in path:
            return "unknown"
        if path[0] in NUMPY_WRITERS or (func.id == "rt" and path[0] in RUNTIME_WRITERS):
            return path[0]
        return None
    return None if len(path) == 1 and path[0] in PURE_METHODS else "unknown"


#: numpy functions whose result is a new array (never one of their operands or a view)
_NEW_ARRAYS = PURE_UFUNCS | frozenset("""
    zeros zeros_like ones ones_like empty empty_like full full_like copy arange eye
    identity concatenate stack hstack vstack sum prod mean dot matmul outer cross array
    shape ndim size""".split())
#: runtime helpers whose result is a new array or number
_RT_NEW = frozenset("""
    zeros_batch matmul_batch basis_batch ones_like zeros_like tangent_size sweep_width
    cross_adjoint matmul_scaled matmul_sliced matmul_batch_sliced matmul_both""".split())
#: numpy functions whose result may be a view of their first argument (of no other)
_VIEWS = frozenset("""
    reshape transpose swapaxes moveaxis ravel squeeze expand_dims broadcast_to asarray
    ascontiguousarray atleast_1d atleast_2d atleast_3d real imag diagonal""".split())
#: runtime helpers whose result is new or (a view of) their first argument
_FIRST_ONLY = frozenset("""
    unbroadcast unreduce broadcast_like transpose_adjoint sum broadcast_batch
    unbroadcast_batch unreduce_batch reshape_like_batch extremum_adjoint amin amax
    """.split())


def _array_store(target):
    """True for ``x[a:b]``, ``x[:, i]``: a slice or a tuple index, so ``x`` is an array
    and the value is copied into it (a list's item may be the value itself)."""
    return isinstance(target, gast.Subscript) and isinstance(target.slice,
                                                             (gast.Slice, gast.Tuple))


def _may_share(expr, sequences):
    """The names whose memory the value of ``expr`` may share (module doc)."""
    def share(e):
        return _may_share(e, sequences)
    if isinstance(expr, gast.Name):
        return {expr.id}
    if isinstance(expr, gast.Constant):
        return set()
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.Add) and (
            _sequence(expr.left, sequences) or _sequence(expr.right, sequences)):
        return share(expr.left) | share(expr.right)     # a list or tuple holds the items
    if isinstance(expr, (gast.BinOp, gast.UnaryOp, gast.Compare)):
        return set()
    if isinstance(expr, (gast.Subscript, gast.Attribute, gast.Starred)):
        return share(expr.value)
    if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Attribute) and \
            isinstance(expr.func.value, gast.Name) and \
            not any(k.arg in (None, "out", "copy") for k in expr.keywords):
        module, attr = expr.func.value.id, expr.func.attr
        if (module == "np" and attr in _NEW_ARRAYS) or (module == "rt" and attr in _RT_NEW) \
                or module == "kept":         # rt.Kept: an array of the operation's own
            return set()
        if (module == "rt" and attr in _FIRST_ONLY) or (module == "np" and attr in _VIEWS):
            return share(expr.args[0]) if expr.args else set()
    if isinstance(expr, gast.Call):       # its arguments, and a method's object
        func = expr.func
        shared = set().union(*[share(a) for a in expr.args],
                             *[share(k.value) for k in expr.keywords])
        if isinstance(func, gast.Attribute) and not (
                isinstance(func.value, gast.Name) and func.value.id in _MODULES):
            shared |= share(func.value)
        return shared
    return {n.id for n in gast.walk(expr) if isinstance(n, gast.Name)}


def _sequences(statements, known):
    """``known`` and the names the statements assign a list or a tuple: a literal, a
    comprehension, ``list(...)``/``tuple(...)``, the runtime's lists of adjoints, or a
    sum with one of them."""
    def made(value):
        if isinstance(value, (gast.List, gast.Tuple, gast.ListComp)):
            return True
        if isinstance(value, gast.Call):
            func = value.func
            return (isinstance(func, gast.Name) and func.id in ("list", "tuple")) or (
                isinstance(func, gast.Attribute) and func.attr in (
                    "zeros_list", "item_added", "copy") and isinstance(func.value, gast.Name)
                and func.value.id in ("rt",) + tuple(known))
        if isinstance(value, gast.BinOp) and isinstance(value.op, (gast.Add, gast.Mult)):
            return any(isinstance(v, gast.Name) and v.id in known or made(v)
                       for v in (value.left, value.right))
        return isinstance(value, gast.Name) and value.id in known
    while True:
        more = {t.id for item in statements if isinstance(item, gast.AST)
                for node in gast.walk(item) if isinstance(node, gast.Assign)
                and made(node.value) for target in node.targets for t in _targets(target)
                if isinstance(t, gast.Name)} - known
        if not more:
            return known
        known |= more


def _sequence(expr, sequences):
    """True when ``expr`` may be a list or tuple (a literal, a name of ``sequences``, a
    sum of them, anything but a name, a number or an arithmetic result)."""
    if isinstance(expr, gast.Name):
        return expr.id in sequences
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.Add):
        return _sequence(expr.left, sequences) or _sequence(expr.right, sequences)
    return not isinstance(expr, (gast.Constant, gast.BinOp, gast.UnaryOp)) and not \
        _ufunc_call(expr)


#: the modules generated code calls functions of (never an array)
_MODULES = frozenset({"np", "rt", "math", "kept"})


def _shares(node, union, sequences):
    """Join the names an assignment (or a loop's target) may make share memory."""
    if isinstance(node, gast.For):
        targets, value = [node.target], node.iter
    elif isinstance(node, gast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, gast.AnnAssign) and node.value is not None:
        targets, value = [node.target], node.value
    else:
        return
    names = {_base(t) for target in targets for t in _targets(target)
             if not _array_store(t)} - {None}
    for shared in _may_share(value, sequences):
        for t in names:
            union(t, shared)
