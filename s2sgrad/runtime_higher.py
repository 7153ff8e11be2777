"""The helpers generated Jacobian code (``jacrev``) calls, as ``rt.<name>``.

Plain numpy here; ``s2sgrad.backend.numba_higher`` gives each a Numba implementation
of the same contract.  ``s2sgrad.runtime`` re-exports them.
"""
import numpy as np

__all__ = ["jacobian_rows"]


def jacobian_rows(rows, like):
    """Zeros for ``rows`` gradients of the input ``like``: shape ``(rows,) + like.shape``,
    ``like``'s dtype when it is a floating-point array, float64 otherwise."""
    if isinstance(like, np.ndarray) and like.dtype.kind == "f":
        return np.zeros((rows,) + like.shape, dtype=like.dtype)
    return np.zeros((rows,) + np.shape(like))
