"""User-defined backward rules: ``s2sgrad.custom_vjp`` on functions and ``Cell.bprop``.

Both follow the reference's bprop convention: the backward function is
called as ``bwd(*inputs, out, dout)`` and returns one gradient per input (a
tuple, or a bare value for a single input), used as returned (it must apply
``dout`` itself).  A Cell's bprop may also return ``(input_grads, {param:
grad})`` for the Parameters listed in ``self.internal_params``.

``lower_custom_call`` takes the call lowerer (``lower_calls.CallLowering``: its
state, atoms and ``inline``) at a call of such a function and gives
the call's result atom: it inlines the forward body with its operations marked
as inside the custom rule (they carry no gradient of their own), lowers the
backward body right there into a ``CustomBackward`` (ir.py), its incoming
gradient read through placeholder variables, and adds one link ``Op`` whose
targets are the forward's result variables and which carries the backward.  The
reverse pass splices the lowered backward in at the link, like a built-in
rule's template: it holds no lowerer.
"""
import functools
import inspect

from ... import primitives as prims
from ...errors import UnsupportedConstructError, UserCodeError
from ...rules.registry import Rule
from ..ir import Const, CustomBackward, DictAtom, Op, Seq, Var, atom_vars
from . import literals


class custom_vjp:  # noqa: N801 - a decorator, named like JAX's
    """Give a function its own backward rule, inlined into generated gradient code.

    ::

        @s2sgrad.custom_vjp
        def clip_gradient(x):
            return x

        @clip_gradient.defvjp
        def _(x, out, dout):          # inputs..., forward output, incoming gradient
            return (np.clip(dout, -1.0, 1.0),)

    Called directly, the function runs its forward.  Inside a function that
    s2sgrad differentiates, its backward replaces differentiating its body.
    """

    def __init__(self, forward):
        functools.update_wrapper(self, forward)
        self.forward = forward
        self.backward = None
        self.__s2sgrad_custom_vjp__ = self

    def defvjp(self, backward):
        """Register ``backward(*inputs, out, dout) -> gradients`` and return it."""
        self.backward = backward
        return backward

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


def lower_custom_call(calls, frame, node, forward, backward, args, kwargs, hint,
                      bound_self=None, name=None, internal_params=(), tangent=None):
    """Inline ``forward`` as gradient-free code, lower ``backward`` as a ``CustomBackward``
    (with ``tangent``, a callable giving the result's tangent, for forward mode) and add
    the link Op that carries it; gives the forward's result atom."""
    name = name or forward.__name__
    if backward is None:
        raise UserCodeError(f"{name} is a custom_vjp with no backward", frame.location(node),
                            None, f"define one with @{name}.defvjp")
    if kwargs:
        sig = inspect.signature(forward)
        bound = sig.bind(*(((Const(bound_self),) if bound_self is not None else ()) + args),
                         **kwargs)
        args = tuple(bound.args[1:] if bound_self is not None else bound.args)
    start = len(calls.state.ops)
    output = calls.inline(frame, node, forward, args, {}, bound_self)
    nondiff = Rule("custom forward", None, "custom forward")
    produced = set()
    _straight_line(calls.state.ops[start:], frame, node, f"the forward of {name}")
    for op in calls.state.ops[start:]:
        op.rule = nondiff
        produced.update(op.targets)
    # a result that is an input itself gets its own variable, so its adjoint is separate
    output = _own_results(calls, frame, node, output, produced, nondiff, hint)
    leaves = atom_vars(output)
    if not leaves:
        return output
    params = [calls.atoms.const_or_free(p, getattr(p, "name", "param")) for p in internal_params]
    custom = _lower_backward(calls, frame, node, backward, bound_self, list(args), output,
                             [p for p in params if isinstance(p, Var)], name,
                             bool(internal_params))
    if tangent is not None:
        custom.tangent = literals.reference_node(tangent, calls.atoms)
        both = getattr(tangent, "value_and_tangent", None)
        if both is not None:
            custom.value_and_tangent = literals.reference_node(both, calls.atoms)
    calls.state.ops.append(Op(tuple(leaves), forward, tuple(args), {}, None, frame.location(node),
                              None, custom))
    return output


def _lower_backward(calls, frame, node, backward, bound_self, inputs, output, params, name,
                    has_params):
    """The backward of one custom call, lowered into its own Op list: called as
    ``backward(*inputs, output, dout)`` with ``dout`` placeholders for the incoming
    gradient (one per result variable)."""
    incoming = {}
    dout = _placeholders(calls, output, incoming)
    saved_ops, saved_cse = calls.state.ops, calls.state.cse
    # what the backward computes stays its own
    calls.state.ops, calls.state.cse = [], dict(saved_cse)
    try:
        result = calls.inline(frame, node, backward, tuple(inputs) + (output, dout), {},
                              bound_self)
        body = calls.state.ops
    finally:
        calls.state.ops, calls.state.cse = saved_ops, saved_cse
    _straight_line(body, frame, node, f"the backward of {name}")
    input_grads, param_grads = _split_result(result, has_params)
    if len(input_grads) < len(inputs):
        raise UserCodeError(
            f"the backward of {name} returned {len(input_grads)} gradient"
            f"{'s' if len(input_grads) != 1 else ''} for {len(inputs)} inputs",
            frame.location(node), None, "return one gradient per input, in order, as a tuple")
    grads = [(var.name, g) for var in params for key, g in param_grads
             if isinstance(key, Var) and key.name == var.name]
    return CustomBackward(name, inputs, [p.name for p in params], incoming, body,
                          input_grads[:len(inputs)], grads)


def _placeholders(calls, atom, incoming):
    """``atom`` (the call's result) with each variable replaced by a placeholder for its
    incoming gradient, recorded in ``incoming`` (placeholder name -> variable name)."""
    if isinstance(atom, Seq):
        return Seq(tuple(_placeholders(calls, a, incoming) for a in atom.items), atom.kind)
    if isinstance(atom, Var):
        placeholder = calls.state.names.placeholder(atom.name + "_incoming")
        incoming[placeholder] = atom.name
        return Var(placeholder)
    return atom


def _split_result(result, has_params):
    """(gradient atoms of the inputs, [(Parameter atom, gradient atom)]) of what a backward
    returned: a tuple of gradients, a bare gradient, or (gradients, {param: grad})."""
    if isinstance(result, Seq) and len(result.items) == 2 and \
            isinstance(result.items[1], DictAtom):
        grads = result.items[0]
        pairs = result.items[1].pairs if has_params else ()
        return (list(grads.items) if isinstance(grads, Seq) else [grads]), list(pairs)
    if isinstance(result, Seq):
        return list(result.items), []
    return [result], []


def _straight_line(statements, frame, node, what):
    """Custom rules are inlined as straight-line code: refuse run-time branches, loops and
    in-place updates in them, naming the call."""
    for stmt in statements:
        if not isinstance(stmt, Op):
            call = frame.location(node)
            where = stmt.origin or call
            called = f" (called at {call})" if where != call else ""
            raise UnsupportedConstructError(
                f"{what}{called} has run-time control flow or in-place updates, which a "
                f"custom rule cannot hold", where, None,
                "keep custom forwards and backwards straight-line numpy (np.where for choices)")


def _own_results(calls, frame, node, atom, produced, nondiff, hint):
    if isinstance(atom, Seq):
        return Seq(tuple(_own_results(calls, frame, node, a, produced, nondiff, None)
                         for a in atom.items), atom.kind)
    if isinstance(atom, Var) and atom.name not in produced:
        name = calls.state.names.variable(hint or atom.name + "_out")
        calls.state.ops.append(Op((name,), prims.COPY, (atom,), {}, calls.atoms.atom_node(atom),
                                  frame.location(node), nondiff, None))
        produced.add(name)
        return Var(name)
    return atom
