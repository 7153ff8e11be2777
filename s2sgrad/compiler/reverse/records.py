"""A loop's list tapes merged into one tape of records: one list per loop for Numba.

``merged_tapes(sweeps, fresh)`` takes the two sweeps of a gradient (``Sweeps``, changed in
place) and the name allocator's ``fresh``.  Each loop of the forward sweep that pushes
several values on list tapes at its own level (not in a branch or a nested loop) pushes
them as one tuple instead, ``tape.append((c_1, h_1, t1))`` where the last of them was
pushed, and its reversed loop takes them back with one ``[c_1, h_1, t1] = tape.pop()``
where the first of them was popped.  Numba then types, lowers and optimises one list
and its methods per loop instead of one per value (issue 20: a 15-step LSTM kept 18
lists, and each costs compile time).

A value moves into the record only where that changes nothing: its tape is pushed once
and popped once in the whole function and read nowhere else, the statements between
its push and the record's do not bind its name again or leave the iteration (break,
continue, return), and the statements between the record's pop and its own neither read
nor bind it.  Arrays on typed tapes (scalars of known types) are not lists and stay
as they are.
"""
import gast

from .tape import Tape

_EXITS = (gast.Break, gast.Continue, gast.Return)


def merged_tapes(sweeps, fresh):
    """Merge, per loop, the list tapes its body pushes at its own level (module doc)."""
    lists = {t.name: t for t in sweeps.stacks if t.dtype is None}
    uses = {}
    for item in sweeps.forward + sweeps.backward:
        if isinstance(item, gast.AST):
            for n in gast.walk(item):
                if isinstance(n, gast.Name) and n.id in lists:
                    uses[n.id] = uses.get(n.id, 0) + 1
    single = {name for name in lists if uses.get(name) == 2}
    merged = []
    for body in list(_loop_bodies(sweeps.forward)):
        pops = {}
        for block in _blocks(sweeps.backward):
            for k, stmt in enumerate(block):
                popped = _pop(stmt)
                if popped is not None and popped[0] in single:
                    pops[popped[0]] = (block, k)
        record = _merge(body, set(pops), pops, fresh)
        if record is not None:
            merged.append(record)
    for tape, names in merged:
        first = sweeps.stacks.index(lists[names[0]])
        sweeps.stacks[first:first] = [Tape(tape, None, None, lists[names[0]].loop)]
        sweeps.stacks[:] = [t for t in sweeps.stacks if t.name not in names]


def _merge(body, candidates, pops, fresh):
    """Merge the candidate tapes ``body`` pushes at its own level into one record (both
    sweeps changed); gives (the record's tape name, the tapes merged) or None."""
    pushed = {}
    for k, stmt in enumerate(body):
        item = _push(stmt)
        if item is not None and item[0] in candidates:
            pushed[item[0]] = (k, item[1])
    while len(pushed) >= 2:
        last = max(k for k, _ in pushed.values())
        block = pops[next(iter(pushed))][0]
        if any(pops[t][0] is not block for t in pushed):
            return None
        first = min(pops[t][1] for t in pushed)
        moved = set(pushed)
        bad = {t for t, (k, v) in pushed.items()
               if _binds_or_exits(body[k + 1:last + 1], v, moved, _push)
               or _touches(block[first:pops[t][1]], _pop(block[pops[t][1]])[1], moved)}
        if not bad:
            break
        for t in bad:
            del pushed[t]
    if len(pushed) < 2:
        return None
    order = sorted(pushed, key=lambda t: pushed[t][0])
    values = [pushed[t][1] for t in order]
    targets = {t: _pop(block[pops[t][1]])[1] for t in order}
    if len(set(values)) != len(values) or len(set(targets.values())) != len(values):
        return None
    name = fresh("tape")
    record = gast.Tuple(elts=[gast.Name(id=v, ctx=gast.Load(), annotation=None,
                                        type_comment=None) for v in values], ctx=gast.Load())
    append = gast.Expr(value=gast.Call(func=gast.Attribute(
        value=_name(name), attr="append", ctx=gast.Load()), args=[record], keywords=[]))
    # a list target (``[c_1, h_1] = tape.pop()``: the same unpacking) wraps at its commas
    unpack = gast.Assign(targets=[gast.List(elts=[
        gast.Name(id=targets[t], ctx=gast.Store(), annotation=None, type_comment=None)
        for t in order], ctx=gast.Store())], value=gast.Call(func=gast.Attribute(
            value=_name(name), attr="pop", ctx=gast.Load()), args=[], keywords=[]),
        type_comment=None)
    at_push = max(k for k, _ in pushed.values())
    at_pop = min(pops[t][1] for t in order)
    _replace(body, {pushed[t][0] for t in order}, at_push, append)
    _replace(block, {pops[t][1] for t in order}, at_pop, unpack)
    return name, order


def _replace(block, drop, at, stmt):
    """``block`` with the statements at positions ``drop`` removed and ``stmt`` put where
    position ``at`` was."""
    block[:] = [stmt if k == at else s for k, s in enumerate(block)
                if k == at or k not in drop]


def _binds_or_exits(statements, name, moved, push):
    """True when ``statements`` (the moved pushes apart) bind ``name`` or leave the
    iteration."""
    for stmt in statements:
        item = push(stmt)
        if item is not None and item[0] in moved:
            continue
        for n in _walk(stmt):
            if isinstance(n, _EXITS) or (isinstance(n, gast.Name) and n.id == name and
                                         not isinstance(n.ctx, gast.Load)):
                return True
            if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name) \
                    and n.target.id == name:
                return True
    return False


def _touches(statements, name, moved):
    """True when ``statements`` (the moved pops apart) read or bind ``name`` or leave."""
    for stmt in statements:
        item = _pop(stmt)
        if item is not None and item[0] in moved:
            continue
        if any(isinstance(n, _EXITS) or (isinstance(n, gast.Name) and n.id == name)
               for n in _walk(stmt)):
            return True
    return False


def _push(stmt):
    """(tape, value name) of ``tape.append(name)``, else None."""
    if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
        call = stmt.value
        if isinstance(call.func, gast.Attribute) and call.func.attr == "append" and \
                isinstance(call.func.value, gast.Name) and len(call.args) == 1 and \
                isinstance(call.args[0], gast.Name) and not call.keywords:
            return call.func.value.id, call.args[0].id
    return None


def _pop(stmt):
    """(tape, target name) of ``name = tape.pop()``, else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Call):
        call = stmt.value
        if isinstance(call.func, gast.Attribute) and call.func.attr == "pop" and \
                isinstance(call.func.value, gast.Name) and not call.args and not call.keywords:
            return call.func.value.id, stmt.targets[0].id
    return None


def _blocks(items):
    """Every statement list in ``items`` (itself, branches' and loops' bodies)."""
    yield items
    for item in items:
        if isinstance(item, (gast.For, gast.While, gast.If)):
            yield from _blocks(item.body)
            yield from _blocks(item.orelse)


def _loop_bodies(items):
    """The bodies of the loops in ``items``, at any depth."""
    for item in items:
        if isinstance(item, (gast.For, gast.While, gast.If)):
            if not isinstance(item, gast.If):
                yield item.body
            yield from _loop_bodies(item.body)
            yield from _loop_bodies(item.orelse)


def _walk(item):
    """The gast nodes of a generated statement (none for a Comment)."""
    return gast.walk(item) if isinstance(item, gast.AST) else ()


def _name(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)
