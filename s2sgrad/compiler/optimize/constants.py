"""Values that depend only on sizes and plain numbers, computed once per their values.

``hoisted_constants(forward, backward, roots, keep)`` takes the two sweeps of a loop-free
gradient (gast statements and comments), ``roots`` (the parameters that may be plain
numbers: not differentiated, rank 0, not changed in place) and ``keep`` (names read
after the sweeps: the output, the gradients); it gives ``Hoisted`` (or None when there
is no array worth it): the statements of the forward sweep that compute an array from
only literals, those numbers and the shapes of the parameters, with pure numpy (or
``math``) calls, moved into a function of those inputs (``llsq``'s powers of ``t``:
``t[:, None] ** np.arange(x.shape[0])``), and the forward sweep left reading them from
``rt.Constants`` (``runtime/constants.py``), which computes them once per value of the
inputs and hands out read-only arrays.

``arrays`` (array parameters and values read from outside, not differentiated nor
changed in place: data, a ``self.t`` read at each call) are inputs too, but only of a
value computed through one with more dimensions than every such array it reads (an
outer product: the powers of a held ``t``, ``self.t[:, None] ** np.arange(x.size)``,
GradBench llsq's held-out class spelling, 200x the eval's).  Their contents could change
between calls, so the table compares them by their bytes: a pass over the inputs
instead of the work over the new axis.  A value of no more dimensions than its arrays
(``np.sign(s)``, a row sum of data) stays in the gradient: checking it would cost what
computing it does (and ``rt.Constants`` measures that, and stops looking up where the
work is not worth the key).

It is sound because what the values depend on is checked at every call, exactly: a
number's type and bits, a shape's sizes, an array's dtype, shape and bytes (an input that
is not an immutable number or an ndarray, a 0-d array, makes the call compute them
afresh).  What the pass leaves alone: a value anything writes in place (``Ls[:, rows,
cols] = l``), or is returned, and everything it is computed from (a view would share it).
"""
import copy

import gast

from ..syntax.nodes import Comment, name_node

#: numpy's functions that give the same result for the same arguments and touch nothing else
PURE_NUMPY = frozenset("""
    abs absolute add arange arccos arcsin arctan arctan2 array asarray ceil clip concatenate
    cos cosh cumprod cumsum diag divide dot exp exp2 expm1 eye float64 floor full
    full_like hstack identity int64 linspace log log10 log1p log2 logspace matmul maximum
    meshgrid minimum mod multiply negative ones ones_like outer power prod repeat reshape
    sign sin sinh sqrt square stack subtract sum tan tanh tile transpose tri tril
    tril_indices triu triu_indices true_divide vstack where zeros zeros_like
""".split())
#: Python's functions of that kind a generated line may call
PURE_BUILTINS = frozenset({"len", "int", "float", "abs", "min", "max", "round"})
#: attributes of a parameter that are sizes (immutable: read afresh at each call)
SIZE_ATTRIBUTES = frozenset({"shape", "ndim", "size"})
#: calls that write into their first argument
WRITES_FIRST = frozenset({"add_into", "add_matmul_left", "add_matmul_right", "add_dot_left",
                          "add_dot_right", "copyto", "put", "place", "fill_diagonal"})


class Hoisted:
    """``function``: the statements and comments of the constants' function; ``inputs``:
    its parameters as (name, expression in the gradient's parameters: ``n``, ``x.shape``);
    ``outputs``: the names it returns; ``forward``: the forward sweep that reads them;
    ``arrays``: the inputs that are arrays (looked up by their contents)."""

    def __init__(self, function, inputs, outputs, forward, arrays=()):
        self.function, self.inputs = function, inputs
        self.outputs, self.forward, self.arrays = outputs, forward, list(arrays)


def hoisted_constants(forward, backward, roots, params, keep, is_array, fresh,
                      arrays=(), rank=lambda name: None):
    """``Hoisted`` for the forward sweep ``forward`` (see the module doc), or None.
    ``params``: every parameter (whose sizes are inputs); ``is_array(name)``: whether
    ``name`` has rank >= 1 (None: not known); ``arrays``: the array parameters that may
    be inputs, of values computed through one whose ``rank(name)`` is above theirs.  Worth moving:
    what may be an array and calls numpy, with what it is computed from.
    ``fresh(base)``: a new variable name."""
    if any(isinstance(item, (gast.For, gast.While, gast.If)) for item in forward + backward):
        return None
    static, defined = set(), {}                 # names computed from inputs only
    for item in forward:
        names = _assigned(item)
        if names and _static(item.value, static, set(roots) | set(arrays), params):
            static.update(names)
            for name in names:
                defined[name] = item
    barred = written_in_place(forward + backward) | set(keep)
    # what a written or kept array is computed from may be a view of it: barred too, but
    # not a number (a size: ``d`` of ``np.zeros((k, d, d))``), which shares no memory
    barred = _sources(barred, defined, lambda n: is_array(n) is not False)
    chosen = {n for n in static if n not in barred}
    wanted = {n for n in chosen if is_array(n) is not False and _calls_numpy(defined[n])
              and _sources({n}, defined) & static <= chosen
              and _wider_than_its_arrays(_sources({n}, defined), defined, set(arrays), rank)}
    wanted = _sources(wanted, defined) & chosen
    if not wanted:
        return None
    moved = [item for item in forward if _assigned(item) and set(_assigned(item)) <= wanted]
    function, kept = _split(forward, moved)
    sizes = {}                                  # parameter -> the input name of its shape
    function = [_read_sizes(copy.deepcopy(item), params, sizes, fresh)
                if not isinstance(item, Comment) else item for item in function]
    read_after = _reads(kept + backward) | set(keep)
    outputs = [n for item in moved for n in _assigned(item) if n in read_after]
    used = _reads(function)
    inputs = [(name, name_node(name)) for name in sorted(set(roots) | set(arrays))
              if name in used]
    compared = [name for name, _ in inputs if name in arrays]
    inputs += [(shape, _shape_of(param)) for param, shape in sorted(sizes.items())
               if shape in used]
    return Hoisted(function, inputs, outputs, kept, compared)


def _wider_than_its_arrays(sources, defined, arrays, rank):
    """True when the value computed from ``sources`` (their statements in ``defined``)
    reads the values of none of ``arrays`` (their sizes are numbers), or when one of its
    sources (itself too) has more dimensions than each array it reads: work over a new
    axis (``t[:, None]``), more than a pass over the arrays."""
    read = {sub.id for name in sources if name in defined
            for sub, parent in _names_with_parents(defined[name].value)
            if sub.id in arrays and not _size_read(parent)}
    if not read:
        return True
    ranks = [rank(a) for a in read]
    return None not in ranks and any(
        (rank(m) or 0) > max(ranks) for m in sources - arrays)


def _calls_numpy(item):
    return any(isinstance(sub, gast.Call) and isinstance(sub.func, gast.Attribute)
               and isinstance(sub.func.value, gast.Name) and sub.func.value.id == "np"
               for sub in gast.walk(item.value))


def _assigned(item):
    """The names a top-level ``name = ...`` / ``a, b = ...`` defines, or ()."""
    if not isinstance(item, gast.Assign) or len(item.targets) != 1:
        return ()
    target = item.targets[0]
    if isinstance(target, gast.Name):
        return (target.id,)
    if isinstance(target, gast.Tuple) and all(isinstance(e, gast.Name) for e in target.elts):
        return tuple(e.id for e in target.elts)
    return ()


def _static(node, static, roots, params):
    """True when expression ``node`` reads only literals, ``roots``, names in ``static``
    and parameters' sizes, through pure calls."""
    for sub in gast.walk(node):
        if isinstance(sub, gast.Call):
            func = sub.func
            pure = (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                    and ((func.value.id == "np" and func.attr in PURE_NUMPY)
                         or func.value.id == "math")) or \
                (isinstance(func, gast.Name) and func.id in PURE_BUILTINS)
            if not pure or any(k.arg == "out" for k in sub.keywords):
                return False
        elif isinstance(sub, (gast.Lambda, gast.NamedExpr, gast.Await, gast.Yield,
                              gast.ListComp, gast.GeneratorExp, gast.DictComp, gast.SetComp)):
            return False
    for sub, parent in _names_with_parents(node):
        if (sub.id in ("np", "math") and isinstance(parent, gast.Attribute)) or \
                (sub.id in PURE_BUILTINS and isinstance(parent, gast.Call)):
            continue
        if sub.id in static or sub.id in roots:
            continue
        if sub.id in params and _size_read(parent):
            continue
        return False
    return True


def _size_read(parent):
    """True when a name whose parent node is ``parent`` is read for a size only."""
    return isinstance(parent, gast.Attribute) and parent.attr in SIZE_ATTRIBUTES or \
        _is_len(parent)


def _is_len(node):
    """True for ``len(name)``: the first size of ``name``'s shape."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
        node.func.id == "len" and len(node.args) == 1 and not node.keywords and \
        isinstance(node.args[0], gast.Name)


def _names_with_parents(node, parent=None):
    if isinstance(node, gast.Name):
        yield node, parent
    for child in gast.iter_child_nodes(node):
        yield from _names_with_parents(child, node)


def _read_sizes(node, params, sizes, fresh):
    """``node`` with ``p.shape`` (``.ndim``, ``.size``, ``len(p)``: from the shape)
    rewritten in place to read the input ``p_shape``, noted in ``sizes``."""
    def shape_of(param):
        if param not in sizes:
            sizes[param] = fresh(f"{param}_shape")
        return sizes[param]

    def rewritten(child):
        if isinstance(child, gast.Attribute) and isinstance(child.value, gast.Name) \
                and child.value.id in params and child.attr in SIZE_ATTRIBUTES:
            return _from_shape(child.attr, shape_of(child.value.id))
        if _is_len(child) and child.args[0].id in params:
            return gast.Subscript(value=name_node(shape_of(child.args[0].id)),
                                  slice=gast.Constant(value=0, kind=None), ctx=gast.Load())
        return child

    for sub in list(gast.walk(node)):
        for field, child in gast.iter_fields(sub):
            if isinstance(child, list):
                setattr(sub, field, [rewritten(c) for c in child])
            else:
                setattr(sub, field, rewritten(child))
    return node


def _from_shape(attr, shape):
    if attr == "shape":
        return name_node(shape)
    if attr == "ndim":
        return gast.Call(func=name_node("len"), args=[name_node(shape)], keywords=[])
    return gast.parse(f"math.prod({shape})").body[0].value


def _shape_of(param):
    return gast.Attribute(value=name_node(param), attr="shape", ctx=gast.Load())


def written_in_place(items):
    """The names some statement writes into in place (``a[i] = v``, ``a += v``,
    ``rt.add_into(a, ...)``, ``out=a``) or hands to a call that may."""
    written = set()
    for item in items:
        if isinstance(item, Comment):
            continue
        for sub in gast.walk(item):
            if isinstance(sub, gast.AugAssign):
                written |= _base_names(sub.target)
            elif isinstance(sub, (gast.Assign, gast.AnnAssign)):
                for target in getattr(sub, "targets", [getattr(sub, "target", None)]):
                    if not isinstance(target, gast.Name):
                        written |= _base_names(target)
            elif isinstance(sub, gast.Call):
                func = sub.func
                if isinstance(func, gast.Attribute) and func.attr in WRITES_FIRST and sub.args:
                    written |= _base_names(sub.args[0])
                for keyword in sub.keywords:
                    if keyword.arg == "out":
                        written |= _base_names(keyword.value)
    return written


def _base_names(node):
    """The variables a write into ``node`` changes: the array an item, slice or attribute
    is of (``Ls`` of ``Ls[:, rows, cols]``: the index arrays are read, not written), every
    name for any other expression."""
    if node is None:
        return set()
    if isinstance(node, (gast.Subscript, gast.Attribute, gast.Starred)):
        return _base_names(node.value)
    if isinstance(node, (gast.Tuple, gast.List)):
        return set().union(*(_base_names(e) for e in node.elts))
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _sources(names, defined, through=lambda name: True):
    """``names`` and every name their definitions in ``defined`` read, transitively;
    ``through(name)``: whether a name read is followed (and given)."""
    out, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        if name in defined:
            todo.extend(r for r in _reads([defined[name]]) - out if through(r))
    return out


def _reads(items):
    return {n.id for item in items if not isinstance(item, Comment)
            for n in gast.walk(item) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)}


def _split(forward, moved):
    """(the constants' function body, the rest): each statement with the location comment
    before it, a comment kept in the rest only where a statement there follows it."""
    moved_ids = {id(item) for item in moved}
    function, kept, comment, pending = [], [], None, None
    for item in forward:
        if isinstance(item, Comment):
            comment, pending = item, item
            continue
        if id(item) in moved_ids:
            if comment is not None and (not function or function[-1] is not comment) and \
                    comment not in function:
                function.append(comment)
            function.append(item)
            continue
        if pending is not None:
            kept.append(pending)
            pending = None
        kept.append(item)
    if pending is not None and not any(c is pending for c in function):
        kept.append(pending)
    return function, kept
