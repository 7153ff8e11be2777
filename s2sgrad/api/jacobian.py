"""``jacobian``: the Jacobian by forward or reverse mode, whichever needs fewer sweeps.

``jacobian(fn, grad_position=0, has_aux=False)`` gives a function called like ``fn``
that returns what ``jacfwd`` and ``jacrev`` return (``out.shape + in.shape``, tuples
over outputs and positions).  Forward mode runs one sweep per input element, reverse
mode one per output element, so for each call signature (the type, shape and dtype of
every argument, the value of each int, bool, str or None) it runs ``jacfwd`` when the differentiated inputs
have at most as many elements as the output (a tall Jacobian), else ``jacrev``: JAX's
rule of thumb, decided for the caller.  The output's size is learnt by running ``fn``
once as Python per signature (its result is discarded); both modes give the same
Jacobian, so the choice changes only the time.  ``jacfwd`` and ``jacrev`` keep the
mode the user names.  A transform of a ``jacobian`` object, or one called inside a
differentiated function, is that of its ``jacfwd`` (the same Jacobian): the composition
hooks are the jacfwd's.
"""
import numpy as np

from ..tensor import Tensor
from ..trees import flatten, is_tree
from .arguments import check_function, check_has_aux, check_positions
from .forward import jacfwd
from .split import jacrev


def jacobian(fn=None, grad_position=0, has_aux=False):
    """The Jacobian function of ``fn`` w.r.t. the arguments at ``grad_position``, by the
    mode that needs fewer sweeps for each call's sizes: see the module doc.  A decorator
    too."""
    if fn is None:
        return lambda f: jacobian(f, grad_position, has_aux)
    fn = check_function(fn, "jacobian")
    if grad_position is None:
        raise TypeError("jacobian's grad_position must be an int or a tuple of ints, "
                        "got None")
    check_positions(grad_position)
    check_has_aux(has_aux)
    return JacobianFunction(fn, grad_position, has_aux)


def _size(value):
    """How many numbers ``value`` (an array, Tensor, number, or a tuple, list or dict of
    them) holds."""
    items = flatten(value)[0] if is_tree(value) else [value]
    return sum(int(np.size(np.asarray(v) if isinstance(v, Tensor) else v)) for v in items)


def _signature(args):
    """What a call's sizes are decided by: each leaf's type, shape and dtype, and the value
    of each int, bool, str or None (an option may set the output's size)."""
    leaves = flatten(tuple(args))[0]
    return tuple((type(v), v) if v is None or isinstance(v, (bool, int, str)) else
                 (type(v), np.shape(v), getattr(v, "dtype", None)) for v in leaves)


class JacobianFunction:
    """What ``jacobian`` returns: ``forward`` (a ``jacfwd``) or ``reverse`` (a ``jacrev``)
    runs each call, as ``mode_for`` decides per call signature (kept in ``modes``).  What
    a derivative of it or a differentiated function calling it reads (``derivative_mode``,
    ``as_function``, its rule inside...) is the ``jacfwd``'s."""

    def __getattr__(self, name):
        forward = self.__dict__.get("forward")
        if forward is None or name.startswith("__") and name != "__s2sgrad_custom_vjp__":
            raise AttributeError(name)
        return getattr(forward, name)

    def __init__(self, fn, grad_position, has_aux):
        self.fn, self.grad_position, self.has_aux = fn, grad_position, has_aux
        self.forward = jacfwd(fn, grad_position, has_aux)
        self.reverse = jacrev(fn, grad_position, has_aux)
        self.modes = {}            # call signature -> 'forward' or 'reverse'
        self.last = None           # the one that ran the last call
        self.__name__ = getattr(fn, "__name__", "function") + "_jacobian"
        self.__wrapped__ = fn

    def mode_for(self, args, kwargs):
        """'forward' when the differentiated inputs of this call have at most as many
        elements as ``fn``'s output (run once as Python to see it), else 'reverse'."""
        positions = check_positions(self.grad_position)
        inputs = sum(_size(args[p]) for p in positions if p < len(args))
        out = self.fn(*args, **kwargs)
        if self.has_aux:
            out = out[0]
        return "forward" if inputs <= _size(out) else "reverse"

    def __call__(self, *args, **kwargs):
        key = None if kwargs else _signature(args)
        mode = self.modes.get(key) if key is not None else None
        if mode is None:
            mode = self.mode_for(args, kwargs)
            if key is not None:
                self.modes[key] = mode
        self.last = self.forward if mode == "forward" else self.reverse
        return self.last(*args, **kwargs)

    @property
    def source(self):
        return self.last.source if self.last is not None else None

    @property
    def backend(self):
        return self.last.backend if self.last is not None else "undecided"

    @property
    def fallback_reason(self):
        return self.last.fallback_reason if self.last is not None else (
            "Not decided yet: jacobian picks forward or reverse mode on the first call, "
            "by the sizes of that call's inputs and output.")

    def __repr__(self):
        mode = {None: "not called yet"}.get(self.last, repr(self.last))
        return f"<s2sgrad jacobian of {self.__name__[:-len('_jacobian')]}: {mode}>"


__all__ = ["jacobian", "JacobianFunction"]
