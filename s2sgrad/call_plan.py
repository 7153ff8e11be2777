"""What a repeated call of a gradient can skip: the checks and flattening its first call did.

A gradient's first call with arguments of some types checks them (positions in range,
floating-point values where it differentiates), flattens containers, builds or finds
the code for their signature and learns which results are gradients of what.  A later
call whose arguments have the same ``plan_key`` passes the same checks and runs the same
code, so ``GradFunction.__call__`` keeps a ``CallPlan`` per key and, on a hit, only takes
the arrays out of Tensors, runs the code and shapes the results (a few microseconds less
per call: it matters for small gradients called in a loop).

Only calls with positional arguments that are each a single value (an array, a Tensor, a
number, an option such as None or a string) are planned; containers, keywords and
defaults filled in take the full path every time.
"""
import numpy as np

from .compiler.shapes import unit_dimensions
from .tensor import Tensor


def plan_key(args):
    """A key at least as fine as the signature the code is built for (dtype, rank and unit
    dimensions of each array, the value of each option), telling Tensors from arrays;
    None when the call cannot be planned (an argument is a tuple, list or dict)."""
    key = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key.append((a.dtype, a.ndim, 1 in a.shape and unit_dimensions(a)))
        elif kind is Tensor:
            data = a._data
            key.append((Tensor, data.dtype, data.ndim, 1 in data.shape and unit_dimensions(data)))
        elif kind is float or kind is int:
            key.append(kind)
        elif a is None or kind is bool or kind is str or kind is np.bool_:
            key.append(("option", kind, a))
        elif kind is tuple or kind is list or kind is dict:
            return None
        elif isinstance(a, np.ndarray):      # a subclass: built as its base class
            key.append((kind, a.dtype, a.ndim, unit_dimensions(a)))
        else:
            key.append(kind)
    return tuple(key)


def free_units_changed(free_values, arrays):
    """True when an array the code reads from outside (a Parameter, a global) no longer
    has 1s where it had them when the code was built: the code must be built again."""
    for value, array in zip(free_values, arrays):
        units = value.units
        if units is not None and (1 in array.shape or True in units or
                                  len(units) != array.ndim) and unit_dimensions(array) != units:
            return True
    return False


class CallPlan:
    """For one ``plan_key``: the code's signature (the key of ``GradFunction._variants``),
    which arguments are Tensors, and where each gradient the code returns goes.

    ``positions``: per differentiated position, in order, the index of its result among the
    code's computed results (None: not computed, the gradient is zeros); ``weights``: the
    same per weight.
    """

    def __init__(self, signature, generated, args):
        self.signature = signature
        self.tensor_args = any(type(a) is Tensor for a in args)
        self.tensor_free = any(isinstance(f.obj, Tensor) for f in generated.free)
        self.positions, self.weights = [], []
        index = 0
        for (kind, i), has in zip(generated.wrt, generated.computed):
            slot = index if has else None
            index += has
            (self.positions if kind == "position" else self.weights).append((i, slot))
