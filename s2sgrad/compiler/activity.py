"""Activity analysis: which variables need an adjoint.

Takes a LoweredFunction, the Var names differentiated (``wrt``) and the
output Var names that get a sensitivity (``seeds``); gives the set of
*active* names: those that depend on a differentiated value through
differentiable operations AND reach a seeded output without passing through
``stop_gradient`` or a non-differentiable operation.  Only active
operations get adjoint code.
"""
from .ir import Seq, atom_vars


def differentiable_operands(op):
    """The Var names through which ``op``'s result can depend differentiably on its operands."""
    if op.custom is not None:
        return op.custom.differentiable_operands(op)
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


def active_names(lowered, wrt, seeds):
    """The set of active variable names (see module doc)."""
    varied = set(wrt)
    for op in lowered.body:
        if any(n in varied for n in differentiable_operands(op)):
            varied.update(op.targets)
    useful = set(seeds)
    for op in reversed(lowered.body):
        if any(t in useful for t in op.targets):
            useful.update(differentiable_operands(op))
    return varied & useful
