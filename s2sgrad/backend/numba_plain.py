"""Numba's slice-assignment check with a plain message, while s2sgrad compiles its code.

``plain_messages()`` is a context manager: the Numba compiles run inside it (the
generated function and what it pulls in) raise ``ValueError("cannot assign slice from
input of different size")`` where ``a[i] = b`` (an array written into a row or a slice)
gets a ``b`` of another shape, instead of Numba's CPU message, which spells both shapes.
That message is formatted by compiled code, so the first such write in a process made
Numba compile ``str`` and ``repr`` of integers, ``hasattr``, string joins and
concatenation: about 2.5 s of CPU, a quarter of the cold compile of GradBench's lstm
eval (its ``cell[j] = ...`` and the restores of those rows; issue 20).  The plain message
is the one Numba itself raises on targets without strings.

Nothing a user sees changes: the error is the same ``ValueError`` at the same point, and
an error raised in compiled code is raised again by the same code run as Python
(``api/derivative.Derivative._noted``), with numpy's message and the user's line.  The
swap holds Numba's compiler lock, so no other thread compiles while it is in place, and
Numba's own message is back as soon as the compile ends (a user's ``@njit`` code compiled
later gets it).  A Numba without the hook (``numba.np.arrayobj.raise_with_shape_context``)
is left as it is.
"""
import contextlib

from numba.core.compiler_lock import global_compiler_lock
from numba.extending import overload
import numba.np.arrayobj as _arrayobj

#: what a slice assignment of the wrong shape raises in code s2sgrad compiled
MESSAGE = "cannot assign slice from input of different size"


def shape_mismatch(src_shapes, index_shape):
    """Raise the ``ValueError`` of a slice assignment whose shapes differ (the stand-in
    for ``numba.np.arrayobj.raise_with_shape_context`` during s2sgrad's compiles)."""
    raise ValueError(MESSAGE)


@overload(shape_mismatch)
def _shape_mismatch(src_shapes, index_shape):
    def impl(src_shapes, index_shape):
        raise ValueError(MESSAGE)
    return impl


@contextlib.contextmanager
def plain_messages():
    """Compiles inside use ``shape_mismatch`` for Numba's slice-assignment message."""
    if not hasattr(_arrayobj, "raise_with_shape_context"):
        yield
        return
    with global_compiler_lock:
        saved = _arrayobj.raise_with_shape_context
        _arrayobj.raise_with_shape_context = shape_mismatch
        try:
            yield
        finally:
            _arrayobj.raise_with_shape_context = saved
