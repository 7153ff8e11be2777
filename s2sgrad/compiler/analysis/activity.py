"""Activity analysis: which variables need an adjoint.

Takes a LoweredFunction, the Var names differentiated (``wrt``) and the
output Var names that get a sensitivity (``seeds``); gives the set of
*active* names: those that depend on a differentiated value through
differentiable operations AND reach a seeded output without passing through
``stop_gradient`` or a non-differentiable operation.  Only active
operations get adjoint code.  Loops and in-place updates make names hold
several values; the analysis iterates to a fixed point over every
operation in the structured body, so a loop-carried dependence is seen.
"""
from ..ir import ListAppend, Op, Seq, SetItem, atom_vars, walk_ops


def differentiable_operands(op):
    """The Var names through which ``op``'s result can depend differentiably on its operands."""
    if op.custom is not None:
        return op.custom.differentiable_operands()
    if op.rule is None:
        return op.operand_vars()          # unknown: assume it could; an error if it matters
    if not op.rule.differentiable:
        return []
    try:
        bound = op.rule.bind(op.args, op.kwargs)
    except TypeError:
        return op.operand_vars()
    return [n for p in op.rule.diff_params if p in bound for n in atom_vars(_as_atom(bound[p]))]


def _as_atom(value):
    """A template's ``*args`` binds to a plain tuple of atoms: read it as a Seq."""
    return Seq(tuple(value)) if isinstance(value, tuple) else value


def _flows(stmt, operands):
    """(sources, targets) of one statement: gradient flows from targets back to sources."""
    if isinstance(stmt, (SetItem, ListAppend)):
        return atom_vars(stmt.value), [stmt.target]
    return operands(stmt), list(stmt.targets)


def active_names(lowered, wrt, seeds, operands=differentiable_operands):
    """The set of active variable names (see module doc).  ``operands(op)`` gives the
    names an op's result depends on differentiably (forward mode passes its own)."""
    flows = [_flows(s, operands) for s in walk_ops(lowered.body)
             if isinstance(s, (Op, SetItem, ListAppend))]
    varied = set(wrt)
    changed = True
    while changed:
        changed = False
        for sources, targets in flows:
            if any(n in varied for n in sources) and not varied.issuperset(targets):
                varied.update(targets)
                changed = True
    useful = set(seeds)
    changed = True
    while changed:
        changed = False
        for sources, targets in reversed(flows):
            if any(t in useful for t in targets) and not useful.issuperset(sources):
                useful.update(sources)
                changed = True
    return varied & useful
