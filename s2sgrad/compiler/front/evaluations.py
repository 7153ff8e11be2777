"""``jvp``, ``hvp`` and ``vjp`` called inside a function being differentiated or jitted.

``evaluated_inside(calls, frame, node, transform, args, kwargs)`` takes the call lowerer
at a call of a transform that evaluates (``__s2sgrad_transform__ == "evaluates"``: it
gives values, not a derivative object) and gives the call's result atom: the
derivative code of the function it is given, built for the argument types known here
by the transform's ``__s2sgrad_evaluate_inside__`` (``api/evaluated.py``) and lowered as
a callee, so the outer transform differentiates (or ``s2sgrad.jit`` compiles) ordinary
code, as for a gradient object called inside (``derivative_calls.py``):

- ``jvp(f, primals, tangents)`` -> ``(f(*primals), tangent)``, f's forward-mode code
  (``has_aux=True``: ``(out, tangent, aux)``);
- ``hvp(f, primals, v)`` -> the tangent of f's gradient code along ``v``;
- ``vjp(f, *primals)`` -> ``(f(*primals), pullback)``: the value is f inlined, the
  pullback a ``Pullback``, whose call ``pull(ct)`` is the gradient code of
  ``np.sum(f(*primals) * ct)`` (a tuple, one gradient per primal).

A function defined inside (a lambda, a def, ``functools.partial``) is lifted
(``lifting.py``): the values it reads from here are passed after its own arguments,
with no tangent, and the outer transform differentiates along them too.  What cannot be
inlined (``weights``, a tuple or dict argument, a derivative object other than a plain
gradient, a pullback leaving the function or used as a value: ``Pullback``'s
``__s2sgrad_not_a_value__``) is refused at the user's line, saying what to write
instead.
"""
import inspect

from ...errors import DerivativeCompositionError
from ..ir import Const, Seq
from ..syntax.source import unsupported
from .derivative_calls import argument_type, defaults_as_constants
from .lifting import Lifted, Partial, lifted_transform
from .lower_state import LocalFunction
from .partials import is_partial, partial_as_function

#: the transforms inlined here: ``jvp(f, inputs, v)``, ``hvp(f, inputs, v)``,
#: ``vjp(f, *inputs)``
_SPELLINGS = frozenset({"jvp", "hvp", "vjp"})


def evaluated_inside(calls, frame, node, transform, args, kwargs):
    """The result atom of ``transform(*args, **kwargs)`` inlined (module doc)."""
    name = getattr(transform, "__name__", "transform")
    evaluate = getattr(transform, "__s2sgrad_evaluate_inside__", None)
    if evaluate is None or name not in _SPELLINGS:
        raise _refused(frame, node, f"s2sgrad.{name} called inside a function being "
                       f"differentiated", "call it outside, or make the derivative object "
                       "and call it inside: jacfwd(f)(x), grad(f)(x), jacrev(f)(x)")
    has_aux = name == "jvp" and _has_aux(kwargs)
    _no_options(frame, node, name, {k: v for k, v in kwargs.items()
                                    if not (has_aux and k == "has_aux")})
    if not args:
        raise _refused(frame, node, f"s2sgrad.{name} without a function", f"pass the "
                       f"function first: {name}(f, ...)")
    if name == "vjp":
        primals, tangents, single = tuple(args[1:]), None, False
    else:
        if len(args) != 3:
            raise _refused(frame, node, f"s2sgrad.{name} with {len(args)} arguments",
                           f"write {name}(f, inputs, v), every argument given by position")
        primals, single = _items(args[1])
        tangents = _items(args[2])[0]
        if len(tangents) != len(primals):
            raise _refused(frame, node, f"s2sgrad.{name} with {len(primals)} inputs and "
                           f"{len(tangents)} tangents", "pass one tangent per input, "
                           "shaped like it")
    fn, extra = _function(frame, node, name, args[0], primals)
    types = [argument_type(calls.types, a) for a in primals + extra]
    if not primals or any(t is None for t in types):
        raise _refused(frame, node, f"s2sgrad.{name} of a tuple, list or dict input (or of "
                       f"a value whose rank is not known here) inside a differentiated "
                       f"function", f"pass arrays and numbers as the inputs: "
                       f"{name}(lambda a, b: f((a, b)), (a, b), ...)")
    if name == "vjp":
        value = calls.call_object(frame, node, fn, primals + extra, {}, None)
        return Seq((value, Const(Pullback(evaluate, fn, primals, extra, types))), "tuple")
    function = _evaluated(frame, node, evaluate, fn, len(primals), types,
                          *((True,) if has_aux else ()))
    result = calls.inline(frame, node, function, primals + extra + tangents, {}, None)
    if has_aux:         # ((out, aux...), tangent) -> (out, tangent, aux)
        return _with_aux(frame, node, result)
    if name == "hvp":          # (the gradient, its tangent)
        tangent = result.items[1] if isinstance(result, Seq) else None
        if tangent is None or len(primals) > 1 and not isinstance(tangent, Seq):
            raise _refused(frame, node, "hvp whose gradient code's result is not known "
                           "here", "call hvp outside, or write jvp(grad(f), inputs, v)[1]")
        return tangent if single or len(primals) > 1 else Seq((tangent,), "tuple")
    return result


class Pullback:
    """The pullback ``vjp`` gives inside a differentiated function: a call of it with a
    cotangent is the gradient code of the cotangent's inner product with the function's
    output (``evaluate``: ``vjp``'s ``__s2sgrad_evaluate_inside__``; ``fn``, the primal
    atoms and the lifted values ``extra`` read where ``vjp`` was called, and their
    types)."""

    #: what it is and what to write, where it is used as a value (returned, summed)
    __s2sgrad_not_a_value__ = (
        "a vjp's pullback", "call it in the function that made it: pull(ct)[0] (a tuple, "
        "one cotangent per input); to return the pullback itself, call vjp outside the "
        "differentiated function")

    def __init__(self, evaluate, fn, primals, extra, types):
        self.evaluate, self.fn, self.primals, self.extra = evaluate, fn, primals, extra
        self.types = types
        self.__name__ = f"vjp_of_{getattr(fn, '__name__', 'f')}"

    def call(self, calls, frame, node, args, kwargs):
        """The atom of ``pullback(*args)``: a tuple with one gradient per primal."""
        # one cotangent per output: pull(ct), pull(ct_a, ct_b) or pull((ct_a, ct_b))
        cotangents = tuple(args[0].items) if len(args) == 1 and isinstance(args[0], Seq) \
            else tuple(args)
        types = [argument_type(calls.types, c) for c in cotangents]
        if kwargs or not cotangents or any(t is None for t in types):
            raise _refused(frame, node, "a vjp's pullback called with no cotangent, a "
                           "keyword, a nested tuple or a value whose rank is not known "
                           "here", "pass the cotangent of each output: pull(ct) or "
                           "pull((ct_a, ct_b))")
        function = _evaluated(frame, node, self.evaluate, self.fn, len(self.primals),
                              self.types, types, frame.location(node))
        grads = calls.inline(frame, node, function, self.primals + self.extra + cotangents,
                             {}, None)
        return grads if len(self.primals) > 1 else Seq((grads,), "tuple")

    def __repr__(self):
        return f"<the pullback of a vjp of {getattr(self.fn, '__name__', 'f')}>"


def _evaluated(frame, node, evaluate, fn, count, types, *more):
    """``evaluate(fn, count, types, *more)``, its refusal located at the user's call."""
    try:
        return evaluate(fn, count, types, *more)
    except DerivativeCompositionError as exc:
        raise _refused(frame, node, str(exc).split("\n")[0], "write the derivative of "
                       "the function itself there, or call it outside") from None


def _function(frame, node, name, atom, primals):
    """(the function to inline, the atoms passed after ``primals``: what a function
    defined inside reads from here, lifted)."""
    if not isinstance(atom, Const):
        raise _refused(frame, node, f"s2sgrad.{name} of a function computed at run time",
                       f"pass the function by its name, a lambda or a def: {name}(f, ...)")
    target = atom.value
    if isinstance(target, (LocalFunction, Partial)):
        lifted = lifted_transform(frame, node, _same, target, (), {})
        if lifted is None:
            raise _refused(frame, node, f"s2sgrad.{name} of a function defined inside that "
                           f"reads another function defined inside", "define the function "
                           "at module level and pass what it reads as arguments")
        target = lifted
    if isinstance(target, Lifted):
        return target.derivative, tuple(target.arguments(primals)[len(primals):])
    if not callable(target):
        raise _refused(frame, node, f"s2sgrad.{name} of {type(target).__name__}",
                       f"pass a function: {name}(f, ...)")
    if is_partial(target):      # made outside: a function with source (front/partials.py)
        target = partial_as_function(target, closed=True)
    return target, _defaults_after(target, len(primals))


def _defaults_after(fn, count):
    """The defaults of ``fn``'s parameters after its first ``count`` (``jvp(f, (x,),
    (v,))`` of ``def f(x, scale=2.0)``: the code takes every parameter), as constants
    passed after the primals (``derivative_calls.defaults_as_constants``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return defaults_as_constants(params, count)


def _same(fn):
    """The function itself (what ``lifted_transform`` applies to the lifted function)."""
    return fn


def _items(atom):
    """(the atoms of a tuple or list of inputs, whether it was one value)."""
    if isinstance(atom, Seq) and atom.kind in ("tuple", "list"):
        return tuple(atom.items), False
    return (atom,), True


def _has_aux(kwargs):
    """Whether a jvp call asks for ``has_aux=True``."""
    value = kwargs.get("has_aux")
    return isinstance(value, Const) and value.value is True


def _with_aux(frame, node, result):
    """``(out, tangent, aux)`` of the inlined jvp code's ``((out, aux...), tangent)``."""
    value = result.items[0] if isinstance(result, Seq) and len(result.items) == 2 else None
    if not isinstance(value, Seq) or len(value.items) < 2:
        raise _refused(frame, node, "jvp with has_aux=True of a function that does not "
                       "return a tuple (out, aux) here", "return (out, aux) from it")
    aux = value.items[1] if len(value.items) == 2 else Seq(value.items[1:], "tuple")
    return Seq((value.items[0], result.items[1], aux), "tuple")


def _no_options(frame, node, name, kwargs):
    for key, value in kwargs.items():
        if key in ("has_aux", "weights") and isinstance(value, Const) and \
                value.value in (False, None):
            continue
        raise _refused(frame, node, f"s2sgrad.{name} with {key}= inside a differentiated "
                       f"function", f"leave {key} out: return the auxiliary value from a "
                       f"second call of the function, or call {name} outside")


def _refused(frame, node, what, hint):
    return DerivativeCompositionError(str(unsupported(frame, node, what, hint)))
