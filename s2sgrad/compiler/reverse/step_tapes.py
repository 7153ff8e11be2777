"""The one-step tapes of a checkpointed loop's step functions (generated code, gast).

``single_values`` turns each tape holding one value a step into a plain variable (its
pushes in the taped step and its pops in the adjoint step rewritten), so that no array or
list is made in every step; ``one_step_declaration`` creates the others at the top of the
taped step.
"""
import gast

from ..syntax.nodes import assign, call, name_node


def one_step_declaration(tape, loop, single, assigned):
    """A one-step tape's creation: a typed zero for a tape of one value (``single``) set on
    some paths only, an empty list or array for the others (a nested loop reserves room
    in its own)."""
    if tape.name in single:
        if tape.dtype is None or tape.name in assigned:
            return []
        dtype = gast.parse(tape.dtype).body[0].value
        return [assign(tape.name, gast.Call(func=dtype, args=[gast.Constant(value=0, kind=None)],
                                            keywords=[]))]
    if tape.dtype is None:
        return [assign(tape.name, gast.List(elts=[], ctx=gast.Load()))]
    size = 1 if tape.loop is loop else 0
    dtype = gast.parse(tape.dtype).body[0].value
    return [assign(tape.name, call("np", "empty", [gast.Constant(value=size, kind=None),
                                                   dtype])),
            assign(tape.top, gast.Constant(value=0, kind=None))]


def single_values(taped, adjoint, tapes, loop):  # noqa: C901 - three small rewrites
    """Make the tapes that hold one value a step plain variables (no array or list made in
    every step): a typed tape of the loop's own level, and a list pushed once at the top
    of its body.  Rewrites the pushes in ``taped`` and the pops in ``adjoint`` in place;
    gives the names of the tapes rewritten."""
    single = set()
    for tape in tapes:
        if tape.loop is not loop:
            continue
        if tape.dtype is None and sum(_is_append(s, tape.name) for s in taped) != 1:
            continue
        single.add(tape.name)
    for items in _blocks(taped):
        for k, stmt in enumerate(items):
            for tape in tapes:
                if tape.name in single and _is_push(stmt, tape):
                    items[k] = assign(tape.name, stmt.value.args[2] if tape.dtype else
                                      stmt.value.args[0])
    for items in _blocks(adjoint):
        for tape in tapes:
            if tape.name not in single:
                continue
            items[:] = [s for s in items if not (tape.top and isinstance(s, gast.AugAssign)
                                                 and _names(s.target) == {tape.top})]
            for stmt in items:
                if isinstance(stmt, gast.Assign) and _is_pop(stmt.value, tape):
                    stmt.value = name_node(tape.name)
    return single


def _blocks(items):
    """``items`` and every statement list nested in it."""
    yield items
    for stmt in items:
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and not isinstance(stmt, (gast.For, gast.While)):
                yield from _blocks(inner)


def _names(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _is_append(stmt, name):
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) and isinstance(
        stmt.value.func, gast.Attribute) and stmt.value.func.attr == "append" and \
        _names(stmt.value.func.value) == {name}


def _is_push(stmt, tape):
    if tape.dtype is None:
        return _is_append(stmt, tape.name)
    return isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call) and \
        isinstance(stmt.value.func, gast.Attribute) and stmt.value.func.attr == "push" and \
        _names(stmt.value.args[0]) == {tape.name}


def _is_pop(value, tape):
    if tape.dtype is None:
        return isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and \
            value.func.attr == "pop" and _names(value.func.value) == {tape.name}
    return isinstance(value, gast.Subscript) and _names(value.value) == {tape.name}
