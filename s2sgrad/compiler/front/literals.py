"""How atoms and values known at build time appear in generated code.

``atom_node(atom)`` is the one function that turns an atom of the IR into the
expression that reads it: a Var by its name, a Seq as a tuple, list or
``slice(...)`` of its items, a Const as a literal.  Plain constants (numbers,
strings, None, tuples and slices of them, dtypes) are written as literals;
numpy, math and builtin callables by their public name (``np.exp``,
``math.sin``, ``len``).  Anything else (an array, a user object) cannot be a
literal: while lowering (``lowerer`` given: a ``lower_atoms.Atoms``) it is captured,
that is passed to the generated function as an extra argument (``Atoms.capture``);
after lowering it is an error.
"""
import math

import gast
import numpy as np

from ... import runtime as rt
from ...dtype import DType
from ...errors import UnsupportedConstructError
from ...rules import lookup
from ...tensor import Tensor
from ..ir import DictAtom, Seq, Var
from ..syntax import imports
from ..syntax.imports import fixed_path
from ..syntax.nodes import attribute, name_node


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
    return _captured(obj, lowerer)


def atom_node(atom, lowerer=None):
    """The expression that reads ``atom`` in generated code (see the module doc)."""
    if isinstance(atom, DictAtom):
        raise UnsupportedConstructError(
            "a dict used as a whole value (s2sgrad reads dicts by constant keys only)",
            None, None, "read its items with constant keys (d['w']) and pass or return "
            "those")
    if isinstance(atom, Var):
        return name_node(atom.name)
    if isinstance(atom, Seq):
        nodes = [atom_node(a, lowerer) for a in atom.items]
        if atom.kind == "slice":
            return gast.Call(func=name_node("slice"), args=nodes, keywords=[])
        if atom.kind == "list":
            return gast.List(elts=nodes, ctx=gast.Load())
        return gast.Tuple(elts=nodes, ctx=gast.Load())
    return literal_node(atom.value, lowerer)


#: numpy's abstract scalar types (``isinstance(x, np.floating)``), which have no dtype
_ABSTRACT_SCALARS = frozenset({"bool_", "generic", "number", "integer", "signedinteger",
                               "unsignedinteger", "inexact", "floating", "complexfloating"})


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
        if value is np.bool_ or getattr(np, value.__name__, None) is value and \
                value.__name__ in _ABSTRACT_SCALARS:   # np.floating, np.integer: no dtype
            return attribute("np", value.__name__)
        return attribute("np", np.dtype(value).name)
    if isinstance(value, np.generic) and np.ndim(value) == 0:
        return gast.Call(func=attribute("np", np.dtype(type(value)).name),
                         args=[gast.Constant(value=value.item(), kind=None)], keywords=[])
    if callable(value) and public_path(value) is not None:
        return reference_node(value, lowerer)
    return _captured(value, lowerer)


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


def _captured(obj, lowerer):
    """The argument that passes ``obj`` in (see ``lower_atoms.Atoms.capture``); an object
    made while building that is no value (``__s2sgrad_not_a_value__``: what it is, what
    to write) is refused."""
    refusal = getattr(obj, "__s2sgrad_not_a_value__", None)
    if refusal is not None:
        raise UnsupportedConstructError(f"{refusal[0]} used as a value", None, None,
                                        refusal[1])
    if lowerer is None:
        raise ValueError(f"{obj!r} has no literal form")
    return name_node(lowerer.capture(obj))


class Captured:
    """What the lowering passed in as extra arguments (``LoweredFunction.free``), for the
    passes after it: a constant with no literal form (a module-level list of arrays, a
    tuple of them) is read through the argument that passes it, as the forward code
    reads it.  Stands for the lowerer in ``atom_node(atom, captured)``."""

    def __init__(self, free, names):
        self.by_id = {id(f.obj): f.name for f in free}
        self.names = names

    def capture(self, obj):
        """The argument's name of ``obj``; ValueError when the lowering did not pass it."""
        try:
            return self.by_id[id(obj)]
        except KeyError:
            raise ValueError(f"{obj!r} has no literal form") from None
