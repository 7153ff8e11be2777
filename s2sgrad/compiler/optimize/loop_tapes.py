"""A fused loop's kept values on a list tape as the one array they are the rows of.

``rows_on_tapes(forward, backward, passes)`` takes the two sweeps (statement lists,
changed in place) and the ``Pass``es of ``loops.fused_loops``, and gives where the adjoint
unpacks each block (``Unpacked``: ``loop_rows.py`` has adjoint loops read its rows).  Where a fused call binds a
``block`` whose rows two or more values are (``t43, t44, t45 = t45_rows``) and the loop's
``tape.append((x, t43, t44, t45))`` after it keeps those values, the tape keeps the block
instead, and the adjoint's pop unpacks it::

    tape.append((x, t45_rows))               [x, t45_rows] = tape.pop()
                                             t43, t44, t45 = t45_rows

One array on the tape instead of one per value (Numba keeps a list entry's arrays
alive one by one: the lstm eval taped 18 arrays per step).  The call's else (its
statements as numpy) stacks the rows it made (``rt.stacked_rows``), so both paths
bind the block.  Left as it is: a tape appended or popped more than once, a value bound
outside the call's ``if`` in the forward sweep or written in place there, an append
before the call.
"""
import copy

import gast

from .loop_space import nodes


class Unpacked:
    """Where the adjoint unpacks a popped block: ``block``, ``rows`` (name -> its row k),
    ``statements`` (the unpacking, after the pop) and ``where`` (their statement list)."""

    def __init__(self, block, rows, statements, where):
        self.block, self.rows, self.statements, self.where = block, rows, statements, where


def rows_on_tapes(forward, backward, passes):
    """Rewrite the tapes that keep a block's rows (module doc); gives the ``Unpacked``
    of each block the adjoint pops."""
    writers = {f.name: (f.params, set(f.written)) for f in passes}
    unpacked = []
    for fused in passes:
        if fused.block is None or fused.branch is None:
            continue        # (no block where the loop takes a least length: loops.py)
        found = _append_after(forward, fused.branch)
        if found is None:
            continue
        append, tape = found[:2]
        elts = append.value.args[0].elts
        kept = [e.id for e in elts if isinstance(e, gast.Name) and e.id in fused.rows]
        pop = _the_pop(backward, tape)
        if len(kept) < 2 or pop is None or not _bound_in(forward, fused, writers):
            continue
        if _counts(forward + backward, tape) != (1, 1):
            continue
        appended, into = found[2], found[3]     # new statements: the old ones are shared
        into[into.index(append)] = _with_elts(append, appended, kept, fused.block)
        statement, where = pop
        at = next(k for k, item in enumerate(where) if item is statement)
        unpacking = _unpacked(fused, kept)
        where[at:at + 1] = [_with_elts(statement, statement.targets[0], kept, fused.block),
                            *unpacking]
        unpacked.append(Unpacked(fused.block, {n: fused.rows.index(n) for n in kept},
                                 unpacking, where))
        rows = ", ".join(fused.rows) + ("," if len(fused.rows) == 1 else "")
        fused.numpy.append(
            gast.parse(f"{fused.block} = rt.stacked_rows(({rows}))").body[0])
    return unpacked


def _with_elts(statement, holder, kept, block):
    """A copy of ``statement`` whose tuple or list ``holder`` keeps ``block`` for the rows
    ``kept``."""
    copied = copy.deepcopy(statement)
    inner = copied.value.args[0] if isinstance(copied, gast.Expr) else copied.targets[0]
    inner.elts = _merged(holder.elts, kept, block)
    return copied


def _merged(elts, kept, block):
    """``elts`` with the first of ``kept`` made ``block`` and the others left out."""
    out = []
    for e in elts:
        if isinstance(e, gast.Name) and e.id in kept:
            if e.id == kept[0]:
                out.append(gast.Name(block, type(e.ctx)(), None, None))
            continue
        out.append(e)
    return out


def _unpacked(fused, kept):
    """``a, b, c = block`` where the tape kept every row, else ``a = block[k]`` each."""
    if len(kept) == len(fused.rows):
        return gast.parse(f"{', '.join(fused.rows)} = {fused.block}").body
    return gast.parse("\n".join(f"{name} = {fused.block}[{fused.rows.index(name)}]"
                                for name in kept)).body


def _lists(items):
    """Every statement list in ``items`` (loops and branches entered), ``items`` first."""
    yield items
    for item in items:
        for field in ("body", "orelse"):
            inner = getattr(item, field, None)
            if isinstance(inner, list) and isinstance(item, (gast.For, gast.While, gast.If)):
                yield from _lists(inner)


def _append_after(forward, branch):
    """(the ``tape.append((...))`` after ``branch`` in its statement list, the tape's
    name, its tuple, the list), or None."""
    for items in _lists(forward):
        if not any(item is branch for item in items):
            continue
        start = next(k for k, item in enumerate(items) if item is branch)
        for item in items[start + 1:]:
            if isinstance(item, gast.Expr) and isinstance(item.value, gast.Call) and \
                    isinstance(item.value.func, gast.Attribute) and \
                    item.value.func.attr == "append" and \
                    isinstance(item.value.func.value, gast.Name) and \
                    len(item.value.args) == 1 and isinstance(item.value.args[0], gast.Tuple):
                return item, item.value.func.value.id, item.value.args[0], items
        return None
    return None


def _the_pop(backward, tape):
    """(``[...] = tape.pop()``, its statement list), or None."""
    for items in _lists(backward):
        for item in items:
            if isinstance(item, gast.Assign) and len(item.targets) == 1 and \
                    isinstance(item.targets[0], (gast.List, gast.Tuple)) and \
                    all(isinstance(e, gast.Name) for e in item.targets[0].elts) and \
                    isinstance(item.value, gast.Call) and \
                    isinstance(item.value.func, gast.Attribute) and \
                    item.value.func.attr == "pop" and \
                    isinstance(item.value.func.value, gast.Name) and \
                    item.value.func.value.id == tape:
                return item, items
    return None


def _counts(statements, tape):
    """(appends, pops) of ``tape`` in ``statements``."""
    appends = pops = 0
    for node in nodes(statements):
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name) and \
                node.value.id == tape:
            appends += node.attr == "append"
            pops += node.attr == "pop"
    return appends, pops


def _bound_in(forward, fused, writers):
    """Whether the forward sweep binds the rows only in the call's ``if`` and never
    writes them in place (``a += ...``, ``a[k] = ...``, a call's argument)."""
    inside = {id(node) for node in nodes([fused.branch])}
    rows = set(fused.rows)
    for node in nodes(forward):
        if id(node) in inside:
            continue
        if isinstance(node, gast.Name) and node.id in rows and \
                not isinstance(node.ctx, gast.Load):
            return False
        if isinstance(node, gast.AugAssign) and _names(node.target) & rows:
            return False
        if isinstance(node, (gast.Assign, gast.AugAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            if any(isinstance(t, gast.Subscript) and _names(t.value) & rows for t in targets):
                return False
        if isinstance(node, gast.Call) and _names(_written_by(node, writers)) & rows:
            return False
    return True


def _written_by(node, writers):
    """The arguments a call writes: ``rt.add_into``'s first, ``out=``, the arrays a fused
    loop (``writers``: name -> its params written) writes in place."""
    func = node.func
    if isinstance(func, gast.Attribute) and "into" in func.attr:
        return gast.Tuple(node.args[:1], gast.Load())
    if isinstance(func, gast.Name) and func.id in writers:
        params = writers[func.id]
        return gast.Tuple([a for a, p in zip(node.args, params[0]) if p in params[1]],
                          gast.Load())
    return gast.Tuple([k.value for k in node.keywords if k.arg == "out"], gast.Load())


def _names(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
