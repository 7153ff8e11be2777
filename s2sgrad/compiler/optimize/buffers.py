"""Elementwise results written into arrays the generated function keeps between calls.

``kept_results(statements, keep, scalar, kept)`` takes the straight-line sweeps of a
loop-free gradient or tangent function run as numpy (gast statements and comments),
``keep`` (the names the function returns: the operation that makes one is left as
written),
``scalar(name)`` (whether ``name`` is known to be a number, not an array) and ``kept``
(the name of the call's ``rt.Kept``).  It gives the statements with every operation
that may make an array (``a - b``, ``-a``, ``a @ b``, ``np.exp(a)``: a numpy ufunc
called with positional arguments, and the helpers that take ``out=``:
``rt.extremum_adjoint``, ``rt.einsum``, ``rt.einsum_adjoints``, and the calls of fused kernels,
``kept.fused(_x_fused, a, b)``, of fused sums ``kept.fused_sum(_x_fused, a, axis=2,
keepdims=False)``: ``optimize/kernels.py``) written ``kept.subtract(a, b)``,
and how many it wrote (0: nothing changed).

``rt.Kept`` (``runtime/buffers.py``) runs ``np.subtract(a, b, out=...)`` into the array
the same operation made last call when the operands have the same types, shapes and
dtypes, and as written otherwise: large results stop being fresh arrays whose pages
fault on every call (gmm's gradient: 24 -> 6.6 ms).  The check is made at every call,
so no result depends on an earlier one.  Operations nested in others are kept too
(``rt.sum(kept.multiply(dt3, xcentered), 0, False)``: the product is a temporary, and
numpy's own reuse of temporaries needs a temporary no one else holds).  One call runs
each operation of straight-line code once, in one order; what the function returns is
copied where it shares a kept array (``Buffers.give``).

``by_columns(statements, params, kept, fused)`` gives the line that lays the matrix
arguments out by columns for a call where they are narrow (``a, b = kept.columns(a,
b)``: ``runtime/columns.py``) and the statements with ``np.cross``,
``np.ascontiguousarray`` and ``rt.unreduce`` written as the ``kept`` methods that keep
that layout, for code that reads columns and calls only what never writes through a
reshaped view (``COLUMN_SAFE``).
"""
import gast
import numpy as np

from ..syntax.nodes import Comment, name_node
from ..syntax.source import to_source

#: Python operators and the ufuncs they are
BINARY = {gast.Add: "add", gast.Sub: "subtract", gast.Mult: "multiply",
          gast.Div: "true_divide", gast.Pow: "power", gast.MatMult: "matmul"}
#: numpy ufuncs with an operator spelling: left as called (``np.add(a, b)`` of two lists
#: is not ``a + b``, which is what ``rt.Kept`` runs for operands that are not arrays)
OPERATOR_UFUNCS = frozenset(BINARY.values()) | {"negative"}
#: methods that put a value into a container (which may outlive the call)
STORING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "add",
                             "__setitem__", "put", "set_data", "assign_value"})
#: helpers of ``rt`` that write into an ``out=`` array (``einsum_adjoints``: each
#: operand's contraction into one)
RT_OUT = frozenset({"extremum_adjoint", "einsum", "einsum_adjoints"})
#: attributes of an array that are numbers or tuples of numbers, never arrays
SIZE_ATTRIBUTES = frozenset({"shape", "ndim", "size", "itemsize", "nbytes", "dtype"})


def kept_results(statements, keep, scalar, kept, fused=()):
    """``(statements, count)``: see the module doc.  Straight-line code only: with a
    loop or a branch the statements come back unchanged, with a count of 0.  ``fused``:
    the names of ``rt.Fused`` kernels (``optimize/kernels.py``), whose calls are written
    ``kept.fused(_x_fused, a, b)``."""
    if any(isinstance(item, (gast.For, gast.While, gast.If, gast.Try, gast.With))
           for item in statements) or _stores_elsewhere(statements):
        return statements, 0
    keep = _returned_names(statements, keep)
    writer = _Writer(scalar, kept, fused)
    out = []
    for item in statements:
        if isinstance(item, Comment):
            out.append(item)
        elif _returned(item, keep):          # its own result is left as written
            item.value = writer.generic_visit(item.value)
            out.append(item)
        else:
            out.append(writer.visit(item))
    return out, writer.count


def _stores_elsewhere(statements):
    """Whether a statement could keep a value past the call other than by returning it:
    an attribute set, a container's ``append``/``extend``/``insert``/``update``...
    (into a list the caller holds: a kept array there would change at the next call)."""
    for item in statements:
        if isinstance(item, Comment):
            continue
        for node in gast.walk(item):
            if isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Store):
                return True
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                    node.func.attr in STORING_METHODS and not (
                        isinstance(node.func.value, gast.Name) and
                        node.func.value.id in ("np", "rt", "math")):
                return True
    return False


def _returned_names(statements, keep):
    """The ids of the statements that bind what the function returns: the last binding
    of each name of ``keep``, and through a plain alias (``db = dz``) the last binding of
    ``dz`` before it (a kept ``dz`` would be copied at the return).  An earlier binding
    of a returned name (``dx = d1 * e`` before ``dx = dx + d2``) is a temporary: kept
    (lse's gradient: a fresh 2.5 MB array a call before).  Only a copy at the return
    depends on it: ``Buffers.give`` copies any kept array the result holds."""
    wanted, found = set(keep), set()
    for item in reversed(statements):
        if not isinstance(item, gast.Assign):
            continue
        names = set()
        for target in item.targets:
            names |= _bound_names(target)
        if names & wanted:
            found.add(id(item))
            wanted -= names
            if isinstance(item.value, gast.Name):
                wanted.add(item.value.id)
    return found


def _bound_names(target):
    """The names an assignment's ``target`` binds (``a``, ``a, b``; not ``a[i]``, which
    writes into ``a``)."""
    if isinstance(target, gast.Name):
        return {target.id}
    if isinstance(target, (gast.Tuple, gast.List)):
        return set().union(*(_bound_names(e) for e in target.elts))
    if isinstance(target, gast.Starred):
        return _bound_names(target.value)
    return set()


def _returned(item, keep):
    """Whether ``item`` binds what the function returns (``_returned_names``: its
    outermost operation is then left as written: a kept array would be copied at the
    return)."""
    return id(item) in keep


class _Writer(gast.NodeTransformer):
    """Writes each operation that may make an array as a ``kept.<ufunc>(...)`` call."""

    def __init__(self, scalar, kept, fused=()):
        self.scalar, self.kept, self.count = scalar, kept, 0
        self.fused = frozenset(fused)
        self.numbers = set()        # names assigned a value made of numbers only

    def visit_Assign(self, node):
        # a target is written, not read: only the value is rewritten
        node.value = self.visit(node.value)
        if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            if self._array(node.value):
                self.numbers.discard(node.targets[0].id)
            else:
                self.numbers.add(node.targets[0].id)
        return node

    def visit_AugAssign(self, node):
        node.value = self.visit(node.value)       # ``a += b`` writes in place already
        return node

    def visit_Lambda(self, node):
        return node               # ``rt.shaped``'s expression: run on one element

    def visit_BinOp(self, node):
        self.generic_visit(node)
        ufunc = BINARY.get(type(node.op))
        if ufunc is None or not (self._array(node.left) or self._array(node.right)):
            return node
        return self._kept(ufunc, [node.left, node.right])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, gast.USub) or not self._array(node.operand):
            return node
        return self._kept("negative", [node.operand])

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Name) and func.id in self.fused:
            if node.keywords:           # an rt.FusedSum's axis and keepdims
                call = self._kept("fused_sum", [func] + node.args)
                call.keywords = node.keywords
                return call
            return self._kept("fused", [func] + node.args)
        if node.keywords or any(isinstance(a, gast.Starred) for a in node.args) or \
                not isinstance(func, gast.Attribute) or not isinstance(func.value, gast.Name):
            return node
        module, attr = func.value.id, func.attr
        if module == "np" and attr not in OPERATOR_UFUNCS and _is_ufunc(attr) and \
                any(self._array(a) for a in node.args):
            return self._kept(attr, node.args)
        if module == "rt" and attr in RT_OUT:
            return self._kept(attr, node.args)
        return node

    def _array(self, node):
        """Whether ``node`` may be an array (``rt.Kept`` checks exactly at run time)."""
        if isinstance(node, (gast.Constant, gast.Tuple)):
            return False          # a tuple literal's ``+`` joins tuples (a shape's)
        if isinstance(node, gast.Attribute) and node.attr in SIZE_ATTRIBUTES:
            return False
        if isinstance(node, gast.Subscript):      # ``x.shape[:1]``: a part of a shape
            return self._array(node.value)
        if isinstance(node, gast.Name):
            return node.id not in self.numbers and not self.scalar(node.id)
        if isinstance(node, gast.BinOp):
            return self._array(node.left) or self._array(node.right)
        if isinstance(node, gast.UnaryOp):
            return self._array(node.operand)
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                isinstance(node.func.value, gast.Name) and node.func.value.id == "math":
            return False
        return True

    def _kept(self, operation, args):
        self.count += 1
        return gast.Call(gast.Attribute(name_node(self.kept), operation, gast.Load()),
                         list(args), [])


def _is_ufunc(name):
    return isinstance(getattr(np, name, None), np.ufunc)


#: what code laid out by columns may call (``by_columns``): each reads its operands
#: (or, ``rt.add_into``, writes through a view made by indexing) and never through a
#: reshaped view, which is a copy of a matrix laid out by columns
COLUMN_SAFE = {
    "rt": frozenset({"sum", "unbroadcast", "unreduce", "add_into", "shaped", "ones_like",
                     "zeros_like", "cross_adjoint", "reduction_count", "norm_adjoint"}),
    "np": frozenset({"zeros_like", "ones_like", "sum", "cross", "ascontiguousarray"}),
    "np.linalg": frozenset({"norm"}),
}
#: methods of an array code laid out by columns may call: each reads it into a new value
READ_METHODS = frozenset({"sum", "mean", "max", "min", "prod", "any", "all", "copy",
                          "astype"})
#: the ``rt.Kept`` methods (besides numpy's ufuncs) code laid out by columns may call:
#: the kernels' (``rt.Fused`` copies an operand C-ordered where its loops run) and the
#: layout's own
KEPT_COLUMN_SAFE = frozenset({"fused", "fused_sum", "columns", "cross", "contiguous",
                              "unreduce"})
#: calls written as the ``rt.Kept`` method that keeps the layout
COLUMN_CALLS = {("np", "cross"): "cross", ("np", "ascontiguousarray"): "contiguous",
                ("rt", "unreduce"): "unreduce"}


def by_columns(statements, params, kept, fused=()):
    """``(head, statements)``: ``params`` (the names of the function's arguments that are
    matrices) laid out by columns for the call when they are narrow (``a, b =
    kept.columns(a, b)``: ``runtime/columns.py`` decides at each call), and
    ``np.cross``/``rt.unreduce`` and ``np.ascontiguousarray`` of a column block
    (``optimize/views.py``'s copy of a block no one writes through) written as the
    ``kept`` methods that keep that layout (``COLUMN_CALLS``); ``([], statements)`` unchanged where nothing reads columns
    (``x[:, 0:3]``, ``x[:, 2]``, ``x[:, None]``: without, numpy's passes over whole
    matrices gain nothing, and the copies cost) or the statements call
    anything but numpy's ufuncs (``kept.<f>`` too), the kernels ``fused``, ``COLUMN_SAFE``,
    ``KEPT_COLUMN_SAFE`` and an array's ``READ_METHODS``,
    or read an attribute other than a shape's (``.reshape`` of a matrix laid out by
    columns is a copy: a write through it would be lost)."""
    code = [item for item in statements if not isinstance(item, Comment)]
    if not params or not any(_column_read(node) for item in code for node in gast.walk(item)) \
            or not all(_column_safe(item, kept, fused) for item in code):
        return [], statements
    for item in statements:
        if isinstance(item, Comment):
            continue
        for node in gast.walk(item):
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                    isinstance(node.func.value, gast.Name) and \
                    (node.func.value.id, node.func.attr) in COLUMN_CALLS and \
                    not node.keywords and (node.func.attr != "ascontiguousarray" or
                                           _column_read(node.args[0])):
                node.func = gast.Attribute(name_node(kept), COLUMN_CALLS[
                    node.func.value.id, node.func.attr], gast.Load())
    names = ", ".join(params)
    head = [Comment("matrices of few columns laid out by columns for this call (numpy's "
                    "passes then run down columns)"),
            gast.parse(f"{names}, = {kept}.columns({names})").body[0]]
    return head, statements


def _column_read(node):
    """Whether ``node`` is ``x[:, <not a whole slice>]``: columns of a matrix, or a
    vector made a column."""
    if not (isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Tuple) and
            len(node.slice.elts) == 2):
        return False
    rows, cols = node.slice.elts
    return _whole(rows) and not _whole(cols)


def _whole(index):
    return isinstance(index, gast.Slice) and index.lower is None and index.upper is None \
        and index.step is None


def _column_safe(item, kept, fused):
    """Whether the statement ``item`` only calls and reads what ``by_columns`` allows."""
    methods = set()       # the attributes read as methods called (``x.sum()``)
    for node in gast.walk(item):
        if isinstance(node, gast.Call):
            func = node.func
            if isinstance(func, gast.Name):
                if func.id not in fused:
                    return False
                continue
            if not isinstance(func, gast.Attribute):
                return False
            methods.add(id(func))
            owner = to_source(func.value) if isinstance(func.value, (
                gast.Name, gast.Attribute)) else None
            if not (func.attr in COLUMN_SAFE.get(owner, ()) or
                    owner in ("np", kept) and _is_ufunc(func.attr) or
                    owner == kept and func.attr in KEPT_COLUMN_SAFE or
                    owner not in ("np", "rt", kept, "math") and func.attr in READ_METHODS):
                return False
        elif isinstance(node, gast.Attribute) and id(node) not in methods and not (
                isinstance(node.value, gast.Name) and node.value.id in ("np", "rt", kept)) \
                and node.attr not in SIZE_ATTRIBUTES:
            return False
    return True
