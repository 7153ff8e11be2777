"""The helpers generated forward-mode (JVP) code calls, as ``rt.<name>``.

Plain numpy here; ``s2sgrad.backend.numba_forward`` gives each a Numba
implementation of the same contract.  ``s2sgrad.runtime`` re-exports them.
"""
import numpy as np

__all__ = ["broadcast_like", "basis_tangent", "tangent_size", "cumprod_tangent",
           "cholesky_tangent", "eigh_tangent", "eigvalsh_tangent", "matrix_power_tangent",
           "pinv_tangent", "svdvals_tangent"]


def broadcast_like(t, like):
    """The tangent ``t`` of an operand that a primitive broadcast, in the shape of the
    result ``like``: ``t`` itself when the shapes agree, else ``t`` broadcast (a new
    array).  A scalar ``like`` gives ``t`` as it is."""
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        return t
    if np.shape(t) == np.shape(like):
        return t
    return t + np.zeros(np.shape(like), dtype=np.result_type(t, like, np.float32))


def tangent_size(x):
    """How many directions the input ``x`` spans: its size (1 for a number)."""
    return int(np.size(x))


def basis_tangent(x, j):
    """The ``j``-th basis direction of the input ``x``: zeros of ``x``'s shape (in its
    floating dtype; a number for a number) with a 1 at flat position ``j``; all zeros
    when ``j`` is outside ``0 <= j < x.size`` (another input's direction)."""
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        return 1.0 if j == 0 else 0.0
    out = np.zeros(np.shape(x), dtype=np.result_type(x, np.float32))
    if 0 <= j < out.size:
        out.reshape(-1)[j] = 1.0
    return out



def cumprod_tangent(t, a, axis):
    """The tangent of ``np.cumprod(a, axis)`` along ``t`` (zeros in ``a`` allowed): the
    running product's derivative, ``q[k] = q[k-1] * a[k] + p[k-1] * t[k]``."""
    a = np.asarray(a)
    t = np.broadcast_to(np.asarray(t), a.shape)
    if axis is None:
        a, t, axis = a.ravel(), t.ravel(), 0
    a, t = np.moveaxis(a, axis, 0), np.moveaxis(t, axis, 0)
    out = np.empty(a.shape, dtype=np.result_type(a, t, np.float32))
    product = np.ones(a.shape[1:], dtype=out.dtype)
    tangent = np.zeros(a.shape[1:], dtype=out.dtype)
    for k in range(a.shape[0]):
        tangent = tangent * a[k] + product * t[k]
        product = product * a[k]
        out[k] = tangent
    return np.moveaxis(out, 0, axis)


# ---------------------------------------------------------------- linear algebra


def _t(x):
    return np.swapaxes(x, -1, -2)


def _from_lower(t):
    """The symmetric matrix numpy's ``cholesky``/``eigh`` see in ``t``: its lower triangle,
    mirrored (they read that triangle only)."""
    lower = np.tril(t)
    return lower + _t(np.tril(t, -1))


def cholesky_tangent(t, L):
    """The tangent of ``L = np.linalg.cholesky(a)`` along ``t``: ``L Phi(L^-1 t L^-T)``,
    ``Phi`` the lower triangle with the diagonal halved."""
    t = _from_lower(np.asarray(t))
    x = np.linalg.solve(L, _t(np.linalg.solve(L, t)))        # L^-1 (L^-1 t)^T = L^-1 t L^-T
    n = L.shape[-1]
    return L @ (np.tril(x) - 0.5 * x * np.eye(n))


def eigh_tangent(t, ans):
    """The tangents ``(w_dot, v_dot)`` of ``w, v = np.linalg.eigh(a)`` along ``t``:
    ``diag(v^T t v)`` and ``v (F * v^T t v)`` with ``F_ij = 1 / (w_j - w_i)`` (0 on the
    diagonal and for equal eigenvalues)."""
    w, v = ans
    m = _t(v) @ _from_lower(np.asarray(t)) @ v
    gap = w[..., None, :] - w[..., :, None]
    n = w.shape[-1]
    off = ~np.eye(n, dtype=bool)
    tied = np.abs(gap) <= 100.0 * np.finfo(np.result_type(w, np.float32)).eps * \
        np.max(np.abs(w), axis=-1)[..., None, None]
    f = np.where(off & ~tied, 1.0 / np.where(tied | ~off, 1.0, gap), 0.0)
    return np.diagonal(m, axis1=-2, axis2=-1).copy(), v @ (f * m)


def eigvalsh_tangent(t, a):
    """The tangent of ``np.linalg.eigvalsh(a)`` along ``t``: ``diag(v^T t v)``."""
    _, v = np.linalg.eigh(a)
    return np.diagonal(_t(v) @ _from_lower(np.asarray(t)) @ v, axis1=-2, axis2=-1).copy()


def matrix_power_tangent(t, a, n):
    """The tangent of ``np.linalg.matrix_power(a, n)`` along ``t``: the sum of
    ``a^k t a^(n-1-k)`` (negative ``n``: through the inverse)."""
    if n < 0:
        b = np.linalg.inv(a)
        return matrix_power_tangent(-(b @ t @ b), b, -n)
    if n == 0:
        return np.zeros(np.shape(a), dtype=np.result_type(t, a, np.float32))
    powers = [np.broadcast_to(np.eye(np.shape(a)[-1]), np.shape(a))]
    for _ in range(n - 1):
        powers.append(powers[-1] @ a)
    out = np.zeros(np.shape(a), dtype=np.result_type(t, a, np.float32))
    for k in range(n):
        out = out + powers[k] @ t @ powers[n - 1 - k]
    return out


def pinv_tangent(t, ans, a):
    """The tangent of ``p = np.linalg.pinv(a)`` along ``t`` (constant rank):
    ``-p t p + p p^T t^T (I - a p) + (I - p a) t^T p^T p``."""
    p, tt = ans, _t(np.asarray(t))
    eye_m = np.eye(np.shape(a)[-2])
    eye_n = np.eye(np.shape(a)[-1])
    return (-(p @ t @ p) + p @ _t(p) @ tt @ (eye_m - a @ p)
            + (eye_n - p @ a) @ tt @ _t(p) @ p)


def svdvals_tangent(t, a):
    """The tangent of the singular values of ``a`` along ``t``: ``diag(u^T t v)``."""
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return np.einsum("...ji,...jk,...ik->...i", u, t, vh)
