"""Numba implementations of the ``s2sgrad.runtime.arrays`` helpers that rules of common
calls use (trace with an offset, sinc, roll, diff, diag) and of the in-place product
accumulations of the adjoint sweep (``rt.add_matmul_left``...); the contract is each
helper's docstring.  A helper or a form with no overload here makes the generated function run
as Python, with the reason."""
import numpy as np
from numba import types
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload, register_jitable

from .. import runtime as rt


def _is_none(t):
    return t is None or isinstance(t, (types.NoneType, types.Omitted))


@overload(rt.where)
def _where(condition, x, y):
    if all(isinstance(t, (types.Number, types.Boolean)) for t in (condition, x, y)):
        return lambda condition, x, y: x if condition else y
    return lambda condition, x, y: np.where(condition, x, y)


@overload(rt.trace_adjoint)
def _trace_adjoint(g, a, offset, axis1, axis2):
    if not (isinstance(a, types.Array) and a.ndim == 2 and isinstance(g, (types.Number,))):
        return None

    def impl(g, a, offset, axis1, axis2):
        out = np.zeros_like(a)
        swap = axis1 % 2 == 1
        rows = a.shape[1] if swap else a.shape[0]
        cols = a.shape[0] if swap else a.shape[1]
        for i in range(rows):
            j = i + offset
            if 0 <= j < cols:
                if swap:
                    out[j, i] = g
                else:
                    out[i, j] = g
        return out
    return impl


@overload(rt.sinc_derivative)
def _sinc_derivative(x):
    if isinstance(x, types.Float):
        def scalar(x):
            if x == 0:
                return x * 0
            return (np.cos(np.pi * x) - np.sinc(x)) / x
        return scalar
    if isinstance(x, types.Array):
        def array(x):
            out = np.empty_like(x)
            flat = x.ravel()
            res = out.reshape(out.size)
            for k in range(flat.size):
                v = flat[k]
                res[k] = 0.0 if v == 0 else (np.cos(np.pi * v) - np.sinc(v)) / v
            return out
        return array


@register_jitable
def _rolled(a, shift):
    """``np.roll(a, shift)`` (the flattened array, an int shift): two slice copies."""
    flat = np.ascontiguousarray(a).ravel()
    out = np.empty_like(flat)
    n = flat.size
    if n:
        k = shift % n
        out[k:] = flat[:n - k]
        out[:k] = flat[n - k:]
    return out.reshape(a.shape)


@overload(rt.roll)
def _roll(a, shift, axis=None):
    if isinstance(a, types.Array) and isinstance(shift, types.Integer) and _is_none(axis):
        return lambda a, shift, axis=None: _rolled(a, shift)
    return None             # (an axis: Numba has no np.roll of one either)


@overload(rt.roll_adjoint)
def _roll_adjoint(g, shift, axis):
    if isinstance(g, types.Array) and isinstance(shift, types.Integer) and _is_none(axis):
        return lambda g, shift, axis: _rolled(g, -shift)


@overload(rt.diff_adjoint)
def _diff_adjoint(g, n, axis):
    if not (isinstance(g, types.Array) and isinstance(n, types.Integer)
            and isinstance(axis, types.Integer)):
        return None

    def impl(g, n, axis):
        gc = np.ascontiguousarray(g)
        ax = axis % gc.ndim
        m = gc.shape[ax]
        inner = 1
        for k in range(ax + 1, gc.ndim):
            inner *= gc.shape[k]
        outer = gc.size // max(m * inner, 1)
        cur = gc.reshape((outer, m, inner)).copy()
        for _ in range(n):
            size = cur.shape[1]
            nxt = np.zeros((outer, size + 1, inner), dtype=cur.dtype)
            for o in range(outer):
                for k in range(size + 1):
                    for i in range(inner):
                        before = cur[o, k - 1, i] if k >= 1 else 0.0
                        here = cur[o, k, i] if k < size else 0.0
                        nxt[o, k, i] = before - here
            cur = nxt
        return cur.reshape(tuple_setitem(gc.shape, ax, m + n))
    return impl


@overload(rt.diag_adjoint)
def _diag_adjoint(g, v, k):
    if not (isinstance(g, types.Array) and isinstance(v, types.Array) and g.ndim == 2):
        return None
    if v.ndim == 1:
        def of_vector(g, v, k):
            out = np.empty(v.shape[0], dtype=g.dtype)
            for i in range(v.shape[0]):
                out[i] = g[i + max(-k, 0), i + max(k, 0)]
            return out
        return of_vector


def _add_outer(out, u, v):
    """``out += np.outer(u, v)`` element by element (no array made)."""
    for i in range(u.shape[0]):
        ui = u[i]
        for j in range(v.shape[0]):
            out[i, j] += ui * v[j]


_add_outer_jit = register_jitable(_add_outer)


def _add_in_place(out, value):
    out += value


_add_in_place_jit = register_jitable(_add_in_place)


def _product_added_in_place(product, left):
    """The Numba version of ``rt.add_<product>(out, g, a, b)``: ``out += product(g, a, b)``
    for ``product`` a product's adjoint (``rt.matmul_left``...; ``left``: the adjoint of
    the left operand).  Where that adjoint is an outer product (``a`` 2-D and ``b`` 1-D
    for the left one, ``a`` 1-D and ``b`` 2-D for the right one; ``np.dot`` is ``@``
    there) it is added element by element, with no array made for it."""
    def typer(out, g, a, b):
        if not all(isinstance(t, types.Array) for t in (out, a, b)):
            return None
        if out.ndim == 2 and isinstance(g, types.Array):
            if left and a.ndim == 2 and b.ndim == 1:
                return lambda out, g, a, b: _add_outer_jit(out, g, b)
            if not left and a.ndim == 1 and b.ndim == 2:
                return lambda out, g, a, b: _add_outer_jit(out, a, g)
        return lambda out, g, a, b: _add_in_place_jit(out, product(g, a, b))
    return typer


for _accumulate, _product, _left in ((rt.add_matmul_left, rt.matmul_left, True),
                                     (rt.add_matmul_right, rt.matmul_right, False),
                                     (rt.add_dot_left, rt.dot_left, True),
                                     (rt.add_dot_right, rt.dot_right, False)):
    overload(_accumulate)(_product_added_in_place(_product, _left))


@overload(rt.cross_adjoint)
def _cross_adjoint(g, a, b, axisa, axisb, axisc, axis, wrt):
    """3-vectors along the last axes (np.cross's defaults); other layouts raise."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array) and _is_none(axis)):
        return None

    def impl(g, a, b, axisa, axisb, axisc, axis, wrt):
        if axisa != -1 or axisb != -1 or axisc != -1 or a.shape[-1] != 3 or b.shape[-1] != 3:
            raise NotImplementedError("np.cross's adjoint under Numba: 3-vectors along the "
                                      "last axes")
        if wrt == 0:
            return rt.unbroadcast(np.cross(b, g), a)
        return rt.unbroadcast(np.cross(g, a), b)
    return impl
