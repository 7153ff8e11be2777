"""User-defined backward rules: ``s2sgrad.custom_vjp`` on functions and ``Cell.bprop``.

Both follow the reference's bprop convention: the backward function is
called as ``bwd(*inputs, out, dout)`` and returns one gradient per input (a
tuple, or a bare value for a single input), used as returned (it must apply
``dout`` itself).  A Cell's bprop may also return ``(input_grads, {param:
grad})`` for the Parameters listed in ``self.internal_params``.

The lowering inlines the forward body with its operations marked as inside
the custom rule (they carry no gradient of their own) and adds one link
``Op`` whose targets are the forward's result variables; the reverse pass
calls ``CustomCall.adjoint`` there, which inlines the backward body into
the adjoint sweep, like a built-in rule's template.
"""
import functools
import inspect

import gast

from .. import primitives as prims
from ..errors import UnsupportedConstructError, UserCodeError
from ..rules.registry import Rule
from .adjoints import call, name_node
from .ir import Const, DictAtom, Op, Seq, Var, atom_vars
from .templates import atom_node_of


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


class CustomCall:
    """One call of a custom rule inside a lowered function (stored on its link Op)."""

    def __init__(self, lowerer, frame, node, backward, bound_self, inputs, output, extra,
                 name, internal_params=()):
        self.lowerer = lowerer
        self.frame = frame
        self.node = node
        self.backward = backward
        self.bound_self = bound_self
        self.inputs = inputs
        self.output = output
        self.extra = extra
        self.name = name
        self.internal_params = internal_params

    def differentiable_operands(self, op):
        return [n for a in self.inputs for n in atom_vars(a)] + [v.name for _, v in self.extra]

    def adjoint(self, op, adj, active, names, out):
        """Append the backward body, inlined, and accumulate what it returns."""
        lowerer = self.lowerer
        saved, lowerer.ops = lowerer.ops, []
        dout = self._dout_atom(self.output, adj, out)
        result = lowerer.inline(self.frame, self.node, self.backward,
                                tuple(self.inputs) + (self.output, dout), {}, self.bound_self)
        body, lowerer.ops = lowerer.ops, saved
        _straight_line(body, self.frame, self.node, f"the backward of {self.name}")
        for bop in body:
            targets = [gast.Name(id=t, ctx=gast.Store(), annotation=None, type_comment=None)
                       for t in bop.targets]
            out.append(gast.Assign(targets=targets, value=bop.expr, type_comment=None))
        input_grads, param_grads = self._split_result(result)
        if len(input_grads) < len(self.inputs):
            raise UserCodeError(
                f"the backward of {self.name} returned {len(input_grads)} gradient"
                f"{'s' if len(input_grads) != 1 else ''} for {len(self.inputs)} inputs",
                self.frame.location(self.node), None,
                "return one gradient per input, in order, as a tuple")
        for atom, g in zip(self.inputs, input_grads):
            self._accumulate(atom, g, adj, active, out)
        for param, var in self.extra:
            for key, g in param_grads:
                if isinstance(key, Var) and key.name == var.name:
                    self._accumulate(var, g, adj, active, out)

    def _split_result(self, result):
        if isinstance(result, Seq) and len(result.items) == 2 and \
                isinstance(result.items[1], DictAtom):
            grads = result.items[0]
            pairs = result.items[1].pairs if self.internal_params else ()
            return (list(grads.items) if isinstance(grads, Seq) else [grads]), list(pairs)
        if isinstance(result, Seq):
            return list(result.items), []
        return [result], []

    def _dout_atom(self, atom, adj, out):
        if isinstance(atom, Seq):
            return Seq(tuple(self._dout_atom(a, adj, out) for a in atom.items), atom.kind)
        if isinstance(atom, Var):
            if atom.name not in adj.defined:
                adj.accumulate(atom.name, call("rt", "zeros_like", [name_node(atom.name)]), out)
            return Var(adj.name(atom.name))
        return atom

    def _accumulate(self, atom, g, adj, active, out):
        if not isinstance(atom, Var) or atom.name not in active:
            return
        if isinstance(g, Const) and g.value is None:
            return
        adj.accumulate(atom.name, atom_node_of(g), out)


def lower_custom_call(lowerer, frame, node, forward, backward, args, kwargs, hint,
                      bound_self=None, name=None, internal_params=()):
    """Inline ``forward`` as gradient-free code and add the link Op of the custom rule."""
    if backward is None:
        raise UserCodeError(f"{name} is a custom_vjp with no backward", frame.location(node),
                            None, f"define one with @{name}.defvjp")
    if kwargs:
        sig = inspect.signature(forward)
        bound = sig.bind(*(((Const(bound_self),) if bound_self is not None else ()) + args),
                         **kwargs)
        args = tuple(bound.args[1:] if bound_self is not None else bound.args)
    start = len(lowerer.ops)
    output = lowerer.inline(frame, node, forward, args, {}, bound_self)
    nondiff = Rule("custom forward", None, "custom forward")
    produced = set()
    _straight_line(lowerer.ops[start:], frame, node, f"the forward of {name or forward.__name__}")
    for op in lowerer.ops[start:]:
        op.rule = nondiff
        produced.update(op.targets)
    # a result that is an input itself gets its own variable, so its adjoint is separate
    output = _own_results(lowerer, frame, node, output, produced, nondiff, hint)
    leaves = atom_vars(output)
    if not leaves:
        return output
    extra = [(p, lowerer.const_or_free(p, getattr(p, "name", "param"))) for p in internal_params]
    call = CustomCall(lowerer, frame, node, backward, bound_self, list(args), output, extra,
                      name or forward.__name__, internal_params)
    lowerer.ops.append(Op(tuple(leaves), forward, tuple(args), {}, None, frame.location(node),
                          None, call))
    return output


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


def _own_results(lowerer, frame, node, atom, produced, nondiff, hint):
    if isinstance(atom, Seq):
        return Seq(tuple(_own_results(lowerer, frame, node, a, produced, nondiff, None)
                         for a in atom.items), atom.kind)
    if isinstance(atom, Var) and atom.name not in produced:
        name = lowerer.names.variable(hint or atom.name + "_out")
        lowerer.ops.append(Op((name,), prims.COPY, (atom,), {}, lowerer.atom_node(atom),
                              frame.location(node), nondiff, None))
        produced.add(name)
        return Var(name)
    return atom
