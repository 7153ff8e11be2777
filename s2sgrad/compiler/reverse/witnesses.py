"""Shape-only reads in a reversed loop body switched to a value the body has anyway.

``rt.unreduce(g, x, ...)``, ``rt.unbroadcast(g, x)``, ``np.zeros_like(x)`` and
``rt.split_like(g, (a, x), 0)`` read only ``x``'s shape and dtype (``tape.shape_only_names``;
the last part of ``split_like`` not even that).  When ``x`` is an array the loop makes (``d * d`` in
``np.sum(d * d)``), the forward sweep would keep it on a tape for each iteration for that
alone.  ``shape_witnesses`` rewrites such a read to another name of the same symbolic
shape (``compiler/analysis/shapes.py``) and dtype whose value the reversed body reads anyway
(``d``), so ``x`` is no longer needed: a pairwise loop over rows then keeps one array a
pair instead of two.
"""
import gast

from .tape import shape_only_names, value_reads


def shape_witnesses(body, made, shapes, dtypes):
    """Rewrite, in the reversed loop ``body`` (gast statements and comments, changed in
    place), each shape-only read of an array in ``made`` (the names the loop assigns)
    that nothing reads by value to a name the body does read by value with the same
    known shape and dtype (for the last part of ``rt.split_like``, whose size is never
    read, of the same rank)."""
    if shapes is None:
        return
    read = set()
    for item in body:
        if isinstance(item, gast.AST):
            read |= value_reads(item)
    read -= _bound_in_blocks_only(body)
    for item in body:
        if not isinstance(item, gast.AST):
            continue
        for node in gast.walk(item):
            names = shape_only_names(node)
            for k, arg in enumerate(names):
                if arg.id not in made or arg.id in read:
                    continue
                rest = node.func.attr == "split_like" and k == len(names) - 1
                witness = _same_shape(arg.id, sorted(read), shapes, dtypes, rest)
                if witness is not None:
                    arg.id = witness


def _bound_in_blocks_only(body):
    """Names ``body`` assigns only inside its branches and nested loops: not witnesses,
    since a nested loop that runs no iteration, or a branch not taken, leaves them unbound
    (or holding another iteration's value) where the witness is read."""
    top, inner = set(), set()
    for item in body:
        if not isinstance(item, gast.AST):
            continue
        stored = {n.id for n in gast.walk(item)
                  if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        if isinstance(item, (gast.If, gast.For, gast.While)):
            inner |= stored
        else:
            top |= stored
    return inner - top


def _same_shape(name, candidates, shapes, dtypes, rank_only=False):
    shape, dtype = shapes.of.get(name), dtypes.get(name)
    if not shape or dtype is None:
        return None
    for other in candidates:
        known = shapes.of.get(other)
        if other != name and dtypes.get(other) == dtype and known is not None and (
                len(known) == len(shape) if rank_only else shapes.same(known, shape)):
            return other
    return None
