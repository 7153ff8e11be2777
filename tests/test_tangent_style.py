"""Small functions in the style of google/tangent's tests/functions.py, checked against
central finite differences (float64, sensitivity of ones on every output element).

Every case runs under the default backend (``auto``: Numba compiles the code that loops,
loop-free code runs as numpy) and plain Python.  A case that
s2sgrad should support but does not is ``xfail(strict=True)`` with the reason; a wrong
gradient or a crash that is not an ``S2sgradError`` is marked ``BUG: ...``.  Constructs that
are out of scope (recursion, generators, ...) must raise an ``S2sgradError`` that names
this file and the offending line.
"""
import copy
import math

import numpy as np
import pytest

import s2sgrad
from s2sgrad.errors import S2sgradError
from s2sgrad.testing import check_grad


def _r(seed, shape, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


# ====================================================================== module globals

SCALE = 2.5
OFFSET = 3
W_GLOBAL = _r(100, (3, 4))
V_GLOBAL = _r(101, (4,))


# ====================================================================== helpers


def _mul(a, b):
    return a * b


def _add(a, b):
    return a + b


def _inner_fn(a, b):
    return a * b


def _square_then_sin(a):
    return np.sin(_mul(a, a))


def _helper_branch(a):
    if a > 1.0:
        return a * a
    return 3.0 * a


def _helper_loop(a, n):
    for _ in range(n):
        a = a * 1.5 + np.sin(a)
    return a


def _helper_defaults(a, scale=2.0, shift=1.0):
    return a * scale + shift


def _helper_pair(a, b):
    return a + b, a * b


def _helper_array(x, w):
    return np.tanh(x * w) + x


def make_scaler(k):
    def scaled(a):
        return k * a * a
    return scaled


closure_fn = make_scaler(3.0)

lambda_fn = lambda x: np.sum(x ** 2 + np.sin(x))  # noqa: E731


# ====================================================================== scalar arithmetic


def id_(a):
    return a


def unary_sub(a):
    return -a


def increment(a):
    return a + 1


def int_consts(a):
    return 2 * a - 3 + a / 4


def rdiv(a):
    return 3.0 / a


def div_self(a):
    return a / a


def sub_self(a):
    return a - a


def pow_int(a):
    return a ** 3


def pow_float(a):
    return a ** 2.5


def rpow(a):
    return 2.0 ** a


def pow_var(a, b):
    return a ** b


def chained(a):
    return ((a + 1) * (a - 2)) / (a * a + 1)


def third_pow(a):
    return a * a * a + a


def saxpy(a, b, c):
    return a * b + c


def saxpy_call(a, b, c):
    return _add(_mul(a, b), c)


def reassign(a):
    b = a
    b = b * 3.0
    b = b + a
    return b


def overwrite_arg(a):
    a = a * 3.0
    a = a * a
    return a


def augassign(a):
    x = a * a
    x *= x
    x += a
    x -= 1.0
    x /= 2.0
    return x


def mixed_int_float(a, b):
    return (a + 1) / 2 + 3 * a ** 2 - 1 + b * a * 2 + OFFSET


def gradname_aliasing(a):
    da = a * a
    return da


# ====================================================================== math.*


def math_basic(a):
    return math.sin(a) * math.exp(a) + math.log(a)


def math_more(a):
    return math.sqrt(a) + math.tanh(a) + math.cos(a) + math.atan(a)


def math_pow_hypot(a):
    return math.pow(a, 3.0) + math.hypot(a, 2.0)


def math_consts(a):
    return math.pi * a * a + math.e


# ====================================================================== numpy elementwise


def numpy_exp2(a):
    return np.exp(np.exp(a))


def np_elementwise(x):
    return np.sum(np.sin(x) * np.exp(x) + np.log(x) + np.sqrt(x))


def np_sigmoid(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def np_abs(x):
    return np.sum(np.abs(x) * x)


def np_maximum_const(x):
    return np.sum(np.maximum(x, 0.0) ** 2)


def np_maximum2(x, y):
    return np.sum(np.maximum(x, y) * np.minimum(x, y) + np.maximum(x, y))


def np_where(x):
    return np.sum(np.where(x > 0, x ** 2, -x))


def np_clip(x):
    return np.sum(np.clip(x, -0.5, 0.5) * x)


def np_power_square(x):
    return np.sum(np.power(x, 3) + np.square(x))


def fn_multiply(a):
    return np.multiply(a, 3.0)


def np_divide(x, y):
    return np.sum(np.divide(x, y) + np.subtract(x, y) * np.add(x, 1.0))


def np_arctan2(x):
    return np.sum(np.arctan2(x, 2.0) + np.arctan2(1.5, x))


def np_log1p_expm1(x):
    return np.sum(np.log1p(x * x) + np.expm1(x))


def np_hyperbolic(x):
    return np.sum(np.sinh(x) * np.cosh(x) + np.tanh(x))


def np_trig(x):
    return np.sum(np.cos(x) + np.tan(x) + np.arcsin(x / 2.0) + np.arccos(x / 3.0))


def np_sign_mul(x):
    return np.sum(np.sign(x) * x * x)


def np_log_variants(x):
    return np.sum(np.log2(x) + np.log10(x) + np.exp2(x))


# ====================================================================== reductions


def numpy_sum(x):
    return np.sum(x)


def cast_sum(x):
    return np.sum(np.array(x))


def overwrite_call(x):
    x = np.sum(x)
    x = x * x
    return x


def numpy_mean_2d(x):
    return np.mean(x * x)


def sum_axis0(x):
    return np.sum(x * x, axis=0)


def normalize_rows(x):
    y = x / np.sum(x, axis=1, keepdims=True)
    return np.sum(y * y)


def np_max(x):
    return np.max(x) * np.min(x)


def np_max_axis(x):
    return np.max(x, axis=1)


def np_prod(x):
    return np.prod(x)


def np_var_std(x):
    return np.var(x) + np.std(x)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def softmax_weighted(x):
    e = np.exp(x - np.max(x))
    p = e / np.sum(e)
    return np.sum(p * V_GLOBAL)


def np_cumsum(x):
    return np.cumsum(x * x)


def method_calls(x):
    return (x * x).sum() + x.mean() + x.max()


def np_norm(x):
    return np.linalg.norm(x)


def mean_axis_keyword(x):
    return np.sum(np.mean(x, axis=0) ** 2)


# ====================================================================== dot / matmul


def dot_vec(x, y):
    return np.dot(x, y)


def dot_mat(x, w):
    return np.sum(np.dot(x, w))


def matmul_op(a, b):
    return np.sum(np.tanh(a @ b))


def matvec(a, v):
    return a @ v


def gram(x):
    return np.sum(x.T @ x)


def outer(x, y):
    return np.outer(x, y)


def logistic_regression(W, b, inputs, label):
    h1 = np.dot(inputs, W) + b
    prediction = 0.5 * (np.tanh(h1) + 1)
    label_probabilities = prediction * label + (1 - prediction) * (1 - label)
    loss = -np.sum(np.log(label_probabilities))
    return loss


def bilinear(x, h, U, W, b):
    y = np.dot(x, W)
    y = y + np.dot(h, U)
    y = y + b
    y = np.tanh(y)
    return np.sum(y)


def rnn(W, inputs):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = np.dot(inputs[t], W) + h[t]
    return np.sum(h[1:])


def global_array(x):
    return np.sum(np.tanh(W_GLOBAL @ x))


# ====================================================================== indexing reads


def subscript1(x):
    a = x[0]
    b = x[1]
    return a * b


def negative_index(x):
    return x[-1] * x[-2]


def slicing(x):
    return np.sum(x[1:])


def slice_step(x):
    return np.sum(x[::2] * x[1::2])


def index_2d(x):
    return x[0, 1] * x[1, 2] + x[1][0]


def slice_2d(x):
    return np.sum(x[:, 1:] * x[:, :-1])


def row_read(x):
    return np.sum(x[1] ** 2)


def fancy_index_repeats(x):
    return np.sum(x[np.array([0, 2, 2, 1])] ** 2)


def fancy_index_list(x):
    return x[[0, 0, 3]] * 2.0


def boolean_mask(x):
    return np.sum(x[x > 0] ** 2)


def extended_slice(x):
    return np.sum(x[::2, np.newaxis] * x[np.newaxis, 1::2])


def len_and_shape(x):
    return np.sum(x) / len(x) + x.shape[0] * x[0]


def reshape_ravel(x):
    return np.sum(x.reshape(2, 3) @ np.arange(3.0)) + np.sum(x.ravel() ** 2)


def concat_stack(x):
    y = np.concatenate([x, x ** 2])
    z = np.stack([x, np.sin(x)])
    return np.sum(y) + np.sum(z[1] * z[0])


def anf_list(a):
    b = [1, a * a, 2]
    return np.sum(b)


def deep_anf_list(x):
    b = [1, x[0] * x[1] * x[2], 3]
    return np.sum(b)


def list_and_subscript(a):
    x = [1.0, a, 3.0]
    return x[0] * x[1]


def unpack_array(x):
    a, b, c = x
    return a * b + c


# ====================================================================== in-place writes


def active_subscript(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i] * x[i]
    return np.sum(y)


def init_array_grad_maybe_active(x):
    h = np.zeros((len(x), 3))
    for t in range(len(h)):
        h[t] = x[t]
    return np.sum(h * h)


def copy_write(x):
    y = x.copy()
    y[0] = y[1] * y[2]
    return np.sum(y * x)


def subscript_arg_write(x):
    a = x[0]
    b = x[1]
    x[0] = a * b
    return np.sum(x)


def subscript3(x):
    y = x ** 2.0
    x[0] = y[1] * y[2]
    return np.sum(x * y)


def empty_fill(x):
    y = np.empty(len(x))
    for i in range(len(x)):
        y[i] = np.sin(x[i])
    return np.sum(y * y)


def augassign_index(x):
    y = np.zeros(3)
    y[0] += x[0]
    y[1] = 2.0
    y[1] *= x[1]
    y += x[:3]
    y[1:] *= 2.0
    return np.sum(y * y)


def slice_write(x):
    y = np.zeros(6)
    y[1:4] = x[:3] * 2.0
    y[::2] += x[3:]
    return y


def write_2d(x):
    z = np.zeros((2, 3))
    z[0, :] = x
    z[1, 1] = x[0] * x[2]
    z[:, 0] *= 3.0
    return np.sum(z * z)


def recurrence_inplace(x):
    y = x.copy()
    for i in range(1, len(y)):
        y[i] = y[i - 1] * y[i] + 0.5
    return y


def mask_write(x):
    y = x.copy()
    y[y < 0] = 0.0
    return np.sum(y * y)


def overwrite_whole_array(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = x[i]
    y = y * y
    y[0] = y[0] * x[1]
    return np.sum(y)


# ====================================================================== branches


def overwrite_if(a):
    if a > 0:
        a = a * 3.0
    else:
        a = a * 2.0
    return a


def nested_if(a):
    if a > 0:
        if a < 10:
            a = a * a
    else:
        a = 3.0 * a
    return a


def multiarg_if(a):
    if a * a / 3.0 > 0:
        b = 3.0
    else:
        b = 4.0
    a = a * b
    if a < b - a * b:
        a = a * a
    elif a > b + 3.0 * a:
        if a / 2.0 < 0:
            a = a / b
        else:
            a = a * b
    else:
        a = -a
    return a


def serial_if(a):
    if a > 0:
        a = a * a
    a = a + a
    if a < 0:
        a = 3.0 * a
    return a


def multivar_if(a, b):
    if a > b:
        a = a * a
    else:
        a = a * b
    return a


def devilish_nested_if(a):
    if a > 0:
        a = a * 3.0
        if a < 10:
            a = a * a
        else:
            a = a * 2.0
    return a


def overwrite_ifelse(a):
    if a > 0:
        a = a * 3.0
    elif 0 > a:
        a = a * 2.0
    else:
        a = 1.0 * a
    return a


def cond_expr(a):
    return a * a if a > 0 else -a


def cond_expr_array(x):
    s = np.sum(x)
    return s * s if s > 0 else np.sum(x ** 3)


def if_on_element(x):
    if x[0] > x[1]:
        y = x * x[0]
    else:
        y = np.exp(x)
    return np.sum(y)


def if_bool_ops(a):
    if a > 0 and a < 2:
        r = a * a
    elif not a > -1 or a > 5:
        r = a * 3.0
    else:
        r = np.sin(a)
    return r


def if_mul_with_call(a, b):
    if a > b:
        o = _inner_fn(a, b)
    else:
        o = _inner_fn(b, a)
    return o


def branch_defines_different(a):
    if a > 0:
        b = a * a
        c = 1.0
    else:
        c = np.cos(a)
        b = c * a
    return b + c


def early_return(a):
    if a > 0:
        return a * a
    return -a * 2.0


def multiple_returns(a, b):
    if a > 1:
        return a * b
    elif a > 0:
        t = a + b
        return t * t
    else:
        return a


def if_array_any(x):
    if np.any(x > 0.9):
        return np.sum(x * 2.0)
    return np.sum(x ** 2)


# ====================================================================== loops


def iterpower_static(a):
    for i in range(3):
        a = a * a
    return a


def iterpower(a, n):
    for i in range(n):
        a = a * a
    return a


def serial_for(a, n):
    for i in range(n):
        a = a * a
    a = 2.0 * a
    for i in range(n + 1):
        a = a * 3.0
    return a


def serial_ifthenfor(a, n):
    if a > 0:
        a = a * a
    a = 2.0 * a
    for i in range(n):
        a = a * a
    return a


def iter_third_pow1(a):
    out = 1
    for i in range(3):
        out = out * a
    return out


def iter_third_pow2(a):
    out = a
    for i in range(3 - 1):
        out = out * a
    return out


def cond_iterpower1(a):
    for i in range(3):
        if a < 20:
            a = a * a
    return a


def cond_iterpower2(a):
    if a < 20:
        for i in range(3):
            a = a * a
    return a


def superfor_iterpower(a):
    for i in range(2):
        for j in range(3):
            a = a * a
    return a


def super_iterpower(a):
    for i in range(3):
        a = a * a * a
    return a


def loop_accumulate(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * i
    return s


def loop_neighbours(x):
    s = 0.0
    for i in range(1, len(x)):
        s = s + x[i] * x[i - 1]
    return s


def loop_over_array(x):
    s = 0.0
    for v in x:
        s = s + v * v
    return s


def loop_enumerate(x):
    s = 0.0
    for i, v in enumerate(x):
        s += (i + 1) * np.sin(v)
    return s


def loop_zip(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * b * a
    return s


def loop_range_step(x):
    s = 0.0
    for i in range(0, len(x), 2):
        s += x[i] ** 2
    return s


def loop_reverse(x):
    s = 0.0
    for i in range(len(x) - 1, -1, -1):
        s = s * 0.5 + x[i] * x[i]
    return s


def nested_loops_2d(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            s = s + x[i, j] * (i + 1) * np.sin(x[j, i])
    return s


def nested_loops_dependent(x):
    s = 0.0
    for i in range(len(x)):
        for j in range(i):
            s = s + x[i] * x[j]
    return s


def while_big(a):
    while np.abs(a) > 0.1:
        a = a * 0.5
    return a


def while_counter(x):
    i = 0
    s = 0.0
    while i < len(x):
        s = s + x[i] ** 2
        i += 1
    return s


def while_data(a):
    while a < 10:
        a = a * 1.7 + 0.3
    return a


def loop_break(x):
    s = 0.0
    for i in range(len(x)):
        if s > 2.0:
            break
        s += x[i] ** 2
    return s


def loop_continue(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < 0:
            continue
        s += x[i] ** 3
    return s


def while_true_break(a):
    while True:
        a = a * 1.3 + np.sin(a)
        if a > 5:
            break
    return a


def loop_early_return(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] > 0.7:
            return x[i] * s
        s += x[i]
    return s


def loop_zero_trips(a, n):
    b = a * 2.0
    for i in range(n):
        b = b * a
    return b


def loop_zero_trips_array(x):
    s = np.sum(x)
    for i in range(3, len(x)):
        s = s * x[i]
    return s


def loop_carry_vector(x):
    h = np.zeros(3)
    for t in range(x.shape[0]):
        h = np.tanh(W_GLOBAL @ x[t] + h)
    return h


def loop_vector_update(x):
    y = x
    for i in range(3):
        y = y * x + 1.0
    return np.sum(y)


def iterpower_with_call(a, n):
    for i in range(n):
        a = _inner_fn(a, a)
    return a


def iterpower_with_nested_def(a, n):
    def _fn(a, n):
        return a * n

    for i in range(n):
        a = _fn(a, a)
    return a


def loop_helper_in_branch(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] > 0:
            s = s + _square_then_sin(x[i])
        else:
            s = s + _mul(x[i], 3.0)
    return s


def for_else(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] > 5.0:
            break
        s += x[i] * x[i]
    else:
        s = s * 2.0
    return s


# ====================================================================== helpers / closures / globals


def mul_with_call(a, b):
    return _inner_fn(a, b)


def nested_call(a, b):
    return mul_with_call(a, b)


def helper_calls_helper(a):
    return _square_then_sin(a) + _mul(a, 2.0)


def helper_with_branch(a):
    return _helper_branch(a) + _helper_branch(a * 0.5)


def helper_with_loop(a):
    return _helper_loop(a, 3)


def helper_kwargs(a):
    return _helper_defaults(a) + _helper_defaults(a, shift=2.0) + _helper_defaults(a, scale=a)


def helper_tuple_return(a, b):
    s, p = _helper_pair(a, b)
    return s * p


def helper_array(x):
    return np.sum(_helper_array(x, 2.0) * _helper_array(x, x))


def global_const(a):
    return a * SCALE + OFFSET


def call_closure(a):
    return closure_fn(a) + a


def local_lambda(a):
    sq = lambda t: t * t  # noqa: E731
    return sq(a) + a


def default_arg(a, b=2.0):
    return a * b + b


def keyword_numpy(x):
    return np.sum(np.sum(x, axis=1, keepdims=True) * x)


# ====================================================================== tuples / outputs


def passthru_pack(a, b, c, i):
    x = a, b, c
    return x[i]


def tuple_swap(a, b):
    a, b = b, a * b
    return a * b + a


def multiple_return(a):
    return 2 * a, a


def return_tuple_arrays(x):
    return x * 2.0, np.sum(x ** 2)


def cart2polar(a, b):
    r = np.sqrt(a ** 2.0 + b ** 2.0)
    theta = np.arctan2(b, a)
    return r, theta


def return_vector(x):
    return x ** 2


def return_matrix(x):
    return np.outer(x, x) + 1.0


def python_float_with_array(a, x):
    return np.sum(a * x + a ** 2)


def scalar_broadcast(a):
    return np.sum(a * np.ones(3) + np.arange(3.0) * a)


def tuple_in_loop(x):
    acc = (0.0, 1.0)
    for i in range(len(x)):
        acc = (acc[0] + x[i], acc[1] * x[i])
    return acc[0] * acc[1]


def dict_local(a):
    d = {"a": a, "b": 2.0}
    return d["a"] * d["b"]


# ====================================================================== float32


def f32_elementwise(x):
    return np.sum(np.tanh(x) * 2.0 + x * 0.5)


def f32_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] * x[i]
    return s


def f32_vector_out(x):
    return x * 0.5 + 1.0


# ====================================================================== out of scope


def recursive(a, n):
    if n == 0:
        return a
    return recursive(a * a, n - 1)


def generator_expression(x):
    return sum(v * v for v in x)


def list_comprehension(x):
    return np.sum([v * 3.0 for v in x])


def try_except(a):
    try:
        b = a * a
    except ValueError:
        b = a
    return b


# ====================================================================== more: aliasing, views, builtins, misc


def _fill_first(y, v):
    y[0] = v


def alias_write(x):
    y = x
    y[0] = y[0] * y[1]
    return np.sum(x * x)


def view_write(x):
    y = np.zeros(4)
    v = y[1:3]
    v[:] = x[:2] * 2.0
    return np.sum(y * y)


def view_read_after_write(x):
    y = x.copy()
    b = y[0:2]
    y[0] = y[2] * 5.0
    return np.sum(b * x[:2])


def helper_mutates_array(a):
    y = np.zeros(3)
    _fill_first(y, a * a)
    return np.sum(y) + a


def repeated_overwrite(x):
    y = x.copy()
    n = len(y)
    for k in range(3):
        for i in range(n):
            y[i] = y[i] * y[(i + 1) % n]
    return np.sum(y)


def aug_self_read(x):
    y = x.copy()
    for i in range(1, len(y)):
        y[i] += y[i - 1] * x[i]
    return y


def write_then_read_loop(x):
    y = np.zeros(len(x) + 1)
    for i in range(len(x)):
        y[i + 1] = y[i] * 0.5 + x[i]
    return y[-1] * y[2]


def arg_inplace_aug(x):
    x += 1.0
    x *= x
    return np.sum(x)


def scatter_repeated_index(x):
    y = np.zeros(3)
    y[np.array([0, 0, 2])] += x[:3]
    return np.sum(y * y)


def fib_swap(x, n):
    a = x
    b = 1.0
    for i in range(n):
        a, b = b, a + b * x
    return a


def builtins_max_min_abs(a, b):
    return max(a, b) + min(a * a, b) + abs(a)


def builtin_max_of_array(x):
    return max(x) * 2.0


def builtin_pow(a):
    return pow(a, 2) + a


def builtin_sum_of_array(x):
    return sum(x * x)


def np_array_from_scalars(a, b):
    v = np.array([a * a, b, a * b])
    return np.sum(v * np.array([1.0, 2.0, 3.0]))


def float_cast(x):
    return float(x[0]) * x[1]


def assert_and_docstring(x):
    """A docstring."""
    assert x.ndim == 1, "need 1-D"
    return np.sum(x * x)


def print_inside(a):
    b = a * a
    print("b is", b)
    return b


def chained_compare(a):
    if 0 < a < 2:
        return a * a
    return a


def relu_in_loop(x):
    s = 0.0
    for i in range(len(x)):
        v = x[i] if x[i] > 0 else 0.0
        s = s + v * v
    return s


def nested_unpack(a, b):
    (c, d), e = (a * b, a), b
    return c * d + e


def loop_var_after_loop(x):
    for i in range(len(x)):
        pass
    return x[i] * x[i]


def loop_index_floordiv(x):
    s = 0.0
    for i in range(2 * len(x)):
        s = s + x[i // 2] * i
    return s


def column_loop(m):
    s = 0.0
    for j in range(m.shape[1]):
        s = s + np.sum(m[:, j] * m[:, j]) * j
    return s


def broadcast_outer_sum(x, y):
    return np.sum(x[:, None] * y[None, :] + x[:, np.newaxis])


def broadcast_row_grad(v, m):
    return np.sum((m + v) ** 2)


def while_norm(x):
    while np.linalg.norm(x) > 1.0:
        x = x * 0.7
    return x


def cond_on_counter(x):
    s = 0.0
    for i in range(len(x)):
        if i % 2 == 0:
            s = s + x[i] ** 2
        else:
            s = s - x[i]
    return s


def while_complex_cond(a, x):
    i = 0
    while i < len(x) and a < 10.0:
        a = a * x[i] + 1.0
        i += 1
    return a


def while_break_continue(x):
    s = 0.0
    i = 0
    while True:
        i += 1
        if i >= len(x):
            break
        if x[i] < 0:
            continue
        s = s + x[i] * x[i - 1]
    return s


def matrix_power_loop(m):
    p = np.eye(m.shape[0])
    for i in range(3):
        p = p @ m
    return np.sum(p)


def int_index_array_arg(x, idx):
    return np.sum(x[idx] ** 2)


def bool_flag_arg(a, flag):
    if flag:
        return a * a
    return a


def argmax_index(x):
    i = np.argmax(x)
    return x[i] * x[0]


def max_axis_keepdims(m):
    return np.sum(m / np.max(m, axis=0, keepdims=True))


def einsum_matmul(a, b):
    return np.einsum("ij,jk->ik", a, b)


def linalg_inv_det(m):
    return np.sum(np.linalg.inv(m)) + np.linalg.det(m)


def mean_3d(x):
    return np.sum(np.mean(x, axis=1) ** 2)


def list_append(x):
    out = []
    for i in range(len(x)):
        out.append(x[i] * x[i])
    return np.sum(np.array(out))


def _h_loop_or_branch(v, i):
    if i > 1:
        return v * v * i
    for k in range(2):
        v = v * 1.5
    return v


def helper_branch_loop_in_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = s + _h_loop_or_branch(x[i], i)
    return s


def keyword_call_order(a, b):
    return _kw(b=a, a=b)


def _kw(a, b):
    return a * b * b


def star_args_call(a, b):
    t = (a, b)
    return _kw(*t)


def const_output(x):
    return 3.0


def np_sort(x):
    return np.sum(np.sort(x) * np.arange(len(x)))


def mod_scalar(a):
    return (a % 2.0) * a


def tolist_read(x):
    l = x.tolist()
    return l[0] * l[1]


def sum_where_keyword(x):
    return np.sum(x * x, where=x > 0)


def mean_dtype_keyword(x):
    return np.mean(x * x, dtype=np.float64)


def np_flip(x):
    return np.sum(np.flip(x) * np.arange(len(x)))


def np_float64_cast(a):
    return np.float64(a) * a


def while_else(a):
    while a < 5.0:
        a = a * 2.0
    else:
        a = a + 1.0
    return a


def copy_module_copy(x):
    y = copy.copy(x)
    return np.sum(y * y)


# ====================================================================== the cases


def S(v):
    return float(v)


POS = _r(1, (5,), 0.2, 2.0)     # strictly positive
VEC = _r(2, (5,))               # mixed signs, away from 0 below
VEC[np.abs(VEC) < 0.1] += 0.3
MAT = _r(3, (3, 4))
SQ = _r(4, (3, 3))

CASES = [
    # scalar arithmetic
    ("id", id_, (1.3,)),
    ("unary_sub", unary_sub, (1.3,)),
    ("increment", increment, (1.3,)),
    ("int_consts", int_consts, (1.3,)),
    ("rdiv", rdiv, (1.3,)),
    ("div_self", div_self, (1.3,)),
    ("sub_self", sub_self, (1.3,)),
    ("pow_int", pow_int, (-1.3,)),
    ("pow_float", pow_float, (1.3,)),
    ("rpow", rpow, (1.3,)),
    ("pow_var", pow_var, (1.3, 2.7)),
    ("pow_var_both", pow_var, (1.3, 2.7), (0, 1)),
    ("chained", chained, (0.7,)),
    ("third_pow", third_pow, (0.7,)),
    ("saxpy", saxpy, (0.7, 1.1, 2.0)),
    ("saxpy_all", saxpy, (0.7, 1.1, 2.0), (0, 1, 2)),
    ("saxpy_call", saxpy_call, (0.7, 1.1, 2.0)),
    ("reassign", reassign, (0.7,)),
    ("overwrite_arg", overwrite_arg, (0.7,)),
    ("augassign", augassign, (0.7,)),
    ("mixed_int_float", mixed_int_float, (0.7, 1.5)),
    ("gradname_aliasing", gradname_aliasing, (0.7,)),
    ("np_float64_scalar", third_pow, (np.float64(0.7),)),
    ("zero_d_array", third_pow, (np.array(0.7),)),
    # math
    ("math_basic", math_basic, (1.3,)),
    ("math_more", math_more, (1.3,)),
    ("math_pow_hypot", math_pow_hypot, (1.3,)),
    ("math_consts", math_consts, (1.3,)),
    # numpy elementwise
    ("numpy_exp2", numpy_exp2, (0.3,)),
    ("np_elementwise", np_elementwise, (POS,)),
    ("np_sigmoid", np_sigmoid, (VEC,)),
    ("np_abs", np_abs, (VEC,)),
    ("np_maximum_const", np_maximum_const, (VEC,)),
    ("np_maximum2", np_maximum2, (VEC, _r(5, (5,)))),
    ("np_where", np_where, (VEC,)),
    ("np_clip", np_clip, (np.array([-0.9, -0.2, 0.1, 0.4, 0.8]),)),
    ("np_power_square", np_power_square, (VEC,)),
    ("fn_multiply", fn_multiply, (VEC,)),
    ("np_divide", np_divide, (VEC, POS)),
    ("np_arctan2", np_arctan2, (VEC,)),
    ("np_log1p_expm1", np_log1p_expm1, (VEC,)),
    ("np_hyperbolic", np_hyperbolic, (VEC,)),
    ("np_trig", np_trig, (VEC,)),
    ("np_sign_mul", np_sign_mul, (VEC,)),
    ("np_log_variants", np_log_variants, (POS,)),
    # reductions
    ("numpy_sum", numpy_sum, (MAT,)),
    ("cast_sum", cast_sum, (VEC,)),
    ("overwrite_call", overwrite_call, (VEC,)),
    ("numpy_mean_2d", numpy_mean_2d, (MAT,)),
    ("sum_axis0", sum_axis0, (MAT,)),
    ("normalize_rows", normalize_rows, (_r(6, (3, 4), 0.5, 2.0),)),
    ("np_max", np_max, (VEC,)),
    ("np_max_axis", np_max_axis, (MAT,)),
    ("np_prod", np_prod, (VEC,)),
    ("np_var_std", np_var_std, (MAT,)),
    ("logsumexp", logsumexp, (VEC,)),
    ("softmax_weighted", softmax_weighted, (_r(7, (4,)),)),
    ("np_cumsum", np_cumsum, (VEC,)),
    ("method_calls", method_calls, (VEC,)),
    ("np_norm", np_norm, (MAT,)),
    ("mean_axis_keyword", mean_axis_keyword, (MAT,)),
    # dot / matmul
    ("dot_vec", dot_vec, (VEC, POS)),
    ("dot_mat", dot_mat, (_r(8, (2, 3)), MAT)),
    ("dot_mat_w", dot_mat, (_r(8, (2, 3)), MAT), 1),
    ("matmul_op", matmul_op, (MAT, _r(9, (4, 2)))),
    ("matvec", matvec, (MAT, _r(10, (4,)))),
    ("gram", gram, (MAT,)),
    ("outer", outer, (VEC, _r(11, (3,)))),
    ("logistic_regression", logistic_regression,
     (_r(12, (4, 2)), _r(13, (2,)), _r(14, (3, 4)), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])),
     (0, 1)),
    ("bilinear", bilinear, (_r(15, (3,)), _r(16, (2,)), _r(17, (2, 4)), _r(18, (3, 4)), _r(19, (4,)))),
    ("rnn", rnn, (_r(20, (2, 3)), _r(21, (3, 2)))),
    ("rnn_inputs", rnn, (_r(20, (2, 3)), _r(21, (3, 2))), 1),
    ("global_array", global_array, (_r(22, (4,)),)),
    # indexing reads
    ("subscript1", subscript1, (VEC,)),
    ("negative_index", negative_index, (VEC,)),
    ("slicing", slicing, (VEC,)),
    ("slice_step", slice_step, (_r(23, (6,)),)),
    ("index_2d", index_2d, (MAT,)),
    ("slice_2d", slice_2d, (MAT,)),
    ("row_read", row_read, (MAT,)),
    ("fancy_index_repeats", fancy_index_repeats, (VEC,)),
    ("fancy_index_list", fancy_index_list, (VEC,)),
    ("boolean_mask", boolean_mask, (VEC,)),
    ("extended_slice", extended_slice, (_r(24, (6,)),)),
    ("len_and_shape", len_and_shape, (VEC,)),
    ("reshape_ravel", reshape_ravel, (_r(25, (6,)),)),
    ("concat_stack", concat_stack, (VEC,)),
    ("anf_list", anf_list, (0.7,)),
    ("deep_anf_list", deep_anf_list, (VEC,)),
    ("list_and_subscript", list_and_subscript, (0.7,)),
    ("unpack_array", unpack_array, (_r(26, (3,)),)),
    # in-place writes
    ("active_subscript", active_subscript, (VEC,)),
    ("init_array_grad_maybe_active", init_array_grad_maybe_active, (_r(27, (4, 3)),)),
    ("copy_write", copy_write, (VEC,)),
    ("subscript_arg_write", subscript_arg_write, (VEC,)),
    ("subscript3", subscript3, (VEC,)),
    ("empty_fill", empty_fill, (VEC,)),
    ("augassign_index", augassign_index, (VEC,)),
    ("slice_write", slice_write, (_r(28, (6,)),)),
    ("write_2d", write_2d, (_r(29, (3,)),)),
    ("recurrence_inplace", recurrence_inplace, (VEC,)),
    ("mask_write", mask_write, (VEC,)),
    ("overwrite_whole_array", overwrite_whole_array, (VEC,)),
    # branches (each side)
    ("overwrite_if_pos", overwrite_if, (1.3,)),
    ("overwrite_if_neg", overwrite_if, (-1.3,)),
    ("nested_if_in", nested_if, (2.0,)),
    ("nested_if_big", nested_if, (12.0,)),
    ("nested_if_neg", nested_if, (-2.0,)),
    ("multiarg_if_neg", multiarg_if, (-2.0,)),
    ("multiarg_if_small", multiarg_if, (0.5,)),
    ("multiarg_if_big", multiarg_if, (3.0,)),
    ("serial_if_pos", serial_if, (1.5,)),
    ("serial_if_neg", serial_if, (-1.5,)),
    ("multivar_if_gt", multivar_if, (2.0, 1.0)),
    ("multivar_if_lt", multivar_if, (1.0, 2.0)),
    ("devilish_nested_if_small", devilish_nested_if, (1.0,)),
    ("devilish_nested_if_big", devilish_nested_if, (5.0,)),
    ("devilish_nested_if_neg", devilish_nested_if, (-1.0,)),
    ("overwrite_ifelse_pos", overwrite_ifelse, (1.5,)),
    ("overwrite_ifelse_neg", overwrite_ifelse, (-1.5,)),
    ("cond_expr_pos", cond_expr, (1.5,)),
    ("cond_expr_neg", cond_expr, (-1.5,)),
    ("cond_expr_array_pos", cond_expr_array, (POS,)),
    ("cond_expr_array_neg", cond_expr_array, (-POS,)),
    ("if_on_element_gt", if_on_element, (np.array([0.9, 0.1, 0.5]),)),
    ("if_on_element_lt", if_on_element, (np.array([0.1, 0.9, 0.5]),)),
    ("if_bool_ops_in", if_bool_ops, (1.0,)),
    ("if_bool_ops_neg", if_bool_ops, (-2.0,)),
    ("if_bool_ops_big", if_bool_ops, (6.0,)),
    ("if_bool_ops_else", if_bool_ops, (3.0,)),
    ("if_mul_with_call_gt", if_mul_with_call, (2.0, 1.0)),
    ("if_mul_with_call_lt", if_mul_with_call, (1.0, 2.0)),
    ("branch_defines_different_pos", branch_defines_different, (1.2,)),
    ("branch_defines_different_neg", branch_defines_different, (-1.2,)),
    ("early_return_pos", early_return, (1.2,)),
    ("early_return_neg", early_return, (-1.2,)),
    ("multiple_returns_big", multiple_returns, (1.5, 0.7)),
    ("multiple_returns_mid", multiple_returns, (0.5, 0.7)),
    ("multiple_returns_neg", multiple_returns, (-0.5, 0.7)),
    ("if_array_any_true", if_array_any, (np.array([0.95, 0.1, 0.3]),)),
    ("if_array_any_false", if_array_any, (np.array([0.5, 0.1, 0.3]),)),
    # loops
    ("iterpower_static", iterpower_static, (1.1,)),
    ("iterpower", iterpower, (1.1, 3)),
    ("iterpower_zero", iterpower, (1.1, 0)),
    ("serial_for", serial_for, (1.1, 2)),
    ("serial_ifthenfor_pos", serial_ifthenfor, (0.7, 2)),
    ("serial_ifthenfor_neg", serial_ifthenfor, (-0.7, 2)),
    ("iter_third_pow1", iter_third_pow1, (1.3,)),
    ("iter_third_pow2", iter_third_pow2, (1.3,)),
    ("cond_iterpower1_all", cond_iterpower1, (1.5,)),
    ("cond_iterpower1_some", cond_iterpower1, (3.0,)),
    ("cond_iterpower2_in", cond_iterpower2, (1.2,)),
    ("cond_iterpower2_out", cond_iterpower2, (25.0,)),
    ("superfor_iterpower", superfor_iterpower, (1.01,)),
    ("super_iterpower", super_iterpower, (1.05,)),
    ("loop_accumulate", loop_accumulate, (VEC,)),
    ("loop_neighbours", loop_neighbours, (VEC,)),
    ("loop_over_array", loop_over_array, (VEC,)),
    ("loop_over_rows_2d", loop_over_array, (MAT,)),
    ("loop_enumerate", loop_enumerate, (VEC,)),
    ("loop_zip", loop_zip, (VEC, POS)),
    ("loop_range_step", loop_range_step, (VEC,)),
    ("loop_reverse", loop_reverse, (VEC,)),
    ("nested_loops_2d", nested_loops_2d, (SQ,)),
    ("nested_loops_dependent", nested_loops_dependent, (VEC,)),
    ("while_big_pos", while_big, (3.7,)),
    ("while_big_neg", while_big, (-5.3,)),
    ("while_big_zero_trips", while_big, (0.05,)),
    ("while_counter", while_counter, (VEC,)),
    ("while_data", while_data, (1.2,)),
    ("while_data_zero_trips", while_data, (12.0,)),
    ("loop_break", loop_break, (np.array([1.0, 0.8, 0.9, 0.7, 0.6]),)),
    ("loop_break_never", loop_break, (np.array([0.1, 0.2, 0.3, 0.2, 0.1]),)),
    ("loop_continue", loop_continue, (VEC,)),
    ("while_true_break", while_true_break, (0.8,)),
    ("loop_early_return", loop_early_return, (np.array([0.1, 0.5, 0.9, 0.2]),)),
    ("loop_early_return_never", loop_early_return, (np.array([0.1, 0.5, 0.3, 0.2]),)),
    ("loop_zero_trips", loop_zero_trips, (1.3, 0)),
    ("loop_zero_trips_some", loop_zero_trips, (1.3, 2)),
    ("loop_zero_trips_array", loop_zero_trips_array, (_r(30, (3,)),)),
    ("loop_carry_vector", loop_carry_vector, (_r(31, (3, 4)),)),
    ("loop_vector_update", loop_vector_update, (VEC,)),
    ("iterpower_with_call", iterpower_with_call, (1.1, 3)),
    ("iterpower_with_nested_def", iterpower_with_nested_def, (1.1, 3)),
    ("loop_helper_in_branch", loop_helper_in_branch, (VEC,)),
    ("for_else_break", for_else, (np.array([1.0, 6.0, 2.0]),)),
    ("for_else_no_break", for_else, (np.array([1.0, 2.0, 3.0]),)),
    # helpers / closures / globals
    ("mul_with_call", mul_with_call, (0.7, 1.3)),
    ("nested_call", nested_call, (0.7, 1.3)),
    ("helper_calls_helper", helper_calls_helper, (0.7,)),
    ("helper_with_branch", helper_with_branch, (3.0,)),
    ("helper_with_loop", helper_with_loop, (0.4,)),
    ("helper_kwargs", helper_kwargs, (0.7,)),
    ("helper_tuple_return", helper_tuple_return, (0.7, 1.3)),
    ("helper_array", helper_array, (VEC,)),
    ("global_const", global_const, (0.7,)),
    ("call_closure", call_closure, (0.7,)),
    ("closure_direct", closure_fn, (0.7,)),
    ("module_lambda", lambda_fn, (VEC,)),
    ("local_lambda", local_lambda, (0.7,)),
    ("default_arg", default_arg, (0.7,)),
    ("default_arg_given", default_arg, (0.7, 3.0)),
    ("keyword_numpy", keyword_numpy, (MAT,)),
    # tuples / outputs
    ("passthru_pack_0", passthru_pack, (0.7, 1.1, 1.3, 0)),
    ("passthru_pack_1", passthru_pack, (0.7, 1.1, 1.3, 1)),
    ("tuple_swap", tuple_swap, (0.7, 1.3)),
    ("multiple_return", multiple_return, (0.7,)),
    ("return_tuple_arrays", return_tuple_arrays, (VEC,)),
    ("cart2polar", cart2polar, (0.7, 1.3)),
    ("cart2polar_b", cart2polar, (0.7, 1.3), 1),
    ("return_vector", return_vector, (VEC,)),
    ("return_matrix", return_matrix, (VEC,)),
    ("python_float_with_array", python_float_with_array, (0.7, VEC)),
    ("python_float_with_array_x", python_float_with_array, (0.7, VEC), 1),
    ("scalar_broadcast", scalar_broadcast, (0.7,)),
    ("tuple_in_loop", tuple_in_loop, (POS,)),
    ("dict_local", dict_local, (0.7,)),
    ("list_comprehension", list_comprehension, (VEC,)),
    ("generator_expression", generator_expression, (VEC,)),
    # aliasing, views, builtins, misc
    ("alias_write", alias_write, (VEC,)),
    ("view_write", view_write, (VEC,)),
    ("view_read_after_write", view_read_after_write, (VEC,)),
    ("helper_mutates_array", helper_mutates_array, (0.7,)),
    ("repeated_overwrite", repeated_overwrite, (POS,)),
    ("aug_self_read", aug_self_read, (VEC,)),
    ("write_then_read_loop", write_then_read_loop, (VEC,)),
    ("arg_inplace_aug", arg_inplace_aug, (VEC,)),
    ("scatter_repeated_index", scatter_repeated_index, (VEC,)),
    ("fib_swap", fib_swap, (0.7, 4)),
    ("builtins_max_min_abs", builtins_max_min_abs, (0.7, 1.3)),
    ("builtins_max_min_abs_neg", builtins_max_min_abs, (-0.7, -1.3)),
    ("builtin_max_of_array", builtin_max_of_array, (VEC,)),
    ("builtin_pow", builtin_pow, (0.7,)),
    ("builtin_sum_of_array", builtin_sum_of_array, (VEC,)),
    ("np_array_from_scalars", np_array_from_scalars, (0.7, 1.3)),
    ("float_cast", float_cast, (VEC,)),
    ("assert_and_docstring", assert_and_docstring, (VEC,)),
    ("print_inside", print_inside, (0.7,)),
    ("chained_compare", chained_compare, (0.7,)),
    ("relu_in_loop", relu_in_loop, (VEC,)),
    ("nested_unpack", nested_unpack, (0.7, 1.3)),
    ("loop_var_after_loop", loop_var_after_loop, (VEC,)),
    ("loop_index_floordiv", loop_index_floordiv, (VEC,)),
    ("column_loop", column_loop, (MAT,)),
    ("broadcast_outer_sum", broadcast_outer_sum, (VEC, POS[:3].copy())),
    ("broadcast_row_grad", broadcast_row_grad, (_r(32, (4,)), MAT)),
    ("while_norm", while_norm, (VEC * 3.0,)),
    ("cond_on_counter", cond_on_counter, (VEC,)),
    ("while_complex_cond", while_complex_cond, (1.5, POS * 2.0)),
    ("while_break_continue", while_break_continue, (VEC,)),
    ("matrix_power_loop", matrix_power_loop, (SQ,)),
    ("int_index_array_arg", int_index_array_arg, (VEC, np.array([0, 0, 3]))),
    ("bool_flag_arg_true", bool_flag_arg, (0.7, True)),
    ("bool_flag_arg_false", bool_flag_arg, (0.7, False)),
    ("argmax_index", argmax_index, (VEC,)),
    ("max_axis_keepdims", max_axis_keepdims, (MAT + 2.0,)),
    ("einsum_matmul", einsum_matmul, (MAT, MAT.T.copy())),
    ("linalg_inv_det", linalg_inv_det, (SQ + 2.0 * np.eye(3),)),
    ("mean_3d", mean_3d, (_r(33, (2, 3, 4)),)),
    ("list_append", list_append, (VEC,)),
    ("helper_branch_loop_in_loop", helper_branch_loop_in_loop, (VEC,)),
    ("keyword_call_order", keyword_call_order, (0.7, 1.3)),
    ("star_args_call", star_args_call, (0.7, 1.3)),
    ("const_output", const_output, (VEC,)),
    ("np_sort", np_sort, (VEC,)),
    ("mod_scalar", mod_scalar, (2.7,)),
    ("tolist_read", tolist_read, (VEC,)),
    ("sum_where_keyword", sum_where_keyword, (VEC,)),
    ("mean_dtype_keyword", mean_dtype_keyword, (VEC,)),
    ("np_flip", np_flip, (VEC,)),
    ("np_float64_cast", np_float64_cast, (0.7,)),
    ("while_else", while_else, (0.7,)),
    ("copy_module_copy", copy_module_copy, (VEC,)),
]

BACKENDS = ("auto", "python")

# Reasonable numpy code that s2sgrad rejects with a clear S2sgradError (file, line, construct).
UNSUPPORTED = {
    "passthru_pack_0": "indexing a tuple with a run-time index (UnsupportedConstructError)",
    "passthru_pack_1": "indexing a tuple with a run-time index (UnsupportedConstructError)",
    "copy_module_copy": "copy.copy(x): s2sgrad inlines the stdlib copy.copy and reports "
                        "'a call to a value computed at run time' at copy.py:76, "
                        "not at the user's line",
    "view_write": "writing through a view (v = y[1:3]; v[:] = ...): UnsupportedConstructError "
                  "naming the line",
    "view_read_after_write": "reading a view taken before an in-place update of its base: "
                             "UnsupportedConstructError naming the line",
    "builtin_max_of_array": "max(array): MissingRuleError (the builtin max rule takes two "
                            "values); np.max works",
    "tolist_read": "x.tolist(): MissingRuleError",
    "sum_where_keyword": "np.sum(..., where=...): MissingRuleError naming the keyword",
    "mean_dtype_keyword": "np.mean(..., dtype=...): MissingRuleError naming the keyword",
}

# Wrong gradients or crashes that are not S2sgradError: name -> (reason, backends it hits).
BUGS = {
}


def _params():
    out = []
    for case in CASES:
        name, fn, args = case[:3]
        pos = case[3] if len(case) > 3 else 0
        for be in BACKENDS:
            marks = []
            if name in BUGS and be in BUGS[name][1]:
                marks.append(pytest.mark.xfail(strict=True, reason="BUG: " + BUGS[name][0]))
            elif name in UNSUPPORTED:
                marks.append(pytest.mark.xfail(strict=True, raises=S2sgradError,
                                               reason=UNSUPPORTED[name]))
            out.append(pytest.param(fn, args, pos, be, id=f"{be}-{name}", marks=marks))
    return out


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


def _fresh(args):
    # the functions may write into their array arguments; give each call its own copy
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


@pytest.mark.parametrize("fn,args,pos,backend_name", _params())
def test_gradient(fn, args, pos, backend_name, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend_name)
    check_grad(fn, _fresh(args), grad_position=pos)


# ---------------------------------------------------------------------- float32


F32_CASES = [
    ("f32_elementwise", f32_elementwise, _r(40, (5,))),
    ("f32_loop", f32_loop, _r(41, (5,))),
    ("f32_vector_out", f32_vector_out, _r(42, (5,))),
    ("f32_matmul", global_array, _r(43, (4,))),
]


@pytest.mark.parametrize("fn,x", [pytest.param(f, x, id=n) for n, f, x in F32_CASES])
def test_float32_preserved(fn, x, backend):
    x32 = x.astype(np.float32)
    g32 = s2sgrad.grad(fn)(x32.copy())
    assert isinstance(g32, np.ndarray) and g32.dtype == np.float32, (type(g32), getattr(g32, "dtype", None))
    g64 = s2sgrad.grad(fn)(x32.astype(np.float64))
    np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-5)
    check_grad(fn, (x.copy(),))


# ---------------------------------------------------------------------- out of scope


OUT_OF_SCOPE = [
    ("recursive", recursive, (0.7, 2), "return recursive(a * a, n - 1)"),
    ("try_except", try_except, (0.7,), "try:"),
]


@pytest.mark.parametrize("fn,args,line",
                         [pytest.param(f, a, l, id=n) for n, f, a, l in OUT_OF_SCOPE])
def test_out_of_scope_errors(fn, args, line, backend):
    with pytest.raises(S2sgradError) as info:
        s2sgrad.grad(fn)(*_fresh(args))
    msg = str(info.value)
    assert "test_tangent_style.py" in msg, msg
    assert line in msg, msg
