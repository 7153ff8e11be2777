"""A derivative object called inside a function being differentiated, inlined.

``inlined_derivative(calls, frame, node, obj, args, kwargs)`` takes the call lowerer at
a call of an object that offers its own code (``__s2sgrad_inline_call__``: a plain
``grad(f, positions)`` or ``value_and_grad(f, positions)``, ``api/nested.py``; a
``jacfwd(f)``, ``api/evaluated.py``), the argument types this lowering knows for
the call's atoms, and gives the call's result atom: the object's generated gradient
code in its differentiable spelling, lowered as a callee like the user's own functions,
so the outer generated code holds its statements (no Python-level call per use, one
module for Numba) and the outer transform differentiates them.  It gives None where
the object declines (options, helpers with no reverse rule, a build by sizes) or where
an argument's rank is not known here: the call then takes the object's custom rule
(``api/inside.py``), or in a function compiled by ``s2sgrad.jit`` (``primal``: its code
is not differentiated, so the object inlines code whatever helpers it calls) is called as
it is.
"""
import inspect

import numpy as np

from ..ir import Const, Seq, Var


def inlined_derivative(calls, frame, node, obj, args, kwargs):
    """The result atom of the call ``obj(*args)`` with ``obj``'s code inlined, or None
    (module doc)."""
    offer = getattr(obj, "__s2sgrad_inline_call__", None)
    # the gradient has its argument's rank, dtype and shape:
    # ``__s2sgrad_result_like__`` is the argument position of each result (one int: one)
    if offer is None or kwargs:
        return None
    args = tuple(args) + _defaults_after(obj, len(args))
    arg_types = [argument_type(calls.types, a) for a in args]
    if any(t is None for t in arg_types):
        return None
    function = offer(arg_types, primal=True) if calls.state.primal else offer(arg_types)
    if function is None:
        return None
    result = calls.inline(frame, node, function, tuple(args), {}, None)
    like = function.__s2sgrad_result_like__
    grads = result
    if getattr(function, "__s2sgrad_with_value__", False):     # (value, gradients)
        grads = result.items[1] if isinstance(result, Seq) and len(result.items) == 2 \
            else None
    elif getattr(function, "__s2sgrad_has_aux__", False):      # (gradients, aux)
        grads = result.items[0] if isinstance(result, Seq) and len(result.items) == 2 \
            else None
    items = grads.items if isinstance(grads, Seq) and not isinstance(like, int) else [grads]
    for item, p in zip(items, [like] if isinstance(like, int) else like):
        _like_argument(calls.types, item, args[p])
    return result


def _defaults_after(obj, count):
    """The defaults of the parameters of the function ``obj`` differentiates after its
    first ``count`` (``grad(f)(w)`` of ``def f(w, scale=2.0)``: its code takes every
    parameter), as constants (``defaults_as_constants``)."""
    complete = getattr(obj, "_complete", None)
    if complete is None:
        return ()
    complete((), {}, bind=False)
    signature = getattr(obj, "_signature", None)
    return defaults_as_constants(signature.parameters.values() if signature else (), count)


def defaults_as_constants(params, count):
    """The defaults of ``params`` after the first ``count`` as constants: what a call
    that gives only those passes to code that takes every parameter; () where one has no
    default or takes ``*args``/``**kwargs`` (the call's error then says so)."""
    rest = list(params)[count:]
    if any(p.default is inspect.Parameter.empty or p.kind in (
            inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) for p in rest):
        return ()
    return tuple(Const(p.default) for p in rest)


def _like_argument(types, atom, arg):
    """Record that ``atom``, a gradient, has the rank, dtype and shape of ``arg`` (what
    the inlined code leaves unknown after an in-place write, so that a loop carrying it
    keeps its rank)."""
    if not isinstance(atom, Var):
        return
    ndim, shape = types.ndim_of(arg), types.shape_of(arg)
    if ndim is not None:
        types.ndims[atom.name] = ndim
    if shape is not None and types.ndims.get(atom.name) == len(shape):
        types.shapes.of[atom.name] = shape
    dtype = types.dtypes.get(arg.name) if isinstance(arg, Var) else None
    if dtype is not None:
        types.dtypes[atom.name] = dtype


def argument_type(types, atom):
    """What ``api.arguments.argument_types`` gives for a value like ``atom`` (its dtype,
    rank and which dimensions are 1, as far as ``types``, the lowering's ``TypeInfo``,
    knows them), or None where its rank is not known or it is a structure."""
    if isinstance(atom, Const):
        return _constant_type(atom.value)
    if not isinstance(atom, Var):
        return None
    name = atom.name
    if name in types.int_vars:
        return ("int", 0)
    ndim = types.ndims.get(name)
    if ndim is None:
        return None
    dtype = types.dtypes.get(name) or types.param_types.get(name, (None,))[0]
    if ndim == 0:
        return (dtype if isinstance(dtype, np.dtype) else None, 0)
    shape = types.shape_of(atom)
    ones = None if shape is None or len(shape) != ndim else tuple(
        True if d == 1 else (False if getattr(d, "not_one", False) is True or
                             isinstance(d, int) else None) for d in shape)
    return (dtype if isinstance(dtype, np.dtype) else np.dtype(np.float64), ndim, ones)


def _constant_type(value):
    if value is None or isinstance(value, (bool, str)):
        return ("const", value)
    if isinstance(value, np.ndarray):
        return (value.dtype, value.ndim, tuple(n == 1 for n in value.shape), value.shape)
    if isinstance(value, (int, np.integer)):
        return ("int", 0)
    if isinstance(value, np.floating):
        return (value.dtype, 0)
    if isinstance(value, float):
        return (None, 0)
    return None
