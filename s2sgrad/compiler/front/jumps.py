"""Structured control flow: ``break``, ``continue`` and ``return`` become nested branches.

Both passes work on gast statement lists before lowering, in continuation-
passing style: what follows a statement that may jump is moved into the
branches that do not jump.

- ``remove_loop_jumps(body, flag)``: a loop body without ``break`` and
  ``continue``; ``break`` becomes ``flag = True`` (the loop ends after an
  iteration that set it), ``continue`` ends the iteration's code path.
- ``remove_early_returns(body)``: a function body in which every ``return``
  is the last statement of its path (so branches merge the returned values).
Nested loops keep their own jumps: each loop is handled when it is lowered.
``structured_body(fdef)`` runs both on a function's body (returns inside loops
first lifted out by ``lift_loop_returns``), with names from ``unused_name``.
"""
import copy

import gast

from ..syntax.nodes import name_node


def _contains(node, kinds):
    """True when ``node`` holds a statement of ``kinds`` outside nested loops/functions."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            return True
        for child in gast.iter_child_nodes(n):
            if not isinstance(child, (gast.For, gast.While, gast.FunctionDef, gast.Lambda)):
                stack.append(child)
    return False


def _set(name, value, node):
    """``name = value`` (a gast expression), located at ``node``."""
    stmt = gast.Assign(targets=[name_node(name, gast.Store())], value=value, type_comment=None)
    return gast.copy_location(stmt, node)


def _flag_assign(flag, node):
    return _set(flag, gast.Constant(value=True, kind=None), node)


def _if(node, body, orelse):
    new = gast.If(test=node.test, body=body or [gast.copy_location(gast.Pass(), node)],
                  orelse=orelse)
    return gast.copy_location(new, node)


def remove_loop_jumps(statements, flag):
    """The loop body ``statements`` with break/continue turned into branches (see module doc)."""
    return _without_loop_jumps(statements, [], flag)


def _without_loop_jumps(statements, cont, flag):
    prefix = []
    for k, stmt in enumerate(statements):
        if isinstance(stmt, gast.Break):
            return prefix + [_flag_assign(flag, stmt)]
        if isinstance(stmt, gast.Continue):
            return prefix
        if isinstance(stmt, gast.If) and _contains(stmt, (gast.Break, gast.Continue)):
            rest = _without_loop_jumps(statements[k + 1:], cont, flag)
            body = _without_loop_jumps(stmt.body, copy.deepcopy(rest), flag)
            orelse = _without_loop_jumps(stmt.orelse, rest, flag)
            return prefix + [_if(stmt, body, orelse)]
        prefix.append(stmt)
    return prefix + cont


def remove_early_returns(statements):
    """The function body ``statements`` with every return last on its path (see module doc)."""
    return _without_returns(statements, [])


def _without_returns(statements, cont):
    prefix = []
    for k, stmt in enumerate(statements):
        if isinstance(stmt, gast.Return):
            return prefix + [stmt]
        if isinstance(stmt, gast.If) and _contains(stmt, (gast.Return,)):
            rest = _without_returns(statements[k + 1:], cont)
            body = _without_returns(stmt.body, copy.deepcopy(rest))
            orelse = _without_returns(stmt.orelse, rest)
            return prefix + [_if(stmt, body, orelse)]
        prefix.append(stmt)
    return prefix + cont


def assigned_names(statements):
    """Names a statement list assigns (targets of =, +=, for, in nested blocks too)."""
    names = []
    for stmt in statements:
        for node in gast.walk(stmt):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) \
                    and node.id not in names:
                names.append(node.id)
    return names


def unused_name(name, taken):
    """``name``, or ``name_1``, ``name_2``... whichever the function does not use."""
    candidate, i = name, 0
    while candidate in taken:
        i += 1
        candidate = f"{name}_{i}"
    return candidate


def return_names(taken):
    """The flag and a maker of per-loop result names for ``lift_loop_returns``."""
    taken = set(taken)
    flag = unused_name("returned", taken)
    taken.add(flag)

    def values():
        name = unused_name("result", taken)
        taken.add(name)
        return name
    return flag, values


def structured_body(fdef, taken=()):
    """The body of the function ``fdef`` with early returns made structured (returns in
    loops lifted out, then every return the last statement of its path); the names made
    avoid ``taken`` and every name ``fdef`` uses."""
    taken = set(taken) | {n.id for n in gast.walk(fdef) if isinstance(n, gast.Name)}
    return remove_early_returns(lift_loop_returns(fdef.body, *return_names(taken)))


def returns_inside_loops(statements):
    """The first ``return`` inside a loop of ``statements``, or None."""
    for stmt in statements:
        for node in gast.walk(stmt):
            if isinstance(node, (gast.For, gast.While)):
                for inner in gast.walk(node):
                    if isinstance(inner, gast.Return):
                        return inner
    return None


def lift_loop_returns(statements, flag, values):
    """A function body whose loops do not ``return``: inside a loop, ``return e`` becomes
    ``value = e; flag = True; break`` and the loop is followed by ``if flag: return value``
    (nested loops pass it outwards the same way).  ``flag`` starts False at the top; each
    loop gets its own ``value`` name from ``values()`` (a name no other path sets)."""
    if returns_inside_loops(statements) is None:
        return statements
    init = _set(flag, gast.Constant(value=False, kind=None), statements[0])
    return [init] + _lift(statements, flag, values)


def _lift(statements, flag, values):
    out = []
    for stmt in statements:
        if isinstance(stmt, (gast.For, gast.While)) and returns_inside_loops([stmt]) is not None:
            stmt = copy.copy(stmt)
            value = values()
            stmt.body = _returns_to_breaks(_lift(stmt.body, flag, values), flag, value)
            leave = gast.If(test=name_node(flag, gast.Load()),
                            body=[gast.Return(value=name_node(value, gast.Load()))], orelse=[])
            out += [stmt, gast.copy_location(leave, stmt)]
            for node in gast.walk(leave):
                gast.copy_location(node, stmt)
        elif isinstance(stmt, gast.If):
            stmt = copy.copy(stmt)
            stmt.body = _lift(stmt.body, flag, values)
            stmt.orelse = _lift(stmt.orelse, flag, values)
            out.append(stmt)
        else:
            out.append(stmt)
    return out


def _returns_to_breaks(statements, flag, value):
    out = []
    for stmt in statements:
        if isinstance(stmt, gast.Return):
            result = stmt.value or gast.Constant(value=None, kind=None)
            out += [_set(value, result, stmt), _flag_assign(flag, stmt),
                    gast.copy_location(gast.Break(), stmt)]
        elif isinstance(stmt, gast.If):
            stmt = copy.copy(stmt)
            stmt.body = _returns_to_breaks(stmt.body, flag, value)
            stmt.orelse = _returns_to_breaks(stmt.orelse, flag, value)
            out.append(stmt)
        else:
            out.append(stmt)
    return out


def expand_loop_else(loop, flag):
    """``for/while ... else`` as plain statements: ``flag = False``, the loop with each of its
    own ``break`` preceded by ``flag = True``, then ``if not flag: <else>``."""
    new = copy.copy(loop)
    new.body = _mark_breaks(loop.body, flag)
    new.orelse = []
    init = _set(flag, gast.Constant(value=False, kind=None), loop)
    after = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=name_node(flag, gast.Load())),
                    body=loop.orelse, orelse=[])
    return [init, new, gast.copy_location(after, loop)]


def _mark_breaks(statements, flag):
    out = []
    for stmt in statements:
        if isinstance(stmt, gast.Break):
            out += [_flag_assign(flag, stmt), stmt]
        elif isinstance(stmt, gast.If):
            stmt = copy.copy(stmt)
            stmt.body = _mark_breaks(stmt.body, flag)
            stmt.orelse = _mark_breaks(stmt.orelse, flag)
            out.append(stmt)
        else:
            out.append(stmt)   # a nested loop's breaks are its own
    return out


def comprehension_as_loop(node, name):
    """``[elt for target in iter if cond]`` as ``name = []`` and a loop appending to it."""
    (generator,) = node.generators
    append = gast.Expr(value=gast.Call(
        func=gast.Attribute(value=name_node(name, gast.Load()), attr="append", ctx=gast.Load()),
        args=[node.elt], keywords=[]))
    body = [gast.copy_location(append, node)]
    for condition in reversed(generator.ifs):
        body = [gast.copy_location(gast.If(test=condition, body=body, orelse=[]), node)]
    loop = gast.For(target=generator.target, iter=generator.iter, body=body, orelse=[],
                    type_comment=None)
    init = _set(name, gast.List(elts=[], ctx=gast.Load()), node)
    return [init, gast.copy_location(loop, node)]
