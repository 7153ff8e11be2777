"""Rules for numpy functions (and the array methods the compiler maps onto them)."""
import numpy as np

from .. import primitives as prims
from .registry import d, vjp
from .. import runtime as rt

# ---------------------------------------------------------------- elementwise


@vjp(np.exp)
def _(ans, x):
    d[x] = d[ans] * ans


@vjp(np.log)
def _(ans, x):
    d[x] = d[ans] / x


@vjp(np.log1p)
def _(ans, x):
    d[x] = d[ans] / (1 + x)


@vjp(np.expm1)
def _(ans, x):
    d[x] = d[ans] * (ans + 1)


@vjp(np.log2)
def _(ans, x):
    d[x] = d[ans] / (x * np.log(2.0))


@vjp(np.log10)
def _(ans, x):
    d[x] = d[ans] / (x * np.log(10.0))


@vjp(np.sqrt)
def _(ans, x):
    d[x] = d[ans] * 0.5 / ans


@vjp(np.square)
def _(ans, x):
    d[x] = d[ans] * 2 * x


@vjp(np.sin)
def _(ans, x):
    d[x] = d[ans] * np.cos(x)


@vjp(np.cos)
def _(ans, x):
    d[x] = -d[ans] * np.sin(x)


@vjp(np.tan)
def _(ans, x):
    d[x] = d[ans] * (1 + ans * ans)


@vjp(np.arcsin)
def _(ans, x):
    d[x] = d[ans] / np.sqrt(1 - x * x)


@vjp(np.arccos)
def _(ans, x):
    d[x] = -d[ans] / np.sqrt(1 - x * x)


@vjp(np.arctan)
def _(ans, x):
    d[x] = d[ans] / (1 + x * x)


@vjp(np.sinh)
def _(ans, x):
    d[x] = d[ans] * np.cosh(x)


@vjp(np.cosh)
def _(ans, x):
    d[x] = d[ans] * np.sinh(x)


@vjp(np.tanh)
def _(ans, x):
    d[x] = d[ans] * (1 - ans * ans)


@vjp(np.abs, np.absolute)
def _(ans, x):
    d[x] = d[ans] * np.sign(x)


@vjp(np.maximum)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans] * (a >= b), a)
    d[b] = rt.unbroadcast(d[ans] * (a < b), b)


@vjp(np.minimum)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans] * (a <= b), a)
    d[b] = rt.unbroadcast(d[ans] * (a > b), b)


@vjp(np.clip)
def _(ans, a, a_min, a_max):
    d[a] = d[ans] * ((a >= a_min) & (a <= a_max))
    d[a_min] = rt.unbroadcast(d[ans] * (a < a_min), a_min)
    d[a_max] = rt.unbroadcast(d[ans] * (a > a_max), a_max)


@vjp(np.where, rt.where)
def _(ans, condition, x, y):
    # rt.where: np.where, of numbers a number under Numba (the adjoint of a number)
    d[x] = rt.unbroadcast(rt.where(condition, d[ans], 0), x)
    d[y] = rt.unbroadcast(rt.where(condition, 0, d[ans]), y)


@vjp(np.copy, np.ascontiguousarray)
def _(ans, a):
    d[a] = d[ans]


# np.array / np.asarray of an array, a number, or nested lists and tuples of them: the
# adjoint of an item is its slice of d[ans] (an integer dtype is a non-differentiable call,
# decided where the call is lowered)
@vjp(np.array)
def _(ans, a, dtype=None, *, copy=True):
    d[a] = d[ans]


@vjp(np.asarray)
def _(ans, a, dtype=None):
    d[a] = d[ans]


@vjp(prims.method("item"))
def _(ans, a, *index):
    d[a] = rt.item_adjoint(d[ans], a, index)


@vjp(np.full)
def _(ans, shape, fill_value, dtype=None):
    d[fill_value] = rt.unbroadcast(d[ans], fill_value)


@vjp(np.full_like)
def _(ans, a, fill_value, dtype=None):
    d[fill_value] = rt.unbroadcast(d[ans], fill_value)


@vjp(np.linspace)
def _(ans, start, stop, num=50, endpoint=True, *, dtype=None, axis=0):
    d_start_stop = rt.linspace_adjoints(d[ans], start, stop, num, endpoint, axis)
    d[start] = d_start_stop[0]
    d[stop] = d_start_stop[1]


@vjp(np.arange)
def _(ans, *bounds, dtype=None):
    d[bounds] = rt.arange_adjoints(d[ans], bounds)


# ---------------------------------------------------------------- reductions


@vjp(np.sum)
def _(ans, a, axis=None, keepdims=False):
    d[a] = rt.unreduce(d[ans], a, axis, keepdims)


@vjp(np.mean)
def _(ans, a, axis=None, keepdims=False):
    d[a] = rt.unreduce(d[ans], a, axis, keepdims) / rt.reduction_count(a, axis)


@vjp(np.max, np.amax, np.min, np.amin)
def _(ans, a, axis=None, keepdims=False):
    d[a] = rt.extremum_adjoint(d[ans], a, ans, axis, keepdims)


@vjp(np.prod)
def _(ans, a, axis=None, keepdims=False):
    d[a] = rt.unreduce(d[ans] * ans, a, axis, keepdims) / a


@vjp(np.var)
def _(ans, a, axis=None, ddof=0, keepdims=False):
    d[a] = (rt.unreduce(d[ans], a, axis, keepdims) * 2 / (rt.reduction_count(a, axis) - ddof)
            * (a - rt.mean(a, axis, True)))


@vjp(np.std)
def _(ans, a, axis=None, ddof=0, keepdims=False):
    d[a] = (rt.unreduce(rt.divide_or_zero(d[ans], ans), a, axis, keepdims)
            / (rt.reduction_count(a, axis) - ddof) * (a - rt.mean(a, axis, True)))


@vjp(np.cumsum)
def _(ans, a, axis=None):
    d[a] = rt.reshape_like(rt.reverse_cumsum(d[ans], axis), a)

# ---------------------------------------------------------------- linear algebra


@vjp(np.dot)
def _(ans, a, b):
    d[a] = rt.dot_left(d[ans], a, b)
    d[b] = rt.dot_right(d[ans], a, b)


@vjp(np.outer)
def _(ans, a, b):
    d[a] = rt.reshape_like(d[ans] @ np.ravel(b), a)
    d[b] = rt.reshape_like(np.ravel(a) @ d[ans], b)


@vjp(np.inner)
def _(ans, a, b):
    d[a] = rt.inner_adjoint(d[ans], a, b, 0)
    d[b] = rt.inner_adjoint(d[ans], a, b, 1)


@vjp(np.linalg.det)
def _(ans, a):
    d[a] = rt.det_adjoint(d[ans], ans, a)


@vjp(np.linalg.inv)
def _(ans, a):
    d[a] = -np.swapaxes(ans, -1, -2) @ d[ans] @ np.swapaxes(ans, -1, -2)


@vjp(np.linalg.solve)
def _(ans, a, b):
    db = rt.solve_adjoint(a, d[ans], b)
    d[a] = rt.solve_a_adjoint(db, ans, b)
    d[b] = db


@vjp(np.linalg.norm)
def _(ans, x, ord=None, axis=None, keepdims=False):
    d[x] = rt.norm_adjoint(d[ans], ans, x, ord, axis, keepdims)


@vjp(np.einsum, rt.einsum)    # rt.einsum: np.einsum's forward spelling (runtime/einsum.py)
def _(ans, *operands, optimize=False):
    d[operands] = rt.einsum_adjoints(d[ans], operands)

# ---------------------------------------------------------------- shapes


@vjp(np.reshape, np.ravel)
def _(ans, a, *shape):
    d[a] = rt.reshape_like(d[ans], a)


@vjp(np.transpose)
def _(ans, a, axes=None):
    d[a] = rt.transpose_adjoint(d[ans], axes)


@vjp(np.swapaxes)
def _(ans, a, axis1, axis2):
    d[a] = np.swapaxes(d[ans], axis1, axis2)


@vjp(np.expand_dims, np.squeeze)
def _(ans, a, axis=None):
    d[a] = rt.reshape_like(d[ans], a)


@vjp(np.atleast_1d, np.atleast_2d, np.atleast_3d)
def _(ans, a):
    d[a] = rt.reshape_like(d[ans], a)


@vjp(np.broadcast_to)
def _(ans, array, shape):
    d[array] = rt.unbroadcast(d[ans], array)


@vjp(np.stack)
def _(ans, arrays, axis=0):
    d[arrays] = rt.unstack(d[ans], len(arrays), axis)


@vjp(np.concatenate)
def _(ans, arrays, axis=0):
    d[arrays] = rt.split_like(d[ans], arrays, axis)


@vjp(prims.ASTYPE)
def _(ans, a, dtype):
    d[a] = rt.cast_like(d[ans], a)


@vjp(prims.GETITEM)
def _(ans, a, index):
    # what x[index]'s adjoint means; the reverse pass writes it in place instead
    # (templates.getitem_adjoint: dx[index] += dy, or rt.add_at for array indices)
    d[a] = rt.add_at(np.zeros_like(a), index, d[ans])


@vjp(np.sort)
def _(ans, a, axis=-1):
    d[a] = rt.sort_adjoint(d[ans], a, axis)


@vjp(np.mod, np.remainder)
def _(ans, a, b):
    d[a] = rt.unbroadcast(d[ans], a)
    d[b] = rt.unbroadcast(-d[ans] * np.floor_divide(a, b), b)


@vjp(np.arctan2)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * x2 / (x1 * x1 + x2 * x2), x1)
    d[x2] = rt.unbroadcast(-d[ans] * x1 / (x1 * x1 + x2 * x2), x2)


@vjp(np.hypot)
def _(ans, x1, x2):
    d[x1] = rt.unbroadcast(d[ans] * x1 / ans, x1)
    d[x2] = rt.unbroadcast(d[ans] * x2 / ans, x2)


@vjp(np.exp2)
def _(ans, x):
    d[x] = d[ans] * ans * np.log(2.0)


@vjp(np.flip)
def _(ans, m, axis=None):
    d[m] = np.flip(d[ans], axis)


@vjp(np.float64, np.float32)
def _(ans, x):
    d[x] = d[ans]
