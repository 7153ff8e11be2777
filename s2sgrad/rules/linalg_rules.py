"""Rules for ``np.linalg`` decompositions, pseudo-inverse and singular values.

Their helpers are in ``s2sgrad/runtime/linalg.py`` (read as ``rt.<name>``).
The decompositions return tuples (``tuple_result=True``): their template's
``d[ans]`` holds the items' adjoints (zeros for an item the code does not
use): a list in Python, a tuple under Numba (``rt.item_added`` builds it).  ``np.linalg.norm`` (every ``ord``) is in ``numpy_rules.py``.
"""
import numpy as np

from .registry import d, vjp
from .. import runtime as rt


@vjp(np.linalg.slogdet, tuple_result=True)
def _(ans, a):
    d[a] = rt.slogdet_adjoint(d[ans], a)


@vjp(np.linalg.cholesky)
def _(ans, a):
    d[a] = rt.cholesky_adjoint(d[ans], ans)


@vjp(np.linalg.eigh, tuple_result=True)
def _(ans, a):
    d[a] = rt.eigh_adjoint(d[ans], ans, a)


@vjp(np.linalg.eigvalsh)
def _(ans, a):
    d[a] = rt.eigvalsh_adjoint(d[ans], a)


@vjp(np.linalg.qr, tuple_result=True)
def _(ans, a):
    d[a] = rt.qr_adjoint(d[ans], ans, a)


@vjp(np.linalg.svd, tuple_result=True)
def _(ans, a, full_matrices=True):
    d[a] = rt.svd_adjoint(d[ans], ans, a, full_matrices)


@vjp(np.linalg.svdvals)
def _(ans, x):
    d[x] = rt.svdvals_adjoint(d[ans], x)


@vjp(np.linalg.pinv)
def _(ans, a):
    d[a] = rt.pinv_adjoint(d[ans], ans, a)


@vjp(np.linalg.matrix_power)
def _(ans, a, n):
    d[a] = rt.matrix_power_adjoint(d[ans], a, n)


@vjp(np.linalg.multi_dot)
def _(ans, arrays):
    d[arrays] = rt.multi_dot_adjoints(d[ans], arrays)


@vjp(np.linalg.vector_norm)
def _(ans, x, axis=None, keepdims=False, ord=2):
    d[x] = rt.vector_norm_adjoint(d[ans], ans, x, ord, axis, keepdims)


@vjp(np.linalg.matrix_norm)
def _(ans, x, keepdims=False, ord="fro"):
    d[x] = rt.matrix_norm_axes_adjoint(d[ans], x, ord, (-2, -1), keepdims)


@vjp(np.linalg.trace)
def _(ans, x, offset=0):
    d[x] = rt.trace_adjoint(d[ans], x, offset, -2, -1)


@vjp(np.linalg.diagonal)
def _(ans, x, offset=0):
    d[x] = rt.diagonal_adjoint(d[ans], x, offset, -2, -1)


@vjp(np.linalg.matrix_transpose)
def _(ans, x):
    d[x] = np.swapaxes(d[ans], -1, -2)


@vjp(np.linalg.matmul)
def _(ans, x1, x2):
    d[x1] = rt.matmul_left(d[ans], x1, x2)
    d[x2] = rt.matmul_right(d[ans], x1, x2)


@vjp(np.linalg.outer)
def _(ans, x1, x2):
    d[x1] = d[ans] @ x2
    d[x2] = x1 @ d[ans]
