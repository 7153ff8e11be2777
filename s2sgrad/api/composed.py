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


def _refuse_options(inner, what, weights=None, has_aux=False, return_ids=False):
    if weights is not None or has_aux or return_ids:
        raise DerivativeCompositionError(
            f"{what} of the derivative object {inner.__name__} with weights, has_aux or "
            f"return_ids: a derivative of a derivative object takes positions only; "
            f"differentiate a function of the arguments instead")


def reverse_of_derivative(inner, grad_position, weights, has_aux, return_ids, with_value):
    """``grad(inner, grad_position)`` (``value_and_grad`` with ``with_value``) of a
    derivative object ``inner`` (module doc)."""
    _refuse_options(inner, "value_and_grad" if with_value else "grad", weights, has_aux,
                    return_ids)
    if grad_position is None:
        raise DerivativeCompositionError(
            f"grad of the derivative object {inner.__name__} with grad_position=None: "
            f"name the positions to differentiate")
    return ReverseByForward(inner, grad_position, with_value)


class ReverseByForward:
    """``grad``/``value_and_grad`` of a derivative object (module doc): the Jacobian of
    ``inner`` by forward mode, summed over ``inner``'s outputs."""

    #: a derivative object: the front end never reads the function it wraps
    derivative_mode = "grad_of_derivative"

    def __init__(self, inner, grad_position, with_value):
        check_positions(grad_position)
        self.inner = inner
        self.grad_position = grad_position
        self.positions = check_positions(grad_position)
        self.with_value = with_value
        self.forward = forward_function(inner, grad_position, False, True)
        self.__name__ = inner.__name__ + "_grad"
        self.__wrapped__ = inner

    def _signature_target(self):
        return self.forward._signature_target()

    def __call__(self, *args, **kwargs):
        jacobian = self.forward(*args, **kwargs)
        value = self.inner(*args, **kwargs)
        blocks = [b for _, b in output_pairs(value, value, jacobian)]   # per array of value
        args = self.forward._complete(args, kwargs)
        grads = [summed_blocks([block if isinstance(self.grad_position, int) or
                          len(self.positions) == 1 else block[i] for block in blocks],
                         args[p]) for i, p in enumerate(self.positions)]
        result = grads[0] if len(grads) == 1 else tuple(grads)
        return (value, result) if self.with_value else result

    def as_function(self, building):
        return forward_as_function(self.forward, building, summed=True,
                                   with_value=self.with_value)

    @property
    def __s2sgrad_custom_vjp__(self):
        return derivative_rule(self)

    def __repr__(self):
        what = "value_and_grad" if self.with_value else "grad"
        return f"<s2sgrad {what} of {self.inner!r} (forward mode over its code)>"


def jacobian_of_derivative(inner, grad_position, has_aux):
    """``jacrev(inner)`` of a derivative object: ``jacfwd(inner)`` (the same Jacobian)."""
    _refuse_options(inner, "jacrev", has_aux=has_aux)
    return _jacfwd(inner, grad_position)


def hessian_of_derivative(inner, grad_position):
    """``hessian(inner)`` of a derivative object: ``jacfwd(jacfwd(inner))``."""
    return _jacfwd(_jacfwd(inner, grad_position), grad_position)


def _jacfwd(inner, grad_position):
    """``jacfwd(inner)``: its per-direction code and its batched twin (every direction in
    one sweep where each operation has a batched rule), as ``forward.jacfwd`` makes."""
    return JacfwdFunction(forward_function(inner, grad_position, False, True),
                          forward_function(inner, grad_position, False, True, True))


def hvp_of_derivative(inner, args, vs):
    """``hvp(inner, args, vs)`` of a derivative object: ``jvp(grad(inner), args, vs)``."""
    positions = tuple(range(len(args)))
    gradient = ReverseByForward(inner, positions, False)
    return jvp(gradient, tuple(args), tuple(vs))[1]


def vjp_of_derivative(inner, inputs, weights, has_aux):
    """``vjp(inner, *inputs)`` of a derivative object: its value and a function
    contracting a cotangent with its Jacobian by forward mode."""
    _refuse_options(inner, "vjp", weights, has_aux)
    positions = tuple(range(len(inputs)))
    value = inner(*inputs)
    jacobian = JacfwdFunction(forward_function(inner, positions, False, True))

    def vjp_fn(cotangent):
        return cotangent_products(value, jacobian(*inputs), cotangent, inputs,
                                  len(inputs) > 1)
    return value, vjp_fn
