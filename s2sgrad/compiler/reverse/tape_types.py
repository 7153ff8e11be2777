"""Which scalars of a gradient can go on typed array tapes: their dtypes, certain enough.

``tape_dtypes(lowered)`` gives name -> numpy dtype (bool, an int or a float) for the
variables whose type is known for every value they are assigned.  Unlike the
lowerer's own dtype guesses (made for typing constants, before a loop's body has
shown what its loop-carried variables become), this joins every value a variable is
assigned anywhere (before a loop, at the end of each iteration, in each branch),
iterating to a fixed point, so it is never narrower than what runs: a float32 value
on a float64 tape comes back exact.  A Python float constant is float64 (as Numba
types it) unless the forward sweep writes it as the float32 it meets.
"""
import math
import operator

import numpy as np

from ... import primitives as prims
from ..analysis.typeinfo import ELEMENTWISE, FULL_REDUCTIONS, SHAPE_OF_FIRST
from ..ir import Const, Op, Seq, Var, walk_ops
from .tape import COMPARISONS

#: array constructors whose result is float64 when called without a dtype
FLOAT64_MAKERS = {np.zeros, np.ones, np.empty}
#: the operands' promoted dtype, whatever their shapes (products, joins, reshapes)
PROMOTING = {operator.matmul, np.matmul, np.dot, np.outer, np.concatenate, np.stack,
             np.hstack, np.vstack, np.transpose, np.reshape, np.ravel, prims.attribute("T"),
             prims.method("reshape"), prims.method("ravel"), prims.method("flatten")}
#: math functions with a float result (math.floor and the like give ints: not here)
MATH_FLOAT = {getattr(math, name) for name in (
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "pow",
    "hypot", "erf", "erfc", "gamma", "lgamma", "fabs", "copysign", "fmod")}

#: the lattice below the dtypes: no value seen yet, and not knowable
UNSEEN, UNKNOWN = "unseen", "unknown"
#: a Python number the forward sweep writes as the float32 (float16) value it meets
WEAK_FLOAT, WEAK_INT = "weak_float", "weak_int"


def tape_dtypes(lowered):
    """Name -> dtype of the scalars of ``lowered`` that can go on a typed tape."""
    return _TapeTypes(lowered).solve()


class _TapeTypes:
    """The fixed-point iteration of ``tape_dtypes`` over one lowered function."""

    def __init__(self, lowered):
        self.ints = set(lowered.int_vars)
        self.ndims = lowered.ndims
        self.small = lowered.dtypes       # the lowerer's guesses: where constants are typed
        types = {name: np.dtype(dtype) for name, (dtype, _) in lowered.param_types.items()
                 if isinstance(dtype, np.dtype)}
        types.update({name: np.dtype(np.int64) for name in self.ints})
        for name in lowered.params:      # Python floats: float64 under Numba
            if self.ndims.get(name) == 0 and name not in types:
                types[name] = np.dtype(np.float64)
        self.ops = [op for op in walk_ops(lowered.body) if isinstance(op, Op)
                    and len(op.targets) == 1 and op.targets[0] not in self.ints]
        for op in self.ops:
            types[op.targets[0]] = UNSEEN
        self.types = types

    def solve(self):
        for _ in range(8):          # each round can only widen a type: few rounds settle it
            changed = False
            for op in self.ops:
                name = op.targets[0]
                joined = join(self.types[name], self.of_op(op))
                if isinstance(joined, np.dtype) and joined.kind not in "biuf":
                    joined = UNKNOWN
                if joined != self.types[name]:
                    self.types[name], changed = joined, True
            if not changed:
                return {n: t for n, t in self.types.items() if isinstance(t, np.dtype)}
        return {n: self.types[n] for n in self.ints if n in self.types}

    def of_atom(self, atom, other=None):
        """An operand's type; ``other``: the other operand of a binary operator."""
        if isinstance(atom, Const):
            value = atom.value
            if isinstance(value, (bool, np.bool_)):
                return np.dtype(bool)
            if not isinstance(value, (int, float)):
                return UNKNOWN
            # a number is weak only where the forward sweep writes it as the other
            # operand's type (float32 arithmetic; see TypeInfo.typed_node): Numba
            # types a plain literal as int64 or float64
            if isinstance(other, Var) and self.small.get(other.name) in (np.float32,
                                                                        np.float16):
                return WEAK_FLOAT if isinstance(value, float) else WEAK_INT
            return np.dtype(np.float64 if isinstance(value, float) else np.int64)
        return self.types.get(atom.name, UNKNOWN) if isinstance(atom, Var) else UNKNOWN

    def of_op(self, op):
        """The type of ``op``'s result from its operands' types so far."""
        if op.primitive in COMPARISONS:   # of scalars: a bool
            scalar = all(isinstance(a, Const) or isinstance(a, Var) and (
                a.name in self.ints or self.ndims.get(a.name) == 0) for a in op.args)
            return np.dtype(bool) if scalar else UNKNOWN
        args = list(op.args)
        if op.primitive == prims.GETITEM:    # an element of an array of a known dtype
            base = self.of_atom(args[0])
            if base == UNSEEN:
                return UNSEEN
            ok = isinstance(base, np.dtype) and (self.ndims.get(op.targets[0]) == 0 or
                                                 base.kind == "f")   # a float array's row
            return base if ok else UNKNOWN
        if op.kwargs:
            return UNKNOWN
        if _member(op.primitive, FLOAT64_MAKERS):   # np.zeros(n): float64
            return np.dtype(np.float64)
        if _member(op.primitive, SHAPE_OF_FIRST):   # np.zeros_like(x): x's dtype
            args = args[:1]
        if len(args) == 2 and getattr(op.primitive, "__module__", None) == "_operator":
            parts = [self.of_atom(args[0], args[1]), self.of_atom(args[1], args[0])]
        else:
            parts = [self.of_atom(a) for a in args]
        if _member(op.primitive, PROMOTING) and len(args) == 1 and isinstance(args[0], Seq):
            parts = [self.of_atom(a) for a in args[0].items]  # np.concatenate((a, b))
        if UNKNOWN in parts:
            return UNKNOWN
        if UNSEEN in parts:
            return UNSEEN
        if op.primitive is float:
            return np.dtype(np.float64)
        if op.primitive == prims.ASSIGN:
            return parts[0]
        if _member(op.primitive, MATH_FLOAT):     # math.sin(x): a Python float
            return np.dtype(np.float64)
        if _member(op.primitive, SHAPE_OF_FIRST | FULL_REDUCTIONS | PROMOTING):
            # followed for floats only (an int array's sum or mean: numpy's own rules)
            dtype = np.result_type(*[p for p in parts if isinstance(p, np.dtype)] or [0.0])
            return dtype if dtype.kind == "f" and all(isinstance(p, np.dtype)
                                                      for p in parts) else UNKNOWN
        if not (op.primitive in ELEMENTWISE or isinstance(op.primitive, np.ufunc)):
            return UNKNOWN
        return _promoted(op.primitive, parts)


def _member(primitive, group):
    """``primitive in group`` for primitives that may not be hashable."""
    try:
        return primitive in group
    except TypeError:
        return False


def _promoted(primitive, parts):
    """numpy's promotion of the operand types ``parts`` (weak numbers weak)."""
    strong = [p for p in parts if isinstance(p, np.dtype)]
    weak = [0.0 if p == WEAK_FLOAT else 0 for p in parts if isinstance(p, str)]
    try:
        dtype = np.result_type(*strong, *weak)
    except (TypeError, ValueError):
        return UNKNOWN
    if dtype.kind in "iub" and (primitive in (operator.truediv, operator.pow) or
                                isinstance(primitive, np.ufunc)):
        return UNKNOWN    # true division, powers and ufuncs of ints: not worth following
    return dtype


def join(a, b):
    """The narrowest type that holds every value of types ``a`` and ``b`` exactly."""
    if a == UNSEEN:
        return b
    if b == UNSEEN:
        return a
    if UNKNOWN in (a, b):
        return UNKNOWN
    if a == b:
        return a
    if a.kind in "biuf" and b.kind in "biuf" and "f" in a.kind + b.kind:
        return np.result_type(a, b, *([np.float64] if a.kind != b.kind else []))
    return UNKNOWN
