"""Chains of elementwise operations made one fused kernel call (loop-free code run as
numpy, large arguments).

``fused_chains(statements, keep, fresh)`` takes the straight-line statements of a
gradient or tangent function (gast statements and ``Comment``s), ``keep`` (the names
the function returns) and ``fresh`` (the name allocator's ``fresh``).  It gives
``(statements, chains)``: the statements with every maximal chain of at least
``MIN_OPERATIONS`` elementwise operations written as one call ``_x_fused(a, b, ...)``,
and per call a ``Chain`` (``compiler/emit/kernels.py`` writes its loops and its
``rt.Fused``; ``runtime/fused.py`` runs it).

A chain is a tree of ``+ - * /``, unary ``-``, ``** 2``, ``np.sqrt``, ``np.abs``/
``np.absolute`` and ``np.square``; its leaves (names, calls, subscripts: anything else)
are the kernel's operands, number constants stay in its body.  Operations a statement
reads from earlier statements join its chain when their result (that binding of the
name) is read once, there, is not returned, and nothing between the two statements
writes in place or rebinds a name the moved operations read (``dt4 = -ddists; dt3 =
dt4 * 2`` is one kernel of ``ddists``).  A read of the value's shape only
(``rt.unbroadcast(g, t3)``, ``rt.unreduce``, ``rt.reduction_count``, ``.shape``) is no
use: the statement stays, as ``t3 = rt.shaped(lambda a, b: a * b, a, b)`` (a broadcast
view of one element: shape, dtype and kind, no pass; when the chain's leaves are names
or numbers and the value is an array).  ``rt.sum(<chain>, axis, keepdims)`` of one int
axis, in any statement, is the chain summed as it is made: ``_x_fused(a, b, axis=2,
keepdims=False)``, an ``rt.FusedSum`` (a chain of one operation is enough: its values
are never stored; ``Chain.reduce``).  ``np.exp``/``np.log``/trigonometry stay numpy's:
numpy's vectorised ``exp`` is ~7x faster than the one a Numba loop calls (1e6 numbers:
0.85 ms against 6.3 ms, measured), so a chain through them would be slower fused;
``**`` other than 2 and other reductions stay as written.
"""
import copy

import gast

from ..syntax.nodes import Comment, name_node
from ..syntax.source import to_source

#: the fewest operations worth a kernel: one operation is one numpy pass already
MIN_OPERATIONS = 2
ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div)
#: ``np.<name>(x)`` fused (exact in IEEE arithmetic: the same bits as numpy's)
FUNCTIONS = frozenset({"sqrt", "abs", "absolute", "square"})


class Chain:
    """One fused chain: ``name`` (what the call calls), ``params`` (the kernel's operand
    names, in call order), ``expression`` (gast, over ``params``), ``what`` (the
    statements it replaces, as source), ``where`` (the ``SourceLocation`` of the
    user's line the last of them comes from, or None) and ``reduce``: None, or the
    ``(axis, keepdims)`` sources of the ``rt.sum`` the chain is summed by (an
    ``rt.FusedSum``)."""

    def __init__(self, name, params, expression, what, where, reduce=None):
        self.name, self.params, self.expression = name, params, expression
        self.what, self.where, self.reduce = what, where, reduce


def fused_chains(statements, keep, fresh, scalar=lambda name: False):
    """``(statements, chains)``: see the module doc.  ``scalar(name)``: whether ``name``
    is known to be a number (operations of numbers only are not counted: numpy does
    them once, a kernel once per element)."""
    if any(isinstance(item, (gast.For, gast.While, gast.If, gast.Try, gast.With))
           for item in statements):
        return statements, []
    numbers = _Numbers(scalar)
    for item in statements:
        numbers.see(item)
    statements, moved = _joined(statements, keep, numbers)
    writer = _Writer(fresh, moved, numbers)
    out = []
    for item in statements:
        if isinstance(item, Comment):
            if item.origin is not None:
                writer.where = item.origin
            out.append(item)
        elif _simple(item) and numbers.number(item.targets[0]) or \
                _simple(item) and _rt_call(item.value, "shaped"):
            out.append(item)        # a number: numpy computes it once; a shape's stand-in
        else:
            writer.target = _target(item)
            out.append(writer.visit(item))
    return _without_empty_comments(out), writer.chains


class _Numbers:
    """Which names of the statements are numbers, not arrays: those ``scalar`` says, and
    those assigned from numbers only (a full ``np.sum``/``np.max``/``np.min`` of one
    argument, ``math.*``, ``rt.ones_like`` of a number, a shape's parts)."""

    REDUCTIONS = frozenset({"sum", "max", "min", "amax", "amin", "mean", "prod"})

    def __init__(self, scalar):
        self.scalar, self.names, self.shapes = scalar, set(), set()

    def see(self, item):
        if not _simple(item):
            return
        if self.number(item.value):
            self.names.add(item.targets[0].id)
        elif isinstance(item.value, gast.Attribute) and item.value.attr == "shape":
            self.shapes.add(item.targets[0].id)

    def number(self, node):
        if isinstance(node, gast.Constant):
            return type(node.value) in (int, float)
        if isinstance(node, gast.Name):
            return node.id in self.names or bool(self.scalar(node.id))
        if isinstance(node, gast.BinOp):
            return self.number(node.left) and self.number(node.right)
        if isinstance(node, gast.UnaryOp):
            return self.number(node.operand)
        if isinstance(node, gast.Attribute):
            return node.attr in ("size", "ndim")
        if isinstance(node, gast.Subscript):     # a part of a shape
            shape = isinstance(node.value, gast.Attribute) and node.value.attr == "shape" or \
                isinstance(node.value, gast.Name) and node.value.id in self.shapes
            return shape and not isinstance(node.slice, gast.Slice)
        if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and
                isinstance(node.func.value, gast.Name)) or node.keywords:
            return False
        module, attr = node.func.value.id, node.func.attr
        if module == "math":
            return True
        if module == "np" and attr in self.REDUCTIONS:
            return len(node.args) == 1
        if module == "rt" and attr == "ones_like" or module == "np" and operation(node):
            return all(self.number(a) for a in node.args)
        if module == "rt" and attr in ("unbroadcast", "unreduce") and len(node.args) >= 2:
            return self.number(node.args[1])        # an adjoint of the primal's shape
        return False


#: public: ``optimize/loops.py`` tells numbers from arrays the same way
Numbers = _Numbers


def operation(node):
    """Whether ``node`` is an elementwise operation a chain holds (module doc)."""
    if isinstance(node, gast.BinOp):
        if _sequence(node.left) or _sequence(node.right):
            return False              # ``x.shape[:1] + (-1,)`` joins tuples
        if isinstance(node.op, ARITHMETIC):
            return True
        return isinstance(node.op, gast.Pow) and isinstance(node.right, gast.Constant) and \
            type(node.right.value) is int and node.right.value == 2
    if isinstance(node, gast.UnaryOp):
        return isinstance(node.op, gast.USub)
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
        isinstance(node.func.value, gast.Name) and node.func.value.id == "np" and \
        node.func.attr in FUNCTIONS and len(node.args) == 1 and not node.keywords and \
        not isinstance(node.args[0], gast.Starred)


def _sequence(node):
    """Whether ``node`` is written as a tuple or list (a literal, a shape or a part of
    one): an operator on it is not elementwise."""
    if isinstance(node, (gast.Tuple, gast.List)):
        return True
    if isinstance(node, gast.Attribute):
        return node.attr == "shape"
    if isinstance(node, gast.Subscript):
        return _sequence(node.value) and isinstance(node.slice, gast.Slice) or \
            isinstance(node.value, gast.Subscript) and _sequence(node.value)
    if isinstance(node, gast.BinOp):
        return _sequence(node.left) or _sequence(node.right)
    return False


def count(node, numbers=None):
    """The operations of the chain rooted at ``node`` (0 when it is a leaf); with
    ``numbers`` (``_Numbers``), those of arrays only (one of numbers is a leaf)."""
    if not operation(node) or numbers is not None and numbers.number(node):
        return 0
    return 1 + sum(count(child, numbers) for child in _operands(node))


def _operands(node):
    """The operands of the elementwise operation ``node`` (``operation``)."""
    if isinstance(node, gast.BinOp):
        return [node.left] if isinstance(node.op, gast.Pow) else [node.left, node.right]
    if isinstance(node, gast.UnaryOp):
        return [node.operand]
    return [node.args[0]]


#: public: ``optimize/loop_space.py`` walks the same trees
operands = _operands


def _target(item):
    if isinstance(item, (gast.Assign, gast.AugAssign)):
        target = item.targets[0] if isinstance(item, gast.Assign) else item.target
        while isinstance(target, (gast.Subscript, gast.Attribute)):
            target = target.value
        if isinstance(target, gast.Name):
            return target.id
    return "chain"


def _simple(item):
    """``name = value``: the one kind of statement a chain moves past."""
    return isinstance(item, gast.Assign) and len(item.targets) == 1 and \
        isinstance(item.targets[0], gast.Name)


def _names(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _summary(item):
    """``(names stored, {name: reads}, {name: reads of its shape only})`` of a statement
    (a witness pair, ``_joined``'s, or None: nothing).  A lambda's body reads its own
    parameters; ``rt.shaped``'s operands are read for their shapes (``SHAPE_ONLY``)."""
    stores, reads, shapes = set(), {}, {}
    for one in item if isinstance(item, list) else [item]:
        if one is None or isinstance(one, Comment):
            continue
        todo = [one]
        while todo:
            node = todo.pop()
            if isinstance(node, gast.Lambda):
                todo.extend(node.args.defaults)
                continue
            if isinstance(node, gast.Name):
                if isinstance(node.ctx, gast.Store):
                    stores.add(node.id)
                else:
                    reads[node.id] = reads.get(node.id, 0) + 1
            for read in _shape_read(node):
                shapes[read] = shapes.get(read, 0) + 1
            todo.extend(gast.iter_child_nodes(node))
    return stores, reads, shapes


def _joined(statements, keep, numbers):
    """The statements with each single-use elementwise result moved into its one reader
    (module doc), and the source of what was moved, per reading statement's id.  A
    reader is a ``name = <chain>`` statement or an ``rt.sum(<chain or name>, axis,
    keepdims)`` anywhere in a statement (``_summed``).  Reads of a value's shape only
    (``rt.unbroadcast(g, t3)``: ``_shape_read``) do not count as uses: the value's
    statement stays as ``rt.shaped`` of its expression (a broadcast view of one
    element: its shape, dtype and kind without its values); ``numbers``
    (``_Numbers``): a number read for its shape is not moved."""
    statements = list(statements)
    summaries = [_summary(item) for item in statements]
    defined = {}          # name -> index of its ``name = <chain>`` statement
    moved = {}            # id(reading statement) -> sources of the statements moved in
    for k, item in enumerate(statements):
        if isinstance(item, Comment) or item is None:
            continue
        original = None       # the statement's source before the first join into it
        chained = _simple(item) and operation(item.value)
        roots = [(item, "value")] if chained else []
        roots += [(node.args, 0) for node in gast.walk(item) if _summed(node)]
        for parent, field in roots:
            chain = parent[field] if isinstance(parent, list) else getattr(parent, field)
            for leaf in _leaf_names(chain):
                j = defined.get(leaf)
                reads, shaped = _binding_reads(summaries, j, leaf)
                if j is None or reads - shaped != 1 or leaf in keep or \
                        shaped and (numbers.number(statements[j].targets[0]) or
                                    _witness(leaf, statements[j].value) is None) or \
                        not _clear(statements, j, k, _names(statements[j].value)):
                    continue
                original = original or to_source(item)
                moved.setdefault(id(item), []).extend(
                    moved.pop(id(statements[j]), None) or [to_source(statements[j])])
                witness = _witness(leaf, statements[j].value) if shaped else None
                chain = _replaced(chain, leaf, statements[j].value)
                if isinstance(parent, list):
                    parent[field] = chain
                else:
                    setattr(parent, field, chain)
                statements[j] = witness and [Comment(
                    f"{leaf}'s shape: its values are computed in the fused call below"), witness]
                summaries[j], summaries[k] = _summary(statements[j]), _summary(item)
        if id(item) in moved:
            moved[id(item)].append(original)
        if chained:
            defined[item.targets[0].id] = k
    return [one for item in statements if item is not None
            for one in (item if isinstance(item, list) else [item])], moved


#: ``rt.<helper>(...)`` calls that read only the shape (and kind, dtype) of the argument
#: at the position given: an adjoint summed or spread to a primal's shape
SHAPE_ONLY = {"unbroadcast": 1, "unreduce": 1, "reduction_count": 0}
#: attributes that read a shape, not values
SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype"})


def _binding_reads(summaries, j, name):
    """``(reads, shape reads)`` of the value statement ``j`` binds to ``name`` (per
    statement its ``_summary``): the reads of ``name`` after it up to the statement
    that binds it again (its reads included); ``(0, 0)`` when ``j`` is None."""
    reads = shapes = 0
    if j is None:
        return reads, shapes
    for stores, read, shape in summaries[j + 1:]:
        reads += read.get(name, 0)
        shapes += shape.get(name, 0)
        if name in stores:
            break
    return reads, shapes


def _shape_read(node):
    """The names ``node`` reads for their shape only (``SHAPE_ONLY``,
    ``SHAPE_ATTRIBUTES``; every operand of ``rt.shaped``)."""
    if isinstance(node, gast.Attribute) and node.attr in SHAPE_ATTRIBUTES:
        reads = [node.value]
    elif _rt_call(node, "shaped"):
        reads = node.args[1:]
    elif _rt_call(node) and node.func.attr in SHAPE_ONLY and \
            len(node.args) > SHAPE_ONLY[node.func.attr]:
        reads = [node.args[SHAPE_ONLY[node.func.attr]]]
    else:
        return []
    return [read.id for read in reads if isinstance(read, gast.Name)]


def _rt_call(node, name=None):
    """Whether ``node`` calls ``rt.<something>`` (``rt.<name>`` when given)."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
        isinstance(node.func.value, gast.Name) and node.func.value.id == "rt" and \
        (name is None or node.func.attr == name)


def _witness(name, value):
    """``name = rt.shaped(lambda a, b: <value>, a, b)``: what stands for ``name`` where
    only its shape is read once its values are fused into a later chain; None when the
    chain ``value`` has a leaf other than a name or a number (computed twice)."""
    leaves = []
    for node in _leaves(value):
        if isinstance(node, gast.Name):
            if node.id not in leaves:
                leaves.append(node.id)
        elif not (isinstance(node, gast.Constant) and type(node.value) in (int, float)):
            return None
    params = ", ".join(leaves)
    return gast.parse(f"{name} = rt.shaped(lambda {params}: {to_source(value)}, "
                      f"{params})").body[0]


def _leaves(node):
    """The operand nodes of the chain rooted at ``node``."""
    if not operation(node):
        return [node]
    return [leaf for child in _operands(node) for leaf in _leaves(child)]


def _summed(node):
    """Whether ``node`` is ``rt.sum(<a name or a chain>, <int>, <True or False>)``: a sum
    over one axis a ``rt.FusedSum`` runs (the chain's values are never stored)."""
    if not (_rt_call(node, "sum") and len(node.args) == 3 and not node.keywords):
        return False
    axis, keepdims = node.args[1], node.args[2]
    if isinstance(axis, gast.UnaryOp) and isinstance(axis.op, gast.USub):
        axis = axis.operand
    return isinstance(axis, gast.Constant) and type(axis.value) is int and \
        isinstance(keepdims, gast.Constant) and type(keepdims.value) is bool and \
        (operation(node.args[0]) or isinstance(node.args[0], gast.Name))


def _leaf_names(node):
    """The names read as operands of the chain rooted at ``node``, in order."""
    if not operation(node):
        return [node.id] if isinstance(node, gast.Name) else []
    return [name for child in _operands(node) for name in _leaf_names(child)]


def _clear(statements, j, k, read):
    """Whether statements ``j+1 .. k-1`` leave ``read`` (names) as they are: every one
    a ``name = value`` of a name not in ``read`` (nothing written in place)."""
    for item in statements[j + 1:k]:
        for one in item if isinstance(item, list) else [item]:    # a witness: ``_joined``
            if one is None or isinstance(one, Comment):
                continue
            if not _simple(one) or one.targets[0].id in read:
                return False
    return True


def _replaced(node, name, value):
    """``node`` with the chain leaf ``name`` replaced by ``value``."""
    if isinstance(node, gast.Name) and node.id == name:
        return value
    if not operation(node):
        return node
    if isinstance(node, gast.BinOp):
        node.left = _replaced(node.left, name, value)
        if not isinstance(node.op, gast.Pow):
            node.right = _replaced(node.right, name, value)
    elif isinstance(node, gast.UnaryOp):
        node.operand = _replaced(node.operand, name, value)
    else:
        node.args = [_replaced(node.args[0], name, value)]
    return node


class _Writer(gast.NodeTransformer):
    """Writes each maximal chain of ``MIN_OPERATIONS`` or more as a kernel call."""

    def __init__(self, fresh, moved, numbers):
        self.fresh, self.moved, self.numbers = fresh, moved, numbers
        self.chains, self.where, self.target = [], None, "chain"
        self.statement = None

    def visit(self, node):
        if isinstance(node, gast.stmt):
            self.statement = node
        if _summed(node) and count(node.args[0], self.numbers) >= 1:
            return self._call(node.args[0], node)
        if count(node, self.numbers) < MIN_OPERATIONS:
            return super().visit(node)
        return self._call(node)

    def _call(self, node, summed=None):
        """The kernel call of the chain ``node`` (of the ``rt.sum`` ``summed`` of it)."""
        what = self.moved.get(id(self.statement)) or [to_source(self.statement)]
        leaves, params = {}, []
        expression = self._body(copy.deepcopy(node), leaves, params)
        target = "sum" if summed is not None and self.target == "chain" else self.target
        name = self.fresh(f"_{target}_fused")
        reduce = None if summed is None else tuple(to_source(a) for a in summed.args[1:])
        self.chains.append(Chain(name, [p for p, _ in params], expression, what,
                                 self.where, reduce))
        keywords = [] if summed is None else [
            gast.keyword("axis", summed.args[1]), gast.keyword("keepdims", summed.args[2])]
        return gast.Call(name_node(name), [self.visit(leaf) for _, leaf in params], keywords)

    def _body(self, node, leaves, params):
        """``node``'s chain over parameter names; ``params`` gets (name, leaf) pairs
        (a part of numbers only is one leaf: computed once, outside)."""
        if operation(node) and not self.numbers.number(node):
            if isinstance(node, gast.BinOp):
                node.left = self._body(node.left, leaves, params)
                if not isinstance(node.op, gast.Pow):
                    node.right = self._body(node.right, leaves, params)
            elif isinstance(node, gast.UnaryOp):
                node.operand = self._body(node.operand, leaves, params)
            else:
                node.args = [self._body(node.args[0], leaves, params)]
            return node
        if isinstance(node, gast.Constant) and type(node.value) in (int, float):
            return node
        text = to_source(node)
        if text not in leaves:
            taken = {p for p, _ in params}
            param = node.id if isinstance(node, gast.Name) else f"arg{len(params) + 1}"
            while param in taken:
                param += "_"
            leaves[text] = param
            params.append((param, node))
        return name_node(leaves[text])


def _without_empty_comments(items):
    """``items`` less the location comments no statement follows any more."""
    out = []
    for k, item in enumerate(items):
        after = next((one for one in items[k + 1:] if not (
            isinstance(one, Comment) and one.origin is None)), None)
        if isinstance(item, Comment) and item.origin is not None and (
                after is None or isinstance(after, Comment)):
            continue
        out.append(item)
    return out
