"""What is known while building about the rank and float dtype of values, mixed into the
Lowerer.

From the arguments' ranks and dtypes (the generated code is specialised on
them), ranks and dtypes follow through elementwise operations, full
reductions and scalar indexing.  The reverse pass uses ranks to drop
``rt.unbroadcast`` between scalars; the forward sweep uses float32 dtypes to
keep Python numbers from promoting float32 code to float64 under Numba.
"""
import operator

import gast
import numpy as np

from .. import primitives as prims
from .ir import Const, Seq, Var
from .syntax import name_node


#: primitives whose result has the largest rank of their operands
ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
               operator.neg, operator.pos, prims.ASSIGN, prims.COPY, prims.STOP_GRADIENT, abs,
               float, min, max, np.copy, np.ascontiguousarray, prims.ASTYPE}


#: integer arithmetic: ints in, an int out
INTEGER_OPS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
               operator.neg, prims.ASSIGN}


#: reductions to a scalar when called with the array alone
FULL_REDUCTIONS = {np.sum, np.mean, np.max, np.min, np.prod, np.amax, np.amin, np.var, np.std}


#: primitives whose result has the shape of their first operand (called without options)
SHAPE_OF_FIRST = {np.ones_like, np.zeros_like, np.empty_like, np.full_like}


def basic_index(index, int_vars):
    """True for an index numpy treats as basic (ints, slices, None, ...): each element is
    read at most once, so ``dx[index] += g`` is the adjoint.  Lists and arrays are not."""
    if isinstance(index, Var):
        return index.name in int_vars
    if isinstance(index, Seq):
        return index.kind in ("index", "slice") and all(basic_index(i, int_vars)
                                                         for i in index.items)
    value = index.value
    if isinstance(value, tuple):
        return all(basic_index(Const(v), int_vars) for v in value)
    return value is None or value is Ellipsis or isinstance(value, slice) or (
        isinstance(value, (int, np.integer)) and not isinstance(value, bool))


def _constant_ints(atom):
    """The ints of a constant int or tuple of ints (``(-1, 30)``), else None."""
    items = atom.items if isinstance(atom, Seq) and atom.kind == "tuple" else (atom,)
    if not all(isinstance(i, Const) for i in items):
        return None
    values = [i.value for i in items]
    if len(values) == 1 and isinstance(values[0], tuple):
        values = list(values[0])
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return None
    return tuple(int(v) for v in values)


class TypeInfo:
    """Rank and dtype inference; see the module doc.  Mixed into ``Lowerer``."""

    def ndim_of(self, atom):
        """The rank of an atom when it is known while building (None otherwise)."""
        if isinstance(atom, Const):
            return 0 if isinstance(atom.value, (int, float, np.number, bool)) else None
        if isinstance(atom, Var):
            return self.ndims.get(atom.name)
        return None

    def infer_dtype(self, prim, args, kwargs):
        """The float dtype of ``prim``'s result where numpy's promotion rules give it from
        the operands' dtypes (Python numbers are weak, as in numpy 2); else None."""
        if prim == prims.GETITEM:
            base = args[0]
            return self.dtypes.get(base.name) if isinstance(base, Var) else None
        if not (prim in ELEMENTWISE or isinstance(prim, np.ufunc)) or kwargs:
            return None
        parts = []
        for atom in args:
            if isinstance(atom, Const) and isinstance(atom.value, (int, float)) \
                    and not isinstance(atom.value, bool):
                parts.append(atom.value)
            elif isinstance(atom, Var) and atom.name in self.dtypes:
                parts.append(self.dtypes[atom.name])
            else:
                return None
        try:
            dtype = np.result_type(*parts)
        except (TypeError, ValueError):
            return None
        if isinstance(prim, np.ufunc) and dtype.kind in "iub":
            return None       # np.exp(int) is a float: leave it unknown
        return dtype if dtype.kind == "f" else None

    def infer_ndim(self, prim, args, kwargs):
        """The rank of ``prim``'s result from its operands' ranks, for the primitives whose
        rank rule is simple (elementwise, full reductions, scalar indexing); else None."""
        if prim == prims.GETITEM:
            base, index = args
            items = index.items if isinstance(index, Seq) and index.kind == "index" else (index,)
            rank = self.ndim_of(base)
            if rank is None or not all(
                    (isinstance(i, Const) and isinstance(i.value, int) and
                     not isinstance(i.value, bool)) or
                    (isinstance(i, Var) and i.name in self.int_vars) for i in items):
                return None
            return rank - len(items) if len(items) <= rank else None
        if prim in FULL_REDUCTIONS and len(args) == 1 and not kwargs:
            return 0
        if prim in ELEMENTWISE or isinstance(prim, np.ufunc) or \
                getattr(prim, "__module__", None) == "math":
            ranks = [self.ndim_of(a) for a in list(args) + list(kwargs.values())]
            if ranks and None not in ranks:
                return max(ranks)
        return None

    def shape_of(self, atom):
        """The symbolic shape of an atom (``compiler/shapes.py``) where it is known, else
        None: () for scalars, the shape of a constant array."""
        if isinstance(atom, Var):
            return () if self.ndims.get(atom.name) == 0 else self.shapes.of.get(atom.name)
        if isinstance(atom, Const):
            value = atom.value
            if isinstance(value, (int, float, np.number, bool)):
                return ()
            return tuple(value.shape) if isinstance(value, np.ndarray) else None
        return None

    def infer_shape(self, prim, args, kwargs):
        """The symbolic shape of ``prim``'s result, for the primitives whose shape rule is
        plain (see ``compiler/shapes.py``; a reshape to constant sizes, one of them -1,
        and a transpose with constant axes too); else None.  Broadcasts outside any branch or
        loop body unify the dimensions they equate."""
        certain = self.nesting == 0
        if prim == prims.GETITEM:
            base = self.shape_of(args[0])
            rank = self.infer_ndim(prim, args, kwargs)
            return None if base is None or rank is None else base[len(base) - rank:]
        if prim in FULL_REDUCTIONS:
            return self._reduced_shape(args, kwargs)
        if kwargs:
            return None
        if prim in (operator.matmul, np.matmul, np.dot) and len(args) == 2:
            return self.shapes.matmul(self.shape_of(args[0]), self.shape_of(args[1]), certain)
        if prim in SHAPE_OF_FIRST or prim == prims.ASTYPE:
            return self.shape_of(args[0])
        if prim in (np.transpose, prims.attribute("T")) and len(args) == 1:
            shape = self.shape_of(args[0])
            return None if shape is None else shape[::-1]
        if prim is np.transpose and len(args) == 2:
            shape, axes = self.shape_of(args[0]), _constant_ints(args[1])
            if shape is None or axes is None or sorted(a % max(len(shape), 1) for a in axes) \
                    != list(range(len(shape))):
                return None
            return tuple(shape[a] for a in axes)
        if prim is np.reshape and len(args) == 2:
            return self.shapes.reshaped(_constant_ints(args[1]))
        if prim in ELEMENTWISE or isinstance(prim, np.ufunc):
            return self.shapes.broadcast([self.shape_of(a) for a in args], certain)
        return None

    def _reduced_shape(self, args, kwargs):
        """The shape of ``np.sum(x, axis, keepdims=...)`` and the other reductions, for a
        constant axis (an int, a tuple of ints or None)."""
        if set(kwargs) - {"axis", "keepdims"} or len(args) > 2:
            return None
        axis = args[1] if len(args) == 2 else kwargs.get("axis", Const(None))
        keepdims = kwargs.get("keepdims", Const(False))
        shape = self.shape_of(args[0])
        if not (isinstance(axis, Const) and isinstance(keepdims, Const)) or shape is None:
            return None
        axes = axis.value if isinstance(axis.value, tuple) else (axis.value,)
        if axis.value is None:
            axes = tuple(range(len(shape)))
        if not all(isinstance(a, int) and -len(shape) <= a < len(shape) for a in axes):
            return None
        axes = {a % len(shape) for a in axes}
        if keepdims.value is True:
            return tuple(1 if k in axes else d for k, d in enumerate(shape))
        return tuple(d for k, d in enumerate(shape) if k not in axes) \
            if keepdims.value is False else None

    def is_int(self, atom):
        """True when ``atom`` is known to be a Python int (a constant, a range variable...)."""
        if isinstance(atom, Const):
            return isinstance(atom.value, int) and not isinstance(atom.value, bool)
        return isinstance(atom, Var) and atom.name in self.int_vars

    def typed_node(self, atom, other):
        """``atom`` in generated code; a Python number next to a float32 (float16) value is
        written as ``np.float32(...)``: Numba would otherwise compute in float64."""
        dtype = self.dtypes.get(other.name) if isinstance(other, Var) else None
        if isinstance(atom, Const) and isinstance(atom.value, (int, float)) \
                and not isinstance(atom.value, bool) and dtype is not None \
                and dtype in (np.float32, np.float16):
            return gast.Call(func=gast.Attribute(value=name_node("np"),
                                                 attr=np.dtype(dtype).name, ctx=gast.Load()),
                             args=[gast.Constant(value=float(atom.value), kind=None)],
                             keywords=[])
        return self.atom_node(atom)

