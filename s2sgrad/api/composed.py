"""Reverse-mode transforms of a derivative object, built as forward mode over it.

``grad``, ``value_and_grad``, ``jacrev``, ``vjp``, ``hessian`` and ``hvp`` of a derivative
object ``D`` (``jacfwd(f)``, ``hessian(f)``, ``grad(grad(f))``, ``jacrev(f)`` or any
transform of those) take ``D`` as a plain function of its arguments: its generated code,
called as ``D`` shapes its result (``api/nested.py``), and differentiate it in forward
mode (``ForwardFunction``, one pass per input element, in the generated code's own
loop).  The value is the reverse-mode one: ``grad(D)`` is the Jacobian of ``D`` summed
over ``D``'s outputs (``grad``'s convention for a non-scalar output), ``jacrev(D)`` is
``jacfwd(D)``, ``hessian(D)`` is ``jacfwd(jacfwd(D))``, ``vjp(D)`` contracts the
cotangent with the Jacobian, ``hvp(D, x, v)`` is ``jvp(grad(D), x, v)``.  Each of these
is a derivative object too (``derivative_mode``), so transforms nest to any depth.

Takes the derivative object and the transform's options; gives the derivative object
(``ReverseByForward`` for ``grad``/``value_and_grad``) or, for ``vjp`` and ``hvp``, the
result.
"""
from ..errors import DerivativeCompositionError
from .arguments import check_positions
from .forward import JacfwdFunction, derivative_rule, forward_function, jvp
from .inside import cotangent_products, output_pairs, summed_blocks
from .nested import forward_as_function


def _refuse_options(inner, what, weights=None, return_ids=False):
    if weights is not None or return_ids:
        raise DerivativeCompositionError(
            f"{what} of the derivative object {inner.__name__} with weights or return_ids: "
            f"a derivative of a derivative object takes positions (and has_aux) only; "
            f"differentiate a function of the arguments instead")


def reverse_of_derivative(inner, grad_position, weights, has_aux, return_ids, with_value):
    """``grad(inner, grad_position)`` (``value_and_grad`` with ``with_value``) of a
    derivative object ``inner`` (module doc)."""
    _refuse_options(inner, "value_and_grad" if with_value else "grad", weights, return_ids)
    if grad_position is None:
        raise DerivativeCompositionError(
            f"grad of the derivative object {inner.__name__} with grad_position=None: "
            f"name the positions to differentiate")
    return ReverseByForward(inner, grad_position, with_value, has_aux)


class ReverseByForward:
    """``grad``/``value_and_grad`` of a derivative object (module doc): the Jacobian of
    ``inner`` by forward mode, summed over ``inner``'s outputs; with ``has_aux`` of its
    first output, the others passed out undifferentiated as ``grad`` passes a function's
    aux: ``(gradient, tuple of the other outputs)``, ``value_and_grad`` ``(every output,
    gradient)`` (``grad(grad(f, has_aux=True), has_aux=True)`` gives ``(the second
    derivative, (f's aux,))``)."""

    #: a derivative object: the front end never reads the function it wraps
    derivative_mode = "grad_of_derivative"

    def __init__(self, inner, grad_position, with_value, has_aux=False):
        check_positions(grad_position)
        self.inner = inner
        self.grad_position = grad_position
        self.positions = check_positions(grad_position)
        self.with_value = with_value
        self.has_aux = has_aux
        self.forward = forward_function(inner, grad_position, has_aux, True)
        self.__name__ = inner.__name__ + "_grad"
        self.__wrapped__ = inner

    def _signature_target(self):
        return self.forward._signature_target()

    def __call__(self, *args, **kwargs):
        outputs = value = self.inner(*args, **kwargs)
        if self.has_aux:
            _check_aux(repr(self), self.inner, outputs)
        jacobian = self.forward(*args, **kwargs)
        if self.has_aux:        # the Jacobian of the first output; the others as they are
            jacobian, value = jacobian[0], outputs[0]
        blocks = [b for _, b in output_pairs(value, value, jacobian)]   # per array of value
        args = self.forward._complete(args, kwargs)
        grads = [summed_blocks([block if isinstance(self.grad_position, int) or
                          len(self.positions) == 1 else block[i] for block in blocks],
                         args[p]) for i, p in enumerate(self.positions)]
        result = grads[0] if len(grads) == 1 else tuple(grads)
        if self.with_value:
            return outputs, result
        return (result, tuple(outputs[1:])) if self.has_aux else result

    def as_function(self, building):
        return forward_as_function(self.forward, building, summed=True,
                                   with_value=self.with_value, aux="tuple")

    @property
    def __s2sgrad_custom_vjp__(self):
        return derivative_rule(self)

    def __repr__(self):
        what = "value_and_grad" if self.with_value else "grad"
        aux = ", has_aux=True" if self.has_aux else ""
        return f"<s2sgrad {what} of {self.inner!r}{aux} (forward mode over its code)>"


def _check_aux(what, inner, outputs):
    """``has_aux`` (on ``what``) over a derivative object ``inner`` returning one output:
    refused as ``grad`` refuses it for a function (what to differentiate is not said)."""
    if not isinstance(outputs, tuple) or len(outputs) < 2:
        raise DerivativeCompositionError(
            f"{what}: has_aux takes a function returning (output, *aux), and "
            f"{inner.__name__} returns one value; leave out has_aux")


def jacobian_of_derivative(inner, grad_position, has_aux):
    """``jacrev(inner)`` of a derivative object: ``jacfwd(inner)`` (the same Jacobian;
    with ``has_aux``, ``(Jacobian of the first output, aux)`` as ``jacfwd`` gives it)."""
    return _jacfwd(inner, grad_position, has_aux)


def hessian_of_derivative(inner, grad_position, has_aux=False):
    """``hessian(inner)`` of a derivative object: ``jacfwd(jacfwd(inner))`` (with
    ``has_aux``: ``jacfwd(jacfwd(inner, has_aux=True), has_aux=True)``, ``(Hessian,
    aux)``)."""
    return _jacfwd(_jacfwd(inner, grad_position, has_aux), grad_position, has_aux)


def _jacfwd(inner, grad_position, has_aux=False):
    """``jacfwd(inner)``: its per-direction code and its batched twin (every direction in
    one sweep where each operation has a batched rule), as ``forward.jacfwd`` makes."""
    return JacfwdFunction(forward_function(inner, grad_position, has_aux, True),
                          forward_function(inner, grad_position, has_aux, True, True))


def hvp_of_derivative(inner, args, vs):
    """``hvp(inner, args, vs)`` of a derivative object: ``jvp(grad(inner), args, vs)``."""
    positions = tuple(range(len(args)))
    gradient = ReverseByForward(inner, positions, False)
    return jvp(gradient, tuple(args), tuple(vs))[1]


def vjp_of_derivative(inner, inputs, weights, has_aux):
    """``vjp(inner, *inputs)`` of a derivative object: its value and a function
    contracting a cotangent with its Jacobian by forward mode."""
    _refuse_options(inner, "vjp", weights)
    positions = tuple(range(len(inputs)))
    value = inner(*inputs)
    jacobian = JacfwdFunction(forward_function(inner, positions, has_aux, True))
    if has_aux:     # vjp's (outputs, vjp_fn, aux): the first output, the others' tuple
        _check_aux(f"vjp of {inner!r} with has_aux=True", inner, value)
        value, aux = value[0], (value[1] if len(value) == 2 else tuple(value[1:]))

    def vjp_fn(cotangent):
        columns = jacobian(*inputs)
        return cotangent_products(value, columns[0] if has_aux else columns, cotangent,
                                  inputs, len(inputs) > 1)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)
