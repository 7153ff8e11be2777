"""Numba implementations of the Jacobian helpers (``s2sgrad/runtime_higher.py``): the
contract is each helper's docstring there."""
import numpy as np
from numba import types
from numba.extending import overload

from .. import runtime as rt


@overload(rt.jacobian_rows)
def _jacobian_rows(rows, like):
    if isinstance(like, types.Array) and isinstance(like.dtype, types.Float):
        return lambda rows, like: np.zeros((rows,) + like.shape, dtype=like.dtype)
    if isinstance(like, types.Array):
        return lambda rows, like: np.zeros((rows,) + like.shape)
    if isinstance(like, (types.Number, types.Boolean)):
        return lambda rows, like: np.zeros(rows)
    return None
