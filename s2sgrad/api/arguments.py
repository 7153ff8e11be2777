"""The checks and conversions of what a derivative takes, shared by every mode.

Takes the options a transform is given (``grad_position``, ``weights``, ``has_aux``,
``return_ids``) and the values a derivative is called with; gives the reference's
errors for bad ones (see docs/mindspore-semantics.md), and for good ones what the code
is specialised on (``argument_signature``, ``argument_types``, the size class
``large_arguments``) and what it takes
(``to_array``, ``free_values``, whether Numba can take a value: ``numba_argument``).
"""
import math

import numpy as np

from ..compiler.analysis.shapes import unit_dimensions
from ..compiler.front.library_functions import is_package_function, library_as_function
from ..compiler.front.partials import is_partial, partial_as_function
from ..errors import GradientTypeError
from ..runtime import buffers
from ..tensor import Parameter, Tensor

# ---------------------------------------------------------------- options


def check_function(fn, api):
    """``fn`` must be callable; an int or tuple there is a grad_position passed as the
    function (``@grad(1)``).  Gives what ``api`` transforms: ``fn``, for a ``jit``
    object the function it compiles (``__s2sgrad_transparent__``: every transform of
    ``jit(f)`` is that of ``f``), for a ``functools.partial`` or a library function
    (``np.sum``, ``scipy.special.logsumexp``) a function with source doing what it does
    (``front/partials.py``, ``front/library_functions.py``)."""
    if is_partial(fn):
        fn = partial_as_function(fn)    # functools.partial(f, ...): a wrapper with source
    elif is_package_function(fn):
        fn = library_as_function(fn)    # grad(np.sum): a def calling it, by its rule
    if callable(fn):
        return getattr(fn, "__s2sgrad_transparent__", fn)
    if isinstance(fn, (int, tuple)) and not isinstance(fn, bool):
        raise TypeError(
            f"{api}'s first argument is the function to differentiate, got {fn!r}; as a "
            f"decorator with options, name them: @{api}(grad_position={fn!r})")
    raise TypeError(f"{api} differentiates a function, a method or a Cell, got "
                    f"{with_article(type(fn).__name__)}: {fn!r}")


def check_options(grad_position, weights, has_aux, return_ids):
    """The reference's checks of ``grad``'s options, before any function is seen."""
    if grad_position is None and weights is None:
        raise ValueError("grad_position and weights can not both be None")
    check_has_aux(has_aux)
    if not isinstance(return_ids, bool):
        raise TypeError(f"return_ids must be a bool, got {type(return_ids).__name__}")
    check_positions(grad_position)
    if not is_weights_function(weights):
        check_weights(weights)


def check_has_aux(has_aux):
    if not isinstance(has_aux, bool):
        raise TypeError(f"has_aux must be a bool, got {type(has_aux).__name__}")


def check_positions(grad_position):
    """``grad_position`` as a tuple of positions (None stays None), or the reference's
    error for a bad one."""
    if grad_position is None:
        return None
    if isinstance(grad_position, bool) or not isinstance(grad_position, (int, tuple)):
        raise TypeError(f"grad_position must be an int or a tuple of ints, got "
                        f"{type(grad_position).__name__}: {grad_position!r}")
    positions = (grad_position,) if isinstance(grad_position, int) else grad_position
    for p in positions:
        if not isinstance(p, int):
            raise TypeError(f"every element of grad_position must be an int, got "
                            f"{type(p).__name__}: {p!r}")
        if p < 0:
            raise ValueError(f"grad_position must be non-negative, got {p}")
    if len(set(positions)) != len(positions):
        raise ValueError(f"grad_position must not repeat a position, got {grad_position!r}")
    return positions


def check_weights(weights):
    """``weights`` as a Parameter or a tuple of them (None stays None), or an error."""
    if weights is None:
        return None
    if isinstance(weights, Parameter):
        return weights
    if isinstance(weights, (list, tuple)):
        for w in weights:
            if not isinstance(w, Parameter):
                raise TypeError(f"weights must hold Parameters, got "
                                f"{with_article(type(w).__name__)} ({w!r}); wrap the value "
                                f"as Parameter(Tensor(...), name=...)")
        return tuple(weights)
    raise TypeError(f"weights must be a Parameter, a list or a tuple of Parameters, got "
                    f"{type(weights).__name__}")


def is_weights_function(weights):
    """A function giving the weights from the instance (``nn.Cell.trainable_params``)."""
    return callable(weights) and not isinstance(weights, (Parameter, list, tuple))


# ---------------------------------------------------------------- arguments


def check_differentiable(position, value, path=""):
    """Refuse a value at a differentiated position (``path``: where it sits inside a tuple,
    list or dict argument, e.g. ``[1]``) that is not floating point, saying what to pass."""
    what = f"the argument at grad_position {position}" + (f", item {path}," if path else "")
    if isinstance(value, (bool, np.bool_)):
        raise GradientTypeError(
            f"{what} is a bool ({bool(value)!r}); only floating-point values can be "
            f"differentiated: pass a float (e.g. 1.0) or a float array")
    if isinstance(value, (int, np.integer)):
        raise GradientTypeError(
            f"{what} is an integer ({int(value)!r}); only floating-point values can be "
            f"differentiated: pass a float (e.g. {float(value)!r}) or a float array")
    if isinstance(value, np.ndarray) and value.dtype.kind not in "fc":
        raise GradientTypeError(
            f"{what} is an array of dtype {value.dtype}; only floating-point arrays can be "
            f"differentiated: cast it with .astype(np.float32) or .astype(np.float64)")
    if not isinstance(value, (float, complex, np.floating, np.complexfloating, np.ndarray)):
        raise GradientTypeError(
            f"{what} is {with_article(type(value).__name__)}; s2sgrad differentiates floats, "
            f"float arrays and Tensors, and tuples, lists and dicts of them: pass one of those")


def is_option(value):
    """None, a bool or a string argument: an option the code is built for, by value (so
    ``if mask is None`` and ``if mode == 'sum'`` fold while building)."""
    return value is None or isinstance(value, (bool, np.bool_, str))


def argument_signature(value):
    """What the code is specialised on: an array's dtype, rank and which dimensions are 1
    (so broadcasting is decided while building), an option's value, else the type."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.ndim, unit_dimensions(value))
    if is_option(value):
        return ("option", type(value), value)
    return type(value)


def argument_types(arrays):
    """Per argument: (numpy dtype, ndim, which dimensions are 1, shape) for arrays
    (the shape is read only by a build that unrolls a recursion ending by shapes),
    ("const", value) for options (None, bools, strings), None for anything else: the
    argument types the compiler builds for."""
    if arrays is None:
        return None
    out = []
    for a in arrays:
        if is_option(a):
            out.append(("const", a))
        elif isinstance(a, np.ndarray):
            out.append((a.dtype, a.ndim, unit_dimensions(a), a.shape))
        elif isinstance(a, (int, np.integer)) and not isinstance(a, bool):
            out.append(("int", 0))
        elif isinstance(a, np.floating):
            out.append((a.dtype, 0))
        elif isinstance(a, float):
            out.append((None, 0))
        else:
            out.append(None)
    return out


def large_array(value):
    """Whether ``value`` is an array of ``rt.Buffers``' ``KEEP_BYTES`` or more: the size
    class of an argument (``large_arguments``)."""
    return isinstance(value, np.ndarray) and value.nbytes >= buffers.KEEP_BYTES


def large_arguments(arg_types):
    """Whether some array among ``arg_types`` (as ``argument_types`` gives, or None) has
    ``KEEP_BYTES`` or more: the size class code that keeps its arrays between calls is
    built for (``kept.subtract(a, b)`` pays on large arrays only; small programs keep
    numpy's operators).  The same answer as ``large_array`` on the arrays themselves."""
    return any(isinstance(t, tuple) and len(t) == 4 and
               math.prod(t[3]) * np.dtype(t[0]).itemsize >= buffers.KEEP_BYTES
               for t in arg_types or ())


def is_array(obj):
    return isinstance(obj, (np.ndarray, Tensor))


def to_array(obj):
    """A Tensor's array; anything else as it is."""
    return np.asarray(obj) if isinstance(obj, Tensor) else obj


def free_values(generated, free=None):
    """The values the code of ``generated`` (or the FreeValues ``free``) reads from
    outside (Parameters, globals), read now: an array from where the function read it
    (``FreeValue.source``: a global rebound to a new array is seen), arrays out of
    Tensors, other objects as they are."""
    values = []
    for f in (generated.free if free is None else free):
        obj = f.obj if f.source is None else f.source.read()
        values.append(to_array(obj) if is_array(obj) else obj)
    return values


def numba_argument(obj):
    """Whether compiled code can take ``obj`` as an argument."""
    return is_array(obj) or isinstance(obj, (int, float, bool, np.generic))


def python_objects_reason(paths):
    """Why code reading the Python objects at ``paths`` runs as Python (None if none)."""
    if not paths:
        return None
    return (f"The function reads {', '.join(paths)}, which compiled code cannot take as "
            f"{'an argument' if len(paths) == 1 else 'arguments'} (only arrays, Tensors and "
            f"numbers), so the gradient runs as Python (correct, slower). To run it "
            f"compiled, read arrays or numbers there instead.")


# ---------------------------------------------------------------- words for messages


def with_article(noun):
    """``noun`` with its indefinite article: 'a float', 'an int'."""
    return ("an " if noun[:1].lower() in "aeiou" or noun == "ndarray" else "a ") + noun


def count_text(n, noun):
    """'1 argument', '2 arguments'."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def positions_text(n):
    """The argument positions of a call with ``n`` arguments: 'none', '0', '0 to 2'."""
    return "none" if n == 0 else "0" if n == 1 else f"0 to {n - 1}"


def zero_tangent(arg, tangent):
    """Whether ``tangent`` is a float array of zeros (an exact zero tangent) of the array
    ``arg``: its first number read first (a tangent that is not zero there costs no
    pass over it), then ``all_zeros``.  Its input's tangent terms then add nothing and
    are not computed (``forward.jvp``, ``inside.gradient_rule``: the result is the
    derivative along the other inputs' tangents, exactly; an infinity or NaN the terms
    would have multiplied by 0 gives no NaN, as the derivative along 0 is 0)."""
    return type(tangent) is np.ndarray and type(arg) is np.ndarray and \
        tangent.dtype.kind == "f" and tangent.shape == arg.shape and tangent.size > 0 and \
        tangent.item(0) == 0 and all_zeros(tangent)


#: the numbers ``all_zeros`` reads at a time (512 KiB of float64: in a second-level cache;
#: numpy's own pass is ~2.5x slower per number in blocks of 4,096)
SCAN_BLOCK = 65536


def all_zeros(array):
    """Whether every number of ``array`` is 0: a pass over it in blocks of ``SCAN_BLOCK``,
    stopping at the first block holding another number (one pass for an array that
    is not contiguous)."""
    if not array.flags.c_contiguous:
        return not array.any()
    flat = array.reshape(-1)
    for start in range(0, flat.size, SCAN_BLOCK):
        if flat[start:start + SCAN_BLOCK].any():
            return False
    return True
