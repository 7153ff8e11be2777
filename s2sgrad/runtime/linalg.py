"""Adjoint helpers of ``np.linalg`` decompositions and norms, read as ``rt.<name>``.

``s2sgrad.runtime`` re-exports every public name here; the rules in
``s2sgrad/rules/linalg_rules.py`` call them.  All take batched matrices
(``(..., m, n)``).  A decomposition's adjoint ``g`` holds one adjoint per
result (``[dsign, dlogdet]`` for ``slogdet``...; a list, or a tuple under Numba).  The formulas are the
standard ones (as in HIPS autograd's ``numpy/linalg.py``); eigh and
cholesky read only the lower triangle of their input, as numpy does, so the
adjoint of the upper triangle is zero.
"""
import numpy as np

from .core import extremum_mask, unreduce

__all__ = ["slogdet_adjoint", "cholesky_adjoint", "eigh_adjoint", "qr_adjoint", "svd_adjoint",
           "svdvals_adjoint", "pinv_adjoint", "matrix_norm_adjoint", "vector_norm_adjoint",
           "is_matrix_norm", "matrix_norm_axes_adjoint", "eigvalsh_adjoint",
           "matrix_power_adjoint", "multi_dot_adjoints"]


def _t(x):
    return np.swapaxes(x, -1, -2)


def lower_only(j):
    """The adjoint of a function that reads only ``a``'s lower triangle, from ``j`` the
    adjoint of the symmetric matrix it stands for: the diagonal of ``j`` and, below it,
    ``j + j^T``."""
    n = j.shape[-1]
    below = np.tril(np.ones((n, n), dtype=bool), -1)
    return np.where(np.eye(n, dtype=bool), j, np.where(below, j + _t(j), 0.0))


def slogdet_adjoint(g, a):
    """The adjoint of ``a`` in ``sign, logabsdet = np.linalg.slogdet(a)``: ``dlogabsdet *
    inv(a)^T`` (the sign carries no gradient)."""
    return np.asarray(g[1])[..., None, None] * _t(np.linalg.inv(a))


def cholesky_adjoint(g, L):
    """The adjoint of ``a`` in ``L = np.linalg.cholesky(a)`` (``a``'s lower triangle).

    ``S = L^-T Phi L^-1`` with ``Phi`` the lower triangle of ``L^T g`` (diagonal halved),
    computed with two triangular solves against ``L^T`` (no inverse, no LU: stable
    whenever the factorisation itself is); the adjoint is the symmetric part of ``S``."""
    from scipy.linalg import solve_triangular
    n = L.shape[-1]
    phi = np.tril(_t(L) @ g) / (1.0 + np.eye(n))
    x = solve_triangular(L, phi, lower=True, trans="T")        # L^-T Phi
    s = _t(solve_triangular(L, _t(x), lower=True, trans="T"))  # (L^-T (L^-T Phi)^T)^T
    return lower_only((s + _t(s)) / 2.0)


def inverse_gaps(gap, scale, dtype):
    """``1 / gap`` off the diagonal, 0 on it and where two values coincide (``|gap|`` within
    100 ulps of ``scale``, the largest value's magnitude, per matrix)."""
    n = gap.shape[-1]
    tol = 100.0 * np.finfo(np.result_type(dtype, np.float32)).eps * scale[..., None, None]
    off = ~np.eye(n, dtype=bool)
    tied = np.abs(gap) <= tol
    return np.where(off & ~tied, 1.0 / np.where(tied | ~off, 1.0, gap), 0.0)


def eigh_adjoint(g, ans, a):
    """The adjoint of ``a`` in ``w, v = np.linalg.eigh(a)``.

    Eigenvalues' adjoint: ``v diag(gw) v^T``, always defined.  Eigenvectors' adjoint:
    ``v (F * v^T gv) v^T`` with ``F_ij = 1 / (w_j - w_i)``: defined for distinct
    eigenvalues and for a loss that does not depend on the eigenvectors' signs.  For a
    repeated eigenvalue the eigenvectors are not functions of ``a`` (any rotation within
    the eigenspace is as good): the terms of equal pairs are left out (``F_ij = 0``), which
    is the gradient of a loss that depends on that eigenspace only (a projector, a trace)
    and has no meaning otherwise."""
    gw, gv = g
    w, v = ans
    j = (v * np.asarray(gw)[..., None, :]) @ _t(v)
    if np.any(gv):
        gap = w[..., None, :] - w[..., :, None]
        f = inverse_gaps(gap, np.max(np.abs(w), axis=-1), w.dtype)
        j = j + v @ (f * (_t(v) @ gv)) @ _t(v)
    return lower_only(j)


def eigvalsh_adjoint(g, a):
    """The adjoint of ``a`` in ``w = np.linalg.eigvalsh(a)``: ``v diag(g) v^T`` (lower
    triangle)."""
    _, v = np.linalg.eigh(a)
    return lower_only((v * np.asarray(g)[..., None, :]) @ _t(v))


def matrix_power_adjoint(g, a, n):
    """The adjoint of ``a`` in ``np.linalg.matrix_power(a, n)`` (negative ``n``: through the
    inverse)."""
    if n < 0:
        b = np.linalg.inv(a)
        return -_t(b) @ matrix_power_adjoint(g, b, -n) @ _t(b)
    at = _t(np.asarray(a))
    powers = [np.broadcast_to(np.eye(at.shape[-1]), at.shape)]
    for _ in range(n - 1):
        powers.append(powers[-1] @ at)
    out = np.zeros(np.shape(a), dtype=np.result_type(g, a, np.float32))
    for k in range(n):
        out = out + powers[k] @ g @ powers[n - 1 - k]
    return out


def multi_dot_adjoints(g, arrays, only=None):
    """The adjoints of each of ``arrays`` in ``np.linalg.multi_dot(arrays)`` (the first may be
    1-D, a row; the last 1-D, a column), as a list; ``only``: the positions whose adjoints
    are wanted (None for the others)."""
    mats = [np.asarray(x) for x in arrays]
    first_1d, last_1d = mats[0].ndim == 1, mats[-1].ndim == 1
    if first_1d:
        mats[0] = mats[0][None, :]
    if last_1d:
        mats[-1] = mats[-1][:, None]
    g2 = np.reshape(g, (mats[0].shape[0], mats[-1].shape[1]))
    out = []
    for i in range(len(mats)):
        if only is not None and i not in only:
            out.append(None)
            continue
        left = np.linalg.multi_dot(mats[:i]) if i > 1 else (mats[0] if i == 1 else None)
        right = np.linalg.multi_dot(mats[i + 1:]) if len(mats) - i > 2 else (
            mats[-1] if i == len(mats) - 2 else None)
        dx = g2
        if left is not None:
            dx = _t(left) @ dx
        if right is not None:
            dx = dx @ _t(right)
        out.append(np.reshape(dx, np.shape(arrays[i])))
    return out


def _copyltu(m):
    return np.tril(m) + _t(np.tril(m, -1))


def qr_adjoint(g, ans, a):
    """The adjoint of ``a`` in ``q, r = np.linalg.qr(a)`` (reduced mode, ``m >= n``)."""
    gq, gr = g
    q, r = ans
    m, n = np.shape(a)[-2:]
    if m < n:
        raise NotImplementedError("gradient of np.linalg.qr for a wide matrix (m < n)")
    mm = r @ _t(gr) - _t(gq) @ q
    b = gq + q @ _copyltu(mm)
    return _t(np.linalg.solve(r, _t(b)))


def svd_adjoint(g, ans, a, full_matrices):
    """The adjoint of ``a`` in ``u, s, vh = np.linalg.svd(a, full_matrices)``: for square
    matrices, or any shape with ``full_matrices=False``.

    The singular values' part ``u diag(gs) vh`` is always defined.  The singular vectors'
    part needs distinct, nonzero singular values and a loss that does not depend on the
    vectors' signs; pairs of equal singular values are left out, as in ``eigh_adjoint``
    (exact for a loss that depends on each singular subspace only)."""
    u, s, vh = ans
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        raise NotImplementedError("gradient of np.linalg.svd with full_matrices=True for a "
                                  "non-square matrix: pass full_matrices=False")
    gu, gs, gvh = g
    v, gv = _t(vh), _t(gvh)
    k = min(m, n)
    eye = np.eye(k)
    f = inverse_gaps(s[..., None, :] ** 2 - s[..., :, None] ** 2,
                      np.max(s, axis=-1) ** 2, s.dtype)
    utgu = _t(u) @ gu
    vtgv = _t(v) @ gv
    mid = (f * (utgu - _t(utgu))) * s[..., None, :] + eye * np.asarray(gs)[..., :, None] \
        + s[..., :, None] * (f * (vtgv - _t(vtgv)))
    out = u @ mid @ _t(v)
    if m > n:
        out = out + _t((v / s[..., None, :]) @ _t(gu) @ (np.eye(m) - u @ _t(u)))
    elif m < n:
        out = out + (u / s[..., None, :]) @ _t(gv) @ (np.eye(n) - v @ _t(v))
    return out


def svdvals_adjoint(g, a):
    """The adjoint of ``a`` in ``s = np.linalg.svdvals(a)``: ``u diag(g) vh``."""
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return (u * np.asarray(g)[..., None, :]) @ vh


def pinv_adjoint(g, ans, a):
    """The adjoint of ``a`` in ``p = np.linalg.pinv(a)`` (constant rank)."""
    p = ans
    m, n = np.shape(a)[-2:]
    return (-_t(p) @ g @ _t(p)
            + (np.eye(m) - a @ p) @ _t(g) @ p @ _t(p)
            + _t(p) @ p @ _t(g) @ (np.eye(n) - p @ a))


def _split_tie(hit):
    return hit / np.sum(hit, axis=-1, keepdims=True)


def matrix_norm_adjoint(g, x, ord):
    """The adjoint of ``np.linalg.norm(x, ord)`` over the last two axes of ``x`` (``g`` has
    ``x``'s other axes): 'fro', 'nuc', 2, -2, 1, -1, inf and -inf."""
    g = np.asarray(g)[..., None, None]
    if ord is None or ord == "fro":
        return g * x / np.sqrt(np.sum(x * x, axis=(-2, -1), keepdims=True))
    if ord in ("nuc", 2, -2):
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        if ord == "nuc":
            return g * (u @ vh)
        if ord == 2:       # the largest singular value's vectors
            return g * (u[..., :, :1] @ vh[..., :1, :])
        return g * (u[..., :, -1:] @ vh[..., -1:, :])
    if ord in (1, -1, np.inf, -np.inf):
        over_rows = ord in (1, -1)          # 1: the largest column sum of |x|
        sums = np.sum(np.abs(x), axis=-2 if over_rows else -1)
        best = np.max(sums, axis=-1, keepdims=True) if ord > 0 else \
            np.min(sums, axis=-1, keepdims=True)
        weight = _split_tie((sums == best).astype(np.result_type(x, np.float32)))
        weight = weight[..., None, :] if over_rows else weight[..., :, None]
        return g * weight * np.sign(x)
    raise NotImplementedError(f"gradient of np.linalg.norm of a matrix with ord={ord!r}")


def is_matrix_norm(x, ord, axis):
    """True when ``np.linalg.norm(x, ord, axis)`` is a matrix norm (not a vector norm or the
    norm of the flattened array)."""
    if isinstance(axis, tuple):
        return len(axis) == 2
    return axis is None and np.ndim(x) == 2 and ord is not None


def matrix_norm_axes_adjoint(g, x, ord, axis, keepdims):
    """The adjoint of the matrix norm ``np.linalg.norm(x, ord, axis, keepdims)`` (``axis``
    None for a 2-D ``x``, or a pair of axes)."""
    rows, cols = (0, 1) if axis is None else (axis[0] % np.ndim(x), axis[1] % np.ndim(x))
    if keepdims:
        g = np.squeeze(np.asarray(g), axis=(rows, cols))
    moved = np.moveaxis(x, (rows, cols), (-2, -1))
    return np.moveaxis(matrix_norm_adjoint(g, moved, ord), (-2, -1), (rows, cols))


def vector_norm_adjoint(g, ans, x, ord, axis, keepdims):
    """The adjoint of ``np.linalg.norm(x, ord, axis, keepdims)`` of vectors (``axis`` None on
    a 1-D ``x`` or an int) for any ``ord`` but 0: p-norms, inf and -inf."""
    if ord == 0:
        raise NotImplementedError("np.linalg.norm with ord=0 counts nonzeros: no gradient")
    spread = unreduce(g, x, axis, keepdims)
    if ord in (np.inf, -np.inf):
        return spread * extremum_mask(np.abs(x), ans, axis, keepdims) * np.sign(x)
    full = unreduce(ans, x, axis, keepdims)
    return spread * np.sign(x) * (np.abs(x) / full) ** (ord - 1)
