"""Every derivative rule against central finite differences.

``CASES`` holds small user functions, each calling one primitive (or a
few), with float64 inputs in the primitive's safe domain.  ``test_rule``
checks each with ``s2sgrad.testing.check_grad`` under the Python backend and
(for the ``numba=True`` subset, or all of them with S2SGRAD_TEST_ALL_NUMBA=1)
under Numba.  ``test_every_rule_is_covered`` fails when a differentiable
rule in ``s2sgrad.rules.all_rules()`` is exercised by no case.

Most functions end in ``np.sum(np.sin(...))`` so the adjoint that reaches the
primitive is not all ones (a transposed or misplaced adjoint shows up).
"""
import math
import operator
import os
import types

import numpy as np
import pytest

import s2sgrad
from s2sgrad import ops
from s2sgrad import runtime as rt
from s2sgrad.rules import all_rules
from s2sgrad.testing import check_grad, fresh_function
from rule_cases_more import more_cases
from rule_cases_surface import more_surface_cases

rng = np.random.default_rng(1234)


def R(*shape, lo=-1.0, hi=1.0):
    """Uniform in [lo, hi)."""
    return rng.uniform(lo, hi, size=shape)


def P(*shape):
    """Positive, away from 0: uniform in [0.5, 2)."""
    return rng.uniform(0.5, 2.0, size=shape)


def NZ(*shape):
    """Away from 0 on both sides: +-[0.3, 2)."""
    return rng.uniform(0.3, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def U(*shape):
    """Inside (-0.8, 0.8): for arcsin / arccos."""
    return rng.uniform(-0.8, 0.8, size=shape)


def WC(*shape):
    """Well-conditioned square matrices (batched when shape has 3 dims)."""
    n = shape[-1]
    return np.eye(n) * 2.0 + R(*shape) * 0.3


def DISTINCT(*shape):
    """Distinct values spread apart (no ties for max / min / inf-norm)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.37 - n * 0.15).reshape(shape)


IDX = np.array([0, 2, 0, 1, 2, 2])          # repeated indices
MASK = R(3, 4) > 0
MASK[0, 0] = True


def branchy(x, y):
    """A branch on a run-time value: the compiler merges ``z`` with "assign" copies."""
    if np.sum(x) > 0:
        z = x * y
    else:
        z = np.sin(x) + y
    return np.sum(np.sin(z))


def appended(x):
    """A list extended in a run-time loop: the compiler makes it with the "list" primitive."""
    xs = [x[0]]
    for i in range(1, x.shape[0]):
        xs.append(xs[i - 1] * x[i])
    return xs[-1] + xs[0]


class Case:
    def __init__(self, id, fn, args, pos=0, numba=False, rtol=1e-5, atol=1e-7, eps=1e-6,
                 xfail=None):
        self.id, self.fn, self.args, self.pos = id, fn, tuple(args), pos
        self.numba, self.rtol, self.atol, self.eps, self.xfail = numba, rtol, atol, eps, xfail


C = Case

CASES = [
    # ------------------------------------------------------------ operators
    C("add", lambda x, y: np.sum(np.sin(x + y)), [R(3, 4), R(3, 4)], (0, 1), numba=True),
    C("add_bcast_row", lambda x, y: np.sum(np.sin(x + y)), [R(3, 4), R(4)], (0, 1), numba=True),
    C("add_bcast_outer", lambda x, y: np.sum(np.sin(x + y)), [R(3, 1), R(1, 4)], (0, 1)),
    C("add_pyfloat", lambda x, y: np.sum(np.sin(x + y)), [R(3, 4), 0.7], (0, 1)),
    C("radd_const", lambda x: np.sum(np.sin(2.5 + x)), [R(3, 4)]),
    C("np_add", lambda x, y: np.sum(np.sin(np.add(x, y))), [R(3, 4), R(4)], (0, 1)),
    C("sub", lambda x, y: np.sum(np.sin(x - y)), [R(3, 4), R(4)], (0, 1)),
    C("sub_outer", lambda x, y: np.sum(np.sin(x - y)), [R(3, 1), R(1, 4)], (0, 1)),
    C("rsub_pyfloat", lambda x, y: np.sum(np.sin(y - x)), [R(3, 4), 0.3], (0, 1)),
    C("np_subtract", lambda x, y: np.sum(np.sin(np.subtract(x, y))), [R(3, 4), R(3, 4)], (0, 1)),
    C("mul", lambda x, y: np.sum(np.sin(x * y)), [R(3, 4), R(4)], (0, 1)),
    C("mul_outer", lambda x, y: np.sum(np.sin(x * y)), [R(3, 1), R(1, 4)], (0, 1), numba=True),
    C("mul_pyfloat", lambda x, y: np.sum(np.sin(x * y)), [R(3, 4), 1.3], (0, 1)),
    C("mul_self", lambda x: np.sum(x * x), [R(3, 4)]),
    C("np_multiply", lambda x, y: np.sum(np.sin(np.multiply(x, y))), [R(3, 4), R(3, 1)], (0, 1)),
    C("div", lambda x, y: np.sum(np.sin(x / y)), [R(3, 4), P(4)], (0, 1), numba=True),
    C("div_outer", lambda x, y: np.sum(np.sin(x / y)), [R(3, 1), P(1, 4)], (0, 1)),
    C("rdiv_pyfloat", lambda x, y: np.sum(np.sin(y / x)), [P(3, 4), 1.5], (0, 1)),
    C("np_divide", lambda x, y: np.sum(np.sin(np.divide(x, y))), [R(3, 4), P(3, 4)], (0, 1)),
    C("np_true_divide", lambda x, y: np.sum(np.true_divide(x, y)), [R(3, 4), P(4)], (0, 1)),
    C("pow_const", lambda x: np.sum(np.sin(x ** 3.0)), [R(3, 4)]),
    C("pow_int", lambda x: np.sum(x ** 2), [R(3, 4)]),
    C("pow_arrays", lambda x, y: np.sum(np.sin(x ** y)), [P(3, 4), R(4)], (0, 1), numba=True),
    C("rpow_const", lambda x: np.sum(np.sin(2.0 ** x)), [R(3, 4)]),
    C("pow_pyfloat_exp", lambda x, y: np.sum(x ** y), [P(3, 4), 1.7], (0, 1)),
    C("np_power", lambda x, y: np.sum(np.sin(np.power(x, y))), [P(3, 4), R(3, 4)], (0, 1)),
    C("neg", lambda x: np.sum(np.sin(-x)), [R(3, 4)], numba=True),
    C("np_negative", lambda x: np.sum(np.sin(np.negative(x))), [R(3, 4)]),
    C("pos", lambda x: np.sum(np.sin(+x)), [R(3, 4)]),
    C("operator_pos", lambda x: np.sum(np.sin(operator.pos(x))), [R(3, 4)], numba=True),
    C("operator_add_call", lambda x, y: np.sum(np.sin(operator.add(x, y))), [R(3, 4), R(4)],
      (0, 1)),
    C("np_positive", lambda x: np.sum(np.sin(np.positive(x))), [R(3, 4)]),
    C("matmul_2d_2d", lambda a, b: np.sum(np.sin(a @ b)), [R(3, 4), R(4, 2)], (0, 1), numba=True),
    C("matmul_1d_2d", lambda a, b: np.sum(np.sin(a @ b)), [R(4), R(4, 2)], (0, 1), numba=True),
    C("matmul_2d_1d", lambda a, b: np.sum(np.sin(a @ b)), [R(3, 4), R(4)], (0, 1), numba=True),
    C("matmul_1d_1d", lambda a, b: np.sin(a @ b), [R(4), R(4)], (0, 1), numba=True),
    C("matmul_3d_3d", lambda a, b: np.sum(np.sin(a @ b)), [R(2, 3, 4), R(2, 4, 2)], (0, 1)),
    C("matmul_3d_2d", lambda a, b: np.sum(np.sin(a @ b)), [R(2, 3, 4), R(4, 2)], (0, 1)),
    C("matmul_2d_3d", lambda a, b: np.sum(np.sin(a @ b)), [R(3, 4), R(2, 4, 2)], (0, 1)),
    C("matmul_3d_1d", lambda a, b: np.sum(np.sin(a @ b)), [R(2, 3, 4), R(4)], (0, 1)),
    C("matmul_1d_3d", lambda a, b: np.sum(np.sin(a @ b)), [R(3), R(2, 3, 4)], (0, 1)),
    C("matmul_bcast_batch", lambda a, b: np.sum(np.sin(a @ b)), [R(1, 3, 4), R(2, 4, 2)],
      (0, 1)),
    C("np_matmul", lambda a, b: np.sum(np.sin(np.matmul(a, b))), [R(3, 4), R(4, 2)], (0, 1)),
    C("builtin_abs", lambda x: np.sum(np.sin(abs(x))), [NZ(3, 4)]),
    C("builtin_abs_scalar", lambda x: abs(x) * 3.0, [-0.7]),
    C("builtin_float", lambda x: float(x) * x, [0.7]),
    C("builtin_max", lambda x, y: max(x, y) * y, [0.7, 0.2], (0, 1)),
    C("builtin_max_b", lambda x, y: max(x, y) * y, [0.2, 0.7], (0, 1)),
    C("builtin_min", lambda x, y: min(x, y) * y, [0.7, 0.2], (0, 1)),
    C("builtin_min_b", lambda x, y: min(x, y) * y, [0.2, 0.7], (0, 1)),
    C("branch_assign_then", branchy, [P(3, 4), R(4)], (0, 1), numba=True),
    C("branch_assign_else", branchy, [-P(3, 4), R(4)], (0, 1)),
    C("list_append", appended, [R(5)], numba=True),
    # ------------------------------------------------------------ math on python floats
    C("math_exp", lambda x: math.exp(x) * x, [0.7], numba=True),
    C("math_log", lambda x: math.log(x) * x, [1.7]),
    C("math_log1p", lambda x: math.log1p(x), [0.7]),
    C("math_expm1", lambda x: math.expm1(x), [0.7]),
    C("math_sqrt", lambda x: math.sqrt(x), [1.7]),
    C("math_sin", lambda x: math.sin(x), [0.7]),
    C("math_cos", lambda x: math.cos(x), [0.7]),
    C("math_tan", lambda x: math.tan(x), [0.7]),
    C("math_tanh", lambda x: math.tanh(x), [0.7]),
    C("math_sinh", lambda x: math.sinh(x), [0.7]),
    C("math_cosh", lambda x: math.cosh(x), [0.7]),
    C("math_asin", lambda x: math.asin(x), [0.4]),
    C("math_acos", lambda x: math.acos(x), [0.4]),
    C("math_atan", lambda x: math.atan(x), [0.4]),
    C("math_fabs", lambda x: math.fabs(x) * x, [-0.4]),
    C("math_pow", lambda x, y: math.pow(x, y), [1.3, 0.7], (0, 1), numba=True),
    C("math_atan2", lambda y, x: math.atan2(y, x), [0.3, -0.7], (0, 1)),
    # ------------------------------------------------------------ numpy elementwise
    C("exp", lambda x: np.sum(np.exp(x)), [R(3, 4)], numba=True),
    C("sort", lambda x: np.sum(np.sort(x) * np.arange(4.0)), [np.array([0.3, -1.2, 2.1, 0.9])]),
    C("sort_axis0", lambda x: np.sum(np.sort(x, axis=0) * np.arange(3.0)[:, None]), [R(3, 4)]),
    C("mod_operator", lambda a, b: np.sum(np.sin((a % b) * a)), [P(3) + 2.0, P(3) + 0.5],
      (0, 1)),
    C("np_mod", lambda a, b: np.sum(np.mod(a, b) * a), [P(3) + 2.0, P(3) + 0.5], (0, 1)),
    C("np_remainder", lambda a, b: np.sum(np.remainder(a, b) * a), [P(3) + 2.0, P(3) + 0.5],
      (0, 1)),
    C("math_fmod", lambda a, b: math.fmod(a, b) * a, [2.7, 0.8], (0, 1)),
    C("math_hypot", lambda a, b: math.hypot(a, b) * a, [1.3, -0.7], (0, 1)),
    C("builtin_pow", lambda a, b: pow(a, b), [1.3, 2.2], (0, 1)),
    C("builtin_sum_array", lambda x: sum(x * x), [R(4)]),
    C("builtin_sum_tuple", lambda a, b: sum((a * b, np.sin(a))), [0.4, 1.1], (0, 1)),
    C("arctan2", lambda y, x: np.sum(np.arctan2(y, x)), [R(3, 4), P(4)], (0, 1)),
    C("np_hypot", lambda y, x: np.sum(np.hypot(y, x)), [R(3, 4), P(4)], (0, 1)),
    C("exp2", lambda x: np.sum(np.exp2(x)), [R(3, 4)]),
    C("flip", lambda x: np.sum(np.flip(x, 0) * np.arange(3.0)[:, None]), [R(3, 4)]),
    C("float64_cast", lambda a: np.float64(a) * a, [0.7]),
    C("float32_cast", lambda a: np.float32(a) * 1.0, [0.7], eps=1e-2, rtol=1e-4),
    C("exp_nonscalar_out", lambda x: np.exp(x), [R(3, 4)]),
    C("log", lambda x: np.sum(np.sin(np.log(x))), [P(3, 4)], numba=True),
    C("log1p", lambda x: np.sum(np.sin(np.log1p(x))), [P(3, 4)]),
    C("expm1", lambda x: np.sum(np.sin(np.expm1(x))), [R(3, 4)]),
    C("log2", lambda x: np.sum(np.sin(np.log2(x))), [P(3, 4)]),
    C("log10", lambda x: np.sum(np.sin(np.log10(x))), [P(3, 4)]),
    C("sqrt", lambda x: np.sum(np.sin(np.sqrt(x))), [P(3, 4)], numba=True),
    C("square", lambda x: np.sum(np.sin(np.square(x))), [R(3, 4)]),
    C("sin", lambda x: np.sum(np.sin(x) * x), [R(3, 4)]),
    C("cos", lambda x: np.sum(np.sin(np.cos(x))), [R(3, 4)]),
    C("tan", lambda x: np.sum(np.sin(np.tan(x))), [R(3, 4)]),
    C("arcsin", lambda x: np.sum(np.sin(np.arcsin(x))), [U(3, 4)]),
    C("arccos", lambda x: np.sum(np.sin(np.arccos(x))), [U(3, 4)]),
    C("arctan", lambda x: np.sum(np.sin(np.arctan(x))), [R(3, 4)]),
    C("sinh", lambda x: np.sum(np.sin(np.sinh(x))), [R(3, 4)]),
    C("cosh", lambda x: np.sum(np.sin(np.cosh(x))), [R(3, 4)]),
    C("tanh", lambda x: np.sum(np.sin(np.tanh(x))), [R(3, 4)], numba=True),
    C("abs", lambda x: np.sum(np.sin(np.abs(x))), [NZ(3, 4)], numba=True),
    C("absolute", lambda x: np.sum(np.sin(np.absolute(x))), [NZ(3, 4)]),
    C("maximum", lambda x, y: np.sum(np.sin(np.maximum(x, y))), [R(3, 4), R(3, 4)], (0, 1)),
    C("maximum_bcast", lambda x, y: np.sum(np.sin(np.maximum(x, y))), [R(3, 4), R(4)], (0, 1)),
    C("maximum_scalar", lambda x: np.sum(np.sin(np.maximum(x, 0.1))), [NZ(3, 4)], numba=True),
    C("minimum", lambda x, y: np.sum(np.sin(np.minimum(x, y))), [R(3, 1), R(1, 4)], (0, 1)),
    C("minimum_scalar", lambda x: np.sum(np.sin(np.minimum(x, 0.1))), [NZ(3, 4)]),
    C("clip", lambda x: np.sum(np.sin(np.clip(x, -0.5, 0.5))), [DISTINCT(3, 4) / 7 + 0.01],
      numba=True),
    C("clip_array_bounds", lambda x, lo, hi: np.sum(np.sin(np.clip(x, lo, hi))),
      [DISTINCT(3, 4) / 5 + 0.01, R(4) * 0.3 - 0.6, R(3, 1) * 0.3 + 0.6], (0, 1, 2)),
    C("where", lambda x, y: np.sum(np.sin(np.where(x > 0, x * x, y))), [NZ(3, 4), R(3, 4)],
      (0, 1), numba=True),
    C("where_bcast", lambda x, y: np.sum(np.sin(np.where(x > 0, x, y))), [NZ(3, 4), R(4)],
      (0, 1)),
    C("where_scalar", lambda x: np.sum(np.sin(np.where(x > 0, x, 0.0))), [NZ(3, 4)]),
    C("copy", lambda x: np.sum(np.sin(np.copy(x))), [R(3, 4)], numba=True),
    C("array", lambda x: np.sum(np.sin(np.array(x))), [R(3, 4)]),
    C("asarray", lambda x: np.sum(np.sin(np.asarray(x))), [R(3, 4)]),
    C("ascontiguousarray", lambda x: np.sum(np.sin(np.ascontiguousarray(x))), [R(3, 4)]),
    # ------------------------------------------------------------ reductions
    C("sum_all", lambda x: np.sin(np.sum(x)), [R(2, 3, 4)], numba=True),
    C("sum_axis0", lambda x: np.sum(np.sin(np.sum(x, axis=0))), [R(2, 3, 4)], numba=True),
    C("sum_axis_neg", lambda x: np.sum(np.sin(np.sum(x, axis=-1))), [R(2, 3, 4)]),
    C("sum_axis_tuple", lambda x: np.sum(np.sin(np.sum(x, axis=(0, 2)))), [R(2, 3, 4)]),
    C("sum_keepdims", lambda x: np.sum(np.sin(np.sum(x, axis=1, keepdims=True))),
      [R(2, 3, 4)]),
    C("sum_none_keepdims", lambda x: np.sum(np.sin(np.sum(x, keepdims=True))), [R(2, 3, 4)]),
    C("sum_tuple_keepdims", lambda x: np.sum(np.sin(np.sum(x, axis=(0, -1), keepdims=True))),
      [R(2, 3, 4)]),
    C("mean_all", lambda x: np.sin(np.mean(x)), [R(2, 3, 4)], numba=True),
    C("mean_axis", lambda x: np.sum(np.sin(np.mean(x, axis=1))), [R(2, 3, 4)]),
    C("mean_axis_neg_keep", lambda x: np.sum(np.sin(np.mean(x, axis=-1, keepdims=True))),
      [R(2, 3, 4)]),
    C("mean_axis_tuple", lambda x: np.sum(np.sin(np.mean(x, axis=(0, 1)))), [R(2, 3, 4)]),
    C("max_all", lambda x: np.sin(np.max(x)), [DISTINCT(2, 3, 4)], numba=True),
    C("max_axis", lambda x: np.sum(np.sin(np.max(x, axis=1))), [DISTINCT(2, 3, 4)]),
    C("max_axis_keep", lambda x: np.sum(np.sin(np.max(x, axis=-1, keepdims=True))),
      [DISTINCT(2, 3, 4)]),
    C("max_axis_tuple", lambda x: np.sum(np.sin(np.max(x, axis=(0, 2)))), [DISTINCT(2, 3, 4)]),
    C("amax", lambda x: np.sum(np.sin(np.amax(x, axis=0))), [DISTINCT(3, 4)]),
    C("min_all", lambda x: np.sin(np.min(x)), [DISTINCT(3, 4)]),
    C("min_axis", lambda x: np.sum(np.sin(np.min(x, axis=0))), [DISTINCT(3, 4)]),
    C("min_keep", lambda x: np.sum(np.sin(np.min(x, axis=1, keepdims=True))), [DISTINCT(3, 4)]),
    C("amin", lambda x: np.sum(np.sin(np.amin(x))), [DISTINCT(3, 4)]),
    C("prod_all", lambda x: np.prod(x), [P(3, 4)], numba=True),
    C("prod_axis", lambda x: np.sum(np.sin(np.prod(x, axis=1))), [P(3, 4)]),
    C("prod_axis_keep", lambda x: np.sum(np.sin(np.prod(x, axis=0, keepdims=True))), [P(3, 4)]),
    C("var_all", lambda x: np.var(x), [R(3, 4)]),
    C("var_axis", lambda x: np.sum(np.sin(np.var(x, axis=0))), [R(3, 4)]),
    C("var_axis_keep", lambda x: np.sum(np.sin(np.var(x, axis=-1, keepdims=True))), [R(3, 4)]),
    C("var_ddof", lambda x: np.sum(np.var(x, axis=1, ddof=1)), [R(3, 4)]),
    C("std_all", lambda x: np.std(x), [R(3, 4)]),
    C("std_axis", lambda x: np.sum(np.sin(np.std(x, axis=1))), [R(3, 4)]),
    C("std_axis_tuple_keep", lambda x: np.sum(np.std(x, axis=(0, 1), keepdims=True)),
      [R(2, 3, 4)]),
    C("cumsum_none", lambda x: np.sum(np.sin(np.cumsum(x))), [R(3, 4)], numba=True),
    C("cumsum_axis0", lambda x: np.sum(np.sin(np.cumsum(x, axis=0))), [R(3, 4)], numba=True),
    C("cumsum_axis_neg", lambda x: np.sum(np.sin(np.cumsum(x, axis=-1))), [R(2, 3, 4)]),
    # ------------------------------------------------------------ linear algebra
    C("dot_scalar_array", lambda a, b: np.sum(np.sin(np.dot(a, b))), [0.7, R(3, 4)], (0, 1)),
    C("dot_1d_1d", lambda a, b: np.sin(np.dot(a, b)), [R(4), R(4)], (0, 1)),
    C("dot_2d_1d", lambda a, b: np.sum(np.sin(np.dot(a, b))), [R(3, 4), R(4)], (0, 1), numba=True),
    C("dot_1d_2d", lambda a, b: np.sum(np.sin(np.dot(a, b))), [R(3), R(3, 4)], (0, 1)),
    C("dot_2d_2d", lambda a, b: np.sum(np.sin(np.dot(a, b))), [R(3, 4), R(4, 2)], (0, 1)),
    C("dot_3d_1d", lambda a, b: np.sum(np.sin(np.dot(a, b))), [R(2, 3, 4), R(4)], (0, 1)),
    C("dot_3d_2d", lambda a, b: np.sum(np.sin(np.dot(a, b))), [R(2, 3, 4), R(4, 2)], (0, 1)),
    C("dot_2d_3d", lambda a, b: np.sum(np.sin(np.dot(a, b))), [R(3, 4), R(2, 4, 5)], (0, 1)),
    C("outer", lambda a, b: np.sum(np.sin(np.outer(a, b))), [R(3), R(4)], (0, 1), numba=True),
    C("outer_2d", lambda a, b: np.sum(np.sin(np.outer(a, b))), [R(2, 2), R(3)], (0, 1)),
    C("inner_1d", lambda a, b: np.sin(np.inner(a, b)), [R(4), R(4)], (0, 1)),
    C("inner_2d", lambda a, b: np.sum(np.sin(np.inner(a, b))), [R(3, 4), R(2, 4)], (0, 1)),
    C("inner_2d_1d", lambda a, b: np.sum(np.sin(np.inner(a, b))), [R(3, 4), R(4)], (0, 1)),
    C("einsum_matmul", lambda a, b: np.sum(np.sin(np.einsum("ij,jk->ik", a, b))),
      [R(3, 4), R(4, 2)], (0, 1)),
    C("einsum_dot", lambda a, b: np.sin(np.einsum("i,i->", a, b)), [R(4), R(4)], (0, 1)),
    C("einsum_colsum", lambda a: np.sum(np.sin(np.einsum("ij->j", a))), [R(3, 4)]),
    C("einsum_bmm", lambda a, b: np.sum(np.sin(np.einsum("bij,bjk->bik", a, b))),
      [R(2, 3, 4), R(2, 4, 2)], (0, 1)),
    C("einsum_implicit", lambda a, b: np.sum(np.sin(np.einsum("ij,jk", a, b))),
      [R(3, 4), R(4, 2)], (0, 1)),
    C("einsum_outer3", lambda a, b, c: np.sum(np.sin(np.einsum("i,j,k->ijk", a, b, c))),
      [R(2), R(3), R(2)], (0, 1, 2)),
    C("trace", lambda a: np.sin(np.trace(a)), [R(3, 3)], numba=True),
    C("trace_rect", lambda a: np.sin(np.trace(a)), [R(3, 4)]),
    C("det", lambda a: np.linalg.det(a), [WC(3, 3)], numba=True),
    C("det_batched", lambda a: np.sum(np.sin(np.linalg.det(a))), [WC(2, 3, 3)]),
    C("inv", lambda a: np.sum(np.sin(np.linalg.inv(a))), [WC(3, 3)], numba=True),
    C("inv_batched", lambda a: np.sum(np.sin(np.linalg.inv(a))), [WC(2, 3, 3)]),
    C("solve_vec", lambda a, b: np.sum(np.sin(np.linalg.solve(a, b))), [WC(3, 3), R(3)], (0, 1),
      numba=True),
    C("solve_mat", lambda a, b: np.sum(np.sin(np.linalg.solve(a, b))), [WC(3, 3), R(3, 2)],
      (0, 1)),
    C("norm_vec", lambda x: np.linalg.norm(x), [R(4)], numba=True),
    C("norm_mat_fro", lambda x: np.sin(np.linalg.norm(x)), [R(3, 4)]),
    C("norm_axis", lambda x: np.sum(np.sin(np.linalg.norm(x, axis=1))), [R(3, 4)]),
    C("norm_axis_keep", lambda x: np.sum(np.sin(np.linalg.norm(x, axis=0, keepdims=True))),
      [R(3, 4)]),
    C("norm_ord1", lambda x: np.sin(np.linalg.norm(x, ord=1)), [NZ(4)]),
    C("norm_ord_inf", lambda x: np.sin(np.linalg.norm(x, ord=np.inf)), [DISTINCT(5)], numba=True),
    C("norm_ord2_vec", lambda x: np.linalg.norm(x, 2), [R(4)]),
    # ------------------------------------------------------------ shapes
    C("reshape", lambda x: np.sum(np.sin(np.reshape(x, (4, 3))) * np.arange(12.0).reshape(4, 3)),
      [R(3, 4)], numba=True),
    C("reshape_minus1", lambda x: np.sum(np.sin(np.reshape(x, -1))), [R(3, 4)]),
    C("ravel", lambda x: np.sum(np.sin(np.ravel(x)) * np.arange(12.0)), [R(3, 4)]),
    C("transpose", lambda x: np.sum(np.sin(np.transpose(x)) * np.arange(12.0).reshape(4, 3)),
      [R(3, 4)], numba=True),
    C("transpose_axes", lambda x: np.sum(np.sin(np.transpose(x, (1, 2, 0)))
                                         * np.arange(24.0).reshape(3, 4, 2)), [R(2, 3, 4)],
      numba=True),
    C("transpose_axes_3d", lambda x: np.sum(np.sin(np.transpose(x, (2, 0, 1)))
                                            * np.arange(24.0).reshape(4, 2, 3)), [R(2, 3, 4)]),
    C("swapaxes", lambda x: np.sum(np.sin(np.swapaxes(x, 0, 2))
                                   * np.arange(24.0).reshape(4, 3, 2)), [R(2, 3, 4)]),
    C("expand_dims", lambda x: np.sum(np.sin(np.expand_dims(x, 1))), [R(3, 4)], numba=True),
    C("squeeze", lambda x: np.sum(np.sin(np.squeeze(x))), [R(3, 1, 4)]),
    C("squeeze_axis", lambda x: np.sum(np.sin(np.squeeze(x, axis=1))), [R(3, 1, 4)]),
    C("atleast_1d", lambda x: np.sum(np.sin(np.atleast_1d(x))), [R(3)]),
    C("atleast_1d_scalar", lambda x: np.sum(np.sin(np.atleast_1d(x))), [0.7]),
    C("atleast_2d", lambda x: np.sum(np.sin(np.atleast_2d(x))), [R(3)]),
    C("atleast_3d", lambda x: np.sum(np.sin(np.atleast_3d(x))), [R(3, 4)]),
    C("broadcast_to", lambda x: np.sum(np.sin(np.broadcast_to(x, (3, 4)) * np.arange(12.0)
                                              .reshape(3, 4))), [R(4)], numba=True),
    C("broadcast_to_col", lambda x: np.sum(np.sin(np.broadcast_to(x, (2, 3, 4)))), [R(3, 1)]),
    C("stack", lambda x, y: np.sum(np.sin(np.stack([x, y])) * np.arange(24.0).reshape(2, 3, 4)),
      [R(3, 4), R(3, 4)], (0, 1)),
    C("stack_axis1", lambda x, y: np.sum(np.sin(np.stack((x, y), axis=1))
                                         * np.arange(24.0).reshape(3, 2, 4)),
      [R(3, 4), R(3, 4)], (0, 1)),
    C("concatenate", lambda x, y: np.sum(np.sin(np.concatenate([x, y])) * np.arange(20.0)
                                         .reshape(5, 4)), [R(3, 4), R(2, 4)], (0, 1)),
    C("concatenate_axis1", lambda x, y: np.sum(np.sin(np.concatenate((x, y), axis=1))),
      [R(3, 4), R(3, 2)], (0, 1)),
    C("astype_roundtrip", lambda x: np.sum(x.astype(np.float32).astype(np.float64)
                                           * np.arange(12.0).reshape(3, 4)),
      [R(3, 4)], eps=1e-3, rtol=1e-3, atol=1e-4, numba=True),
    # ------------------------------------------------------------ getitem
    C("getitem_int", lambda x: np.sum(np.sin(x[1])), [R(3, 4)], numba=True),
    C("getitem_neg_int", lambda x: np.sum(np.sin(x[-1])), [R(3, 4)]),
    C("getitem_scalar_elem", lambda x: np.sin(x[1, 2]), [R(3, 4)]),
    C("getitem_slice", lambda x: np.sum(np.sin(x[1:3])), [R(4, 3)]),
    C("getitem_step", lambda x: np.sum(np.sin(x[::2])), [R(5, 2)], numba=True),
    C("getitem_neg_step", lambda x: np.sum(np.sin(x[::-1]) * np.arange(5.0)), [R(5)]),
    C("getitem_tuple_slices", lambda x: np.sum(np.sin(x[1:, :2])), [R(3, 4)]),
    C("getitem_none", lambda x: np.sum(np.sin(x[:, None] * x)), [R(3)], numba=True),
    C("getitem_int_array_repeated", lambda x: np.sum(np.sin(x[IDX])), [R(3, 2)], numba=True),
    C("getitem_int_array_1d", lambda x: np.sum(np.sin(x[IDX]) * np.arange(6.0)), [R(4)]),
    C("getitem_bool_mask", lambda x: np.sum(np.sin(x[MASK])), [R(3, 4)]),
    C("getitem_mask_from_x", lambda x: np.sum(np.sin(x[x > 0])), [NZ(3, 4)]),
    C("getitem_ellipsis", lambda x: np.sum(np.sin(x[..., 1])), [R(2, 3, 4)]),
    # ------------------------------------------------------------ array methods
    C("method_sum_axis", lambda x: np.sum(np.sin(x.sum(axis=0))), [R(3, 4)], numba=True),
    C("method_reshape", lambda x: np.sum(np.sin(x.reshape(2, 3)) * np.arange(6.0).reshape(2, 3)),
      [R(3, 2)]),
    C("method_reshape_tuple", lambda x: np.sum(np.sin(x.reshape((2, 3)))), [R(6)]),
    C("attr_T", lambda x: np.sum(np.sin(x.T) * np.arange(12.0).reshape(4, 3)), [R(3, 4)],
      numba=True),
    C("method_dot", lambda x, y: np.sum(np.sin(x.dot(y))), [R(3, 4), R(4, 2)], (0, 1), numba=True),
    C("method_mean", lambda x: np.sin(x.mean()), [R(3, 4)], numba=True),
    C("method_max_axis", lambda x: np.sum(np.sin(x.max(axis=1))), [DISTINCT(3, 4)]),
    C("method_transpose", lambda x: np.sum(np.sin(x.transpose(1, 0))
                                           * np.arange(12.0).reshape(4, 3)), [R(3, 4)]),
    C("method_ravel", lambda x: np.sum(np.sin(x.ravel()) * np.arange(12.0)), [R(3, 4)]),
    C("method_flatten", lambda x: np.sum(np.sin(x.flatten()) * np.arange(12.0)), [R(3, 4)]),
    C("method_prod", lambda x: x.prod(), [P(3, 4)]),
    C("method_std", lambda x: np.sum(x.std(axis=0)), [R(3, 4)]),
    C("method_cumsum", lambda x: np.sum(np.sin(x.cumsum(axis=1))), [R(3, 4)]),
    C("method_copy", lambda x: np.sum(np.sin(x.copy())), [R(3, 4)]),
    C("method_clip", lambda x: np.sum(np.sin(x.clip(-0.5, 0.5))), [DISTINCT(3, 4) / 7 + 0.01]),
    C("method_min_keep", lambda x: np.sum(np.sin(x.min(axis=0, keepdims=True))),
      [DISTINCT(3, 4)]),
    C("method_squeeze", lambda x: np.sum(np.sin(x.squeeze())), [R(3, 1)]),
    C("method_swapaxes", lambda x: np.sum(np.sin(x.swapaxes(0, 1))
                                          * np.arange(12.0).reshape(4, 3)), [R(3, 4)]),
    C("method_var", lambda x: x.var(), [R(3, 4)]),
    # ------------------------------------------------------------ s2sgrad.ops on ndarrays
    C("ops_exp", lambda x: ops.sum(ops.exp(x)), [R(3, 4)]),
    C("ops_relu", lambda x: ops.sum(ops.sin(ops.relu(x))), [NZ(3, 4)], numba=True),
    C("ops_sigmoid", lambda x: ops.sum(ops.sin(ops.sigmoid(x))), [NZ(3, 4) * 2], numba=True),
    C("ops_softmax", lambda x: ops.sum(ops.sin(ops.softmax(x))), [R(3, 4)]),
    C("ops_softmax_axis0", lambda x: ops.sum(ops.sin(ops.softmax(x, axis=0))), [R(3, 4)]),
    C("ops_log_softmax", lambda x: ops.sum(ops.sin(ops.log_softmax(x))), [R(3, 4)]),
    C("ops_sum_axis", lambda x: ops.sum(ops.sin(ops.sum(x, axis=1))), [R(3, 4)]),
    C("ops_sum_keepdims", lambda x: ops.sum(ops.sin(ops.sum(x, axis=0, keepdims=True))),
      [R(3, 4)]),
    C("ops_mean_axis", lambda x: ops.sum(ops.sin(ops.mean(x, axis=-1))), [R(3, 4)]),
    C("ops_mean_all", lambda x: ops.mean(ops.sin(x)), [R(3, 4)]),
    C("ops_matmul", lambda a, b: ops.sum(ops.sin(ops.matmul(a, b))), [R(3, 4), R(4, 2)], (0, 1),
      numba=True),
    C("ops_bce_mean", lambda x, t: ops.binary_cross_entropy_with_logits(x, t),
      [NZ(3, 4), P(3, 4) / 2],
      (0, 1), numba=True),
    C("ops_bce_sum", lambda x, t: ops.binary_cross_entropy_with_logits(x, t, reduction="sum"),
      [NZ(3, 4), P(3, 4) / 2], (0, 1)),
    C("ops_bce_none", lambda x, t: ops.binary_cross_entropy_with_logits(x, t, reduction="none"),
      [NZ(3, 4), P(3, 4) / 2], (0, 1)),
    C("ops_bce_weight", lambda x, t, w: ops.binary_cross_entropy_with_logits(x, t, weight=w),
      [NZ(3, 4), P(3, 4) / 2, P(4)], (0, 1, 2)),
    C("ops_bce_pos_weight", lambda x, t, p: ops.binary_cross_entropy_with_logits(
        x, t, pos_weight=p, reduction="sum"), [NZ(3, 4), P(3, 4) / 2, P(4)], (0, 1, 2)),
    C("ops_bce_both", lambda x, t, w, p: ops.binary_cross_entropy_with_logits(
        x, t, weight=w, pos_weight=p, reduction="none"),
      [NZ(3, 4), P(3, 4) / 2, P(3, 1), P(4)], (0, 1, 2, 3)),
    C("ops_cross_entropy_idx", lambda x, t: ops.cross_entropy(x, t),
      [R(3, 4), np.array([0, 2, 1])]),
    C("ops_cross_entropy_probs", lambda x, t: ops.cross_entropy(x, t), [R(3, 4), P(3, 4) / 4],
      (0, 1)),
    C("ops_cross_entropy_sum", lambda x, t: ops.cross_entropy(x, t, reduction="sum"),
      [R(3, 4), P(3, 4) / 4], (0, 1)),
    C("ops_cross_entropy_none", lambda x, t: ops.cross_entropy(x, t, reduction="none"),
      [R(3, 4), P(3, 4) / 4], (0, 1)),
    C("ops_mse_mean", lambda x, t: ops.mse_loss(x, t), [R(3, 4), R(3, 4)], (0, 1), numba=True),
    C("ops_mse_sum_bcast", lambda x, t: ops.mse_loss(x, t, reduction="sum"), [R(3, 4), R(4)],
      (0, 1)),
    C("ops_mse_none", lambda x, t: ops.mse_loss(x, t, reduction="none"), [R(3, 4), R(3, 4)],
      (0, 1)),
    C("ops_maximum", lambda x, y: ops.sum(ops.sin(ops.maximum(x, y))), [R(3, 4), R(4)], (0, 1)),
    C("ops_where", lambda x, y: ops.sum(ops.sin(ops.where(x > 0, x, y))), [NZ(3, 4), R(3, 4)],
      (0, 1), numba=True),
    C("ops_reshape", lambda x: ops.sum(ops.sin(ops.reshape(x, (4, 3)))
                                       * np.arange(12.0).reshape(4, 3)), [R(3, 4)]),
    # ------------------------------------------------------------ array constructors
    C("array_nested_scalars", lambda x, y: np.sum(np.sin(np.array([[x, x * y, 2.5],
                                                                    [y, x ** 2, x / 2.0]]))),
      [0.7, -0.4], (0, 1), numba=True),
    C("array_nested_arrays", lambda x: np.sum(np.sin(np.array([[x, 2 * x], [x * x, 1.0 + x]]))),
      [R(3)], numba=True),
    C("array_three_deep", lambda x: np.sum(np.sin(np.array([[[x, 1.0], [x * x, 0.5]],
                                                             [[2.0, x], [0.1, -x]]]))),
      [0.8]),
    C("array_dtype_float", lambda x: np.sum(np.sin(np.array([x, 3 * x], dtype=np.float64))),
      [0.8]),
    C("array_dtype_int_is_constant",
      lambda x: np.sum(np.array([x, 3 * x], dtype=np.int64) * x), [1.7]),
    C("asarray_nested_tuples", lambda x, y: np.sum(np.sin(np.asarray(((x, y), (x * y, 1.0))))),
      [0.7, -0.4], (0, 1), numba=True),
    C("asarray_array", lambda x: np.sum(np.sin(np.asarray(x))), [R(3, 4)]),
    C("full_scalar", lambda x: np.sum(np.sin(np.full((2, 3), x)) * np.arange(6.0).reshape(2, 3)),
      [0.7], numba=True),
    C("full_row", lambda x: np.sum(np.sin(np.full((2, 3), x)) * np.arange(6.0).reshape(2, 3)),
      [R(3)]),
    C("full_like", lambda a, x: np.sum(np.sin(np.full_like(a, x)) * a), [R(3, 4), 0.7], (0, 1),
      numba=True),
    C("linspace", lambda a, b: np.sum(np.sin(np.linspace(a, b, 5))), [1.2, 3.4], (0, 1),
      numba=True),
    C("linspace_no_endpoint", lambda a, b: np.sum(np.sin(np.linspace(a, b, 4, endpoint=False))),
      [1.2, 3.4], (0, 1)),
    C("linspace_one_sample", lambda a, b: np.sum(np.sin(np.linspace(a, b, 1))), [1.2, 3.4],
      (0, 1)),
    C("linspace_arrays_axis1", lambda a, b: np.sum(np.sin(np.linspace(a, b, 3, axis=1))),
      [R(2), R(2)], (0, 1)),
    C("linspace_broadcast", lambda a, b: np.sum(np.sin(np.linspace(a, b, 3))), [0.3, R(2)],
      (0, 1)),
    C("arange_start", lambda a: np.sum(np.sin(np.arange(a, 5.0))), [0.3]),
    C("arange_start_step", lambda a, s: np.sum(np.sin(np.arange(a, 4.0, s))), [0.3, 0.7],
      (0, 1), numba=True),
    C("item", lambda x: np.sin(x[1:3].item(1)) * x[0].item(), [R(4)]),
    C("item_multi_index", lambda x: np.sin(x.item(1, 2)), [R(3, 4)]),
    C("list_of_numbers_max", lambda x: np.max([x, x * x, 0.1]), [0.7]),
    C("list_of_numbers_maximum", lambda x: np.sum(np.maximum([x, -x], 0.1)), [0.7]),
    C("builtin_max_three", lambda x, y: max(x, y, x * y), [0.7, 1.3], (0, 1)),
    C("builtin_min_list", lambda x, y: min([x, y, x * y]), [0.7, 1.3], (0, 1)),
    # ------------------------------------------------------------ einsum forms
    C("einsum_transposed_out", lambda a, b: np.sum(np.sin(np.einsum("ij,jk->ki", a, b))),
      [R(3, 4), R(4, 2)], (0, 1)),
    C("einsum_sublist", lambda a, b: np.sum(np.sin(np.einsum(a, [0, 1], b, [1, 2]))),
      [R(3, 4), R(4, 2)], (0, 1)),
    C("einsum_sublist_out", lambda a, b: np.sum(np.sin(np.einsum(a, [0, 1], b, [1, 2], [2, 0]))),
      [R(3, 4), R(4, 2)], (0, 1)),
    C("einsum_sublist_ellipsis",
      lambda a, b: np.sum(np.sin(np.einsum(a, [Ellipsis, 0], b, [0, 1]))),
      [R(2, 3, 4), R(4, 2)], (0, 1)),
    C("einsum_ellipsis", lambda a, b: np.sum(np.sin(np.einsum("...j,jk->...k", a, b))),
      [R(2, 3, 4), R(4, 2)], (0, 1)),
    C("einsum_ellipsis_implicit", lambda a, b: np.sum(np.sin(np.einsum("...j,jk", a, b))),
      [R(3, 4), R(4, 2)], (0, 1)),
    C("einsum_ellipsis_broadcast", lambda a, b: np.sum(np.sin(np.einsum("...ij,...jk->...ik",
                                                                         a, b))),
      [R(1, 3, 4), R(2, 4, 2)], (0, 1)),
    C("einsum_trace", lambda a: np.sin(np.einsum("ii", a)), [R(3, 3)]),
    C("einsum_diagonal", lambda a, b: np.sum(np.sin(np.einsum("ii,i->i", a, b))),
      [R(3, 3), R(3)], (0, 1)),
    # ------------------------------------------------------------ std / var at one element
    C("std_scalar", lambda x: np.std(x) + np.sin(x), [0.7]),
    C("std_one_element", lambda x: np.std(x[:1]) + np.sum(np.sin(x)), [R(3)], numba=True),
    C("std_axis_of_one", lambda x: np.sum(np.std(x, axis=1)) + np.sum(np.sin(x)), [R(3, 1)],
      numba=True),
    C("std_ddof1", lambda x: np.sum(np.sin(np.std(x, axis=0, ddof=1))), [R(3, 4)]),
    C("var_scalar", lambda x: np.var(x) + np.sin(x), [0.7]),
    C("ops_transpose", lambda x: ops.sum(ops.sin(ops.transpose(x, (1, 0)))
                                         * np.arange(12.0).reshape(4, 3)), [R(3, 4)]),
    C("ops_concat", lambda x, y: ops.sum(ops.sin(ops.concat((x, y), axis=1))),
      [R(3, 4), R(3, 2)], (0, 1)),
    C("ops_stack", lambda x, y: ops.sum(ops.sin(ops.stack([x, y], axis=0))
                                        * np.arange(24.0).reshape(2, 3, 4)),
      [R(3, 4), R(3, 4)], (0, 1)),
    C("ops_squeeze", lambda x: ops.sum(ops.sin(ops.squeeze(x, axis=1))), [R(3, 1, 4)]),
    C("ops_expand_dims", lambda x: ops.sum(ops.sin(ops.expand_dims(x, 0))), [R(3, 4)]),
    C("ops_pow", lambda x: ops.sum(ops.sin(ops.pow(x, 3.0))), [R(3, 4)]),
    C("ops_pow_tensor_exp", lambda x, y: ops.sum(ops.pow(x, y)), [P(3, 4), R(3, 4)], (0, 1)),
    C("ops_sqrt", lambda x: ops.sum(ops.sin(ops.sqrt(x))), [P(3, 4)]),
    C("ops_abs", lambda x: ops.sum(ops.sin(ops.abs(x))), [NZ(3, 4)]),
    C("ops_tanh", lambda x: ops.sum(ops.sin(ops.tanh(x))), [R(3, 4)], numba=True),
]

CASES += more_cases(C)   # numpy_more, linalg_rules, scipy_rules: tests/rule_cases_more.py
CASES += [   # the adjoint helpers gradient code calls (rules/runtime_vjp.py: inlined gradients)
    C("rt_unbroadcast", lambda g: np.sum(np.sin(rt.unbroadcast(g, np.ones((3, 1))))),
      [R(2, 3, 4)]),
    C("rt_unbroadcast_number", lambda g: np.sin(rt.unbroadcast(g, 1.0)), [R(3)]),
    C("rt_unreduce", lambda g: np.sum(np.sin(rt.unreduce(g, np.ones((3, 4)), 1, False))),
      [R(3)]),
    C("rt_sum", lambda x: np.sum(np.sin(rt.sum(x, 0, True))), [R(3, 4)]),
    C("rt_where", lambda x, y: np.sum(np.sin(rt.where(x > 0.1, x * y, y))), [R(3, 4), R(4)]),
    C("rt_copy_value", lambda x: np.sum(np.sin(rt.copy_value(x * 2.0))), [R(3, 4)]),
    C("rt_broadcast_like", lambda t: np.sum(np.sin(rt.broadcast_like(t, np.ones((2, 3, 4))))),
      [R(3, 1)]),
    C("rt_broadcast_like_same", lambda t: np.sum(np.sin(rt.broadcast_like(t, np.ones(3)))),
      [R(3)]),
    C("rt_mean", lambda x: np.sum(np.sin(rt.mean(x, (0, 1), False))), [R(3, 4)]),
    C("rt_einsum", lambda a, b: np.sum(np.sin(rt.einsum("ij,jk->ik", a, b))),
      [R(3, 4), R(4, 2)], (0, 1)),
]
CASES += more_surface_cases(C)   # numpy_surface and more scipy.special: rule_cases_surface.py

IDS = [c.id for c in CASES]
assert len(set(IDS)) == len(IDS), "case ids must be unique"

ALL_NUMBA = os.environ.get("S2SGRAD_TEST_ALL_NUMBA") == "1"
PARAMS = []
for _c in CASES:
    marks = [pytest.mark.xfail(reason=_c.xfail, strict=True)] if _c.xfail else []
    PARAMS.append(pytest.param(_c, "python", id=_c.id + "-python", marks=marks))
    if _c.numba or ALL_NUMBA:
        PARAMS.append(pytest.param(_c, "numba", id=_c.id + "-numba", marks=marks))

#: numba=True cases whose gradient is expected to fall back to Python (checked for the
#: fallback's correctness); every other numba=True case must run compiled
RUNS_AS_PYTHON_UNDER_NUMBA = {
    "array_nested_arrays": "Numba's np.array takes no nested list of arrays",
    "expit": "Numba has no scipy.special",
}

# backend outcome of every numba run: case id -> (backend, fallback_reason)
NUMBA_OUTCOMES = {}


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """The shared persistent cache of tests/conftest.py when set (Numba's machine code is
    then reused between runs), else a directory for this session."""
    return os.environ.get("S2SGRAD_CACHE_DIR") or str(tmp_path_factory.mktemp("s2sgrad_cache"))


@pytest.mark.parametrize("case,backend", PARAMS)
def test_rule(case, backend, cache_dir, monkeypatch):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", cache_dir)
    if backend == "python":
        monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    else:
        monkeypatch.setenv("S2SGRAD_BACKEND", "numba")   # compile even loop-free code
    g = check_grad(case.fn, case.args, grad_position=case.pos, rtol=case.rtol, atol=case.atol,
                   eps=case.eps)
    if backend == "python":
        assert g.backend == "python"
    else:
        NUMBA_OUTCOMES[case.id] = (g.backend, g.fallback_reason)
        if case.numba and case.id not in RUNS_AS_PYTHON_UNDER_NUMBA:
            assert g.backend == "numba", g.fallback_reason


def _rules_looked_up(case, monkeypatch):
    """The names of the rules the compiler looks up while differentiating ``case.fn``."""
    import importlib
    import pkgutil

    import s2sgrad.compiler
    from s2sgrad.rules import lookup as real
    # the lowering passes that look rules up: every compiler module that imports lookup
    modules = [m for m in (importlib.import_module(info.name) for info in
                           pkgutil.walk_packages(s2sgrad.compiler.__path__, "s2sgrad.compiler."))
               if getattr(m, "lookup", None) is real]
    assert modules, "no compiler module looks rules up: this test no longer records"
    seen = set()

    def recording(prim):
        rule = real(prim)
        if rule is not None:
            seen.add(rule.name)
        return rule

    for module in modules:
        monkeypatch.setattr(module, "lookup", recording)
    try:
        # a new function object: grad(case.fn) is kept per function, built already
        fn = fresh_function(case.fn) if isinstance(case.fn, types.FunctionType) else case.fn
        s2sgrad.grad(fn, grad_position=case.pos).source  # noqa: B018 - builds only
    except Exception:  # noqa: BLE001 - a case that cannot build fails (or xfails) in test_rule
        pass
    finally:
        for module in modules:
            monkeypatch.setattr(module, "lookup", real)
    return seen


def test_every_rule_is_covered(cache_dir, monkeypatch):
    """Each differentiable rule in the table is used by at least one case above."""
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", cache_dir)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    covered = set()
    for case in CASES:
        covered |= _rules_looked_up(case, monkeypatch)
    wanted = {rule.name for _, rule in all_rules() if rule.differentiable}
    missing = sorted(wanted - covered)
    assert not missing, (f"differentiable rules with no case in tests/test_rules.py: {missing}; "
                         f"add a Case that calls each")
