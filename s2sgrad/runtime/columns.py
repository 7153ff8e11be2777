"""Narrow matrices laid out by columns for one call of loop-free numpy code
(``rt.Kept.columns``; ``compiler/optimize/buffers.py`` decides where it is written).

numpy runs an operation on a C-ordered ``(n, k)`` matrix of few columns row by row when
an operand is a column block (``cams[:, 0:3]``), a broadcast column (``theta[:, None]``)
or the operation reduces over the columns (``np.sum(rot ** 2, axis=1)``): an inner loop
of ``k`` numbers per row, with its own overhead each.  GradBench's ba (31,843 x 3, x 11)
spent most of its gradient there: ``(n, 3) * (n, 1)`` 0.27 ms C-ordered against 0.03 ms
laid out by columns (Fortran order: each column contiguous), where numpy's inner loop
runs down a column of ``n`` numbers.  The values are the same, bit for bit: each number
goes through the same operations; only the order they are stored in differs.

- ``columns(*args)`` gives each argument that is a narrow matrix (``narrow``) as a
  column-major copy, the others as they are;
- ``cross(a, b)``: ``np.cross`` of two ``(n, 3)`` float64 matrices computed column by
  column into an array laid out like ``a`` (numpy's own writes a C-ordered result,
  which makes every later operation with it mixed in layout); the same operations in
  the same order as numpy's, so the same bits; anything else is ``np.cross``;
- ``contiguous(x)``: ``x`` when its numbers are contiguous in either layout (a column
  block of a matrix laid out by columns is), else ``np.ascontiguousarray(x)``;
- ``spread_columns(x)``: whether ``x`` is a column repeated over a narrow matrix (a
  stride of 0, which numpy runs along rows: ``rt.Kept.unreduce`` copies it out by
  columns);
- ``laid_by_columns(x)``: whether ``x`` is laid out by columns only (the helpers that
  would write a C-ordered result leave such operands to numpy: ``broadcast.binary``);
- ``as_rows(value)``: ``value`` (an array, or tuples/lists/dicts of them) with each
  matrix laid out by columns only copied C-ordered: what the caller gets is laid out as
  without ``columns``.
"""
import numpy as np

__all__ = ["columns", "cross", "contiguous", "as_rows", "narrow", "narrow_vectors",
           "laid_by_columns", "spread_columns"]

#: the most columns a matrix laid out by columns may have: numpy's row overhead is per
#: row, so the gain shrinks as rows grow (ba's 11-column ``cams``: 0.35 ms of copy for
#: its 2-11-column blocks' passes)
MOST_COLUMNS = 16
#: the fewest rows: a ba-like gradient (``tests/test_columns.py``'s ``rows``, columns
#: read in blocks, as broadcast columns and summed) measured 0.72-0.82x its time C-ordered
#: from 128 to 32,768 rows (0.33 against 0.43 ms at 128)
LEAST_ROWS = 128
_FLOAT64 = np.dtype(np.float64)


def narrow(x):
    """Whether ``x`` is an exact float64 ``np.ndarray`` of two axes, at least
    ``LEAST_ROWS`` rows and 2 to ``MOST_COLUMNS`` columns (a column of one is both
    layouts already), not laid out by columns already."""
    return type(x) is np.ndarray and x.ndim == 2 and x.dtype == _FLOAT64 and \
        x.shape[0] >= LEAST_ROWS and 2 <= x.shape[1] <= MOST_COLUMNS and \
        not x.flags.f_contiguous


def columns(*args):
    """The arguments with each narrow matrix (``narrow``) copied column-major (a tuple
    of as many values)."""
    return tuple(np.asfortranarray(x) if narrow(x) else x for x in args)


def narrow_vectors(*arrays):
    """Whether ``arrays`` are exact float64 ``np.ndarray``s of one shape ``(n, 3)``, ``n``
    at least ``LEAST_ROWS``: rows of 3-vectors ``cross`` takes column by column."""
    first = arrays[0]
    return all(type(x) is np.ndarray and x.dtype == _FLOAT64 for x in arrays) and \
        first.ndim == 2 and first.shape[1] == 3 and first.shape[0] >= LEAST_ROWS and \
        all(x.shape == first.shape for x in arrays)


def cross(a, b):
    """``np.cross(a, b)`` (module doc): column by column for two float64 ``(n, 3)``
    arrays of at least ``LEAST_ROWS`` rows, into an array laid out like ``a``."""
    if not narrow_vectors(a, b):
        return np.cross(a, b)
    out = np.empty_like(a)
    tmp = np.empty_like(a[:, 0])
    for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        # numpy's order: out_k = a_i * b_j, then out_k -= a_j * b_i
        np.multiply(a[:, i], b[:, j], out=out[:, k])
        np.multiply(a[:, j], b[:, i], out=tmp)
        np.subtract(out[:, k], tmp, out=out[:, k])
    return out


def contiguous(x):
    """``x`` if it is an array contiguous in C or Fortran order, else
    ``np.ascontiguousarray(x)`` (module doc)."""
    if isinstance(x, np.ndarray) and (x.flags.c_contiguous or x.flags.f_contiguous):
        return x
    return np.ascontiguousarray(x)


def spread_columns(x):
    """Whether ``x`` is a narrow matrix's shape (``narrow``'s sizes) made of one column
    repeated: a stride of 0 along its columns (``rt.unreduce``'s view of a row sum's
    adjoint), which numpy runs along rows."""
    return type(x) is np.ndarray and x.ndim == 2 and x.strides[1] == 0 and \
        x.shape[0] >= LEAST_ROWS and 2 <= x.shape[1] <= MOST_COLUMNS and x.strides[0] != 0


def laid_by_columns(x):
    """Whether ``x`` is an array of two axes or more laid out by columns only (Fortran
    order, not also C order)."""
    return isinstance(x, np.ndarray) and x.ndim >= 2 and x.flags.f_contiguous and \
        not x.flags.c_contiguous


def as_rows(value):
    """``value`` with every array laid out by columns only (Fortran order, not also C
    order) copied C-ordered; tuples, lists and dicts walked."""
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value) if laid_by_columns(value) else value
    if isinstance(value, (tuple, list)):
        items = [as_rows(item) for item in value]
        if type(value) in (tuple, list):
            return type(value)(items)
        return value._make(items) if hasattr(value, "_make") else type(value)(items)
    if isinstance(value, dict):
        return {k: as_rows(v) for k, v in value.items()}
    return value
