"""Which arrays of a generated function share one 1-D index space (for ``loops.py``).

``index_spaces(statements, known, same)`` takes every statement of the function (gast,
loops entered), ``known`` (name -> the symbolic shape ``analysis/shapes.py`` gives the
lowered function's arrays, or None) and ``same`` (whether two such shapes are equal);
it gives name -> the shape of each 1-D array whose every ``name = value`` gives it that
shape: ``a = b``, ``np.zeros_like(b)``/``rt.zeros_like(b)``/``np.empty_like``/
``np.ones_like``/``np.copy``, ``np.zeros(m)``/``np.empty``/``np.ones`` of ``m`` a 1-D
``b``'s ``b.shape[0]`` or ``len(b)`` (or a name bound only to one), an elementwise tree
(``kernels.operation``) of arrays of one shape and numbers,
``np.concatenate((p, a[:-k]))`` of ``a``'s shape, a view
``base[...]`` the shape ``views(name)`` gives it (the lowering's shape of a 1-D slice or
row).  Adjoints and the primal values the reverse sweep restores get their primal's shape
this way.  ``exclusive(statements)`` gives the names whose array no other name holds
(an accumulator written in place while the loop reads other arrays shifted).
"""
import gast

from .kernels import operation, operands

#: ``np.<name>(x)`` of one array: an array of its shape (``loops.FUNCTIONS`` and
#: ``kernels.FUNCTIONS``)
FUNCTIONS = frozenset({"sqrt", "abs", "absolute", "square", "exp", "log", "tanh", "sin",
                       "cos"})

#: ``special.<name>(x)`` likewise (Numba's versions: ``backend/numba_special.py``)
SPECIAL_FUNCTIONS = frozenset({"expit", "log_expit"})

LIKE = frozenset({"zeros_like", "empty_like", "ones_like", "copy"})
#: ``np.<name>(m)`` of ``m`` an array's length (``a.shape[0]``, ``len(a)``, or a name bound
#: to one): an array of its shape
SIZED = frozenset({"zeros", "empty", "ones"})
TOP = object()      # not known yet: every definition seen so far agrees with anything
BOTTOM = object()   # not one 1-D shape


def index_spaces(statements, known, same, number, small, views=None):
    """name -> shape (module doc); ``number(node)``: whether a node is a number,
    ``small``: name -> k of the ``np.ones(k)``/``np.zeros(k)`` arrays, ``views``: name ->
    the shape of the view a name is bound to (or None)."""
    defs = {}
    for node in nodes(statements):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name):
            defs.setdefault(node.targets[0].id, []).append(node.value)
    shapes = {name: TOP for name in defs}
    facts = _Facts(known, same, number, small)
    facts.defs = defs
    for _ in range(20):
        changed = False
        for name, values in defs.items():
            shape = TOP
            for value in values:
                part = _of_view(name, views) if isinstance(value, gast.Subscript) else \
                    _shape(value, shapes, facts)
                shape = _meet(shape, part, same)
            old = shapes[name]
            if not (shape is old or shape not in (TOP, BOTTOM) and
                    old not in (TOP, BOTTOM) and same(shape, old)):
                shapes[name], changed = shape, True
        if not changed:
            break
    return {name: shape for name, shape in shapes.items()
            if shape not in (TOP, BOTTOM, None)}


def slice_cuts(statements, space):
    """name -> c of each name every assignment of which is a view ``base[c:]`` or
    ``base[:-c]`` (an int literal) of an array ``space`` knows: it has ``n - c``
    elements (``split_like``'s witnesses of a concatenate's adjoint)."""
    cuts = {}
    for node in nodes(statements):
        if not (isinstance(node, gast.Assign) and len(node.targets) == 1 and
                isinstance(node.targets[0], gast.Name)):
            continue
        value, cut = node.value, None
        if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and \
                isinstance(value.slice, gast.Slice) and value.slice.step is None and \
                space(value.value.id) is not None:
            low = 0 if value.slice.lower is None else _int(value.slice.lower)
            upper = 0 if value.slice.upper is None else _int(value.slice.upper)
            if low is not None and upper is not None and low >= 0 and upper <= 0 and \
                    not (low and upper):
                cut = low - upper
        cuts.setdefault(node.targets[0].id, set()).add(cut)
    return {name: c.pop() for name, c in cuts.items() if len(c) == 1 and None not in c}


def pieced(statements, small):
    """The names whose length may not be the one their shape says: bound by a concatenate
    with a constant piece (``np.concatenate((p, a[:-k]))`` has ``a``'s length only where
    ``a`` has ``k`` elements or more), or by a value that reads such a name (a loop's
    values of them can differ in length where its guard fails: no block of rows)."""
    defs = [(node.targets[0].id, node.value) for node in nodes(statements)
            if isinstance(node, gast.Assign) and len(node.targets) == 1 and
            isinstance(node.targets[0], gast.Name)]
    found = {name for name, value in defs if module_call(value, "np", ("concatenate",))
             and any(isinstance(n, gast.Name) and n.id in small for n in gast.walk(value))}
    while True:
        more = {name for name, value in defs if name not in found and any(
            isinstance(n, gast.Name) and n.id in found for n in gast.walk(value))}
        if not more:
            return found
        found |= more


#: calls that give a new array (``exclusive``: not one an argument holds)
ALLOCATE = frozenset({"zeros_like", "empty_like", "ones_like", "copy", "zeros", "empty",
                      "ones"})
#: calls whose result never holds an argument's array
CONSUME = ALLOCATE | FUNCTIONS | {"sum", "copy_value", "add_into"}


def exclusive(statements):
    """The names whose array no other name holds: every binding allocates one (a
    ``zeros_like``... call, arithmetic) and every read is of its elements, arithmetic, a
    consuming call's argument, ``rt.add_into``'s target or the return (never bound to
    another name, a view, a tape, another function): an in-place write to one is seen
    through no other name (``loops.py`` writes it while reading others shifted)."""
    parents, fresh, shared = {}, set(), set()
    for node in nodes(statements):
        for child in gast.iter_child_nodes(node):
            parents[child] = node
    for node in nodes(statements):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            parent = parents.get(node)
            (fresh if isinstance(parent, gast.Assign) and parent.targets == [node] and
             _allocates(parent.value) else shared).add(node.id)
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and \
                not _consumed(node, parents):
            shared.add(node.id)
    return fresh - shared


def _allocates(value):
    if isinstance(value, (gast.BinOp, gast.UnaryOp)):
        return True
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and \
        isinstance(value.func.value, gast.Name) and value.func.value.id in ("np", "rt") \
        and value.func.attr in ALLOCATE


def _consumed(node, parents):
    """Whether a read of an array's name lets no other name hold the array."""
    parent = parents.get(node)
    if isinstance(parent, (gast.BinOp, gast.UnaryOp, gast.Compare)):
        return True
    if isinstance(parent, gast.Attribute):
        return parent.attr in ("shape", "size", "ndim", "dtype")     # not ``.T``: a view
    if isinstance(parent, gast.Call) and node in parent.args:
        return module_call(parent, "np", CONSUME) or module_call(parent, "rt", CONSUME) or \
            module_call(parent, "special", SPECIAL_FUNCTIONS)
    if isinstance(parent, gast.Subscript) and parent.value is node:
        holder = parents.get(parent)
        if isinstance(parent.ctx, gast.Store) or isinstance(holder, gast.AugAssign):
            return True
        if isinstance(parent.slice, gast.Slice) or isinstance(parent.slice, gast.Tuple):
            return module_call(holder, "rt", ("add_into",)) and holder.args[:1] == [parent]
        return True             # an element of a 1-D array: a number (the only arrays
        #                         ``loops.py`` asks about)
    if isinstance(parent, gast.Tuple) and isinstance(parents.get(parent), gast.Return):
        return True
    return isinstance(parent, gast.Return)


def array_ranks(statements, ndims):
    """name -> rank lookup: the lowering's ``ndims``, and for a name every assignment of
    which is ``zeros_like(x)`` (an adjoint's accumulator), ``x``'s rank."""
    like = {}
    for node in nodes(statements):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], gast.Name):
            value, name = node.value, node.targets[0].id
            source = value.args[0].id if (module_call(value, "np", ("zeros_like",)) or
                                          module_call(value, "rt", ("zeros_like",))) and \
                len(value.args) == 1 and isinstance(value.args[0], gast.Name) else None
            like.setdefault(name, set()).add(source)

    def rank(name):
        if name in ndims:
            return ndims[name]
        sources = like.get(name, {None})
        return ndims.get(next(iter(sources))) if len(sources) == 1 and \
            None not in sources else None
    return rank


def nodes(items):
    """Every gast node of the statement list ``items`` (loops and branches entered,
    ``Comment``s skipped)."""
    for item in items:
        if not isinstance(item, gast.AST):
            continue
        if isinstance(item, (gast.For, gast.While, gast.If)):
            yield item
            for field in ("target", "iter", "test"):
                if getattr(item, field, None) is not None:
                    yield from gast.walk(getattr(item, field))
            yield from nodes(item.body)
            yield from nodes(item.orelse)
        else:
            yield from gast.walk(item)


def _of_view(name, views):
    shape = views(name) if views is not None else None
    return shape if isinstance(shape, tuple) and len(shape) == 1 else BOTTOM


def _meet(a, b, same):
    if a is TOP:
        return b
    if b is TOP:
        return a
    if a is BOTTOM or b is BOTTOM:
        return BOTTOM
    return a if same(a, b) else BOTTOM


class _Facts:
    def __init__(self, known, same, number, small):
        self.known, self.same, self.number, self.small = known, same, number, small


def _of(name, shapes, known):
    if name in shapes:
        return shapes[name]
    shape = known(name)
    return shape if isinstance(shape, tuple) and len(shape) == 1 else BOTTOM


def _shape(value, shapes, facts):
    """The shape ``value`` gives, TOP or BOTTOM (numbers: None)."""
    known, same = facts.known, facts.same
    if facts.number(value):
        return None
    if isinstance(value, gast.Name):
        return _of(value.id, shapes, known)
    if module_call(value, "rt", ("unreduce", "unbroadcast")) and len(value.args) >= 2 and \
            isinstance(value.args[1], gast.Name):
        return _of(value.args[1].id, shapes, known)      # an adjoint of its primal's shape
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and \
            isinstance(value.func.value, gast.Name) and len(value.args) == 1 and \
            not value.keywords:
        module, attr = value.func.value.id, value.func.attr
        arg = value.args[0]
        if module in ("np", "rt") and attr in LIKE and isinstance(arg, gast.Name):
            return _of(arg.id, shapes, known)
        if module == "np" and attr in SIZED:
            counted = _length_of(arg, facts)
            return BOTTOM if counted is None else _of(counted, shapes, known)
        if module == "np" and attr == "concatenate" and isinstance(arg, gast.Tuple) and \
                len(arg.elts) == 2:
            return _concatenated(arg.elts, shapes, facts)
    if isinstance(value, gast.Constant):
        return None
    if not operation(value) and not elementwise_call(value):
        return BOTTOM
    shape = None
    for child in operands(value):
        part = _shape(child, shapes, facts)
        if part is None:
            continue
        shape = part if shape is None else _meet(shape, part, same)
    return shape


def elementwise_call(node):
    """Whether ``node`` is a call of one array that a loop computes per element:
    ``np.<FUNCTIONS>(x)`` or ``special.<SPECIAL_FUNCTIONS>(x)``."""
    return (module_call(node, "np", FUNCTIONS) or
            module_call(node, "special", SPECIAL_FUNCTIONS)) and len(node.args) == 1


def module_call(node, module, names):
    """Whether ``node`` is ``module.name(...)`` without keywords, ``name`` in ``names``."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
        isinstance(node.func.value, gast.Name) and node.func.value.id == module and \
        node.func.attr in names and not node.keywords


def _concatenated(parts, shapes, facts):
    """``(p, a[:-k])`` or ``(a[k:], p)`` with ``p`` of ``k`` elements: ``a``'s shape."""
    parts = [_view_of(p, facts) for p in parts]
    for piece, cut in ((parts[0], parts[1]), (parts[1], parts[0])):
        if not (isinstance(piece, gast.Name) and piece.id in facts.small and
                isinstance(cut, gast.Subscript) and isinstance(cut.value, gast.Name) and
                isinstance(cut.slice, gast.Slice) and cut.slice.step is None):
            continue
        bound = cut.slice.upper if piece is parts[0] else cut.slice.lower
        other = cut.slice.lower if piece is parts[0] else cut.slice.upper
        k = facts.small[piece.id]
        if other is None and bound is not None and _int(bound) == (-k if piece is parts[0]
                                                                    else k):
            return _of(cut.value.id, shapes, facts.known)
    return BOTTOM


def _length_of(node, facts):
    """``a`` of ``a.shape[0]``/``len(a)`` (or of a name bound to one only), else None."""
    if isinstance(node, gast.Name):
        values = facts.defs.get(node.id, [])
        return _length_of(values[0], facts) if len(values) == 1 and \
            not isinstance(values[0], gast.Name) else None
    if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Attribute) and \
            node.value.attr == "shape" and isinstance(node.value.value, gast.Name) and \
            _int(node.slice) == 0:
        return node.value.value.id
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
            node.func.id == "len" and len(node.args) == 1 and \
            isinstance(node.args[0], gast.Name) and not node.keywords:
        return node.args[0].id
    return None


def _view_of(node, facts):
    """The slice a name is bound to (its one definition), else ``node``."""
    if isinstance(node, gast.Name) and node.id not in facts.small:
        values = facts.defs.get(node.id, [])
        if len(values) >= 1 and all(isinstance(v, gast.Subscript) for v in values) and \
                len({gast.dump(v) for v in values}) == 1:
            return values[0]
    return node


def _int(node):
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    return None
