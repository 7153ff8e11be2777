"""Copies of adjoint arrays that a move makes needless, removed after the sweep is built.

``Adjoints.own`` copies an adjoint array before updating it in place when the array
may be shared.  One sharing is only apparent: ``dun = du`` (the adjoint of
``u = un``) takes ``du``'s array, and ``du`` is given a fresh array right after
(``du = rt.zeros_like(u)``) before anything reads it, so ``dun`` holds the only
reference and may update it in place.  ``Adjoints`` records such copies when ``du``
was owned (a fresh array no other name held) at ``dun = du``;
``drop_moved_copies`` removes each one whose statement list shows:

- nothing reads or assigns ``dun`` between ``dun = du`` and the copy;
- after ``dun = du``, ``du`` is assigned afresh (by a statement of the same list,
  before or after the copy) before anything reads it.

In a stencil's reversed time loop this saves one copy of the state's adjoint per
time step (the 1-D heat stencil: 0.006 of 0.11 ms).
"""
import gast


def drop_moved_copies(statements, candidates):
    """Remove from ``statements`` (the adjoint sweep: gast nodes and Comments, nested
    bodies included; changed in place) the copies in ``candidates`` ((copy statement,
    adjoint name, source adjoint name) triples) that no reference needs."""
    wanted = {id(statement): (target, source) for statement, target, source in candidates}
    if wanted:
        _visit(statements, wanted)


def _visit(statements, wanted):
    for position in range(len(statements) - 1, -1, -1):
        statement = statements[position]
        if id(statement) in wanted and _needless(statements, position, *wanted[id(statement)]):
            del statements[position]
            continue
        for field in ("body", "orelse"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                _visit(inner, wanted)


def _needless(statements, position, target, source):
    """True when ``statements[position]`` copies ``target`` whose array it took from
    ``source`` earlier in ``statements`` (with no use of ``target`` in between), and
    ``source`` is assigned afresh later in ``statements`` with no read before."""
    start = _last_assignment(statements, position, target)
    if start is None or not _is_name(statements[start].value, source):
        return False
    between = [s for s in statements[start + 1:position] if isinstance(s, gast.AST)]
    if any(target in _names(s) for s in between):
        return False
    after = [s for s in statements[start + 1:] if isinstance(s, gast.AST)
             and s is not statements[position]]
    for statement in after:
        if _assigns(statement, source):
            return source not in _names(statement.value)
        if source in _names(statement):
            return False
    return False


def _last_assignment(statements, position, name):
    """The index of the last statement before ``position`` assigning ``name`` alone."""
    for index in range(position - 1, -1, -1):
        statement = statements[index]
        if _assigns(statement, name):
            return index
        if isinstance(statement, gast.AST) and name in _stored(statement):
            return None
    return None


def _assigns(statement, name):
    return isinstance(statement, gast.Assign) and len(statement.targets) == 1 and \
        _is_name(statement.targets[0], name)


def _is_name(node, name):
    return isinstance(node, gast.Name) and node.id == name


def _names(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _stored(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Store)}
