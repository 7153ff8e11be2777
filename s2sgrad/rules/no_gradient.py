"""The one list of calls whose derivative is zero or undefined, each with its reason.

Whether a call is differentiable is decided from explicit lists only: a call
whose result depends on a differentiated value either has a rule (the
templates in this package), or is listed here (its result carries no
gradient: a comparison, an index, a shape, an integer, a piecewise-constant
function...), or the gradient is refused with ``MissingRuleError`` naming the
user's line.  Nothing is treated as a constant by default.

``TABLE`` is a tuple of ``(reason, callables)``; a callable is a Python or
numpy function, or a string naming an internal primitive or an array
attribute/method the lowering emits (named in ``s2sgrad.primitives``:
``attribute("shape")``, ``method("nonzero")``; ``INTEGER_DTYPE`` is any call the lowering
sees converting to an integer or boolean dtype, ``x.astype(int)``, ``dtype=np.int32``).
``reason_of(prim)`` gives the reason of one primitive (None when it is not
listed).  tests/test_no_silent_constants.py checks each entry numerically
where it can (a finite difference of a listed numpy function is zero).
"""
import math
import operator

import numpy as np

from .. import primitives as prims
from .. import runtime as rt
from .registry import nondifferentiable

#: array attributes the lowering reads as ``attr.<name>``: facts about the array's layout
_LAYOUT_ATTRIBUTES = ("shape", "ndim", "size", "dtype", "itemsize", "nbytes", "strides",
                      "flags")

TABLE = (
    ("a comparison: its result is a boolean, constant except where the operands are equal",
     (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne,
      operator.is_, operator.is_not, operator.contains, prims.NOT_IN, np.greater,
      np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal, np.isclose,
      np.allclose, np.array_equal, np.array_equiv, math.isclose)),
    ("a logical or bitwise operation: boolean or integer operands and result",
     (operator.not_, operator.and_, operator.or_, operator.xor, operator.invert, prims.BOOLOP,
      np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.bitwise_and,
      np.bitwise_or, np.bitwise_xor, np.invert, np.bitwise_not, np.left_shift,
      np.right_shift, np.gcd, np.lcm, math.gcd, math.lcm, math.factorial, math.comb,
      math.perm, math.isqrt)),
    ("a test of the values (nan, inf, sign bit, any/all): a boolean result",
     (np.isnan, np.isinf, np.isfinite, np.isneginf, np.isposinf, np.signbit, np.any,
      np.all, np.iscomplex, np.isreal, np.iscomplexobj, np.isrealobj, np.isscalar, np.isin,
      np.isnat, np.iterable, math.isnan, math.isinf, math.isfinite)),
    ("rounding or the sign: piecewise constant, so the derivative is zero almost everywhere",
     (np.sign, np.floor, np.ceil, np.round, np.around, np.rint, np.trunc, np.fix,
      np.floor_divide, operator.floordiv, round, math.floor, math.ceil, math.trunc,
      np.spacing, math.ulp)),
    ("an integer or boolean conversion: the result is piecewise constant",
     (int, bool, prims.INTEGER_DTYPE, np.int8, np.int16, np.int32, np.int64, np.uint8,
      np.uint16, np.uint32, np.uint64, np.intp, np.bool_)),
    ("an index, count or position: an integer result",
     (len, np.argmax, np.argmin, np.argsort, np.argpartition, np.lexsort, np.nonzero,
      np.flatnonzero, np.argwhere, np.count_nonzero, np.searchsorted, np.digitize,
      np.bincount, np.nanargmax, np.nanargmin, np.unravel_index, np.ravel_multi_index,
      np.bitwise_count, prims.method("nonzero"), prims.method("argsort"),
      prims.method("argpartition"), prims.method("searchsorted"))),
    ("a fact about the shape or type, not the values",
     (np.shape, np.ndim, np.size, isinstance, np.result_type, np.can_cast,
      np.promote_types, np.min_scalar_type, np.issubdtype, np.isdtype, np.iinfo, np.finfo,
      np.broadcast_shapes, np.may_share_memory, np.shares_memory,
      *(prims.attribute(a) for a in _LAYOUT_ATTRIBUTES))),
    ("a new array whose values do not depend on the arguments' values (shapes, sizes, "
     "dtypes only)",
     (range, np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
      np.eye, np.identity, np.tri, np.indices, np.tril_indices, np.triu_indices,
      np.diag_indices, np.tril_indices_from, np.triu_indices_from, np.diag_indices_from,
      rt.zeros_like, rt.ones_like, rt.basis_tangent, rt.zeros_list)),
    ("a count or size (an integer) that gradient code divides or loops by",
     (rt.reduction_count, rt.tangent_size, rt.section_length)),
    ("for real input: the imaginary part is 0 and the angle 0 or pi (piecewise constant)",
     (np.imag, np.angle)),
    ("a rank: an integer result", (np.linalg.matrix_rank,)),
    ("s2sgrad's own bookkeeping: a value the user asked to stop (stop_gradient), a call "
     "made for its effect (print), a run-time object (random draws), the forward half of "
     "a custom rule (its backward is the rule)",
     (prims.STOP_GRADIENT, prims.OPAQUE, prims.COPY, prims.EFFECT)),
)


def reason_of(primitive):
    """Why ``primitive`` carries no gradient, or None when it is not in ``TABLE``."""
    for reason, primitives in TABLE:
        if any(p is primitive or (isinstance(p, str) and p == primitive) for p in primitives):
            return reason
    return None


for _reason, _primitives in TABLE:
    nondifferentiable(*_primitives, reason=_reason)
