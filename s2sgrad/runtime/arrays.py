"""Adjoint helpers of numpy's array-building and rearranging functions, read as ``rt.<name>``.

``s2sgrad.runtime`` re-exports every public name here; the rules in
``s2sgrad/rules/numpy_more.py`` call them.  Each takes the adjoint ``g`` of
the function's result and the operands it needs, and gives the operand's
adjoint (a tuple or list where the function has several differentiable
operands), in the operand's shape.
"""
import numpy as np

from .columns import cross as columns_cross, narrow_vectors
from .core import reduction_count, unbroadcast, unreduce

__all__ = ["kron_adjoint", "tensordot_adjoint", "repeat_adjoint", "tile_adjoint",
           "diff_adjoint", "diagonal_adjoint", "trace_adjoint", "pad_adjoint",
           "diag_adjoint", "permutation_adjoint", "stacked_adjoints", "append_adjoint",
           "select_adjoints", "select_default_adjoint", "roll", "roll_adjoint", "rollaxis_adjoint",
           "cumprod_adjoint", "sinc_derivative", "shaped_like", "logsumexp_adjoint",
           "index_trick_adjoints", "gradient_adjoint", "nan_extremum_mask", "average_adjoint",
           "take_adjoint", "take_along_axis_adjoint", "split_adjoint", "convolve_adjoint",
           "correlate_adjoint", "trapezoid_adjoint", "vecdot_adjoint",
           "gradient_spacing_adjoints", "matvec_adjoint", "quantile_adjoint", "cross_adjoint",
           "where"]


def where(condition, x, y):
    """``np.where(condition, x, y)`` where the generated code cannot tell that an operand
    is an array: numpy's here; under Numba (``backend/numba_more.py``) of three numbers
    the number, not numpy's 0-d array, so a number a loop carries (``a = np.where(x[i] >
    a, x[i], a)``) keeps one type."""
    return np.where(condition, x, y)


def shaped_like(g, like):
    """``g`` reshaped to ``like``'s shape; the total when ``like`` is a Python number."""
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        return np.sum(g)
    return np.reshape(g, np.shape(like))


def kron_adjoint(g, a, b, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``b`` (1) in ``np.kron(a, b)``: ``g`` seen as
    (a-index, b-index) pairs on each axis, contracted with the other operand."""
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    nd = max(a_arr.ndim, b_arr.ndim)
    sa = (1,) * (nd - a_arr.ndim) + a_arr.shape
    sb = (1,) * (nd - b_arr.ndim) + b_arr.shape
    pairs = np.reshape(g, [n for pair in zip(sa, sb) for n in pair])
    a_axes = list(range(0, 2 * nd, 2))
    b_axes = list(range(1, 2 * nd, 2))
    if wrt == 0:
        return shaped_like(np.einsum(pairs, list(range(2 * nd)), b_arr.reshape(sb), b_axes,
                                     a_axes), a)
    return shaped_like(np.einsum(pairs, list(range(2 * nd)), a_arr.reshape(sa), a_axes,
                                 b_axes), b)


def _tensordot_axes(axes, nda, ndb):
    if isinstance(axes, (int, np.integer)):
        return list(range(nda - axes, nda)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    return [int(i) % nda for i in a_axes], [int(i) % ndb for i in b_axes]


def tensordot_adjoint(g, a, b, axes, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``b`` (1) in ``np.tensordot(a, b, axes)``
    (``axes`` an int or a pair of axis lists): ``g`` contracted with the other operand over
    its free axes, then the axes put back in the operand's order."""
    a, b = np.asarray(a), np.asarray(b)
    a_axes, b_axes = _tensordot_axes(axes, a.ndim, b.ndim)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    g = np.asarray(g)
    if wrt == 0:
        g_b = list(range(len(a_free), len(a_free) + len(b_free)))   # g's axes from b
        da = np.tensordot(g, b, axes=(g_b, b_free))      # a_free..., b_axes in b's order
        paired_a = [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
        return np.transpose(da, np.argsort(a_free + paired_a))
    g_a = list(range(len(a_free)))                       # g's axes that came from a
    db = np.tensordot(a, g, axes=(a_free, g_a))          # a_axes in a's order, b_free...
    paired_b = [b_axes[a_axes.index(i)] for i in sorted(a_axes)]
    return np.transpose(db, np.argsort(paired_b + b_free))


def repeat_adjoint(g, a, repeats, axis):
    """The adjoint of ``np.repeat(a, repeats, axis)``: each element's copies summed."""
    arr = np.asarray(a)
    if axis is None:
        flat = np.ravel(g)
        ids = np.repeat(np.arange(arr.size), repeats)
        out = np.zeros(arr.size, dtype=np.result_type(g, np.float32))
        np.add.at(out, ids, flat)
        return shaped_like(out, a)
    ax = axis % arr.ndim
    moved = np.moveaxis(np.asarray(g), ax, 0)
    ids = np.repeat(np.arange(arr.shape[ax]), repeats)
    out = np.zeros((arr.shape[ax],) + moved.shape[1:], dtype=np.result_type(g, np.float32))
    np.add.at(out, ids, moved)
    return np.moveaxis(out, 0, ax)


def tile_adjoint(g, a, reps):
    """The adjoint of ``np.tile(a, reps)``: the tiles summed."""
    arr = np.asarray(a)
    reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
    nd = max(len(reps), arr.ndim)
    shape = (1,) * (nd - arr.ndim) + arr.shape
    reps = (1,) * (nd - len(reps)) + reps
    split = np.reshape(g, [n for pair in zip(reps, shape) for n in pair])
    return shaped_like(np.sum(split, axis=tuple(range(0, 2 * nd, 2))), a)


def diff_adjoint(g, n, axis):
    """The adjoint of ``np.diff(a, n, axis)``: ``n`` times, ``g`` padded with a zero before
    minus ``g`` padded with a zero after, along ``axis``."""
    g = np.asarray(g)
    for _ in range(n):
        shape = list(g.shape)
        shape[axis] = 1
        zero = np.zeros(shape, dtype=g.dtype)
        g = np.concatenate([zero, g], axis=axis) - np.concatenate([g, zero], axis=axis)
    return g


def _diagonal_positions(shape1, shape2, offset):
    count = max(0, min(shape1 + min(offset, 0), shape2 - max(offset, 0)))
    rows = np.arange(count) + max(-offset, 0)
    return rows, rows - max(-offset, 0) + max(offset, 0)


def diagonal_adjoint(g, a, offset, axis1, axis2):
    """The adjoint of ``np.diagonal(a, offset, axis1, axis2)``: zeros of ``a``'s shape with
    ``g`` (the diagonal on its last axis) written along that diagonal."""
    arr = np.asarray(a)
    out = np.zeros(arr.shape, dtype=np.result_type(g, np.float32))
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))
    rows, cols = _diagonal_positions(view.shape[-2], view.shape[-1], offset)
    view[..., rows, cols] = g
    return out


def trace_adjoint(g, a, offset, axis1, axis2):
    """The adjoint of ``np.trace(a, offset, axis1, axis2)``: ``g`` on that diagonal."""
    arr = np.asarray(a)
    view_shape = np.moveaxis(np.empty(arr.shape, dtype=bool), (axis1, axis2), (-2, -1)).shape
    rows, _ = _diagonal_positions(view_shape[-2], view_shape[-1], offset)
    spread = np.broadcast_to(np.asarray(g)[..., None], view_shape[:-2] + (rows.size,))
    return diagonal_adjoint(spread, arr, offset, axis1, axis2)


def pad_adjoint(g, array, pad_width, mode):
    """The adjoint of ``np.pad(array, pad_width, mode)`` for the modes that copy elements
    (constant, edge, reflect, symmetric, wrap): each element's copies summed."""
    arr = np.asarray(array)
    if mode == "constant":
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (arr.ndim, 2))
        inner = tuple(slice(int(lo), int(lo) + n) for (lo, _), n in zip(widths, arr.shape))
        return shaped_like(np.asarray(g)[inner], array)
    if mode in ("edge", "reflect", "symmetric", "wrap"):
        source = np.pad(np.arange(arr.size).reshape(arr.shape), pad_width, mode)
        out = np.bincount(source.ravel(), weights=np.ravel(g), minlength=arr.size)
        return shaped_like(out.astype(np.result_type(g, np.float32)), array)
    raise NotImplementedError(f"gradient of np.pad with mode={mode!r} (s2sgrad has constant, "
                              "edge, reflect, symmetric and wrap)")


def diag_adjoint(g, v, k):
    """The adjoint of ``np.diag(v, k)``: the k-th diagonal of ``g`` for a vector ``v``, ``g``
    placed on that diagonal for a matrix ``v``."""
    if np.ndim(v) == 1:
        return np.diagonal(g, k).copy()
    return diagonal_adjoint(g, v, k, 0, 1)


def permutation_adjoint(g, a, ans, axis):
    """The adjoint of a function whose result reorders ``a``'s values along ``axis``
    (``np.partition``; None: of the flattened array): each value's adjoint goes back to
    where that value was in ``a``."""
    a_arr = np.asarray(a)
    if axis is None:
        return shaped_like(permutation_adjoint(np.ravel(g), np.ravel(a_arr), np.ravel(ans), 0), a)
    to = np.argsort(a_arr, axis=axis, kind="stable")
    source = np.argsort(ans, axis=axis, kind="stable")
    out = np.zeros(a_arr.shape, dtype=np.result_type(g, np.float32))
    np.put_along_axis(out, to, np.take_along_axis(np.asarray(g), source, axis=axis), axis=axis)
    return out


def _stacked_shape(shape, how):
    """The shape ``np.<how>`` gives an operand of ``shape`` before concatenating."""
    nd = len(shape)
    if how == "vstack":
        return shape if nd >= 2 else (1,) * (2 - nd) + shape
    if how == "hstack":
        return shape if nd >= 1 else (1,)
    if how == "column_stack":
        return shape if nd >= 2 else ((shape[0] if nd else 1), 1)
    if how == "dstack":
        return shape if nd >= 3 else (1, shape[0], 1) if nd == 1 else \
            (shape + (1,) if nd == 2 else (1, 1, 1))
    raise ValueError(how)


def stacked_adjoints(g, arrays, how):
    """The adjoints of ``np.vstack`` / ``hstack`` / ``column_stack`` / ``dstack`` (``how``)
    of ``arrays``: ``g`` split where the operands were joined, each piece in its operand's
    shape (a list)."""
    shapes = [_stacked_shape(np.shape(x), how) for x in arrays]
    axis = {"vstack": 0, "column_stack": 1, "dstack": 2}.get(how)
    if how == "hstack":
        axis = 0 if len(shapes[0]) == 1 else 1
    cuts = np.cumsum([s[axis] for s in shapes])[:-1]
    return [shaped_like(piece, x) for piece, x in zip(np.split(g, cuts, axis=axis), arrays)]


def index_trick_adjoints(g, items, which):
    """The adjoints of the items of ``np.r_[items]`` (``which`` "r_": joined along the first
    axis, numbers as 1-element arrays) or ``np.c_[items]`` ("c_": 1-D items as columns,
    joined along the last axis), as a list."""
    if which == "r_":
        shapes = [np.shape(x) if np.ndim(x) else (1,) for x in items]
        axis = 0
    else:
        shapes = [(np.shape(x)[0], 1) if np.ndim(x) == 1 else
                  (np.shape(x) if np.ndim(x) else (1, 1)) for x in items]
        axis = -1
    cuts = np.cumsum([s[axis] for s in shapes])[:-1]
    return [shaped_like(piece, x) for piece, x in zip(np.split(g, cuts, axis=axis), items)]


def append_adjoint(g, arr, values, axis, wrt):
    """The adjoint of ``arr`` (``wrt`` 0) or ``values`` (1) in ``np.append(arr, values,
    axis)`` (None: both flattened)."""
    like = arr if wrt == 0 else values
    if axis is None:
        flat = np.ravel(g)
        n = np.size(arr)
        return shaped_like(flat[:n] if wrt == 0 else flat[n:], like)
    return shaped_like(np.split(g, [np.shape(arr)[axis]], axis=axis)[wrt], like)


def _unbroadcast(g, like):
    return unbroadcast(g, like)


def select_adjoints(g, condlist, choicelist):
    """The adjoints of the choices of ``np.select(condlist, choicelist, default)``: ``g``
    where a choice's condition is the first that holds, else 0 (a list)."""
    taken = np.zeros(np.shape(g), dtype=bool)
    out = []
    for cond, choice in zip(condlist, choicelist):
        picked = np.logical_and(cond, np.logical_not(taken))
        out.append(_unbroadcast(np.where(picked, g, 0.0), choice))
        taken = np.logical_or(taken, cond)
    return out


def select_default_adjoint(g, condlist, default):
    """The adjoint of ``default`` in ``np.select``: ``g`` where no condition holds."""
    taken = np.zeros(np.shape(g), dtype=bool)
    for cond in condlist:
        taken = np.logical_or(taken, cond)
    return _unbroadcast(np.where(taken, 0.0, g), default)


def roll(a, shift, axis=None):
    """``np.roll(a, shift, axis)``, as the code ``grad`` runs spells it
    (``optimize/spelling.rolls_as_runtime``): under Numba (``backend/numba_more.py``) a
    roll of the flattened array (``axis`` None, an int shift) is two slice copies;
    Numba's own ``np.roll`` moves one element at a time through flat iterators with a
    modulo, 15 us for 10,000 float64, ten times an elementwise pass."""
    return np.roll(a, shift, axis)


def roll_adjoint(g, shift, axis):
    """The adjoint of ``np.roll(a, shift, axis)``: ``g`` rolled back."""
    return np.roll(g, np.negative(shift), axis)


def rollaxis_adjoint(g, axis, start):
    """The adjoint of ``np.rollaxis(a, axis, start)``: ``g``'s axes put back."""
    n = np.ndim(g)
    axis %= n
    start = start + n if start < 0 else start
    if axis < start:
        start -= 1
    order = [i for i in range(n) if i != axis]
    order.insert(start, axis)
    return np.transpose(g, np.argsort(order))


def cumprod_adjoint(g, a, axis):
    """The adjoint of ``np.cumprod(a, axis)`` (None: of the flattened array), exact where
    ``a`` has zeros: ``dx[k] = prod(x[:k]) * s[k]`` with ``s[k] = g[k] + x[k+1] * s[k+1]``."""
    if axis is None:
        return shaped_like(cumprod_adjoint(np.ravel(g), np.ravel(a), 0), a)
    x = np.moveaxis(np.asarray(a), axis, -1)
    gm = np.moveaxis(np.asarray(g), axis, -1)
    n = x.shape[-1]
    before = np.concatenate([np.ones(x.shape[:-1] + (1,), dtype=x.dtype),
                             np.cumprod(x[..., :-1], axis=-1)], axis=-1)
    s = np.zeros(gm.shape, dtype=np.result_type(g, a, np.float32))
    if n:
        s[..., n - 1] = gm[..., n - 1]
    for k in range(n - 2, -1, -1):
        s[..., k] = gm[..., k] + x[..., k + 1] * s[..., k + 1]
    return np.moveaxis(before * s, -1, axis)


def sinc_derivative(x):
    """d/dx of ``np.sinc(x) = sin(pi x) / (pi x)``: ``(cos(pi x) - sinc(x)) / x``, 0 at 0."""
    arr = np.asarray(x)
    safe = np.where(arr == 0, 1.0, arr)
    out = np.where(arr == 0, 0.0, (np.cos(np.pi * safe) - np.sinc(safe)) / safe)
    return out if isinstance(x, np.ndarray) else out[()]


def logsumexp_adjoint(g, ans, a, axis, b, keepdims, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``b`` (1) in ``scipy.special.logsumexp(a, axis,
    b, keepdims)`` (``b`` None: no weights)."""
    if b is None:
        return unreduce(g, a, axis, keepdims) * np.exp(
            np.asarray(a) - unreduce(ans, a, axis, keepdims))
    full = np.broadcast_shapes(np.shape(a), np.shape(b))
    spread = np.broadcast_to(unreduce(g, np.empty(full), axis, keepdims), full)
    weights = np.exp(np.asarray(a) - unreduce(ans, np.empty(full), axis, keepdims))
    if wrt == 0:
        return unbroadcast(spread * weights * b, a)
    return unbroadcast(spread * weights, b)


def gradient_adjoint(g, f, spacing, axis, edge_order):
    """The adjoint of ``np.gradient(f, *spacing, axis=axis, edge_order=edge_order)``: along
    each axis, ``g``'s part times the transpose of that axis's difference matrix (made by
    np.gradient of the identity: n x n for an axis of length n).  ``g`` is one array for
    one axis, else the adjoints of the result's arrays, stacked."""
    f = np.asarray(f)
    axes = list(range(f.ndim)) if axis is None else (
        [axis] if isinstance(axis, (int, np.integer)) else list(axis))
    axes = [a % f.ndim for a in axes]
    parts = [g] if len(axes) == 1 else list(np.asarray(g))
    steps = list(spacing) if len(spacing) > 1 else list(spacing) * len(axes) if spacing \
        else [1.0] * len(axes)
    out = np.zeros(f.shape, dtype=np.result_type(f, np.float32))
    for part, ax, step in zip(parts, axes, steps):
        n = f.shape[ax]
        matrix = np.gradient(np.eye(n), step, axis=0, edge_order=edge_order)
        moved = np.moveaxis(np.asarray(part), ax, 0)
        out += np.moveaxis(np.tensordot(matrix.T, moved, axes=1), 0, ax)
    return out


def nan_extremum_mask(x, ans, axis, keepdims):
    """Where ``x`` attains ``np.nanmax`` / ``np.nanmin`` ``ans`` (NaNs never), split evenly
    between ties."""
    hit = (np.asarray(x) == unreduce(ans, x, axis, keepdims)).astype(np.result_type(x, np.float32))
    return hit / np.sum(hit, axis=axis, keepdims=True)


def average_adjoint(g, ans, a, axis, weights, keepdims, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``weights`` (1) in ``np.average(a, axis,
    weights, keepdims=)`` (``weights`` None: the mean).  1-D weights with an int axis lie
    along that axis, as numpy reads them."""
    spread = unreduce(g, a, axis, keepdims)
    if weights is None:
        return spread / reduction_count(a, axis)
    a = np.asarray(a)
    w = np.asarray(weights)
    if w.ndim == 1 and a.ndim > 1 and axis is not None:
        shape = [1] * a.ndim
        shape[axis % a.ndim] = w.size
        w_full = w.reshape(shape)
    else:
        w_full = w
    total = np.sum(np.broadcast_to(w_full, a.shape), axis=axis, keepdims=True)
    if wrt == 0:
        return spread * w_full / total
    dw = spread * (a - unreduce(ans, a, axis, keepdims)) / total
    if w_full is not w:
        return np.sum(dw, axis=tuple(i for i in range(a.ndim) if i != axis % a.ndim))
    return unbroadcast(dw, weights)


def take_adjoint(g, a, indices, axis):
    """The adjoint of ``np.take(a, indices, axis)`` (None: of the flattened array): ``g``
    added back at the indices (repeats accumulate)."""
    arr = np.asarray(a)
    out = np.zeros(arr.shape if axis is not None else (arr.size,),
                   dtype=np.result_type(g, np.float32))
    ax = 0 if axis is None else axis % arr.ndim
    moved = np.moveaxis(out, ax, 0)
    g_moved = np.moveaxis(np.asarray(g), list(range(ax, ax + np.ndim(indices))),
                          list(range(np.ndim(indices))))
    np.add.at(moved, np.asarray(indices), g_moved)
    return shaped_like(out, a)


def take_along_axis_adjoint(g, arr, indices, axis):
    """The adjoint of ``np.take_along_axis(arr, indices, axis)``: ``g`` added back where
    each value was read (repeats accumulate)."""
    arr = np.asarray(arr)
    if axis is None:
        return shaped_like(take_along_axis_adjoint(g, np.ravel(arr), indices, 0), arr)
    ax = axis % arr.ndim
    full = np.broadcast_shapes(np.shape(indices), tuple(
        1 if i == ax else n for i, n in enumerate(arr.shape)))
    grid = list(np.indices(full, sparse=True))
    grid[ax] = np.broadcast_to(indices, full)
    out = np.zeros(arr.shape, dtype=np.result_type(g, np.float32))
    np.add.at(out, tuple(grid), np.broadcast_to(g, full))
    return out


def split_adjoint(g, ary, axis):
    """The adjoint of ``np.split`` / ``np.array_split(ary, ..., axis)``: the pieces'
    adjoints (a list) joined back along ``axis``."""
    return shaped_like(np.concatenate([np.asarray(piece) for piece in g], axis=axis), ary)


def _full_window(g, n, m, mode):
    """``g`` of ``np.convolve(a (n), v (m), mode)`` placed in the full result (n + m - 1)."""
    full = np.zeros(n + m - 1, dtype=np.result_type(g, np.float32))
    size = np.size(g)
    start = {"full": 0, "valid": min(n, m) - 1, "same": (n + m - 1 - size) // 2}[mode]
    full[start:start + size] = g
    return full


def convolve_adjoint(g, a, v, mode, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``v`` (1) in ``np.convolve(a, v, mode)`` (1-D)."""
    a, v = np.asarray(a), np.asarray(v)
    full = _full_window(g, a.size, v.size, mode)
    if wrt == 0:
        return np.convolve(full, v[::-1], "valid")[:a.size]
    return np.convolve(full, a[::-1], "valid")[:v.size]


def correlate_adjoint(g, a, v, mode, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``v`` (1) in ``np.correlate(a, v, mode)`` =
    ``np.convolve(a, v[::-1], mode)`` (real 1-D)."""
    d = convolve_adjoint(g, a, np.asarray(v)[::-1], mode, wrt)
    return d if wrt == 0 else d[::-1]


def _pad_axis(x, axis, before, after):
    widths = [(0, 0)] * np.ndim(x)
    widths[axis] = (before, after)
    return np.pad(x, widths)


def trapezoid_adjoint(g, y, x, dx, axis, wrt):
    """The adjoint of ``y`` (``wrt`` 0), ``x`` (1) or ``dx`` (2) in ``np.trapezoid(y, x, dx,
    axis)`` (``x`` None: the spacing is ``dx``; else ``dx``'s adjoint is 0).  With widths
    ``w = diff(x)``: ``dy[i] = g (w[i-1] + w[i]) / 2``; ``x``'s adjoint is the adjoint of
    diff applied to ``g (y[i] + y[i+1]) / 2``, ``dx``'s the sum of that over the widths."""
    y = np.asarray(y)
    ax = axis % y.ndim
    n = y.shape[ax]
    gk = np.expand_dims(np.asarray(g), ax)
    if wrt == 0:
        shape = [1] * y.ndim
        shape[ax] = n - 1
        if x is None:
            widths = np.full(shape, float(dx))
        else:
            xa = np.asarray(x)
            widths = np.diff(xa, axis=axis) if xa.ndim > 1 else np.diff(xa).reshape(shape)
        half = gk * widths / 2.0
        return np.broadcast_to(_pad_axis(half, ax, 1, 0) + _pad_axis(half, ax, 0, 1), y.shape)
    if wrt == 2 and x is not None:
        return 0.0
    means = gk * (np.take(y, range(1, n), axis=ax) + np.take(y, range(n - 1), axis=ax)) / 2.0
    if wrt == 2:
        return np.sum(means)
    dcoords = diff_adjoint(means, 1, ax)
    if np.ndim(x) == 1 and y.ndim > 1:
        return np.sum(np.moveaxis(dcoords, ax, -1).reshape(-1, n), axis=0)
    return unbroadcast(dcoords, x)


def vecdot_adjoint(g, x1, x2, axis, wrt):
    """The adjoint of ``x1`` (``wrt`` 0) or ``x2`` (1) in ``np.vecdot(x1, x2, axis=axis)``
    (real): ``g`` times the other operand along ``axis``."""
    gk = np.expand_dims(np.asarray(g), axis)
    return unbroadcast(gk * x2, x1) if wrt == 0 else unbroadcast(gk * x1, x2)


def gradient_spacing_adjoints(g, ans, spacing, axis, ndim):
    """The adjoints of the scalar spacings in ``np.gradient(f, *spacing, axis=axis)`` (the
    result scales as 1/h: ``dh = -sum(g * result) / h``), as a list; a coordinate array
    spacing is refused."""
    count = ndim if axis is None else (1 if isinstance(axis, (int, np.integer)) else len(axis))
    parts = [np.asarray(g)] if count == 1 else list(np.asarray(g))
    results = [np.asarray(ans)] if count == 1 else list(ans)
    terms = [-np.sum(p * r) for p, r in zip(parts, results)]
    if any(np.ndim(h) for h in spacing):
        raise NotImplementedError("gradient of np.gradient with respect to coordinate arrays")
    if len(spacing) == 1:
        return [sum(terms) / spacing[0]]
    return [t / h for t, h in zip(terms, spacing)]


def matvec_adjoint(g, x1, x2, wrt):
    """The adjoint of ``x1`` (``wrt`` 0) or ``x2`` (1) in ``np.matvec(x1, x2)`` =
    ``x1 @ x2[..., None]`` without the last axis."""
    g = np.asarray(g)
    if wrt == 0:
        return unbroadcast(g[..., :, None] * np.asarray(x2)[..., None, :], x1)
    return unbroadcast(np.einsum("...mn,...m->...n", x1, g), x2)


def per_quantile(adjoint, g, a, q, axis, method, keepdims):
    """The adjoint of a quantile function of an array ``q``: the sum of ``adjoint`` over
    each ``q``, with its part of ``g`` (numpy puts ``q``'s axes first)."""
    parts = np.reshape(g, (np.size(q),) + np.shape(g)[np.ndim(q):])
    return sum(adjoint(gk, a, qk, axis, method, keepdims) for gk, qk in zip(parts, np.ravel(q)))


def quantile_adjoint(g, a, q, axis, method, keepdims):
    """The adjoint of ``np.quantile(a, q, axis, method="linear", keepdims=)`` (``np.median``
    is q = 0.5): for each ``q``, the two order statistics it interpolates get ``g`` times
    their weights, put back where those values were in ``a``."""
    if method != "linear":
        raise NotImplementedError("gradient of np.quantile / percentile: s2sgrad has "
                                  "method='linear'")
    if np.ndim(q):
        return per_quantile(quantile_adjoint, g, a, q, axis, method, keepdims)
    arr = np.asarray(a)
    if axis is None:
        return shaped_like(quantile_adjoint(np.reshape(g, ()), np.ravel(arr), q, 0, method,
                                            False), a)
    ax = axis % arr.ndim
    n = arr.shape[ax]
    pos = float(q) * (n - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, n - 1)
    weights = np.zeros(n)
    weights[lo] += hi - pos if hi != lo else 1.0
    if hi != lo:
        weights[hi] += pos - lo
    shape = [1] * arr.ndim
    shape[ax] = n
    gk = np.asarray(g) if keepdims else np.expand_dims(np.asarray(g), ax)
    in_order = gk * weights.reshape(shape)
    out = np.zeros(arr.shape, dtype=np.result_type(g, np.float32))
    np.put_along_axis(out, np.argsort(arr, axis=ax, kind="stable"),
                      np.broadcast_to(in_order, arr.shape), axis=ax)
    return out


def _as_3_vectors(v, length):
    """``v`` (vectors along the last axis, of 2 or 3 components) as 3-vectors (z = 0)."""
    if length == 3:
        return v
    return np.concatenate([v, np.zeros(v.shape[:-1] + (1,), dtype=v.dtype)], axis=-1)


def cross_adjoint(g, a, b, axisa, axisb, axisc, axis, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``b`` (1) in ``np.cross(a, b, axisa, axisb,
    axisc, axis)`` (``axis`` sets the three): with each operand's vectors moved to the last
    axis and 2-vectors taken as 3-vectors with z = 0, ``c = a x b`` gives ``da = b x g``
    and ``db = g x a``, then back in the operand's layout (summed over broadcast axes).
    Two 2-vectors give only z, so ``g`` is that component."""
    if axis is not None:
        axisa = axisb = axisc = axis
    if axisa == axisb == axisc == -1 and narrow_vectors(g, a, b):
        # (n, 3) matrices: column by column, laid out like them (``columns.cross``)
        return columns_cross(b, g) if wrt == 0 else columns_cross(g, a)
    am = np.moveaxis(np.asarray(a), axisa, -1)
    bm = np.moveaxis(np.asarray(b), axisb, -1)
    na, nb = am.shape[-1], bm.shape[-1]
    g = np.asarray(g, dtype=np.result_type(g, a, b, np.float32))
    if na == 2 and nb == 2:
        gm = np.stack([np.zeros_like(g), np.zeros_like(g), g], axis=-1)
    else:
        gm = np.moveaxis(g, axisc, -1)
    a3, b3 = _as_3_vectors(am, na), _as_3_vectors(bm, nb)
    if wrt == 0:
        return np.moveaxis(unbroadcast(np.cross(b3, gm)[..., :na], am), -1, axisa)
    return np.moveaxis(unbroadcast(np.cross(gm, a3)[..., :nb], bm), -1, axisb)
