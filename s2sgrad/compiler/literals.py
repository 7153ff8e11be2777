"""How values known at build time appear in generated code.

Plain constants (numbers, strings, None, tuples and slices of them, dtypes)
are written as literals; numpy, math and builtin callables by their public
name (``np.exp``, ``math.sin``, ``len``).  Anything else (an array, a user
object) cannot be a literal: the lowering passes it to the generated
function as an extra argument.
"""
import math

import gast
import numpy as np

from .. import runtime as rt
from ..dtype import DType
from ..rules import lookup
from ..tensor import Tensor
from . import imports
from .imports import fixed_path
from .ir import FreeValue
from .syntax import attribute, name_node


def is_array_like(obj):
    """True for the values that enter generated code as array arguments: ndarrays and Tensors."""
    return isinstance(obj, (np.ndarray, Tensor))


def as_numpy_dtype(value):
    """A dtype-like (DType, numpy dtype, scalar type) -> the numpy scalar type; others unchanged."""
    if isinstance(value, DType):
        return value.np.type
    if isinstance(value, np.dtype):
        return value.type
    return value


def public_path(obj):
    """('np', 'linalg', 'inv') style path of a numpy/math/builtin callable, or None."""
    return fixed_path(obj)


def reference_node(obj, lowerer):
    """The expression that names callable ``obj`` in generated code: numpy, math and
    builtins by their public name, s2sgrad's runtime helpers as ``rt.<name>``; another
    library's function that has a derivative rule
    through its module (imported by the generated module); anything else is passed in."""
    path = public_path(obj)
    if path is not None:
        return attribute(*path) if len(path) > 1 else name_node(path[0])
    name = getattr(obj, "__name__", None)
    if isinstance(name, str) and getattr(rt, name, None) is obj and callable(obj):
        return attribute("rt", name)   # a helper of generated code, differentiated again
    if lowerer is not None and lookup(obj) is not None:
        node = imports.reference(obj, lowerer.names)
        if node is not None:
            return node
    return _free_reference(obj, lowerer)


def literal_node(value, lowerer=None):
    """The literal expression of a build-time constant (or a free argument for other objects)."""
    if value is None or isinstance(value, (bool, int, float, complex, str)) or value is Ellipsis:
        if isinstance(value, float) and math.isnan(value):
            return attribute("np", "nan")
        if isinstance(value, float) and math.isinf(value):
            inf = attribute("np", "inf")
            return inf if value > 0 else gast.UnaryOp(op=gast.USub(), operand=inf)
        return gast.Constant(value=value, kind=None)
    if isinstance(value, tuple):
        return gast.Tuple(elts=[literal_node(v, lowerer) for v in value], ctx=gast.Load())
    if isinstance(value, slice):
        return gast.Call(func=name_node("slice"), args=[literal_node(v, lowerer) for v in
                                                    (value.start, value.stop, value.step)],
                         keywords=[])
    if isinstance(value, DType):
        return attribute("np", value.np.name if value.np.name != "bool" else "bool_")
    if isinstance(value, np.dtype):
        return attribute("np", value.name if value.name != "bool" else "bool_")
    if isinstance(value, type) and issubclass(value, np.generic):
        return attribute("np", np.dtype(value).name if value is not np.bool_ else "bool_")
    if isinstance(value, np.generic) and np.ndim(value) == 0:
        return gast.Call(func=attribute("np", np.dtype(type(value)).name),
                         args=[gast.Constant(value=value.item(), kind=None)], keywords=[])
    if callable(value) and public_path(value) is not None:
        return reference_node(value, lowerer)
    return _free_reference(value, lowerer)


def is_literal(value):
    """True when ``value`` is written into generated code as a literal."""
    if value is None or isinstance(value, (bool, int, float, complex, str, DType, np.dtype,
                                           np.generic)) or value is Ellipsis:
        return True
    if isinstance(value, type) and issubclass(value, np.generic):
        return True
    if isinstance(value, (tuple, slice)):
        parts = value if isinstance(value, tuple) else (value.start, value.stop, value.step)
        return all(is_literal(v) for v in parts)
    return False


def _free_reference(obj, lowerer):
    if lowerer is None:
        raise ValueError(f"{obj!r} has no literal form")
    key = id(obj)
    if key not in lowerer.free:
        path = lowerer.paths.get(key) or getattr(obj, "__name__", None) or type(obj).__name__
        name = lowerer.names.variable("".join(c if c.isalnum() else "_" for c in path).strip("_")
                                   or "value")
        lowerer.free[key] = FreeValue(name, obj, path)
        lowerer.free_objects.append(obj)
    lowerer.names.claim(lowerer.free[key].name)   # kept across a discarded reverse attempt
    return name_node(lowerer.free[key].name)
