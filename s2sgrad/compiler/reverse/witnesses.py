"""Shape-only reads in a reversed loop body switched to a value the body has anyway.

``rt.unreduce(g, x, ...)``, ``rt.unbroadcast(g, x)`` and ``rt.zeros_like(x)`` read only
``x``'s shape and dtype.  When ``x`` is an array the loop makes (``d * d`` in
``np.sum(d * d)``), the forward sweep would keep it on a tape for each iteration for that
alone.  ``shape_witnesses`` rewrites such a read to another name of the same symbolic
shape (``compiler/analysis/shapes.py``) and dtype whose value the reversed body reads anyway
(``d``), so ``x`` is no longer needed: a pairwise loop over rows then keeps one array a
pair instead of two.
"""
import gast

from .tape import SHAPE_ONLY, value_reads


def shape_witnesses(body, made, shapes, dtypes):
    """Rewrite, in the reversed loop ``body`` (gast statements and comments, changed in
    place), each shape-only read of an array in ``made`` (the names the loop assigns)
    that nothing reads by value to a name the body does read by value with the same
    known shape and dtype."""
    if shapes is None:
        return
    read = set()
    for item in body:
        if isinstance(item, gast.AST):
            read |= value_reads(item)
    for item in body:
        if not isinstance(item, gast.AST):
            continue
        for node in gast.walk(item):
            arg = _shape_only_argument(node)
            if arg is None or arg.id not in made or arg.id in read:
                continue
            witness = _same_shape(arg.id, sorted(read), shapes, dtypes)
            if witness is not None:
                arg.id = witness


def _shape_only_argument(node):
    """The Name argument of ``rt.<helper>(...)`` that the helper reads for its shape only."""
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == "rt"
            and node.func.attr in SHAPE_ONLY and len(node.args) > SHAPE_ONLY[node.func.attr]):
        return None
    arg = node.args[SHAPE_ONLY[node.func.attr]]
    return arg if isinstance(arg, gast.Name) else None


def _same_shape(name, candidates, shapes, dtypes):
    shape, dtype = shapes.of.get(name), dtypes.get(name)
    if not shape or dtype is None:
        return None
    for other in candidates:
        if other != name and dtypes.get(other) == dtype and \
                shapes.same(shapes.of.get(other), shape):
            return other
    return None
