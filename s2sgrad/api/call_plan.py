"""What a repeated call of a derivative can skip: the checks and flattening its first call did.

A derivative's first call with arguments of some types checks them (positions in range,
floating-point values where it differentiates), flattens containers, builds or finds
the code for their signature and learns which results are gradients of what.  A later
call whose arguments have the same ``plan_key`` passes the same checks and runs the same
code, so a derivative (``api.derivative.Derivative``: ``GradFunction``, and
``ForwardFunction`` for ``jvp`` and ``jacfwd``, ``SplitFunction`` for ``vjp`` and
``jacrev``) keeps a ``CallPlan`` per key and, on a hit,
only takes the arrays out of Tensors, reads the values the code reads from outside, runs
the code (for gradients and jvp the Numba dispatcher itself, ``Compiled.runner``) and
shapes the results: microseconds less per call, which matters for small derivatives
called in a loop (``benchmarks/bench_call_overhead.py``).

Only calls with positional arguments that are each a single value (an array, a Tensor, a
number, an option such as None or a string) are planned; containers, keywords and
defaults filled in take the full path every time.
"""
import numpy as np

from ..compiler.analysis.shapes import unit_dimensions
from ..runtime import buffers
from ..tensor import Tensor

#: the bits of ``ndarray.flags.num`` that Numba types an array by (NumPy's C API values):
#: C-contiguous 0x1, Fortran-contiguous 0x2, aligned 0x100, writeable 0x400
NUMBA_FLAGS = 0x1 | 0x2 | 0x100 | 0x400
#: those of a C-ordered, aligned, writeable array (what Numba types as a plain C array)
C_ALIGNED_WRITEABLE = 0x1 | 0x100 | 0x400


def plan_key(args):
    """A key at least as fine as the signature the code is built for (dtype, rank, unit
    dimensions and size class of each array, the value of each option) and as the types
    Numba compiles for (an array's layout and writeability), telling Tensors and
    Parameters from arrays; None when the call cannot be planned (an argument is a
    tuple, list or dict)."""
    key = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key.append(_array_key(kind, a))
        elif kind is float or kind is int:
            key.append(kind)
        elif kind is Tensor:
            key.append(_array_key(kind, a._data))
        elif a is None or kind is bool or kind is str or kind is np.bool_:
            key.append(("option", kind, a))
        elif isinstance(a, (tuple, list, dict)):    # a namedtuple too: flattened
            return None
        elif isinstance(a, Tensor):          # a Parameter
            key.append(_array_key(kind, a._data))
        elif isinstance(a, np.ndarray):      # a subclass: built as its base class
            key.append(_array_key(kind, a))
        else:
            key.append(kind)
    return tuple(key)


def _array_key(kind, array):
    """What ``plan_key`` keeps of an array (``kind``: the argument's type)."""
    return (kind, array.dtype, array.ndim, array.flags.num & NUMBA_FLAGS,
            1 in array.shape and unit_dimensions(array),
            array.nbytes >= buffers.KEEP_BYTES)     # its size class (``large_array``)


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
    """What calls with one ``plan_key`` reuse: the code built for them (``signature``, the
    key of ``Derivative._variants``, and its ``variant``: Generated, Compiled, path),
    whether Tensors are among the arguments or the values the code reads from outside
    (``free``), and ``run``: what runs the code for these argument types.

    ``inputs`` are the code's arguments at the call that made the plan.  Without free
    values ``run`` is the Numba dispatcher itself (``Compiled.runner``: the plan key
    fixes the types Numba sees); with them, whose types may change between calls, the
    ``Compiled`` that looks them up (and the ``Compiled`` too once its ``backend`` is no
    longer ``backend``: a later call that Numba could not compile made it run as Python).
    """

    def __init__(self, signature, variant, args, inputs):
        self.signature, self.variant = signature, variant
        generated, compiled, _ = variant
        self.generated = generated
        self.free = tuple(generated.free)
        #: whether the code took values from outside that are checked at each call
        self.guarded = bool(getattr(generated, "guards", ()))
        self.tensor_args = any(isinstance(a, Tensor) for a in args)
        self.tensor_free = any(isinstance(f.obj, Tensor) for f in self.free)
        self.run = compiled if self.free else compiled.runner(inputs)
        self.backend = compiled.backend     # what ``run`` runs the code with


class GradientPlan(CallPlan):
    """A ``CallPlan`` of a gradient, with where each gradient the code returns goes:
    ``positions``, per differentiated position in order, (the argument's index, the index
    of its gradient among the code's computed results or None: not computed, zeros);
    ``weights`` the same per weight, and ``weight_list`` the Parameters themselves."""

    def __init__(self, signature, variant, args, inputs, weight_list):
        super().__init__(signature, variant, args, inputs)
        self.weight_list = weight_list
        self.positions, self.weights = [], []
        index = 0
        for (kind, i), has in zip(self.generated.wrt, self.generated.computed):
            slot = index if has else None
            index += has
            (self.positions if kind == "position" else self.weights).append((i, slot))
