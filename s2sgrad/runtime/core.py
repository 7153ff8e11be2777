"""The runtime helpers the other runtime modules build on: undoing broadcasting and
reductions, and whether the code runs compiled (``rt.compiled()``).  ``s2sgrad.runtime`` re-exports them (generated code reads them as
``rt.unbroadcast``...); ``arrays``, ``linalg`` and ``surface``
import them from here, so no runtime module imports another in a cycle."""
import math

import numpy as np

__all__ = ["compiled", "one_length", "cut_shape", "row_shape", "unbroadcast", "unreduce", "reduction_count", "section_length", "extremum_mask", "extremum_adjoint",
           "summed_over", "divide_or_zero",
           "normalise_axes"]


def compiled():
    """False here, True in code Numba compiled (``backend/numba_support.py``): a fused
    loop (``compiler/emit/loops.py``) runs its explicit loop only compiled, and its
    numpy statements run as Python."""
    return False


def one_length(shapes, least):
    """Whether the 1-D ``shapes`` (of a fused loop's arrays) are all the first one, of at
    least ``least`` elements: what the loop takes (else its statements run as numpy)."""
    n = shapes[0][0]
    return n >= least and all(shape[0] == n for shape in shapes)


def cut_shape(shape, low, high):
    """The shape of ``a[low:high]`` of a 1-D ``a`` of ``shape`` (``high`` None: to the
    end) where ``0 <= low <= high <= len(a)``, else ``(-1,)``: a fused loop that reads
    the slice as ``a[low + i]`` (``compiler/optimize/loop_views.py``) takes it only
    there (``one_length`` then fails: numpy's clipped or negative bounds run as numpy)."""
    size = shape[0]
    high = size if high is None else high
    return (high - low,) if 0 <= low <= high <= size else (-1,)


def row_shape(shape, k):
    """The shape of ``a[k]`` of a 2-D ``a`` of ``shape`` where ``-len(a) <= k <
    len(a)``, else ``(-1,)``: a fused loop that reads the row as ``a[k, i]``
    (``compiler/optimize/loop_views.py``) takes it only there (an index out of range
    runs as numpy, which raises)."""
    return shape[1:] if -shape[0] <= k < shape[0] else (-1,)


def unbroadcast(g, like):
    """Sum ``g`` down to the shape of ``like``: the adjoint of numpy broadcasting.

    ``like`` is the operand that was broadcast (array or scalar); a scalar
    operand gets the total, an array operand gets ``g`` summed over the
    leading axes numpy added and over its axes of length 1.
    """
    if type(g) is np.ndarray and type(like) is np.ndarray and g.ndim:
        shape = like.shape          # the common case, first: no conversions
        if g.shape == shape:
            return g
        return _summed_to(g, shape)
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        return np.sum(g)
    shape = np.shape(like)
    g = np.asarray(g)
    if g.shape == shape:
        return g
    if g.ndim == 0:
        return np.full(shape, g, dtype=np.result_type(g, like))
    return _summed_to(g, shape)


def _summed_to(g, shape):
    """The array ``g`` (of at least ``len(shape)`` dimensions) summed to ``shape``."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    summed = summed_over(g, axes, True) if axes else g
    return summed.reshape(shape)


#: the longest trailing run of summed elements, and the fewest sums, that go to BLAS
SHORT_ROWS, MANY_ROWS = 32, 256


def summed_over(x, axes, keepdims):
    """``np.sum(x, axis=axes, keepdims=keepdims)`` (``axes``: a tuple of non-negative
    axes).  A float array summed over its last few axes, rows of at most ``SHORT_ROWS``
    elements, is summed by one BLAS matrix-vector product with ones: numpy's reduction
    loops once per row there, some 60 times slower (31,843 rows of 3: 2.5 ms against
    0.04 ms).  Summed over its leading axes (the adjoint of a row broadcast over many
    rows), it is ones times the rows, one BLAS product too: numpy adds row after row
    there, a loop as long as a row (10,000 rows of 8: 126 against 15 us; 100 rows of
    1,000: 12 against 11).  The numbers agree to rounding (BLAS adds in its own order;
    numpy's sum over leading axes is not pairwise either)."""
    if type(x) is np.ndarray and x.dtype.kind == "f" and axes and x.flags.c_contiguous:
        axes = tuple(axes)
        if axes == tuple(range(x.ndim - len(axes), x.ndim)):
            rows = x.shape[:x.ndim - len(axes)]
            k = x.size // max(1, math.prod(rows))
            if 1 < k <= SHORT_ROWS and math.prod(rows) >= MANY_ROWS:
                out = x.reshape(-1, k) @ np.ones(k, x.dtype)
                return out.reshape(rows + (1,) * len(axes) if keepdims else rows)
        elif axes == tuple(range(len(axes))) and len(axes) < x.ndim:
            n = math.prod(x.shape[:len(axes)])
            if n >= MANY_ROWS:
                out = np.ones(n, x.dtype) @ x.reshape(n, -1)
                kept = x.shape[len(axes):]
                return out.reshape((1,) * len(axes) + kept if keepdims else kept)
    return np.sum(x, axis=axes, keepdims=keepdims)


def unreduce(g, like, axis, keepdims):
    """Spread the adjoint ``g`` of a reduction over ``axis`` back to ``like``'s shape."""
    shape = np.shape(like)
    g = np.asarray(g)
    if axis is not None and not keepdims:
        axes = normalise_axes(axis, len(shape))
        g = np.expand_dims(g, axes)
    return np.broadcast_to(g, shape)


def reduction_count(like, axis):
    """How many elements of ``like`` each reduction result over ``axis`` combines."""
    shape = np.shape(like)
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    count = 1
    for a in normalise_axes(axis, len(shape)):
        count *= shape[a]
    return count


def section_length(x, sections):
    """The length of each of ``np.split(x, sections)``'s pieces (along the first axis), or
    numpy's own ValueError where they would not be equal: the front end writes
    ``f, i, o, c = np.split(gates, 4)`` as four slices of this length
    (``front/lower_calls.py``), which the fused loops read in place."""
    n = np.shape(x)[0]
    if sections <= 0:
        raise ValueError("number sections must be larger than 0.")
    if n % sections:
        raise ValueError("array split does not result in an equal division")
    return n // sections


def extremum_mask(x, ans, axis, keepdims):
    """Where ``x`` attains its reduced max/min ``ans``, split evenly between ties.

    Has ``x``'s shape; its dtype is ``x``'s floating dtype (float64 for integer ``x``).
    """
    if not keepdims and axis is not None:   # (with keepdims, or a scalar, ans broadcasts)
        ans = np.expand_dims(ans, normalise_axes(axis, np.ndim(x)))
    hit = (x == ans).astype(np.result_type(x, np.float32))
    return hit / np.add.reduce(hit, axis=axis, keepdims=True)


def extremum_adjoint(g, x, ans, axis, keepdims):
    """The adjoint of a max or min ``ans`` of ``x`` over ``axis``: the adjoint ``g`` where
    ``x`` attains ``ans`` (split evenly between ties), 0 elsewhere.

    The numbers of ``unreduce(g, x, axis, keepdims) * extremum_mask(x, ans, axis,
    keepdims)`` in two passes over ``x`` (a comparison, then the product written once)
    instead of five, with no float mask: the ties are counted on the comparison, and
    only where there are any (or a NaN) is ``g`` divided by the counts.  Has ``x``'s
    shape and the dtype of ``g`` times ``x``'s floating dtype.
    """
    return extremum_adjoint_into(g, x, ans, axis, keepdims, None)


def extremum_adjoint_into(g, x, ans, axis, keepdims, out):
    """``extremum_adjoint(g, x, ans, axis, keepdims)`` written into ``out`` (an array of
    the result's shape and dtype: ``rt.Kept``), or a new array when ``out`` is None.  A
    large float64 matrix over its rows: one compiled pass (``runtime/extremum_rows.py``)."""
    from .extremum_rows import rows
    done = rows(g, x, ans, axis, keepdims, out)
    if done is not None:
        return done
    if not keepdims and axis is not None:   # (with keepdims, or a scalar, ans broadcasts)
        axes = normalise_axes(axis, np.ndim(x))
        ans, g = np.expand_dims(ans, axes), np.expand_dims(g, axes)
    hit = np.equal(x, ans)
    dtype = np.result_type(g, np.result_type(x, np.float32))
    if np.count_nonzero(hit) != np.size(ans) or np.isnan(ans).any():
        g = g / np.add.reduce(hit, axis=axis, keepdims=True, dtype=dtype)
    return np.multiply(hit, g, dtype=dtype, out=out)


def divide_or_zero(g, d):
    """``g / d`` where ``d`` is not 0, and 0 where it is (``np.std``'s adjoint where the
    deviation is 0: one element, or equal ones, where 0 is the derivative or a
    subgradient).  Same shape as ``g``."""
    if np.ndim(d) == 0:
        return g / d if d != 0 else g * 0.0
    zero = d == 0
    return np.where(zero, 0.0, g / np.where(zero, 1.0, d))


def normalise_axes(axis, ndim):
    """``axis`` (an int or a tuple, negative allowed) as sorted non-negative axes."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))
