"""The helpers of batched forward-mode code (``compiler/forward/batched.py``), as ``rt.<name>``.

A batched tangent holds a batch of directions first: ``(width,) + value.shape``.  Batched
code runs as numpy, or compiled by Numba where it loops and ``S2SGRAD_BACKEND=numba``
(``api/forward.py``): ``backend/numba_batched.py`` gives every helper here but
``array_batch`` (a literal of arrays: the code then runs as numpy), ``add_at_batch``,
``per_direction``, ``reverse_cumsum_batch``, ``spread_sum_batch``, ``sort_adjoint_batch``,
``sort_tangent_batch`` and ``split_like_batch`` (run as numpy only) a Numba version.
"""
import numpy as np

from .small_matmul import matmul_batch_small, matmul_both_small

__all__ = ["basis_batch", "sweep_width", "zeros_batch", "broadcast_batch", "array_batch",
           "unbroadcast_batch", "unreduce_batch", "reshape_like_batch", "matmul_batch",
           "batch_matmul", "matmul_both", "add_at_batch", "split_like_batch", "per_direction",
           "reverse_cumsum_batch", "spread_sum_batch", "sort_adjoint_batch",
           "sort_tangent_batch"]

#: the most numbers one batched tangent of the widest input holds (a sweep's memory):
#: 2**21 float64 numbers, 16 MiB
BATCH_NUMBERS = 2 ** 21


def sweep_width(total, *inputs):
    """How many directions one sweep carries: all ``total`` of them, unless a batch of
    the largest of ``inputs`` (the differentiated inputs and the array arguments: a
    value computed from them is often as large) would hold over ``BATCH_NUMBERS``
    numbers."""
    largest = max([int(np.size(x)) for x in inputs] + [1])
    return max(1, min(total, BATCH_NUMBERS // largest))


def basis_batch(x, start, width):
    """Directions ``start`` to ``start + width`` of the basis of the inputs, as tangents of
    ``x`` (whose own directions are numbered from 0): ``(width,) + x.shape`` zeros with a
    1 at row ``k``, flat position ``start + k``, where that is inside ``x``."""
    dtype = np.result_type(x, np.float32) if isinstance(x, np.ndarray) else np.float64
    size = int(np.size(x))
    out = np.zeros((width, size), dtype=dtype)
    rows = np.arange(max(0, -start), min(width, size - start))
    out[rows, rows + start] = 1.0
    return out.reshape((width,) + np.shape(x))


def zeros_batch(value, width):
    """The zero tangent of ``value`` along ``width`` directions (a list: one per item)."""
    if type(value) is np.ndarray:           # (the common case, first: called per step)
        shape, dtype = value.shape, value.dtype
        if dtype.kind not in "fc":
            dtype = np.float64
    elif isinstance(value, list):
        return [zeros_batch(item, width) for item in value]
    else:
        dtype = value.dtype if isinstance(value, np.ndarray) and value.dtype.kind in "fc" \
            else np.float64
        shape = np.shape(value)
    if _columns_first(shape):
        return np.swapaxes(np.zeros((width, shape[1], shape[0]), dtype=dtype), 1, 2)
    return np.zeros((width,) + shape, dtype=dtype)


def _columns_first(shape):
    """Whether a batch of ``shape`` matrices is laid out column by column (each
    direction's matrix transposed in memory): a few columns of many rows (positions of
    points, ``(544, 3)``), where elementwise work over the batch would otherwise walk
    rows of a few numbers.  numpy's ufuncs keep their operands' layout, so the products
    and sums a loop adds into such a batch run along the rows, in long passes."""
    return len(shape) == 2 and shape[1] < SHORT_ROWS and shape[0] >= 4 * SHORT_ROWS


#: the row length under which a batch of matrices is laid out column by column (measured
#: on GradBench's ht: rows of 3 or 4 numbers)
SHORT_ROWS = 8


def broadcast_batch(t, like):
    """A batched tangent of an operand that a primitive broadcast, in the shape of the
    result ``like`` after the directions (``t`` itself where it has it)."""
    shape = np.shape(t)[:1] + np.shape(like)
    if np.shape(t) == shape:
        return t
    return np.broadcast_to(t, shape).copy()


def matmul_batch(a, b):
    """``a @ b`` of a matrix ``a`` (m, k) and a batch of matrices ``b`` (w, k, n), as numpy
    stacks it.  A result of a few columns of many rows (``_columns_first``: points moved
    by a batch of transforms) is one BLAS product ``(w * n, k) @ (k, m)``, returned as a
    ``(w, m, n)`` view of it: elementwise work after it (``moved[:, :, :3] * weights``)
    then runs along the ``m`` axis, numpy's long passes, not in rows of ``n`` numbers
    (and ``b``, often a transposed view, is read as it lies: numpy's ``@`` of such a view
    takes a slow path).  Other sizes are numpy's ``a @ b`` (on 3 x 3 matrices it is the
    faster; on matrices of sides up to 4, ``small_matmul``'s compiled loops are)."""
    out = matmul_batch_small(a, b)
    if out is not None:
        return out
    w, k, n = b.shape
    if not _columns_first((a.shape[0], n)):
        return a @ b
    side = np.ascontiguousarray(np.swapaxes(b, 1, 2)).reshape(w * n, k)
    return np.swapaxes((side @ a.T).reshape(w, n, a.shape[0]), 1, 2)


def batch_matmul(a, b):
    """``a @ b`` of a batch of matrices ``a`` (w, m, k) and a matrix ``b`` (k, n), as
    numpy stacks it.  Where ``a`` is laid out column by column (``zeros_batch``'s
    ``_columns_first``: each direction's matrix transposed in memory, GradBench's ht's
    (26, 544, 3) positions) and so is the result, it is made as ``b.T @ a.T`` per
    direction: numpy's ``@`` of such a view copies it and walks rows of ``n`` numbers
    (and the elementwise passes after it too), 36 against 15 us on ht's.  Other layouts
    are one product of the batch's matrices one under the other (``_stacked_product``),
    other ranks numpy's ``a @ b``."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 3 and b.ndim == 2:
        return _stacked_product(a, b)
    return a @ b


def _stacked_product(a, b):
    """A batch ``a`` (w, m, k) times a matrix ``b`` (k, n) as one BLAS product of the
    batch's matrices one under the other, ``(w * m, k) @ (k, n)``, not numpy's product
    per matrix (ht's 26 x (3, 3): 1.3 against 1.9 us); a batch laid out by columns as
    ``batch_matmul`` makes it."""
    w, m, k = a.shape
    if a.strides[1] < a.strides[2] and _columns_first((m, b.shape[1])):
        return np.swapaxes(np.matmul(b.T, np.swapaxes(a, 1, 2)), 1, 2)
    return np.matmul(a.reshape(w * m, k), b).reshape(w, m, b.shape[1])


def matmul_both(a_dot, b, a, b_dot):
    """``a @ b``'s batched tangent where both matrices have one: ``a_dot @ b + a @ b_dot``
    (``batch_matmul`` and ``matmul_batch``), the second product added into the first:
    one call, no third array (the product rule of a chain of small matrices, GradBench's
    ht's rotations and bone transforms, is dominated by numpy's per-call costs; matrices
    of sides up to 4 are made in one call of ``small_matmul``'s compiled loops)."""
    out = matmul_both_small(a_dot, b, a, b_dot)
    if out is not None:
        return out
    if type(a_dot) is not np.ndarray or type(b) is not np.ndarray or a_dot.ndim != 3 or \
            b.ndim != 2:
        return batch_matmul(a_dot, b) + matmul_batch(a, b_dot)
    out = _stacked_product(a_dot, b)
    other = matmul_batch(a, b_dot)
    if out.shape != other.shape or out.dtype != other.dtype:
        return out + other
    out += other
    return out


def array_batch(items, width):
    """``np.array(items)``'s batched tangent: ``items`` (nested lists or tuples of batched
    tangents and numbers, a number's tangent being 0.0) stacked after the directions.
    One array is filled item by item (a 3 x 3 literal: nine writes, no stack per row)."""
    shape, leaves = _nested(items)
    if not isinstance(items, (list, tuple)):
        return np.full(width, float(items)) if np.ndim(items) == 0 and \
            not isinstance(items, np.ndarray) else np.asarray(items)
    arrays = [leaf for leaf in leaves if isinstance(leaf, np.ndarray)]
    inner = np.shape(arrays[0])[1:] if arrays else ()
    dtype = np.result_type(*arrays, np.float64) if arrays else np.float64
    out = np.zeros((width, len(leaves)) + inner, dtype=dtype)
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, np.ndarray) or leaf != 0:
            out[:, k] = leaf
    return out.reshape((width,) + shape + inner)


def _nested(items):
    """The shape of a nested list's structure and its leaves in C order."""
    if not isinstance(items, (list, tuple)):
        return (), [items]
    if not items:
        return (0,), []
    parts = [_nested(item) for item in items]
    return (len(items),) + parts[0][0], [leaf for _, part in parts for leaf in part]


# ------------------------------------------ the adjoint helpers of gradient code, batched
# (a Hessian's batched sweep differentiates a generated gradient: ``rt.unbroadcast`` and
# its kin are linear in the adjoint, so a batch of their tangents is each row's helper)


def unbroadcast_batch(t, like):
    """``rt.unbroadcast`` of each row of the batched tangent ``t``: rows summed down to
    ``like``'s shape (a scalar ``like``: each row's total), or a row of one number
    spread over it."""
    t = np.asarray(t)
    shape = np.shape(like)
    width = t.shape[0]
    if t.shape[1:] == shape:
        return t
    if t.ndim == 1:
        return np.broadcast_to(t.reshape((width,) + (1,) * len(shape)),
                               (width,) + shape).copy()
    lead = t.ndim - 1 - len(shape)
    if lead > 0:
        t = t.sum(axis=tuple(range(1, 1 + lead)))
    axes = tuple(1 + i for i, n in enumerate(shape) if n == 1 and t.shape[1 + i] != 1)
    return t.sum(axis=axes, keepdims=True) if axes else t


def unreduce_batch(t, like, axis, keepdims):
    """``rt.unreduce`` of each row of ``t``: spread back over ``like``'s shape (a copy,
    which a later in-place update may write)."""
    t = np.asarray(t)
    shape = np.shape(like)
    width = t.shape[0]
    if axis is None:
        t = t.reshape((width,) + (1,) * len(shape))
    elif not keepdims:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        t = np.expand_dims(t, tuple(1 + (a % len(shape)) for a in axes))
    return np.broadcast_to(t, (width,) + shape).copy()


def reshape_like_batch(t, like):
    """``rt.reshape_like`` of each row of ``t`` (a scalar ``like``: each row's total)."""
    t = np.asarray(t)
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        return t.reshape(t.shape[0], -1).sum(axis=1)
    return np.reshape(t, t.shape[:1] + np.shape(like))


def add_at_batch(target, index, g):
    """``rt.add_at`` of a batch: ``target[:, index] += g`` (the directions first in both,
    repeated indices accumulated), ``g`` broadcast against ``target[:, index]`` as
    ``rt.add_at`` broadcasts one direction's (the directions' axis moved last, so the
    other axes align from the right as they do there); returns ``target``, updated in
    place."""
    if isinstance(index, np.ndarray) and index.dtype == np.bool_:
        index = np.nonzero(index)
    np.add.at(np.moveaxis(target, 0, -1), index, np.moveaxis(np.asarray(g), 0, -1))
    return target


def split_like_batch(g, parts, axis):
    """``rt.split_like`` of a batch: ``g`` split along ``axis`` (of one direction's
    values, shifted past the directions) into pieces shaped like ``parts``, a list."""
    sizes = [np.shape(p)[axis] for p in parts[:-1]]
    return np.split(g, np.cumsum(sizes), axis=axis + 1 if axis >= 0 else axis)


def per_direction(helper, t, *args, **kwargs):
    """``helper`` (linear in its first operand) of each direction of the batch ``t``,
    stacked, directions first: the batched call of an adjoint helper without a batched
    spelling (``rt.sort_adjoint``, ``rt.pad_adjoint``...)."""
    rows = [helper(t[k], *args, **kwargs) for k in range(len(t))]
    if any(isinstance(r, (tuple, list)) for r in rows):    # not one array: never stacked
        raise TypeError(f"{helper.__name__} gave a sequence: no batched rule")
    return np.stack([np.asarray(r) for r in rows])


def reverse_cumsum_batch(t, axis):
    """``rt.reverse_cumsum`` of a batch: the cumulative sum from the end along ``axis`` of
    one direction's values (shifted past the directions; ``None``: each direction's
    values flattened)."""
    if axis is None:
        t, along = np.reshape(t, (len(t), -1)), 1
    else:
        along = axis + 1 if axis >= 0 else axis
    return np.flip(np.cumsum(np.flip(t, along), axis=along), along)


def spread_sum_batch(t, items):
    """``rt.spread_sum`` of a batch (the adjoint of the builtin ``sum(items)``): for an
    array, ``t``'s directions spread over its rows, directions first; for a list or
    tuple, the batch once per item."""
    if isinstance(items, np.ndarray):
        return np.broadcast_to(np.expand_dims(t, 1), (len(t),) + items.shape).copy()
    return [t for _ in items]


def sort_adjoint_batch(t, a, axis=-1):
    """``rt.sort_adjoint`` of a batch: each direction's values put back where the sorted
    values of ``a`` came from, one ``argsort`` for all (``axis=None``: ``t`` holds each
    direction's flat values; the result is shaped like ``a``)."""
    width = len(t)
    dtype = np.result_type(t, np.float32)
    if axis is None:
        out = np.zeros((width, np.size(a)), dtype=dtype)
        out[:, np.argsort(a, axis=None, kind="stable")] = np.reshape(t, (width, -1))
        return out.reshape((width,) + np.shape(a))
    order = np.argsort(a, axis=axis, kind="stable")
    out = np.zeros(np.shape(t), dtype=dtype)
    np.put_along_axis(out, np.broadcast_to(order, np.shape(t)), t,
                      axis=axis + 1 if axis >= 0 else axis)
    return out


def sort_tangent_batch(t, a, axis=-1):
    """``np.sort(a, axis)``'s tangent of a batch: each direction's values taken in the
    order that sorts ``a`` (``axis=None``: each direction's flat values)."""
    if axis is None:
        return np.reshape(t, (len(t), -1))[:, np.argsort(a, axis=None)]
    order = np.broadcast_to(np.argsort(a, axis=axis), np.shape(t))
    return np.take_along_axis(t, order, axis=axis + 1 if axis >= 0 else axis)
