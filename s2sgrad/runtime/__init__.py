"""The few helpers that generated gradient code calls, as ``rt.<name>``.

Each is plain numpy here; ``s2sgrad.backend.numba_support`` gives each one a
Numba implementation of the same contract, so generated code that calls them
compiles in nopython mode.  Keep them small: the generated code should say
what it does with plain numpy wherever numpy can.
"""
import numpy as np

from .core import *  # noqa: F401,F403  (rt.unbroadcast... : undoing broadcasts, reductions)
from .einsum import einsum, einsum_adjoints, einsum_chain, einsum_sliced  # noqa: F401
from .broadcast_matmul import matmul as broadcast_matmul
from .arrays import *  # noqa: F401,F403  (rt.kron_adjoint... : adjoints of array functions)
from .linalg import *  # noqa: F401,F403  (rt.eigh_adjoint... : adjoints of np.linalg)
from .surface import *  # noqa: F401,F403  (rt.insert_adjoint... : numpy_surface rules)
from .forward import *  # noqa: F401,F403  (rt.broadcast_like... : forward mode)
from .batched import *  # noqa: F401,F403  (rt.zeros_batch... : batched forward mode)
from .tangents import *  # noqa: F401,F403  (rt.quantile_tangent... : forward mode)
from .linalg_tangents import *  # noqa: F401,F403  (rt.svd_tangent... : forward mode)
from .special import *  # noqa: F401,F403  (rt.spherical_bessel_derivative...)
from .split import *  # noqa: F401,F403  (rt.jacobian_rows: jacrev)
from .second import *  # noqa: F401,F403  (rt.inv_tangent... : second order)
from .second_arrays import *  # noqa: F401,F403  (rt.cumprod_adjoint_tangent...)
from .second_linalg import *  # noqa: F401,F403  (rt.svd_adjoint_tangent...)
from .checkpoint import (checkpoint_forward, checkpoint_reverse,  # noqa: F401  (memory_limit)
                         checkpoint_slots, no_snapshots, tape_bytes)
from .constants import Constants  # noqa: F401  (rt.Constants: values of sizes, once)
from .buffers import Buffers, Kept  # noqa: F401  (rt.Buffers: arrays kept between calls)
from .fused import Fused, shaped  # noqa: F401  (rt.Fused: elementwise chains as one compiled loop)
from .fused_sum import FusedSum  # noqa: F401  (rt.FusedSum: a chain's sum over an axis, one loop)
from .product_sums import ProductSum  # noqa: F401  (rt.ProductSum: a loop's sum of products)


def ones_like(value):
    """The sensitivity seed of an output: 1.0 for a scalar, ones for an array (same dtype)."""
    if isinstance(value, (float, np.floating)):
        return type(value)(1)
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return type(value)(1) if isinstance(value, (float, np.floating)) else 1.0
    return np.ones_like(value)


def zeros_like(value):
    """Zeros of ``value``'s shape and dtype (0.0 for a scalar; for a list, a list of
    zeros like its items: the zero tangent of an adjoint list; for a tuple, a tuple of
    them: the zero tangent of a call returning several values)."""
    if isinstance(value, list):
        return zeros_list(value)
    if isinstance(value, tuple):
        return tuple(zeros_like(item) for item in value)
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return type(value)(0) if isinstance(value, (float, np.floating)) else 0.0
    return np.zeros_like(value)


def add_at(target, index, g):
    """``target[index] += g`` with repeated indices accumulated; returns ``target``.

    ``index`` is an int, an int array or a boolean mask (over ``target``'s
    leading axes); ``target`` is updated in place.
    """
    np.add.at(target, index, g)
    return target


def split_like(g, parts, axis):
    """Split ``g`` along ``axis`` into pieces shaped like ``parts`` (adjoint of concatenate).

    A list with one array per part, each with ``g``'s dtype.  The last piece is the rest
    of ``g``: the last part's size is never read (so a loop need not keep that part for
    it, compiler/reverse/witnesses.py).
    """
    sizes = [np.shape(p)[axis] for p in parts[:-1]]
    return np.split(g, np.cumsum(sizes), axis=axis)


def unstack(g, count, axis):
    """The ``count`` slices of ``g`` along ``axis`` (adjoint of stack), as a list."""
    return [np.take(g, i, axis=axis) for i in range(count)]


def reshape_like(g, like):
    """``g`` reshaped to ``like``'s shape (scalar ``like`` gives a scalar)."""
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        return np.sum(g)
    return np.reshape(g, np.shape(like))


def cast_like(g, like):
    """``g`` in ``like``'s floating dtype: the adjoint of astype between float types."""
    if isinstance(like, np.ndarray):
        return np.asarray(g).astype(like.dtype)
    return g


def inverse_permutation(axes, ndim):
    """The axes that undo ``np.transpose(x, axes)`` (None means reversed)."""
    if axes is None:
        return tuple(range(ndim - 1, -1, -1))
    return tuple(int(i) for i in np.argsort([a % ndim for a in axes]))


def transpose_adjoint(g, axes):
    """The adjoint of ``np.transpose(x, axes)``: ``g`` transposed back (None: reversed)."""
    if axes is None:
        return np.transpose(g)
    return np.transpose(g, inverse_permutation(axes, np.ndim(g)))


def _matmul_operands(g, a, b):
    """``a``, ``b`` and ``g`` of ``a @ b`` with 1-D operands made matrices (numpy's rule)."""
    a, b = np.asarray(a), np.asarray(b)
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = np.expand_dims(g2, -2)
    if b.ndim == 1:
        g2 = np.expand_dims(g2, -1)
    return a, b, a2, b2, g2


def _summed_product(p, q, like):
    """``p @ q`` summed over the batch dimensions along which ``like`` (an operand of
    shape ``(..., m, n)``) was broadcast, ``like``'s batch dimensions kept (size 1 where
    it has 1): what ``unbroadcast(p @ q, like)`` gives, without the stack of products it
    sums (gmm's ``Ls @ xc[..., None]``: 25 factors broadcast over 1,000 points, a
    25,000-matrix stack summed, 4.5 ms, against 0.2 ms as one contraction)."""
    full = np.broadcast_shapes(p.shape[:-2], q.shape[:-2])
    kept = (1,) * (len(full) - (like.ndim - 2)) + like.shape[:-2]
    if kept == full or not full or p.dtype.kind not in "fc" or q.dtype.kind not in "fc":
        return broadcast_matmul(p, q)
    batch = len(full)
    keep = [i for i in range(batch) if kept[i] != 1]
    summed = [i for i in range(batch) if kept[i] == 1]
    sizes = tuple(full[i] for i in keep)
    # the summed dimensions joined to the contracted one: (K.., m, S.. k) @ (K.., S.. k, n)
    p = np.broadcast_to(p, full + p.shape[-2:]).transpose(keep + [batch] + summed + [batch + 1])
    q = np.broadcast_to(q, full + q.shape[-2:]).transpose(keep + summed + [batch, batch + 1])
    product = p.reshape(sizes + (p.shape[len(keep)], -1)) @ q.reshape(sizes + (-1, q.shape[-1]))
    return product.reshape(kept + product.shape[-2:])


def matmul_left(g, a, b):
    """The adjoint of ``a`` in ``a @ b`` (every ndim numpy's matmul accepts), computed
    alone: the other operand's adjoint costs as much and is often unused."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 and b.ndim == 2:
        return g @ b.T      # matrices (the common case, first): a's shape, nothing to sum
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return g * np.asarray(b)
    a, b, a2, b2, g2 = _matmul_operands(g, a, b)
    da = _summed_product(g2, np.swapaxes(b2, -1, -2), a2)
    if a.ndim == 1:
        da = da[..., 0, :]
    return unbroadcast(da, a)


def matmul_right(g, a, b):
    """The adjoint of ``b`` in ``a @ b``, computed alone (see ``matmul_left``)."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 and b.ndim == 2:
        return a.T @ g
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return g * np.asarray(a)
    a, b, a2, b2, g2 = _matmul_operands(g, a, b)
    db = _summed_product(np.swapaxes(a2, -1, -2), g2, b2)
    if b.ndim == 1:
        db = db[..., :, 0]
    return unbroadcast(db, b)


def matmul_scaled(a, b, scale):
    """``a @ (b * scale)`` (``scale`` a number constant: the same as ``(a * scale) @ b``
    and ``(a @ b) * scale`` up to the rounding of one multiplication), with the scaling
    done on the smallest of ``a``, ``b`` and the product: ``compiler/optimize/
    products.py`` writes it where a gradient scaled a large operand of a small product
    (kmeans: ``points.T @ (-2 * ddists)``, the 10,000 x 100 adjoint of an 8 x 100 one)."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim >= 1 and b.ndim >= 1 \
            and a.dtype.kind in "fc" and b.dtype.kind in "fc":    # (not bool's or-and)
        rows = a.shape[-2] if a.ndim >= 2 else 1
        cols = b.shape[-1] if b.ndim >= 2 else 1
        out_size = rows * cols * max(int(np.prod(a.shape[:-2])), int(np.prod(b.shape[:-2])))
        if out_size <= min(a.size, b.size):
            product = a @ b
            if type(product) is np.ndarray and \
                    np.result_type(product, scale) == product.dtype:
                product *= scale      # a fresh array: scaled in place
                return product
            return product * scale
        if a.size < b.size:
            return (a * scale) @ b
    return a @ (b * scale)


def matmul_sliced(a, b, index):
    """``(a @ b)[index]``; where ``index`` takes columns alone (``np.s_[:, :3]`` of a
    matrix product: ``:`` on every axis of the product but the last) and ``a`` and ``b``
    have two dimensions or more, made as ``a @ b[..., columns]``: only the columns read
    (``compiler/optimize/products.py``)."""
    columns = _columns_of(a, b, index)
    if columns is None:
        return (a @ b)[index]
    return a @ b[..., columns]


def matmul_batch_sliced(a, b, index):
    """``rt.matmul_batch(a, b)[index]``, made as ``matmul_batch(a, b[..., columns])``
    where ``index`` takes columns alone (see ``matmul_sliced``)."""
    columns = _columns_of(a, b, index)
    if columns is None:
        return matmul_batch(a, b)[index]
    return matmul_batch(a, b[..., columns])


def _columns_of(a, b, index):
    """The slice of the last axis ``index`` is, when it slices only that axis of
    ``a @ b`` and both have two dimensions or more; else None."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or b.ndim < 2 or \
            a.ndim < 2 or len(index) != max(a.ndim, b.ndim):
        return None
    if any(i != slice(None) for i in index[:-1]) or not isinstance(index[-1], slice):
        return None
    return index[-1]


def add_matmul_left(out, g, a, b):
    """``out += matmul_left(g, a, b)``, in place (``out``: an adjoint array the generated
    code owns).  Under Numba an outer product (``a`` 2-D, ``b`` 1-D) is added element by
    element, with no array made for it."""
    out += matmul_left(g, a, b)


def add_matmul_right(out, g, a, b):
    """``out += matmul_right(g, a, b)``, in place (see ``add_matmul_left``; the outer
    product is ``a`` 1-D, ``b`` 2-D)."""
    out += matmul_right(g, a, b)


def add_dot_left(out, g, a, b):
    """``out += dot_left(g, a, b)``, in place (see ``add_matmul_left``)."""
    out += dot_left(g, a, b)


def add_dot_right(out, g, a, b):
    """``out += dot_right(g, a, b)``, in place (see ``add_matmul_left``)."""
    out += dot_right(g, a, b)


def matmul_adjoints(g, a, b):
    """The adjoints of ``a @ b`` for every ndim numpy's matmul accepts (1-D and batched)."""
    return matmul_left(g, a, b), matmul_right(g, a, b)


def dot_left(g, a, b):
    """The adjoint of ``a`` in ``np.dot(a, b)``, alone where that is cheaper."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(b) <= 2 and np.ndim(a) <= 2:
        return matmul_left(g, np.asarray(a), np.asarray(b))
    return dot_adjoints(g, a, b)[0]


def dot_right(g, a, b):
    """The adjoint of ``b`` in ``np.dot(a, b)``, alone where that is cheaper."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    if np.ndim(b) <= 2 and np.ndim(a) <= 2:
        return matmul_right(g, np.asarray(a), np.asarray(b))
    return dot_adjoints(g, a, b)[1]


def dot_adjoints(g, a, b):
    """The adjoints of ``np.dot(a, b)`` (scalars, vectors, matrices, N-D by 1-D)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a), unbroadcast(g * a, b)
    if np.ndim(b) <= 2 and np.ndim(a) <= 2:
        return matmul_adjoints(g, np.asarray(a), np.asarray(b))
    # N-D dot: contracts a's last axis with b's second-to-last (b's only axis when 1-D)
    if np.ndim(b) == 1:
        return np.asarray(g)[..., None] * b, np.tensordot(a, g, axes=(
            list(range(a.ndim - 1)), list(range(a.ndim - 1))))
    da = np.tensordot(g, b, axes=(list(range(a.ndim - 1, g.ndim)),
                                  [i for i in range(b.ndim) if i != b.ndim - 2]))
    db_axes = list(range(a.ndim - 1))
    db = np.tensordot(a, g, axes=(db_axes, db_axes))
    db = np.moveaxis(db, 0, b.ndim - 2) if b.ndim >= 2 else db
    return da, db


def inner_adjoint(g, a, b, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``b`` (1) in ``np.inner(a, b)``: it contracts the
    last axes of ``a`` and ``b``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a) if wrt == 0 else unbroadcast(g * a, b)
    lead = np.ndim(a) - 1
    if wrt == 0:
        return np.tensordot(g, b, axes=(list(range(lead, np.ndim(g))),
                                        list(range(np.ndim(b) - 1))))
    return np.tensordot(g, a, axes=(list(range(lead)), list(range(lead))))


def reverse_cumsum(g, axis):
    """The adjoint of ``np.cumsum(x, axis)``: a cumulative sum from the end."""
    if axis is None:
        g = np.ravel(g)
        axis = 0
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


def det_adjoint(g, ans, a):
    """The adjoint of ``np.linalg.det(a)``: ``g * det(a) * inv(a).T`` (batched)."""
    scale = np.asarray(g * ans)[..., None, None]
    return scale * np.swapaxes(np.linalg.inv(a), -1, -2)


def solve_adjoint(a, g, b):
    """The adjoint of ``b`` in ``x = solve(a, b)``: ``solve(a.T, g)``."""
    return np.linalg.solve(np.swapaxes(a, -1, -2), g)


def solve_a_adjoint(gb, x, b):
    """The adjoint of ``a`` in ``x = solve(a, b)`` given ``b``'s adjoint ``gb``: ``-gb x^T``."""
    if np.ndim(b) == 1:
        return -np.outer(gb, x)
    return -gb @ np.swapaxes(x, -1, -2)


def norm_adjoint(g, ans, x, ord, axis, keepdims):
    """The adjoint of ``np.linalg.norm(x, ord, axis, keepdims)``: the 2-norm / Frobenius norm,
    matrix norms (``runtime.linalg.matrix_norm_axes_adjoint``) and vector p-norms."""
    if is_matrix_norm(x, ord, axis):
        return matrix_norm_axes_adjoint(g, x, ord, axis, keepdims)
    if ord is None or ord == 2 or ord == "fro":
        return unreduce(g / ans, x, axis, keepdims) * x
    if ord == 1:
        return unreduce(g, x, axis, keepdims) * np.sign(x)
    return vector_norm_adjoint(g, ans, x, ord, axis, keepdims)


def linspace_adjoints(g, start, stop, num, endpoint, axis):
    """The adjoints of ``start`` and ``stop`` in ``np.linspace(start, stop, num, endpoint,
    axis=axis)``.

    Sample ``i`` is ``start + t_i (stop - start)`` with ``t_i = i / (num - 1)`` (``i / num``
    without the endpoint; ``t_0 = 0`` when there is one sample), so ``start`` gets
    ``sum_i g_i (1 - t_i)`` and ``stop`` ``sum_i g_i t_i``, each summed to its own shape.
    A pair (d_start, d_stop).
    """
    div = num - 1 if endpoint else num
    t = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    g = np.moveaxis(np.asarray(g), axis, 0)
    t = t.reshape((num,) + (1,) * (g.ndim - 1))
    return (unbroadcast(np.sum(g * (1 - t), axis=0), start),
            unbroadcast(np.sum(g * t, axis=0), stop))


def arange_adjoints(g, bounds):
    """The adjoints of the positional arguments of ``np.arange(*bounds)``.

    Element ``i`` is ``start + i * step``; the length is piecewise constant in the bounds,
    so ``stop`` gets 0, ``start`` ``sum(g)`` and ``step`` ``sum(i g_i)``.  With one bound
    (the stop) that bound gets 0.  A list, one adjoint per bound.
    """
    g = np.asarray(g)
    if len(bounds) == 1:
        return [0.0]
    adjoints = [np.sum(g), 0.0]
    if len(bounds) == 3:
        adjoints.append(np.sum(g * np.arange(g.size)))
    return adjoints


def item_adjoint(g, like, index):
    """The adjoint of ``like.item(*index)``: ``g`` at that element of an array of zeros
    shaped like ``like`` (no index: its one element; one int: a flat index)."""
    out = np.zeros(np.shape(like), dtype=np.result_type(like, 0.0))
    if len(index) == 0:
        out.flat[0] = g
    elif len(index) == 1:
        position = index[0]
        out[position if isinstance(position, tuple) else np.unravel_index(position, out.shape)] = g
    else:
        out[tuple(index)] = g
    return out


def copy_value(value):
    """A copy of an array (a scalar as it is): what an in-place update overwrites."""
    return np.copy(value) if isinstance(value, np.ndarray) else value


# ---------------------------------------------------------------- tapes
#
# A loop's scalar values of a known type go on array tapes: ``tape`` holds
# ``top`` values, the last on top; the room for a loop's values is reserved
# before it runs, so a store is one write.


def reserve(tape, top, count):
    """``tape`` with room for ``count`` more values above ``top`` (a larger copy when it
    has too little; ``count`` < 0 counts as 0)."""
    need = top + max(count, 0)
    if need <= tape.shape[0]:
        return tape
    grown = np.empty(max(need, 2 * tape.shape[0]), dtype=tape.dtype)
    grown[:top] = tape[:top]
    return grown


def push(tape, top, value):
    """Store ``value`` at ``tape[top]`` (room was reserved); the new count."""
    tape[top] = value
    return top + 1


def stacked_rows(rows):
    """The 1-D arrays ``rows`` as the rows of one new array: a fused loop's kept values
    (``compiler/optimize/loop_tapes.py``) where its statements ran as numpy instead.
    Rows of several lengths (the loop's guard failed: a run-time slice of length 1 that
    numpy broadcast against a longer array) are kept as they are, a tuple, which the
    adjoint unpacks the same way; code compiled by Numba cannot hold that and raises
    ``RowsOfSeveralLengths`` instead, and the caller runs the call as Python
    (``api/derivative.py``, ``Derivative._recovered``).  (Numba's copy of a gradient's
    code leaves these else-branches out: ``SKIP_ELSE``.)"""
    n = rows[0].shape[0]
    for row in rows:
        if row.shape != (n,):
            return tuple(rows)
    return np.stack(rows)


class RunAsPython(ValueError):
    """Raised by compiled code that stops where the same code run as Python goes on: the
    caller runs the call again (``api/derivative.py``, ``Derivative._recovered``)."""


class RowsOfSeveralLengths(RunAsPython):
    """Raised by compiled code whose fused loop kept rows of several lengths (see
    ``stacked_rows``): the call is run again as Python, which can keep them."""


class FusedGuardFailed(RunAsPython):
    """Raised by the copy of a gradient's code that Numba compiles without the numpy
    statements of its fused loops' else-branches (``SKIP_ELSE``) where a guard failed
    (arrays of several lengths): the call is run again by the code compiled with them
    (``backend/numba_backend.Compiled.with_else``)."""


#: the global of a generated module that is True in Numba's copy of a gradient's code:
#: ``elif SKIP_ELSE: raise rt.FusedGuardFailed(...)`` after a fused loop's guard, so Numba
#: prunes the numpy statements of the else (a third of GradBench lstm's compile), which
#: rarely run; False where the code runs as Python and in code compiled with them
SKIP_ELSE = "SKIP_ELSE"


def trip_count(start, stop, step=1):
    """How many values ``range(start, stop, step)`` gives."""
    return len(range(start, stop, step))


# ---------------------------------------------------------------- forward spellings
#
# The generated forward sweep calls these where numpy's own call is outside what
# Numba compiles (a reduction with ``axis=`` or ``keepdims=``, squeeze...); see
# ``s2sgrad/compiler/front/spellings.py``.  Each computes exactly numpy's result: the
# value, the shape and the dtype.  ``axis`` is None, an int or a tuple of ints
# and ``keepdims`` a bool, as in numpy.  They are defined last: ``sum``, ``prod``...
# would hide the builtins from the helpers above.

def sum(x, axis, keepdims):  # noqa: A001 - read as rt.sum in generated code
    """``np.sum(x, axis=axis, keepdims=keepdims)``: float dtypes are kept, smaller
    ints and bools sum in int64 (a float array's short trailing rows by BLAS:
    ``summed_over``)."""
    if axis is not None and type(x) is np.ndarray:
        return summed_over(x, normalise_axes(axis, x.ndim), keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims)


def mean(x, axis, keepdims):
    """``np.mean(x, axis=axis, keepdims=keepdims)``: float dtypes are kept, ints give
    float64."""
    return np.mean(x, axis=axis, keepdims=keepdims)


def amax(x, axis, keepdims):
    """``np.max(x, axis=axis, keepdims=keepdims)`` (NaN wins; an empty axis is a
    ValueError)."""
    return np.max(x, axis=axis, keepdims=keepdims)


def amin(x, axis, keepdims):
    """``np.min(x, axis=axis, keepdims=keepdims)`` (NaN wins; an empty axis is a
    ValueError)."""
    return np.min(x, axis=axis, keepdims=keepdims)


def prod(x, axis, keepdims):
    """``np.prod(x, axis=axis, keepdims=keepdims)``: float dtypes are kept, smaller
    ints and bools multiply in int64."""
    return np.prod(x, axis=axis, keepdims=keepdims)


def var(x, axis, keepdims, ddof=0):
    """``np.var(x, axis=axis, ddof=ddof, keepdims=keepdims)``: the mean squared
    deviation from the mean, divided by ``count - ddof``."""
    return np.var(x, axis=axis, ddof=ddof, keepdims=keepdims)


def std(x, axis, keepdims, ddof=0):
    """``np.std(x, axis=axis, ddof=ddof, keepdims=keepdims)``: the square root of
    ``var``."""
    return np.std(x, axis=axis, ddof=ddof, keepdims=keepdims)


def squeeze(x, axis):
    """``np.squeeze(x, axis)`` for an int or tuple ``axis``: those axes (each of
    length 1, else ValueError) removed."""
    return np.squeeze(x, axis)


def expand_dims(x, axis):
    """``np.expand_dims(x, axis)`` for a tuple ``axis``: a new axis of length 1 at
    each of those positions of the result."""
    return np.expand_dims(x, axis)


def atleast_1d(x):
    """``np.atleast_1d(x)`` for one argument: a scalar becomes a 1-element array."""
    return np.atleast_1d(x)


def tile(a, reps):
    """``np.tile(a, reps)`` (Numba has no ``np.tile``)."""
    return np.tile(a, reps)


def add_into(view, value):
    """``view += value`` for ``view`` a view into an adjoint array (``dx[j]``, a row):
    the same as ``dx[j] += value``, which under Numba writes the row back through
    numpy's general setitem (~0.4 us a row in a pairwise loop)."""
    view += value


def frexp(x):
    """``np.frexp(x)``: ``(mantissa, exponent)`` (Numba has no ``np.frexp``)."""
    return np.frexp(x)


def modf(x):
    """``np.modf(x)``: ``(fractional part, integral part)`` (Numba has no ``np.modf``)."""
    return np.modf(x)


def zeros_list(items):
    """Zeros like each item of a list: the first adjoint of a list read by index."""
    return [zeros_like(item) for item in items]


def item_added(items, index, g):
    """``items`` with ``g`` added to its item ``index``: the adjoint of a tuple result
    (``w, v = np.linalg.eigh(a)``) taking the gradient of one item.  A tuple's adjoint is
    a tuple, updated functionally (so Numba can type it; items of different types); a
    list's adjoint (``rt.zeros_list`` gives a list) is updated in place and returned."""
    if isinstance(items, tuple):
        return items[:index] + (_plus(items[index], g),) + items[index + 1:] if index != -1 \
            else items[:-1] + (_plus(items[-1], g),)
    items[index] = _plus(items[index], g)
    return items


def _plus(a, b):
    """``a + b``, item by item where both are tuples or lists (the adjoint of a nested
    tuple: a derivative object's ``((value, gradient), gradient)``)."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a)(_plus(x, y) for x, y in zip(a, b))
    return a + b


def copy_list(items):
    """A new list with the same items (an adjoint list the code is about to change)."""
    return list(items)


def add_lists(a, b):
    """Item-by-item sum of two adjoint lists of the same length (``a`` may still be the
    plain 0.0 of an adjoint that started where the list had no value)."""
    if isinstance(a, np.ndarray) and a.ndim > 0:   # a tangent list made as zeros_like(list)
        a = list(a)
    if not isinstance(a, list):
        return list(b)
    return [x + y for x, y in zip(a, b)]


def written_adjoint(dx, index):
    """The adjoint of ``v`` in ``x[index] = v`` for an index array: ``dx[index]``, except
    that a position the index names twice counts once, for its last write."""
    g = np.array(dx[index], copy=True)
    index = np.asarray(index) if not isinstance(index, tuple) else index
    if isinstance(index, np.ndarray) and index.dtype.kind in "iu" and index.ndim == 1:
        seen = set()
        for k in range(index.shape[0] - 1, -1, -1):
            position = int(index[k]) % dx.shape[0]
            if position in seen:
                g[k] = 0
            seen.add(position)
    return g


def sort_adjoint(g, a, axis=-1):
    """The adjoint of ``np.sort(a, axis)``: ``g`` put back where each sorted value came from."""
    order = np.argsort(a, axis=axis, kind="stable")
    out = np.zeros_like(np.asarray(g, dtype=np.result_type(g, np.float32)))
    np.put_along_axis(out, order, g, axis=axis)
    return out if axis is not None else np.reshape(out, np.shape(a))   # sorted flat


def spread_sum(g, items):
    """The adjoint of the builtin ``sum(items)``: ``g`` for each item (an array's rows, a
    tuple's or list's entries)."""
    if isinstance(items, np.ndarray):
        return np.broadcast_to(g, items.shape).copy() if np.ndim(g) == 0 else \
            np.broadcast_to(g, items.shape).copy()
    return [g for _ in items]


def writable(g, like):
    """``g`` as a fresh array of ``like``'s shape (``g`` may be a plain 0.0), for in-place
    accumulation."""
    return np.array(np.broadcast_to(g, np.shape(like)), dtype=np.result_type(g, like))
