"""What is known while building about each variable: its rank, float dtype, symbolic
shape, whether it is a Python int or a run-time list (``TypeInfo``, one per lowering).

From the arguments' ranks and dtypes (the generated code is specialised on
them), ranks and dtypes follow through elementwise operations, full
reductions and scalar indexing.  The reverse pass uses ranks to drop
``rt.unbroadcast`` between scalars; the forward sweep uses float32 dtypes to
keep Python numbers from promoting float32 code to float64 under Numba.
"""
import operator

import numpy as np

from ... import primitives as prims
from ..ir import Const, Seq, Var
from .shapes import ShapeTable


#: primitives whose result has the largest rank of their operands
ELEMENTWISE = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
               operator.neg, operator.pos, prims.ASSIGN, prims.COPY, prims.STOP_GRADIENT, abs,
               float, min, max, np.copy, np.ascontiguousarray, prims.ASTYPE, np.clip}


#: integer arithmetic: ints in, an int out
INTEGER_OPS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
               operator.neg, prims.ASSIGN}


#: reductions to a scalar when called with the array alone
FULL_REDUCTIONS = {np.sum, np.mean, np.max, np.min, np.prod, np.amax, np.amin, np.var, np.std}


#: primitives whose result has the shape of their first operand (called without options)
#: comparisons: elementwise, broadcasting (a mask for np.where)
_COMPARISONS = {operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge}

SHAPE_OF_FIRST = {np.ones_like, np.zeros_like, np.empty_like, np.full_like}

#: array constructors from a shape (an int or a tuple of ints)
MAKERS = {np.zeros, np.ones, np.empty}


#: calls giving an array of their one array operand's rank and shape (a copy, a view or a
#: conversion of it; its dtype too unless ``dtype=`` says another)
SAME_ARRAY = {np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.copy, prims.COPY,
              prims.ASTYPE}


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
    """What lowering one root function knows of its variables (Var name -> fact), and
    the inference of a new Op's rank, dtype and shape from its operands'.  The lowering
    writes the tables as it learns (arguments, loop indexes, merged values); the
    ``LoweredFunction`` hands them on to the transforms."""

    def __init__(self):
        self.param_types = {}   # Var name -> (dtype, ndim) of arguments, known while building
        self.ndims = {}         # Var name -> rank, where it is known while building
        self.dtypes = {}        # Var name -> float dtype, where it is known while building
        self.shapes = ShapeTable()  # Var name -> symbolic shape, where it is known
        self.int_vars = set()   # Var names known to hold Python ints (range loop variables)
        #: Var names that may hold None at run time (a loop variable or a branch's value
        #: that starts or is set as None): ``is None`` of them is not known while building
        self.maybe_none = set()
        self.lists = set()      # Var names of lists extended at run time (xs.append)
        self.tuples = set()     # those of them that are tuple results (eigh's (w, v)...)
        #: Var name -> the nesting of a tuple a call declares it returns (a derivative
        #: object's ``(value, gradient)``: ``(None, None)``; None for an array), so an item
        #: read from it is known as a tuple too
        self.structures = {}

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
        if prim is np.concatenate and args and isinstance(args[0], Seq) and \
                set(kwargs) <= {"axis"}:
            found = [self.dtypes.get(a.name) if isinstance(a, Var) else None
                     for a in args[0].items]
            return None if any(f is None for f in found) else np.result_type(*found)
        if prim in (np.array, np.asarray) and len(args) == 1 and isinstance(args[0], Seq):
            return self._stacked_dtype(args[0], kwargs)
        if self._copied_array(prim, args, kwargs) or (
                prim in SHAPE_OF_FIRST and args and "shape" not in kwargs) or (
                prim in MAKERS and 1 <= len(args) <= 2 and set(kwargs) <= {"dtype"}):
            return self._created_dtype(prim, args, kwargs)
        if not (prim in ELEMENTWISE or isinstance(prim, np.ufunc)) or kwargs:
            return None
        parts = []
        for atom in args:
            if isinstance(atom, Const) and isinstance(atom.value, (int, float)) \
                    and not isinstance(atom.value, bool):
                parts.append(atom.value)
            elif isinstance(atom, Var) and atom.name in self.dtypes:
                parts.append(self.dtypes[atom.name])
            elif isinstance(atom, Var) and atom.name in self.int_vars:
                parts.append(1)     # a Python int (``h = 2.0 / s``): weak, as a literal
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
        rank rule is simple (elementwise, full reductions, scalar indexing, an array's
        ``.size`` and ``.ndim``); else None."""
        if prim == prims.GETITEM:
            return self._indexed_rank(*args)
        if prim in FULL_REDUCTIONS and len(args) == 1 and not kwargs:
            return 0
        if prim in (prims.attribute("size"), prims.attribute("ndim")) and \
                self.ndim_of(args[0]) is not None:      # an array's: an int
            return 0
        if self._copied_array(prim, args, kwargs):
            return self.ndim_of(args[0])
        if prim in (np.array, np.asarray) and len(args) == 1 and isinstance(args[0], Seq) \
                and set(kwargs) <= {"dtype"}:
            return self._stacked_rank(args[0])
        made = self._made_ndim(prim, args, kwargs)
        if made is not None:
            return made
        if prim in ELEMENTWISE or isinstance(prim, np.ufunc) or \
                getattr(prim, "__module__", None) == "math":
            ranks = [self.ndim_of(a) for a in list(args) + list(kwargs.values())]
            if ranks and None not in ranks:
                return max(ranks)
        return None

    def _indexed_rank(self, base, index):
        """The rank of ``base[index]`` for an index of ints and slices (a view or an
        element), else None."""
        if isinstance(index, Seq) and index.kind == "index":
            items = index.items
        elif isinstance(index, Const) and isinstance(index.value, tuple):
            items = tuple(Const(v) for v in index.value)
        else:
            items = (index,)
        rank = self.ndim_of(base)
        if rank is None or len(items) > rank or (isinstance(base, Var) and base.name in self.lists):
            return None
        ints = 0
        for item in items:
            if self.is_int(item) or (isinstance(item, Const) and isinstance(item.value, np.integer)):
                ints += 1
            elif not ((isinstance(item, Const) and isinstance(item.value, slice)) or
                      (isinstance(item, Seq) and item.kind == "slice" and
                       all(self.is_int(p) or (isinstance(p, Const) and p.value is None)
                           for p in item.items))):
                return None
        return rank - ints

    def _stacked_rank(self, seq):
        """The rank of ``np.array([a, b, ...])``: one more than its items' common rank
        (nested lists included), None when they differ or one is unknown."""
        if not seq.items or seq.kind not in ("list", "tuple"):
            return None
        ranks = {self._stacked_rank(i) if isinstance(i, Seq) else self.ndim_of(i)
                 for i in seq.items}
        if len(ranks) != 1 or None in ranks:
            return None
        return ranks.pop() + 1

    def _stacked_shape(self, seq):
        """The shape of ``np.array([a, b, ...])`` when its items' shapes are known equal."""
        shapes = [self._stacked_shape(i) if isinstance(i, Seq) else self.shape_of(i)
                  for i in seq.items]
        if not shapes or shapes[0] is None or not all(self.shapes.same(shapes[0], s)
                                                      for s in shapes[1:]):
            return None
        return (len(seq.items),) + tuple(shapes[0])

    def _copied_array(self, prim, args, kwargs):
        """True for a call giving a copy, view or conversion of its one array operand
        (``np.array(x)``, ``x.astype(np.float32)``, ``np.asarray(x)``): same rank, shape."""
        if prim not in SAME_ARRAY or not args or set(kwargs) - {"dtype", "copy", "order"}:
            return False
        if len(args) > (2 if prim in (prims.ASTYPE, np.array, np.asarray) else 1):
            return False
        operand = args[0]
        return isinstance(operand, Var) and operand.name not in self.lists

    def _stacked_dtype(self, seq, kwargs):
        """The float dtype of ``np.array([a, b, ...])``: numpy's promotion of the items'
        (Python floats count as float64 here, as numpy makes an array of them), or the
        ``dtype=`` given; None when not a known float."""
        if kwargs:
            return self._created_dtype(np.array, (seq,), kwargs)
        parts = []
        for item in seq.items:
            if isinstance(item, Seq):
                part = self._stacked_dtype(item, kwargs)
            elif isinstance(item, Const) and type(item.value) is float:
                part = np.dtype(np.float64)
            elif isinstance(item, Var):
                part = self.dtypes.get(item.name)
            else:
                part = None
            if part is None:
                return None
            parts.append(part)
        found = np.result_type(*parts)
        return found if found.kind == "f" else None

    def _created_dtype(self, prim, args, kwargs):
        """The float dtype of a copy/conversion (``SAME_ARRAY``), a ``*_like`` array or a
        new array (``MAKERS``), else None (not such a call, or not a known float)."""
        dtype = kwargs.get("dtype")
        if prim == prims.ASTYPE and len(args) == 2:
            dtype = args[1]
        elif prim in MAKERS and len(args) == 2:
            dtype = args[1]
        if dtype is not None:
            if not isinstance(dtype, Const):
                return None
            try:
                found = np.dtype(dtype.value)
            except TypeError:
                return None
            return found if found.kind == "f" else None
        if prim in MAKERS:
            return np.dtype(np.float64)
        first = args[0] if args else None
        return self.dtypes.get(first.name) if isinstance(first, Var) else None

    def _made_ndim(self, prim, args, kwargs):
        """The rank of a new array, of a product or a join: ``np.zeros(n)`` (1),
        ``np.zeros((n, m))`` (2), ``np.zeros_like(x)`` (x's), ``np.arange(n)`` and
        ``np.linspace(a, b, n)`` of numbers (1), ``A @ v`` (from the operands' ranks, 1
        or 2), ``np.outer`` (2), ``np.concatenate((a, b))`` (the
        items' common rank), ``x.T`` (x's); else None."""
        if not args or set(kwargs) - {"dtype"}:
            return None
        if prim in SHAPE_OF_FIRST:
            return self.ndim_of(args[0])
        if prim in MAKERS and len(args) == 1:
            shape = args[0]
            if self.is_int(shape):
                return 1
            if isinstance(shape, Seq) and shape.kind == "tuple" and all(
                    self.is_int(item) for item in shape.items):
                return len(shape.items)
            if isinstance(shape, Const) and isinstance(shape.value, tuple) and all(
                    type(item) is int for item in shape.value):
                return len(shape.value)
            return None
        ranks = [self.ndim_of(a) for a in args]
        if prim in (np.arange, np.linspace) and len(args) <= 3 and all(
                r == 0 or self.is_int(a) for a, r in zip(args, ranks)):
            return 1
        if kwargs:
            return None
        if prim in (operator.matmul, np.matmul, np.dot) and len(args) == 2 and \
                all(r in (1, 2) for r in ranks):
            return ranks[0] + ranks[1] - 2
        if prim is np.outer and len(args) == 2 and all(r is not None for r in ranks):
            return 2
        if prim in (np.transpose, prims.attribute("T")) and len(args) == 1:
            return ranks[0]
        if prim is np.concatenate and len(args) == 1 and isinstance(args[0], Seq):
            items = {self.ndim_of(a) for a in args[0].items}
            rank = items.pop() if len(items) == 1 else None
            return rank if rank is not None and rank >= 1 else None
        return None

    def shape_of(self, atom):
        """The symbolic shape of an atom (``compiler/analysis/shapes.py``) where it is known, else
        None: () for scalars, the shape of a constant array."""
        if isinstance(atom, Var):
            return () if self.ndims.get(atom.name) == 0 else self.shapes.of.get(atom.name)
        if isinstance(atom, Const):
            value = atom.value
            if isinstance(value, (int, float, np.number, bool)):
                return ()
            return tuple(value.shape) if isinstance(value, np.ndarray) else None
        return None

    def infer_shape(self, prim, args, kwargs, certain):
        """The symbolic shape of ``prim``'s result, for the primitives whose shape rule is
        plain (see ``compiler/analysis/shapes.py``; a reshape to constant sizes, one of them -1,
        and a transpose with constant axes too); else None.  Broadcasts outside any branch or
        loop body unify the dimensions they equate (``certain``: outside them)."""
        if prim == prims.GETITEM:
            base = self.shape_of(args[0])
            if isinstance(args[0], Var) and args[0].name in self.lists:
                return None
            return self.shapes.indexed(base, args[1], self.int_vars)
        if prim in FULL_REDUCTIONS:
            return self._reduced_shape(args, kwargs)
        if prim is np.delete:
            return self._deleted_shape(args, kwargs)
        if prim is np.concatenate and 1 <= len(args) + len(kwargs) <= 2 and \
                set(kwargs) <= {"axis"} and isinstance(args[0], Seq):
            axis = args[1] if len(args) == 2 else kwargs.get("axis", Const(0))
            if isinstance(axis, Const) and type(axis.value) is int:
                return self.shapes.joined([self.shape_of(a) for a in args[0].items],
                                          axis.value)
        if kwargs:
            return None
        if prim in (operator.matmul, np.matmul, np.dot) and len(args) == 2:
            return self.shapes.matmul(self.shape_of(args[0]), self.shape_of(args[1]), certain)
        if prim in SHAPE_OF_FIRST or self._copied_array(prim, args, kwargs):
            return self.shape_of(args[0])
        if prim in MAKERS and len(args) == 1:
            return self.shapes.made(args[0], self.int_vars)
        if prim is np.arange and len(args) == 1:        # np.arange(n): (n,)
            return self.shapes.made(args[0], self.int_vars)
        if prim is np.roll and 2 <= len(args) <= 3:     # its operand's shape, rolled
            return self.shape_of(args[0])
        if (prim is np.where and len(args) == 3) or (prim in _COMPARISONS and len(args) == 2):
            return self.shapes.broadcast([self.shape_of(a) for a in args], certain)
        if prim in (np.array, np.asarray) and len(args) == 1 and isinstance(args[0], Seq):
            return self._stacked_shape(args[0])
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

    def _deleted_shape(self, args, kwargs):
        """The shape of ``np.delete(x, i, axis)`` for one int index ``i`` and a constant
        ``axis``: that dimension one shorter (a minor of a matrix)."""
        if set(kwargs) - {"axis"} or len(args) + len(kwargs) != 3:
            return None
        axis = args[2] if len(args) == 3 else kwargs["axis"]
        shape = self.shape_of(args[0])
        if shape is None or not self.is_int(args[1]) or not (
                isinstance(axis, Const) and type(axis.value) is int
                and -len(shape) <= axis.value < len(shape)):
            return None
        k = axis.value % len(shape)
        return shape[:k] + (self.shapes.sliced(shape[k], slice(1, None)),) + shape[k + 1:]

    def is_int(self, atom):
        """True when ``atom`` is known to be a Python int (a constant, a range variable...)."""
        if isinstance(atom, Const):
            return isinstance(atom.value, int) and not isinstance(atom.value, bool)
        return isinstance(atom, Var) and atom.name in self.int_vars
